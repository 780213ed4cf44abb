"""Parse a whole ops table at once: one plan per structural group of rows, the shapes read with numpy.

`parse_op` reads one row in 50-170 µs, and a category CSV can have 10^5 rows. Those rows overwhelmingly
share op name, `Input type`, `Concrete Inputs` and the number and rank of their `Input Dims` entries;
only the shape numbers differ. `parse_ops_table` therefore

1. groups rows by that structure. Concrete Inputs slots that carry per-call numbers (softmax_scale,
   max_seqlen, arguments no signature reads) are compared by kind only (empty / valid / invalid for the
   slot's parser), so aten flash rows whose max_q differs still share a group;
2. takes the group's plan from one row (`ops.build.plan_row`: signature, layout, dtypes, mask inputs,
   dropout) and reads the shape numbers of every row as one int64 matrix: from Python lists, or, for
   raw CSV strings, straight from the text's bytes (no Python object per number);
3. runs every check that depends on the numbers vectorized (negative or zero dims, q/k/v agreement,
   GQA divisibility, varlen totals, dout vs q, the seq_kv a window is clipped to), and checks the plan
   against parse_op on one row of the group.

A row whose numbers would change a decision, fail a check or add a warning that quotes them is parsed
by `parse_op` itself, as are rows of structures that need more than their arguments (vLLM, perf_params
fallbacks, unparseable cells). Every field therefore equals what `parse_op` gives for that row
(tests/test_batch_parse.py checks this field by field on real and generated rows). One deliberate
difference: a config with a number beyond int64 (no real shape) cannot be a ConfigTable row, so that row
is reported unmodeled with a reason instead.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import reduce
from itertools import compress, repeat
from operator import iadd
from typing import Any

import numpy as np
from numpy.typing import NDArray

from perf_models.config import AttentionConfig, Direction, Mask, MaskKind, VarlenInfo
from perf_models.dtypes import element_size, matrix_compute_spec
from perf_models.errors import ConfigError
from perf_models.literals import (
    _PLAIN_INT_NEST,
    LiteralParseError,
    _parse_plain_int_nest,
    parse_float_str,
    parse_int_str,
    parse_literal,
)
from perf_models.masks import mask_code
from perf_models.ops import perf_params as pp
from perf_models.ops.build import RowPlan, attn_mask_warning, plan_row
from perf_models.ops.row import Row
from perf_models.ops.specs import OpSpec, Signature
from perf_models.ops.types import Layout, RowError
from perf_models.registry import ParsedOp, lookup, parse_op
from perf_models.table import ConfigTable

__all__ = ["ParsedTable", "parse_ops_table"]

# shared_kv (an MLA latent cache) is not read from any op's arguments yet: ConfigTable.from_arrays defaults it
_TABLE_FIELDS = tuple(f.name for f in fields(ConfigTable) if f.name != "shared_kv")
_SHAPES = ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v")
_INT, _FLOAT, _ANY, _OTHER = "int", "float", "any", "other"
_BLANK, _VALID, _INVALID = 0, 1, 2  # kinds of a per-call scalar value
_NO_INT = np.iinfo(np.int64).min  # "no integer" in a column of max_seqlen values
_KEEP_LEN = 64  # Concrete Inputs longer than this are grouped by their full value
_CHUNK = 2048  # rows whose Input Dims are read together (cache-sized)
_DIGITS_ONLY = bytes(c if 48 <= c <= 57 else 32 for c in range(256))  # bytes.translate tables
_DIGITS_TO_ZERO = bytes(48 if 48 <= c <= 57 else c for c in range(256))
_TEMPLATE_BYTES = frozenset(b"()[], 0")
_DIMS_KIND = {list: 1, tuple: 1, str: 4}
# ('', '0.', 'True'): a tuple (empty, one element with its comma, or several) of plain single-quoted
# strings (no escapes, quotes, line breaks or NULs inside), which literal_eval reads as exactly the
# quoted texts; read with a regex, 10x faster than literal_eval
_Q = r"'[^'\\\n\r\x00]*'"
_QUOTED_TUPLE = re.compile(rf"\([ ]*(?:|{_Q}[ ]*,|{_Q}(?:[ ]*,[ ]*{_Q})+[ ]*,?)[ ]*\)")
_QUOTED = re.compile(r"'([^'\\\n\r\x00]*)'")
_BATCH_LIMIT = 2.0**62  # a product of batch dims at or above this is left to Python's exact ints


class _Bad:
    """A cell parse_op refuses (unparseable literal, wrong container): its rows are parsed one by one."""

    def __repr__(self) -> str:
        return "<bad cell>"


_BAD = _Bad()
_RAW = object()  # Input Dims given as strings


@dataclass(eq=False)
class ParsedTable:
    """What `parse_op` says about every row of an ops table, as columns.

    `table` holds only the modeled rows, in the order of `np.flatnonzero(modeled)`. The per-row object
    columns hold exactly parse_op's values (enum members of Layout / AttentionType / Direction / Source,
    which compare equal to their strings). `per_row` marks the rows that were parsed one by one.
    """

    n: int
    modeled: NDArray[np.bool_]
    table: ConfigTable
    family: NDArray[np.object_]
    layout: NDArray[np.object_]
    attention_type: NDArray[np.object_]
    direction: NDArray[np.object_]
    source: NDArray[np.object_]
    reason: NDArray[np.object_]
    warnings: list[tuple[str, ...]]
    mask_label: NDArray[np.object_]
    dtype_q: NDArray[np.object_]
    per_row: NDArray[np.bool_]
    name: NDArray[np.object_]
    _configs: dict[int, AttentionConfig] = field(default_factory=dict, repr=False)
    _plan_of: NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32), repr=False)
    _plans: list[_GroupPlan] = field(default_factory=list, repr=False)
    _masks: NDArray[np.object_] = field(default_factory=lambda: np.zeros(0, object), repr=False)
    _pos: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, np.intp), repr=False)

    def __len__(self) -> int:
        return self.n

    def config(self, i: int) -> AttentionConfig | None:
        """Row i's AttentionConfig (built on first use for grouped rows); None when the row is unmodeled."""
        i = int(i)
        if not -self.n <= i < self.n:
            raise IndexError(f"row {i} out of range for a table of {self.n} rows")
        i %= self.n
        if i in self._configs:
            return self._configs[i]
        if not self.modeled[i]:
            return None
        cfg = _config_from_table(self.table, int(self._pos[i]), self._plans[self._plan_of[i]], self._masks[i])
        self._configs[i] = cfg
        return cfg

    def op(self, i: int) -> ParsedOp:
        """Row i as the ParsedOp parse_op returns for it."""
        return ParsedOp(
            name=self.name[i],
            config=self.config(i),
            reason=self.reason[i],
            family=self.family[i],
            layout=self.layout[i],
            attention_type=self.attention_type[i],
            direction=self.direction[i],
            warnings=self.warnings[i],
            source=self.source[i],
        )

    def with_rows(self, updates: Mapping[int, ParsedOp]) -> ParsedTable:
        """A copy with the rows in `updates` replaced by the given ParsedOps (e.g. a perf_params retry)."""
        res = _Results.from_table(self)
        for i, op in updates.items():
            res.set_op(int(i), op)
        kept = np.flatnonzero(self.modeled & ~res.per_row)  # grouped rows left as they were
        res.pieces.append((kept, {f: getattr(self.table, f)[self._pos[kept]] for f in _TABLE_FIELDS}))
        return res.finish()


