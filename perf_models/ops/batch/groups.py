"""Rows grouped by structure (op name, Input type, Concrete Inputs, Input Dims present), and
split further by the kind of each per-call scalar (softmax_scale, max_seqlen)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.literals import LiteralParseError, parse_float_str, parse_int_str
from sdpa_analyzer.perf_models.ops.batch.cells import BAD, RAW, Rows, dims_cell, seq_cell
from sdpa_analyzer.perf_models.ops.registry import lookup
from sdpa_analyzer.perf_models.ops.roles import role_fits
from sdpa_analyzer.perf_models.ops.row import is_blank
from sdpa_analyzer.perf_models.ops.specs import OpSpec, Signature

_INT, _FLOAT, _ANY, _OTHER = "int", "float", "any", "other"
_BLANK, _VALID, _INVALID = 0, 1, 2  # kinds of a per-call scalar value
NO_INT = np.iinfo(np.int64).min  # "no integer" in a column of max_seqlen values
_KEEP_LEN = 64  # Concrete Inputs longer than this are grouped by their full value
_DIMS_KIND = {list: 1, tuple: 1, str: 4}


@dataclass(frozen=True, slots=True)
class _NameInfo:
    name: str
    spec: OpSpec | None
    by_name: bool  # unknown op or autograd node: the name alone decides the outcome
    free_by_arity: dict[int, tuple[dict[int, str], tuple[bool, ...] | None]]

    def free(self, arity: int) -> tuple[dict[int, str], tuple[bool, ...] | None]:
        """The per-call scalar slots of rows with `arity` arguments, and the compress() selector that
        drops them from the group key (None when there are none)."""
        if arity not in self.free_by_arity:
            assert self.spec is not None
            free = _free_slots(self.spec, arity)
            keep = tuple(s not in free for s in range(_KEEP_LEN)) if free else None
            self.free_by_arity[arity] = free, keep
        return self.free_by_arity[arity]


@dataclass
class Group:
    info: _NameInfo
    types: Any  # normalized Input type cell (tuple / None / BAD)
    concrete_ok: bool  # Concrete Inputs cell normalized (tuple / None), not BAD
    dims_kind: Any  # 1: a sequence; None: missing; BAD; RAW: strings, read by raw_dims_blocks
    rows: NDArray[np.intp]
    free: dict[int, str]  # the per-call slots left out of this group's key (for rows of `arity` arguments)
    arity: int


def _name_info(name: str) -> _NameInfo:
    spec = lookup(name)
    return _NameInfo(name, spec, spec is None or spec.is_autograd_node, {})


def _free_slots(spec: OpSpec, arity: int) -> dict[int, str]:
    """Concrete slots whose value can change how a row is read only through its kind (empty / valid /
    invalid): read as softmax_scale ("float") or max_seqlen ("int") by the signatures that read them, or
    read by none ("any": only whether it is empty counts, for the all-empty check of signature choice).

    Such values change from call to call (max_q of aten flash ops, the scale), so they are left out of
    the group key; varlen rows take their max_seqlen values per row. Only the signatures that accept
    `arity` arguments count: the others are tried only when none of those fits (more arguments read as appended
    ones, or a signature inferred from the roles, ops.choice), and such a group's rows are checked against its
    first row by parse.py. With no signature in range, every signature that takes at least `arity` counts.
    """
    sigs = [sig for sig in spec.signatures if sig.n_args[0] <= arity <= sig.n_args[1]]
    if not sigs:
        sigs = [sig for sig in spec.signatures if sig.n_args[0] <= arity]
    if not sigs:
        return {}
    roles: dict[int, set[str]] = {slot: set() for slot in range(_KEEP_LEN)}
    for sig in sigs:
        for slot, role in _concrete_roles(sig):
            roles.setdefault(slot, set()).add(role)
    free = {}
    for slot, r in roles.items():
        if not r:
            free[slot] = _ANY
        elif len(r) == 1 and _OTHER not in r:
            free[slot] = next(iter(r))
    return free


def _concrete_roles(sig: Signature) -> list[tuple[int, str]]:
    out = [(sig.scale, _FLOAT), (sig.max_seqlen_q, _INT), (sig.max_seqlen_k, _INT)]
    other = (
        sig.causal, sig.custom_mask_type, sig.dropout, sig.window, sig.window_left, sig.window_right,
        sig.efficient_window, sig.qkv_layout_str, sig.mask_type_str,
    )  # fmt: skip
    out += [(slot, _OTHER) for slot in other]
    if sig.mask_type_str is not None:  # TransformerEngine looks for the window list just after the mask
        out += [(slot, _OTHER) for slot in range(sig.mask_type_str + 1, sig.mask_type_str + 4)]
    return [(slot, role) for slot, role in out if slot is not None]


def group_rows(rows: Rows) -> list[Group]:
    """Rows grouped by structure: op name, Input type, Concrete Inputs (per-call scalar slots by kind,
    later) and whether Input Dims is there.

    Rows are first keyed by the identity of their cells (a CSV reader parses each distinct cell string
    once, so repeated cells are one object; the objects stay alive in `rows` while ids are compared),
    then the few identity groups are normalized and merged by value.
    """
    names, dims, types, conc = rows.names, rows.dims, rows.types_in, rows.conc_in
    n = len(names)
    t_keys = _identity_keys(types)
    codes = [_factorize(names), _factorize(t_keys), _factorize(_identity_keys(conc))]
    kinds = list(map(type, dims))
    # 1 a sequence, 2 missing, 3 refused, 4 a string (read later, in bulk); 0 to be read now
    dims_kind = np.fromiter(map(_DIMS_KIND.get, kinds, repeat(0)), dtype=np.int64, count=n)
    if kinds.count(list) + kinds.count(tuple) + kinds.count(str) < n:
        cells: dict[str, Any] = {}
        for i in np.flatnonzero(dims_kind == 0).tolist():
            rows.writable()
            d = rows.dims[i] = dims_cell(dims[i], cells)
            dims_kind[i] = 2 if d is None else 3 if d is BAD else 1
    combined, distinct = dims_kind, 8
    for code, count in codes:
        if distinct * count >= 2**62:  # renumber densely first, so the product fits int64
            _, combined = np.unique(combined, return_inverse=True)
            distinct = int(combined.max()) + 1
        combined, distinct = combined * count + code, distinct * count
    _, first_rows, inverse = np.unique(combined, return_index=True, return_inverse=True)
    infos: dict[str, _NameInfo] = {}
    cells = {}
    merged: dict[Any, int] = {}
    type_codes: dict[Any, int] = {}  # identity key of an Input type cell -> code of its value
    type_values: dict[Any, int] = {}
    part_code: list[int] = []
    described: list[tuple[_NameInfo, Any, Any, Any, dict[int, str]]] = []
    dims_of_kind = {1: 1, 2: None, 3: BAD, 4: RAW}
    for p, (i, kind) in enumerate(zip(first_rows.tolist(), dims_kind[first_rows].tolist(), strict=True)):
        name = names[i] if type(names[i]) is str else str(names[i])
        info = infos.get(name)
        if info is None:
            info = infos[name] = _name_info(name)
        dk = dims_of_kind[kind]
        t = c = None
        free: dict[int, str] = {}
        if info.by_name:
            key: Any = (name,)
        else:
            t, c = types[i], conc[i]
            if type(t) is not tuple:
                t = seq_cell(t, cells, "Input type")
            tk = type_codes.get(t_keys[i])
            if tk is None:  # hash each distinct Input type cell once
                try:
                    tk = type_values.setdefault((t, _types_of(t)), len(type_values))
                except TypeError:
                    tk = -1 - p
                type_codes[t_keys[i]] = tk
            if type(c) is not tuple:
                c = seq_cell(c, cells, "Concrete Inputs")
            keep = None
            if type(c) is tuple and len(c) <= _KEEP_LEN:
                free, keep = info.free(len(c))
            if keep is not None:
                kept = tuple(compress(c, keep))
                key = (name, tk, len(c), kept, _types_of(kept), dk)
            else:
                free, key = {}, (name, tk, -1, c, _types_of(c), dk)
        try:
            code = merged.setdefault(key, len(merged))
        except TypeError:  # an unhashable value inside a cell: its own group
            code = merged.setdefault(("#part", p), len(merged))
        if code == len(described):
            described.append((info, t, c, dk, free))
        part_code.append(code)
        rows.part_concrete.append(c)
    rows.part = inverse.astype(np.int64)
    row_code = np.asarray(part_code, dtype=np.int64)[inverse]
    groups = []
    for members in split_values(row_code):
        info, t, c, dk, free = described[int(row_code[members[0]])]
        arity = len(c) if type(c) is tuple else -1
        groups.append(Group(info, t, c is not BAD, dk, members, free, arity))
    return groups


def _identity_keys(column: Sequence[Any]) -> Sequence[Any]:
    """A cheap grouping key per cell: strings by value (their hash is cached), other cells by identity."""
    kinds = set(map(type, column))
    if kinds == {str}:
        return column
    if str not in kinds:
        return list(map(id, column))
    return [x if type(x) is str else id(x) for x in column]


def _types_of(cell: Any) -> Any:
    """The types of a cell's items: equal values of different types (1, 1.0, True) read differently."""
    return tuple(map(type, cell)) if type(cell) is tuple else type(cell)


def _factorize(column: Sequence[Any]) -> tuple[NDArray[np.int64], int]:
    """A code per cell (equal hashable values share one) and the number of codes."""
    try:
        codes = dict.fromkeys(column)
        for code, key in enumerate(codes):
            codes[key] = code
        return np.fromiter(map(codes.__getitem__, column), dtype=np.int64, count=len(column)), max(len(codes), 1)
    except TypeError:  # an unhashable cell: by identity
        return _factorize([id(x) for x in column])


def free_slot_kinds(
    members: NDArray[np.intp], free: dict[int, str], rows: Rows
) -> tuple[NDArray[np.int64], dict[int, NDArray[np.int64]]]:
    """Per row, one code combining the kind of every per-call scalar; the max_seqlen values by slot.

    Each Concrete Inputs object is read once (rows of one identity group share it).
    """
    code = np.zeros(len(members), dtype=np.int64)
    ints: dict[int, NDArray[np.int64]] = {}
    if not free or not len(members):
        return code, ints
    _, first, back = np.unique(rows.part[members], return_index=True, return_inverse=True)
    cells = [rows.concrete(i) for i in members[first].tolist()]
    if cells[0] is None:
        return code, ints
    columns = list(zip(*cells, strict=True))  # one length per structural group
    distinct = 1
    for slot, role in sorted(free.items()):
        if slot >= len(columns):
            continue
        kinds, numbers = _kinds_of(columns[slot], role)
        if distinct >= 2**60:  # renumber densely, so the code stays an int64
            _, code = np.unique(code, return_inverse=True)
            distinct = int(code.max()) + 1
        code, distinct = code * 3 + kinds[back], distinct * 3
        if numbers is not None:
            ints[slot] = numbers[back]
    return code, ints