@dataclass(frozen=True, slots=True)
class _GroupPlan:
    """What config(i) needs besides the table columns."""

    dtypes: dict[str, str | None]
    direction: Direction
    dropout: float


def parse_ops_table(
    names: Sequence[Any],
    input_dims: Sequence[Any],
    input_types: Sequence[Any],
    concrete_inputs: Sequence[Any],
    perf_params: Sequence[Any] | None = None,
) -> ParsedTable:
    """`parse_op` over every row, as columns (see the module docstring for how).

    Cells are what `parse_op` takes: already-parsed values (tuples, lists, dicts, None/NaN) or raw
    strings. `perf_params` None means no row has any.
    """
    n = len(names)
    columns = {"input_dims": input_dims, "input_types": input_types, "concrete_inputs": concrete_inputs}
    if perf_params is not None:
        columns["perf_params"] = perf_params
    for label, col in columns.items():
        if len(col) != n:
            raise ValueError(f"parse_ops_table: {label} has {len(col)} rows, names has {n}: pass equal lengths")
    # positional access everywhere (a pandas Series would index by label)
    names, input_dims, input_types, concrete_inputs = (
        c if isinstance(c, list | tuple) else list(c) for c in (names, input_dims, input_types, concrete_inputs)
    )
    if perf_params is not None and not isinstance(perf_params, list | tuple):
        perf_params = list(perf_params)
    rows = _Rows(names, input_dims, input_types, concrete_inputs, perf_params)
    with _gc_paused():
        res = _Results(n, rows.names)
        for group in _group_rows(rows):
            _parse_group(group, rows, res)
        return res.finish()


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: its collections would rescan the caller's ~10^6 freshly
    parsed cell objects over and over while this creates many small containers (and no cycles)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- input rows and their structural groups ----------------------------------------------------------


class _Rows:
    """The input columns, plus normalized copies of the cells that needed it (strings parsed, lists tupled)."""

    def __init__(self, names: Any, dims: Any, types: Any, concrete: Any, perf_params: Any) -> None:
        self.names_in, self.dims_in, self.types_in, self.conc_in = names, dims, types, concrete
        self.pp_in = perf_params
        self.names = names if set(map(type, names)) <= {str} else [str(name) for name in names]
        self.dims = dims  # copied before the first write (see writable)
        self.part = np.zeros(0, dtype=np.int64)  # per row: its identity group (rows sharing cell objects)
        self.part_concrete: list[Any] = []  # per identity group: Concrete Inputs as a tuple / None / _BAD

    def writable(self) -> None:
        """An own copy of Input Dims, so normalizing a cell never changes the caller's list."""
        if self.dims is self.dims_in:
            self.dims = list(self.dims)

    def concrete(self, i: int) -> Any:
        return self.part_concrete[self.part[i]]

    def parse(self, i: int) -> ParsedOp:
        params = None if self.pp_in is None else self.pp_in[i]
        return parse_op(self.names_in[i], self.dims_in[i], self.types_in[i], self.conc_in[i], params)

    def parse_without_params(self, i: int) -> ParsedOp:
        return parse_op(self.names_in[i], self.dims_in[i], self.types_in[i], self.conc_in[i], None)

    def pp_absent(self, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        if self.pp_in is None:
            return np.ones(len(rows), dtype=bool)
        return np.fromiter((_is_missing(self.pp_in[i]) for i in rows), dtype=bool, count=len(rows))


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
class _Group:
    info: _NameInfo
    types: Any  # normalized Input type cell (tuple / None / _BAD)
    concrete_ok: bool  # Concrete Inputs cell normalized (tuple / None), not _BAD
    dims_kind: Any  # 1: a sequence; None: missing; _BAD; _RAW: strings, read by _raw_dims_blocks
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
    `arity` arguments count: the others are never chosen for such a row.
    """
    sigs = [sig for sig in spec.signatures if sig.n_args[0] <= arity <= sig.n_args[1]]
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


def _group_rows(rows: _Rows) -> list[_Group]:
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
            d = rows.dims[i] = _dims_cell(dims[i], cells)
            dims_kind[i] = 2 if d is None else 3 if d is _BAD else 1
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
    dims_of_kind = {1: 1, 2: None, 3: _BAD, 4: _RAW}
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
                t = _seq_cell(t, cells, "Input type")
            tk = type_codes.get(t_keys[i])
            if tk is None:  # hash each distinct Input type cell once
                try:
                    tk = type_values.setdefault((t, _types_of(t)), len(type_values))
                except TypeError:
                    tk = -1 - p
                type_codes[t_keys[i]] = tk
            if type(c) is not tuple:
                c = _seq_cell(c, cells, "Concrete Inputs")
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
    for members in _split_values(row_code):
        info, t, c, dk, free = described[int(row_code[members[0]])]
        arity = len(c) if type(c) is tuple else -1
        groups.append(_Group(info, t, c is not _BAD, dk, members, free, arity))
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


def _seq_cell(value: Any, cache: dict[str, Any], field_name: str) -> Any:
    """An Input type / Concrete Inputs cell as Row.parse reads it: a tuple, None (missing) or _BAD."""
    if isinstance(value, str):
        seen = cache.setdefault(field_name, {})
        if value not in seen:
            quoted = _QUOTED_TUPLE.fullmatch(value) if "np." not in value else None
            try:
                parsed = tuple(_QUOTED.findall(value)) if quoted else parse_literal(value, field_name)
                seen[value] = _container(parsed, tuple)
            except LiteralParseError:
                seen[value] = _BAD
        return seen[value]
    return _container(value, tuple)


def _dims_cell(value: Any, cache: dict[str, Any]) -> Any:
    """An Input Dims cell: a list/tuple of entries, None (missing) or _BAD."""
    if isinstance(value, str):
        seen = cache.setdefault("Input Dims", {})
        if value not in seen:
            try:
                seen[value] = _container(parse_literal(value, "Input Dims"), None)
            except LiteralParseError:
                seen[value] = _BAD
        return seen[value]
    return _container(value, None)


def _container(parsed: Any, convert: Any) -> Any:
    """Row.parse's reading of a parsed cell (`_as_tuple`): None/NaN/float is missing, a non-string
    sequence is the cell, anything else is refused. `convert` makes the sequence hashable."""
    if type(parsed) is tuple:
        return parsed
    if parsed is None or isinstance(parsed, float):
        return None
    if isinstance(parsed, str) or not isinstance(parsed, Sequence):
        return _BAD
    if convert is None:
        return parsed if type(parsed) is list or type(parsed) is tuple else tuple(parsed)
    return parsed if type(parsed) is tuple else convert(parsed)


def _is_missing(value: Any) -> bool:
    """perf_params that as_mapping reads as None (no fallback, no error)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return isinstance(value, str) and value.strip().lower() in ("", "nan", "none", "null")


# --- one structural group ----------------------------------------------------------------------------


def _parse_group(g: _Group, rows: _Rows, res: _Results) -> None:
    spec = g.info.spec
    if spec is None:
        res.broadcast(g.rows, rows.parse(int(g.rows[0])))
        return
    if spec.is_autograd_node:
        _broadcast_unless_params(g.rows, rows, res)
        return
    if g.types is _BAD or not g.concrete_ok or g.dims_kind is _BAD:
        res.one_by_one(g.rows, rows)
        return
    if g.dims_kind is None:  # "missing Input Dims": nothing else about the row matters
        _broadcast_unless_params(g.rows, rows, res, expect="missing Input Dims")
        return
    if g.dims_kind is _RAW:
        blocks, rest = _raw_dims_blocks(g.rows, rows)
        blocks += _parsed_rest(rest, rows, res)
    else:
        blocks = _dims_blocks(g.rows, rows, res)
    for sub, mat, lens in blocks:
        if g.free and len(lens) != g.arity:  # Input Dims sets the argument count: other signatures apply
            res.one_by_one(sub, rows)
            continue
        kinds, ints = _free_slot_kinds(sub, g.free, rows)
        for part in _split_values(kinds):
            _parse_block(g, sub[part], mat[part], lens, {s: v[part] for s, v in ints.items()}, rows, res)


def _parsed_rest(
    members: NDArray[np.intp], rows: _Rows, res: _Results
) -> list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]]:
    """Input Dims strings the fast reader left: parsed one by one, then read as parsed cells."""
    if not len(members):
        return []
    rows.writable()
    cells: dict[str, Any] = {}
    kind = np.empty(len(members), dtype=np.int64)
    for j, i in enumerate(members.tolist()):
        d = rows.dims[i] = _dims_cell(rows.dims[i], cells)
        kind[j] = 0 if d is None else 1 if d is _BAD else 2
    _broadcast_unless_params(members[kind == 0], rows, res, expect="missing Input Dims")
    res.one_by_one(members[kind == 1], rows)
    return _dims_blocks(members[kind == 2], rows, res) if (kind == 2).any() else []


def _broadcast_unless_params(
    members: NDArray[np.intp], rows: _Rows, res: _Results, expect: str | None = None
) -> None:
    """Rows whose outcome depends only on the group's structure: one parse_op for all rows without
    perf_params (rows with perf_params fall back on them, one by one)."""
    absent = rows.pp_absent(members)
    res.one_by_one(members[~absent], rows)
    if absent.any():
        first = members[absent]
        op = rows.parse_without_params(int(first[0]))
        if expect is not None and (op.reason is None or not op.reason.startswith(expect)):
            res.one_by_one(first, rows)  # not the structural failure the plan foresaw
            return
        res.broadcast(first, op)


def _dims_blocks(
    members: NDArray[np.intp], rows: _Rows, res: _Results
) -> list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]]:
    """Split rows by the length of every Input Dims entry; each block's numbers as one (m, L) matrix.

    Rows with an entry that is not a flat list/tuple of Python ints >= 0 (Tensor[] lists, None or ''
    entries, bools, floats, negative or huge numbers) are parsed one by one: Row.parse refuses or
    reshapes them. Rows are read in chunks so that the several passes over a chunk's cell objects hit
    the CPU cache (the cells of 10^5 rows are tens of MB of scattered objects).
    """
    by_pattern: dict[tuple[int, ...], list[tuple[NDArray[np.intp], NDArray[np.int64]]]] = {}
    for start in range(0, len(members), _CHUNK):
        for sub, mat, pattern in _dims_chunk(members[start : start + _CHUNK], rows, res):
            by_pattern.setdefault(pattern, []).append((sub, mat))
    return [
        (np.concatenate([s for s, _ in parts]), np.concatenate([m for _, m in parts]), pattern)
        for pattern, parts in by_pattern.items()
    ]