def _kinds_of(values: tuple[Any, ...], role: str) -> tuple[NDArray[np.int64], NDArray[np.int64] | None]:
    """Kind of each value for its slot's parser (blank / valid / invalid), and the ints of an int slot."""
    m = len(values)
    parser = {_INT: parse_int_str, _FLOAT: parse_float_str}.get(role)
    if type(values[0]) is str and values.count(values[0]) == m:  # the usual case: one string everywhere
        kind, number = _kind_of(values[0], parser)
        return np.full(m, kind, dtype=np.int64), (np.full(m, number, dtype=np.int64) if role == _INT else None)
    kinds = np.empty(m, dtype=np.int64)
    numbers = np.full(m, NO_INT, dtype=np.int64) if role == _INT else None
    todo = np.arange(m)
    if role != _FLOAT and set(map(type, values)) == {str}:
        text = np.asarray(values, dtype=str)
        if role == _ANY:  # only emptiness counts
            return np.where(np.strings.str_len(np.strings.strip(text)) > 0, _VALID, _BLANK).astype(np.int64), None
        fast = np.strings.isdecimal(text) & (np.strings.str_len(text) <= 18)
        assert numbers is not None
        numbers[fast] = text[fast].astype(np.int64)  # numpy reads Unicode digits as int() does
        kinds[fast] = _VALID
        todo = np.flatnonzero(~fast)
    memo: dict[Any, tuple[int, int]] = {}  # by (type, value): 1 == True, but only one is an integer
    for j in todo.tolist():
        value = values[j]
        try:
            hit = memo.get((type(value), value))
        except TypeError:
            hit = None
        if hit is None:
            hit = _kind_of(value, parser)
            try:
                memo[type(value), value] = hit
            except TypeError:
                pass
        kinds[j] = hit[0]
        if numbers is not None:
            numbers[j] = hit[1]
    return kinds, numbers


def _kind_of(value: Any, parser: Any) -> tuple[int, int]:
    if is_blank(value):
        return _BLANK, NO_INT
    if parser is None:
        return _VALID, NO_INT
    try:
        parsed = parser(value)
    except LiteralParseError:
        return _INVALID, NO_INT
    if parser is parse_float_str and not role_fits("softmax_scale", value):  # a number, but not a scale
        return _INVALID, NO_INT
    if parser is parse_int_str and parsed is not None and -(2**62) < parsed < 2**62:
        return _VALID, int(parsed)
    return _VALID, NO_INT


def split_values(values: NDArray[np.int64]) -> list[NDArray[np.intp]]:
    """Row indices grouped by value (ascending row order inside each group)."""
    if not len(values):
        return []
    if (values == values[0]).all():
        return [np.arange(len(values))]
    order = np.argsort(values, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(values[order])) + 1)


def split_rows(mat: NDArray[np.int64], keep: NDArray[np.bool_]) -> list[NDArray[np.intp]]:
    """Indices of the `keep` rows grouped by identical matrix rows."""
    rows = np.flatnonzero(keep)
    if not len(rows):
        return []
    sub = mat[rows]
    if (sub == sub[0]).all():
        return [rows]
    _, inverse = np.unique(sub, axis=0, return_inverse=True)
    return [rows[part] for part in split_values(inverse.reshape(-1).astype(np.int64))]