def _dims_chunk(
    members: NDArray[np.intp], rows: _Rows, res: _Results
) -> list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]]:
    cells = [rows.dims[i] for i in members.tolist()]
    n_entries = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    blocks = []
    for e_rows in _split_values(n_entries):
        width = int(n_entries[e_rows[0]])
        sub = cells if len(e_rows) == len(cells) else [cells[j] for j in e_rows.tolist()]
        entries: list[Any] = reduce(iadd, sub, [])  # list += list: the fastest flattening in CPython
        cols = [entries[j::width] for j in range(width)]  # entry j of every row
        ok, lens = _entry_lengths(cols, len(sub))
        res.one_by_one(members[e_rows[~ok]], rows)
        for part in _split_rows(lens, ok):
            pattern = tuple(int(x) for x in lens[part[0]])
            picked = None if len(part) == len(sub) else part.tolist()
            mat, good = _int_matrix(cols, pattern, picked, len(part))
            res.one_by_one(members[e_rows[part[~good]]], rows)
            if good.any():
                blocks.append((members[e_rows[part[good]]], mat[good], pattern))
    return blocks


def _raw_dims_blocks(
    members: NDArray[np.intp], rows: _Rows
) -> tuple[list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]], NDArray[np.intp]]:
    """Input Dims strings read as bytes with numpy: no Python object per number.

    Every digit run becomes one '0' in a row's template; rows with the same template parse alike (the
    literal reader's plain int-nest path depends only on the brackets, commas and spaces), so one row's
    parse_literal gives every row's entry lengths, and the numbers of all rows come from one
    np.fromstring. Rows whose template holds anything else (signs, letters, tabs, non-ASCII), a number
    of more than 18 digits, or a structure that is not flat shapes are returned for the literal reader.
    """
    texts = [rows.dims[i] for i in members.tolist()]
    m = len(texts)
    joined = "\n".join(texts)
    if joined.count("\n") != m - 1 or not joined.isascii():
        return [], members
    data = joined.encode("ascii")
    zeroed = np.frombuffer(data.translate(_DIGITS_TO_ZERO), dtype=np.uint8)
    zeros = zeroed == 48
    keep = np.ones(len(zeros), dtype=bool)
    keep[1:] = ~(zeros[1:] & zeros[:-1])  # the first digit of each run
    marked = zeroed[keep].tobytes()  # each number -> "0"
    first = marked.split(b"\n", 1)[0]
    if marked == b"\n".join([first] * m):
        template_of, templates = np.zeros(m, dtype=np.int64), [first]
    else:
        codes: dict[bytes, int] = {}
        template_of = np.fromiter((codes.setdefault(t, len(codes)) for t in marked.split(b"\n")), np.int64, m)
        templates = list(codes)
    runs = np.asarray([t.count(b"0") for t in templates], dtype=np.int64)[template_of]
    offsets = np.concatenate([[0], np.cumsum(runs)])
    numbers = np.fromstring(data.translate(_DIGITS_ONLY), dtype=np.int64, sep=" ") if offsets[-1] else None
    if numbers is not None and len(numbers) != offsets[-1]:
        return [], members
    odd = np.zeros(m, dtype=bool)  # a number of 19+ digits may not fit int64 (fromstring saturates)
    if numbers is not None:
        suspect = np.flatnonzero((numbers >= 10**18) | (numbers < 0))
        odd[np.searchsorted(offsets, suspect, side="right") - 1] = True
    blocks, rest = [], [np.flatnonzero(odd)]
    for code in _split_values(template_of):
        code = code[~odd[code]]
        if not len(code):
            continue
        lens = _template_lengths(templates[int(template_of[code[0]])], texts[int(code[0])])
        if lens is None:
            rest.append(code)
            continue
        width = sum(lens)
        if numbers is None or not width:
            mat = np.zeros((len(code), width), dtype=np.int64)
        else:
            mat = numbers[offsets[code][:, None] + np.arange(width)]
        blocks.append((members[code], mat, lens))
    return blocks, members[np.sort(np.concatenate(rest))]


def _template_lengths(template: bytes, text: str) -> tuple[int, ...] | None:
    """Entry lengths of every Input Dims string with this template, from one of them; None when the
    strings are not plain flat shapes (a Tensor[] entry, a bare number, a path the plain reader refuses)."""
    if not set(template) <= _TEMPLATE_BYTES or not _PLAIN_INT_NEST.fullmatch(text.strip()):
        return None
    try:
        parsed = _parse_plain_int_nest(text.strip())
    except ValueError:
        return None
    if not isinstance(parsed, tuple) or parse_literal(text) != parsed:
        return None
    lens = []
    for entry in parsed:
        if not isinstance(entry, tuple) or not all(type(x) is int for x in entry):
            return None
        lens.append(len(entry))
    if sum(lens) != template.count(b"0"):
        return None
    return tuple(lens)


def _entry_lengths(cols: list[list[Any]], m: int) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Per row: are all entries lists/tuples, and the length of each."""
    ok = np.ones(m, dtype=bool)
    lens = np.zeros((m, len(cols)), dtype=np.int64)
    for j, col in enumerate(cols):
        try:
            if col[0] in ([], ()) and (col.count([]) == m or col.count([]) + col.count(()) == m):
                continue  # an argument that is never a tensor
        except (TypeError, ValueError):  # an entry with an odd __eq__ (an array): checked below
            pass
        if not set(map(type, col)) <= {list, tuple}:
            flags = np.fromiter((type(x) is list or type(x) is tuple for x in col), dtype=bool, count=m)
            ok &= flags
            col = cols[j] = [x if f else () for x, f in zip(col, flags.tolist(), strict=True)]
        lens[:, j] = np.fromiter(map(len, col), dtype=np.int64, count=m)
    return ok, lens


def _int_matrix(
    cols: list[list[Any]], pattern: tuple[int, ...], picked: list[int] | None, m: int
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """The numbers of m rows as an (m, sum(pattern)) matrix, and which rows hold only ints >= 0."""
    good = np.ones(m, dtype=bool)
    parts = []
    for col, width in zip(cols, pattern, strict=True):
        if not width:
            continue
        if picked is not None:
            col = [col[r] for r in picked]
        flat: list[Any] = reduce(iadd, col, [])
        kinds = list(map(type, flat))
        if kinds.count(int) != len(flat):
            bad = [k for k, t in enumerate(kinds) if t is not int]
            good[np.asarray(bad) // width] = False
            flat = [x if t is int else 0 for x, t in zip(flat, kinds, strict=True)]
        try:
            values = np.fromiter(flat, dtype=np.int64, count=len(flat))
        except OverflowError:
            huge = np.fromiter((not -(2**63) <= x < 2**63 for x in flat), dtype=bool, count=len(flat))
            good &= ~huge.reshape(m, width).any(axis=1)
            values = np.fromiter((0 if h else x for x, h in zip(flat, huge, strict=True)), np.int64, len(flat))
        parts.append(values.reshape(m, width))
    mat = np.hstack(parts) if parts else np.zeros((m, 0), dtype=np.int64)
    good &= ~(mat < 0).any(axis=1)
    return mat, good


def _free_slot_kinds(
    members: NDArray[np.intp], free: dict[int, str], rows: _Rows
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
    numbers = np.full(m, _NO_INT, dtype=np.int64) if role == _INT else None
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
    if value is None or (isinstance(value, str) and not value.strip()) or (
        isinstance(value, float) and value != value
    ):
        return _BLANK, _NO_INT
    if parser is None:
        return _VALID, _NO_INT
    try:
        parsed = parser(value)
    except LiteralParseError:
        return _INVALID, _NO_INT
    if parser is parse_int_str and parsed is not None and -(2**62) < parsed < 2**62:
        return _VALID, int(parsed)
    return _VALID, _NO_INT


def _split_values(values: NDArray[np.int64]) -> list[NDArray[np.intp]]:
    """Row indices grouped by value (ascending row order inside each group)."""
    if not len(values):
        return []
    if (values == values[0]).all():
        return [np.arange(len(values))]
    order = np.argsort(values, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(values[order])) + 1)


def _split_rows(mat: NDArray[np.int64], keep: NDArray[np.bool_]) -> list[NDArray[np.intp]]:
    """Indices of the `keep` rows grouped by identical matrix rows."""
    rows = np.flatnonzero(keep)
    if not len(rows):
        return []
    sub = mat[rows]
    if (sub == sub[0]).all():
        return [rows]
    _, inverse = np.unique(sub, axis=0, return_inverse=True)
    return [rows[part] for part in _split_values(inverse.reshape(-1).astype(np.int64))]


# --- one block: same structure, same entry lengths, same scalar kinds ---------------------------------


def _parse_block(
    g: _Group,
    members: NDArray[np.intp],
    mat: NDArray[np.int64],
    lens: tuple[int, ...],
    ints: dict[int, NDArray[np.int64]],
    rows: _Rows,
    res: _Results,
) -> None:
    spec = g.info.spec
    assert spec is not None
    rep = int(members[0])
    try:
        plan = plan_row(spec, Row.parse(rows.dims[rep], g.types, rows.concrete(rep)))
    except RowError:
        res.one_by_one(members, rows)
        return
    if plan.error is not None and not plan.error_after_shapes:
        _broadcast_unless_params(members, rows, res, expect=plan.error)
        return
    shapes = _shapes(plan, mat, lens, ints, rows.concrete(rep), g.types)
    if shapes is None:
        res.one_by_one(members, rows)
        return
    if plan.error is not None:  # rows whose shapes pass fail with the plan's error, the others earlier
        res.one_by_one(members[shapes.bad], rows)
        _broadcast_unless_params(members[~shapes.bad], rows, res, expect=plan.error)
        return
    bad = shapes.bad | shapes.quirk
    res.one_by_one(members[bad], rows)
    if not bad.all():
        _build_block(spec, plan, members[~bad], shapes.take(~bad), rows, res)


@dataclass
class _ShapeCols:
    """Shape columns of a block: `bad` rows fail in _shapes, `quirk` rows need parse_op for another reason."""

    cols: dict[str, NDArray[np.int64]]
    attn_mask: NDArray[np.int64] | None  # the attn_mask/bias entry of each row, when the op has one
    bad: NDArray[np.bool_]
    quirk: NDArray[np.bool_]

    def take(self, keep: NDArray[np.bool_]) -> _ShapeCols:
        attn = None if self.attn_mask is None else self.attn_mask[keep]
        return _ShapeCols({k: v[keep] for k, v in self.cols.items()}, attn, self.bad[keep], self.quirk[keep])


def _shapes(
    plan: RowPlan,
    mat: NDArray[np.int64],
    lens: tuple[int, ...],
    ints: dict[int, NDArray[np.int64]],
    rep_concrete: Any,
    rep_types: Any,
) -> _ShapeCols | None:
    """build_from_row's `_shapes` (and the later number checks) over a block; None when every row fails."""
    sig = plan.signature
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(int)
    m = len(mat)

    def entry(slot: int | None) -> NDArray[np.int64]:
        if slot is None or slot >= len(lens):
            return mat[:, 0:0]
        return mat[:, offsets[slot] : offsets[slot + 1]]

    q_full, k_full, v_full = entry(sig.q), entry(sig.k), entry(sig.v)
    lq = q_full.shape[1]
    quirk = np.zeros(m, dtype=bool)
    if plan.layout is Layout.BHND:
        dense = _dense_bhnd(q_full, k_full, v_full)
    elif plan.layout is Layout.SBHD:
        dense = _dense_4d(q_full, k_full, v_full, batch_axis=1, seq_axis=0)
    elif plan.layout is Layout.BNHD and not plan.varlen:
        dense = _dense_4d(q_full, k_full, v_full, batch_axis=0, seq_axis=1)
    else:
        row = Row(dims=None, types=rep_types, concrete=rep_concrete)
        cu_q, cu_k = entry(sig.cu_seqlens_q), entry(sig.cu_seqlens_k)
        varlen = _varlen(sig, q_full, k_full, v_full, cu_q, cu_k, ints, row)
        if varlen is None:
            return None
        cols, bad, quirk = varlen
        dense = cols, bad
    if dense is None:
        return None
    cols, bad = dense
    if sig.dout is not None and entry(sig.dout).shape[1]:
        dout = entry(sig.dout)
        if dout.shape[1] != lq:
            quirk = np.ones(m, dtype=bool)  # every row warns, quoting its shapes
        else:
            quirk = quirk | (dout[:, :-1] != q_full[:, :-1]).any(axis=1)
    quirk = quirk | (cols["heads_q"] % np.maximum(cols["heads_kv"], 1) != 0)
    attn = entry(sig.attn_mask) if sig.attn_mask is not None and entry(sig.attn_mask).shape[1] else None
    return _ShapeCols(cols, attn, bad, quirk & ~bad)


def _zero(*arrays: NDArray[np.int64]) -> NDArray[np.bool_]:
    out = np.zeros(len(arrays[0]), dtype=bool)
    for a in arrays:
        out |= (a == 0).any(axis=1)
    return out


def _dense_bhnd(
    q: NDArray[np.int64], k: NDArray[np.int64], v: NDArray[np.int64]
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.bool_]] | None:
    lq = q.shape[1]
    if lq not in (3, 4, 5, 6) or k.shape[1] != lq or v.shape[1] != lq:
        return None  # require_dims fails for every row, quoting its shape
    bad = _zero(q, k, v) | (q[:, :-3] != k[:, :-3]).any(axis=1) | (k[:, :-1] != v[:, :-1]).any(axis=1)
    if lq > 3:
        lead = q[:, :-3]
        bad |= lead.astype(np.float64).prod(axis=1) >= _BATCH_LIMIT
        batch = np.where(bad[:, None], 1, lead).prod(axis=1) if lq > 4 else lead[:, 0].copy()
    else:
        batch = np.ones(len(q), dtype=np.int64)
    cols = {
        "batch": batch, "heads_q": q[:, -3], "heads_kv": k[:, -3], "seq_q": q[:, -2], "seq_kv": k[:, -2],
        "head_dim_qk": q[:, -1], "head_dim_v": v[:, -1],
    }  # fmt: skip
    return cols, bad


def _dense_4d(
    q: NDArray[np.int64], k: NDArray[np.int64], v: NDArray[np.int64], batch_axis: int, seq_axis: int
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.bool_]] | None:
    if q.shape[1] != 4 or k.shape[1] != 4 or v.shape[1] != 4:
        return None
    bad = _zero(q, k, v) | (q[:, batch_axis] != k[:, batch_axis]) | (k[:, :-1] != v[:, :-1]).any(axis=1)
    cols = {
        "batch": q[:, batch_axis], "heads_q": q[:, 2], "heads_kv": k[:, 2], "seq_q": q[:, seq_axis],
        "seq_kv": k[:, seq_axis], "head_dim_qk": q[:, 3], "head_dim_v": v[:, 3],
    }  # fmt: skip
    return cols, bad


def _varlen(
    sig: Signature,
    q: NDArray[np.int64],
    k: NDArray[np.int64],
    v: NDArray[np.int64],
    cu_q: NDArray[np.int64],
    cu_k: NDArray[np.int64],
    ints: dict[int, NDArray[np.int64]],
    row: Row,
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.bool_], NDArray[np.bool_]] | None:
    lq = q.shape[1]
    if lq not in (3, 4) or k.shape[1] != lq or v.shape[1] != lq or cu_q.shape[1] != 1:
        return None
    m = len(q)
    bad = _zero(q, k, v)
    if lq == 4:
        bad |= q[:, 0] != 1
        q, k, v = q[:, 1:], k[:, 1:], v[:, 1:]
    bad |= (k[:, :-1] != v[:, :-1]).any(axis=1)
    quirk = (cu_k[:, 0] != cu_q[:, 0]) if cu_k.shape[1] else np.zeros(m, dtype=bool)
    maxes = []
    for slot in (sig.max_seqlen_q, sig.max_seqlen_k):
        if slot is None:
            return None  # "missing max_seqlen" for every row
        if slot in ints:
            maxes.append(ints[slot])
            continue
        try:
            value = row.int_at(slot, "max_seqlen")
        except RowError:
            return None
        if value is None or not -(2**62) < value < 2**62:
            return None
        maxes.append(np.full(m, value, dtype=np.int64))
    max_q, max_k = maxes
    num_seqs = cu_q[:, 0] - 1
    total_q, total_kv = q[:, 0], k[:, 0]
    bad |= (max_q == _NO_INT) | (max_k == _NO_INT) | (num_seqs <= 0) | (max_q <= 0) | (max_k <= 0)
    bad |= (max_q > total_q) | (max_k > total_kv)
    cols = {
        "batch": num_seqs, "heads_q": q[:, 1], "heads_kv": k[:, 1], "seq_q": max_q, "seq_kv": max_k,
        "head_dim_qk": q[:, 2], "head_dim_v": v[:, 2], "num_seqs": num_seqs, "total_q": total_q,
        "total_kv": total_kv, "max_q": max_q, "max_kv": max_k,
    }  # fmt: skip
    return cols, bad, quirk


def _build_block(
    spec: OpSpec, plan: RowPlan, members: NDArray[np.intp], shapes: _ShapeCols, rows: _Rows, res: _Results
) -> None:
    """Configs of rows that pass every check: the mask per window-clipping case, one parse_op as a check."""
    cols = shapes.cols
    left, right = plan.window
    seq_kv = cols["seq_kv"]
    case = (left >= seq_kv).astype(np.int64) * 2 + (right >= seq_kv)  # what mask_from clips to -1
    masks: list[Mask | None] = [None] * 4
    for c in np.unique(case):
        j = int(np.flatnonzero(case == c)[0])
        masks[c] = pp.mask_from(plan.causal, plan.alignment, left, right, int(seq_kv[j]))
    mask_of = np.empty(4, dtype=object)
    mask_of[:] = masks
    row_masks = mask_of[case]
    dtypes = plan.dtypes
    assert dtypes is not None
    gplan = _GroupPlan(dtypes, spec.direction, plan.dropout)
    table_cols = _table_columns(cols, gplan, masks, case)
    check = rows.parse(int(members[0]))
    mine = _config_from_columns({k: v[0] for k, v in table_cols.items()}, gplan, row_masks[0])
    if check.config is None or check.config != mine:
        res.one_by_one(members, rows)  # the plan and parse_op disagree: trust parse_op
        return
    warnings: Any = check.warnings
    if shapes.attn_mask is not None:  # the last warning quotes the row's mask tensor and mask label
        head, slot = check.warnings[:-1], plan.signature.attn_mask
        assert slot is not None
        warnings = [
            (*head, attn_mask_warning(slot, tuple(dims), mask))
            for dims, mask in zip(shapes.attn_mask.tolist(), row_masks, strict=True)
        ]
    labels = np.empty(4, dtype=object)
    labels[:] = [None if mk is None else mk.label for mk in masks]
    res.grouped(members, check, warnings, labels[case], row_masks, gplan, table_cols)


def _table_columns(
    cols: dict[str, NDArray[np.int64]], gplan: _GroupPlan, masks: list[Mask | None], case: NDArray[np.int64]
) -> dict[str, NDArray[Any]]:
    """ConfigTable columns of a block (what from_configs would give for its configs)."""
    m = len(case)
    dtypes = gplan.dtypes
    dq = dtypes["q"]
    assert dq is not None
    dk = dtypes["k"] or dq
    sizes = [element_size(d) for d in (dq, dk, dtypes["v"] or dq, dtypes["o"] or dq, dk)]
    out: dict[str, Any] = {name: np.asarray(cols[name], dtype=np.int64) for name in _SHAPES}
    for name, size in zip(("elem_q", "elem_k", "elem_v", "elem_o", "elem_kv_cache"), sizes, strict=True):
        out[name] = np.full(m, size, dtype=np.float64)
    out["is_bwd"] = np.full(m, gplan.direction is Direction.BWD)
    known = [mk or Mask() for mk in masks]  # cases that do not occur get a placeholder
    out["mask_code"] = np.array([mask_code(mk) for mk in known], dtype=np.int8)[case]
    windows = np.array([_window_of(mk) for mk in known], dtype=np.int64)
    out["window_left"], out["window_right"] = windows[case, 0], windows[case, 1]
    for name in ("num_seqs", "total_q", "total_kv", "max_q", "max_kv"):
        out[name] = np.asarray(cols[name], dtype=np.int64) if name in cols else np.zeros(m, dtype=np.int64)
    for name in ("sum_ctx", "num_requests", "sum_query_tokens"):
        out[name] = np.zeros(m, dtype=np.int64)
    out["compute_spec"] = np.full(m, _compute_spec(dq), dtype=object)
    return out


def _window_of(mask: Mask) -> tuple[int, int]:
    if mask.kind is MaskKind.SLIDING_WINDOW:
        return mask.window_left, mask.window_right
    return -1, -1


def _compute_spec(dtype_q: str) -> str | None:
    """ConfigTable.from_configs' compute_spec; None for a q dtype GEMMs do not run on (it would raise)."""
    try:
        return matrix_compute_spec(dtype_q)
    except ConfigError:
        return None


# --- configs <-> columns -------------------------------------------------------------------------------


def _config_from_columns(row: Mapping[str, Any], gplan: _GroupPlan, mask: Mask) -> AttentionConfig:
    varlen = None
    if row["num_seqs"] > 0:
        varlen = VarlenInfo(
            total_q=int(row["total_q"]),
            total_kv=int(row["total_kv"]),
            num_seqs=int(row["num_seqs"]),
            max_seqlen_q=int(row["max_q"]),
            max_seqlen_kv=int(row["max_kv"]),
        )
    dtypes = gplan.dtypes
    return AttentionConfig(
        batch=int(row["batch"]),
        heads_q=int(row["heads_q"]),
        heads_kv=int(row["heads_kv"]),
        seq_q=int(row["seq_q"]),
        seq_kv=int(row["seq_kv"]),
        head_dim_qk=int(row["head_dim_qk"]),
        head_dim_v=int(row["head_dim_v"]),
        dtype_q=dtypes["q"],  # type: ignore[arg-type]
        dtype_k=dtypes.get("k"),
        dtype_v=dtypes.get("v"),
        dtype_o=dtypes.get("o"),
        direction=gplan.direction,
        mask=mask,
        dropout_p=gplan.dropout,
        varlen=varlen,
    )


def _config_from_table(table: ConfigTable, pos: int, gplan: _GroupPlan, mask: Mask) -> AttentionConfig:
    return _config_from_columns({name: getattr(table, name)[pos] for name in _TABLE_FIELDS}, gplan, mask)


def _columns_of_configs(configs: list[AttentionConfig]) -> dict[str, NDArray[Any]]:
    """ConfigTable.from_configs' columns (compute_spec None where from_configs would raise)."""
    out: dict[str, list[Any]] = {name: [] for name in _TABLE_FIELDS}
    for cfg in configs:
        for name in _SHAPES:
            out[name].append(getattr(cfg, name))
        out["elem_q"].append(element_size(cfg.dtype_q))
        out["elem_k"].append(element_size(cfg.dtype_k or cfg.dtype_q))
        out["elem_v"].append(element_size(cfg.dtype_v or cfg.dtype_q))
        out["elem_o"].append(element_size(cfg.dtype_o or cfg.dtype_q))
        out["elem_kv_cache"].append(element_size(cfg.kv_dtype))
        out["is_bwd"].append(cfg.direction is Direction.BWD)
        out["mask_code"].append(mask_code(cfg.mask))
        left, right = _window_of(cfg.mask)
        out["window_left"].append(left)
        out["window_right"].append(right)
        v, p = cfg.varlen, cfg.paged
        out["num_seqs"].append(v.num_seqs if v else 0)
        out["total_q"].append(v.total_q if v else 0)
        out["total_kv"].append(v.total_kv if v else 0)
        out["max_q"].append(v.max_seqlen_q if v else 0)
        out["max_kv"].append(v.max_seqlen_kv if v else 0)
        out["sum_ctx"].append(p.sum_context_tokens if p else 0)
        out["num_requests"].append(p.num_requests if p else 0)
        out["sum_query_tokens"].append((p.sum_query_tokens or 0) if p else 0)
        out["compute_spec"].append(_compute_spec(cfg.dtype_q))
    return {name: np.asarray(values, dtype=_column_dtype(name)) for name, values in out.items()}


def _outside_int64(cfg: AttentionConfig) -> str | None:
    """Why a config cannot be a ConfigTable row (an int64 overflow), or None."""
    values = {name: getattr(cfg, name) for name in _SHAPES}
    for part in (cfg.varlen, cfg.paged):
        if part is not None:
            values.update((f.name, getattr(part, f.name)) for f in fields(part) if f.name != "context_lens")
    for name, value in values.items():
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            return f"{name}={value} does not fit a 64-bit integer: the row's shapes are not plausible"
    return None


def _column_dtype(name: str) -> Any:
    if name.startswith("elem_"):
        return np.float64
    return {"is_bwd": np.bool_, "mask_code": np.int8, "compute_spec": object}.get(name, np.int64)


# --- results -------------------------------------------------------------------------------------------


class _Results:
    """Per-row fields as they are decided, then assembled into a ParsedTable."""

    def __init__(self, n: int, names: list[str]) -> None:
        self.n = n
        self.names = np.empty(n, dtype=object)
        self.names[:] = names
        obj = ("family", "layout", "attention_type", "direction", "source", "reason", "mask_label", "dtype_q")
        self.cols: dict[str, NDArray[np.object_]] = {name: np.empty(n, dtype=object) for name in obj}  # None
        self.modeled = np.zeros(n, dtype=bool)
        self.per_row = np.zeros(n, dtype=bool)
        self.warnings = np.empty(n, dtype=object)  # tuples; a list when finished
        self.warnings.fill(())
        self.configs: dict[int, AttentionConfig] = {}
        self.plan_of = np.full(n, -1, dtype=np.int32)
        self.plans: list[_GroupPlan] = []
        self.masks = np.empty(n, dtype=object)
        self.pieces: list[tuple[NDArray[np.intp], dict[str, NDArray[Any]]]] = []

    @classmethod
    def from_table(cls, t: ParsedTable) -> _Results:
        res = cls(t.n, list(t.name))
        for name in res.cols:
            res.cols[name] = getattr(t, name).copy()
        res.modeled, res.per_row = t.modeled.copy(), t.per_row.copy()
        res.warnings = np.fromiter(t.warnings, dtype=object, count=t.n)
        res.configs = {i: c for i, c in t._configs.items() if t.per_row[i]}
        res.plan_of, res.plans, res.masks = t._plan_of.copy(), list(t._plans), t._masks.copy()
        return res

    def _fields(self, rows: NDArray[np.intp] | int, op: ParsedOp) -> None:
        cols = self.cols
        for name in ("family", "layout", "attention_type", "direction", "source", "reason"):
            cols[name][rows] = getattr(op, name)
        cfg = op.config
        cols["mask_label"][rows] = None if cfg is None else cfg.mask.label
        cols["dtype_q"][rows] = None if cfg is None else cfg.dtype_q
        self.modeled[rows] = cfg is not None

    def broadcast(self, rows: NDArray[np.intp], op: ParsedOp) -> None:
        """Rows with the outcome of one parse_op that is known to fail the same way for all of them."""
        assert op.config is None
        self._fields(rows, op)
        self.warnings[rows] = _filled(len(rows), op.warnings)

    def one_by_one(self, rows: NDArray[np.intp], source: _Rows) -> None:
        for i in rows.tolist():
            self.set_op(i, source.parse(i))

    def set_op(self, i: int, op: ParsedOp) -> None:
        if op.config is not None:
            too_big = _outside_int64(op.config)
            if too_big is not None:
                op = replace(op, config=None, reason=too_big, source=None)
        self._fields(i, op)
        self.names[i] = op.name
        self.warnings[i] = op.warnings
        self.per_row[i] = True
        self.plan_of[i] = -1
        self.masks[i] = None
        if op.config is None:
            self.configs.pop(i, None)
        else:
            self.configs[i] = op.config

    def grouped(
        self,
        rows: NDArray[np.intp],
        template: ParsedOp,
        warnings: tuple[str, ...] | list[tuple[str, ...]],
        labels: NDArray[np.object_],
        masks: NDArray[np.object_],
        gplan: _GroupPlan,
        table_cols: dict[str, NDArray[Any]],
    ) -> None:
        assert template.config is not None
        self._fields(rows, template)
        self.cols["mask_label"][rows] = labels
        self.masks[rows] = masks
        self.plan_of[rows] = len(self.plans)
        self.plans.append(gplan)
        if isinstance(warnings, tuple):
            self.warnings[rows] = _filled(len(rows), warnings)
        else:
            self.warnings[rows] = np.fromiter(warnings, dtype=object, count=len(rows))
        self.pieces.append((rows, table_cols))

    def finish(self) -> ParsedTable:
        per_row_modeled = [i for i in sorted(self.configs) if self.per_row[i] and self.modeled[i]]
        pieces = list(self.pieces)
        if per_row_modeled:
            cols = _columns_of_configs([self.configs[i] for i in per_row_modeled])
            pieces.append((np.asarray(per_row_modeled, dtype=np.intp), cols))
        table = _assemble(pieces)
        pos = np.full(self.n, -1, dtype=np.intp)
        modeled_rows = np.flatnonzero(self.modeled)
        pos[modeled_rows] = np.arange(len(modeled_rows))
        configs = {i: c for i, c in self.configs.items() if self.per_row[i]}
        return ParsedTable(
            n=self.n,
            modeled=self.modeled,
            table=table,
            warnings=self.warnings.tolist(),
            per_row=self.per_row,
            name=self.names,
            _configs=configs,
            _plan_of=self.plan_of,
            _plans=self.plans,
            _masks=self.masks,
            _pos=pos,
            **self.cols,
        )


def _filled(m: int, value: Any) -> NDArray[np.object_]:
    """An object array of m references to `value` (a tuple stays one element, not a row of them)."""
    out = np.empty(m, dtype=object)
    out.fill(value)
    return out


def _assemble(pieces: list[tuple[NDArray[np.intp], dict[str, NDArray[Any]]]]) -> ConfigTable:
    """One ConfigTable from per-group column pieces (disjoint row sets), rows in ascending row order."""
    rows = np.concatenate([r for r, _ in pieces]) if pieces else np.zeros(0, dtype=np.intp)
    at = np.empty(len(rows), dtype=np.intp)  # the table position of each piece row
    at[np.argsort(rows, kind="stable")] = np.arange(len(rows))
    cols = {name: np.empty(len(rows), dtype=_column_dtype(name)) for name in _TABLE_FIELDS}
    start = 0
    for piece_rows, piece in pieces:
        where = at[start : start + len(piece_rows)]
        for name in _TABLE_FIELDS:
            cols[name][where] = piece[name]
        start += len(piece_rows)
    return ConfigTable.from_arrays(**cols)
