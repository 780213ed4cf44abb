"""parse_ops_table: the rows grouped, each group's plan taken from one row, its blocks built
with numpy; whatever the plan does not foresee is parsed by parse_op, row by row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.config import Mask
from sdpa_analyzer.perf_models.gc_pause import gc_paused
from sdpa_analyzer.perf_models.literals import LiteralParseError, parse_int_str
from sdpa_analyzer.perf_models.ops import perf_params as pp
from sdpa_analyzer.perf_models.ops.batch.cells import BAD, RAW, Rows, dims_cell
from sdpa_analyzer.perf_models.ops.batch.columns import GroupPlan, config_from_columns, table_columns
from sdpa_analyzer.perf_models.ops.batch.dims import dims_blocks, raw_dims_blocks
from sdpa_analyzer.perf_models.ops.batch.groups import Group, free_slot_kinds, group_rows, split_values
from sdpa_analyzer.perf_models.ops.batch.results import ParsedTable, Results
from sdpa_analyzer.perf_models.ops.batch.shapes import ShapeCols, block_shapes
from sdpa_analyzer.perf_models.ops.build import RowPlan, attn_mask_warning, plan_row
from sdpa_analyzer.perf_models.ops.row import Row
from sdpa_analyzer.perf_models.ops.specs import OpSpec
from sdpa_analyzer.perf_models.ops.types import RowError


def parse_ops_table(
    names: Sequence[Any],
    input_dims: Sequence[Any],
    input_types: Sequence[Any],
    concrete_inputs: Sequence[Any],
    perf_params: Sequence[Any] | None = None,
) -> ParsedTable:
    """`parse_op` over every row, as columns (see the `perf_models.ops.batch` docstring for how).

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
    rows = Rows(names, input_dims, input_types, concrete_inputs, perf_params)
    with gc_paused():  # collections would rescan ~10^6 fresh cell objects while this builds many (no cycles)
        res = Results(n, rows.names)
        for group in group_rows(rows):
            _parse_group(group, rows, res)
        return res.finish()


def _parse_group(g: Group, rows: Rows, res: Results) -> None:
    spec = g.info.spec
    if spec is None:  # an unknown op: rows with perf_params may hold a full config (registry._unknown_op)
        _broadcast_unless_params(g.rows, rows, res)
        return
    if spec.is_autograd_node:
        _broadcast_unless_params(g.rows, rows, res)
        return
    if g.types is BAD or not g.concrete_ok or g.dims_kind is BAD:
        res.one_by_one(g.rows, rows)
        return
    if g.dims_kind is None:  # "missing Input Dims": nothing else about the row matters
        _broadcast_unless_params(g.rows, rows, res, expect="missing Input Dims")
        return
    if g.dims_kind is RAW:
        blocks, rest = raw_dims_blocks(g.rows, rows)
        blocks += _parsed_rest(rest, rows, res)
    else:
        blocks = dims_blocks(g.rows, rows, res)
    for sub, mat, lens in blocks:
        if g.free and len(lens) != g.arity:  # Input Dims sets the argument count: other signatures apply
            res.one_by_one(sub, rows)
            continue
        kinds, ints = free_slot_kinds(sub, g.free, rows)
        for part in split_values(kinds):
            _parse_block(g, sub[part], mat[part], lens, {s: v[part] for s, v in ints.items()}, rows, res)


def _parsed_rest(
    members: NDArray[np.intp], rows: Rows, res: Results
) -> list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]]:
    """Input Dims strings the fast reader left: parsed one by one, then read as parsed cells."""
    if not len(members):
        return []
    rows.writable()
    cells: dict[str, Any] = {}
    kind = np.empty(len(members), dtype=np.int64)
    for j, i in enumerate(members.tolist()):
        d = rows.dims[i] = dims_cell(rows.dims[i], cells)
        kind[j] = 0 if d is None else 1 if d is BAD else 2
    _broadcast_unless_params(members[kind == 0], rows, res, expect="missing Input Dims")
    res.one_by_one(members[kind == 1], rows)
    return dims_blocks(members[kind == 2], rows, res) if (kind == 2).any() else []


def _broadcast_unless_params(
    members: NDArray[np.intp], rows: Rows, res: Results, expect: str | None = None
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


def _parse_block(
    g: Group,
    members: NDArray[np.intp],
    mat: NDArray[np.int64],
    lens: tuple[int, ...],
    ints: dict[int, NDArray[np.int64]],
    rows: Rows,
    res: Results,
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
    if plan.choice.how != "known":  # appended or inferred: keep the rows that choose the same slots
        same = _same_choice(plan, members, mat, lens, rows)
        res.one_by_one(members[~same], rows)
        if not same.any():
            return
        members, mat = members[same], mat[same]
        ints = {slot: v[same] for slot, v in ints.items()}
        ints.update(_max_seqlen_values(_max_slots(plan), members, rows))
    shapes = block_shapes(plan, mat, lens, ints, rows.concrete(rep), g.types)
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


def _max_slots(plan: RowPlan) -> tuple[int, ...]:
    sig = plan.signature
    return tuple(s for s in (sig.max_seqlen_q, sig.max_seqlen_k) if s is not None)


def _same_choice(
    plan: RowPlan, members: NDArray[np.intp], mat: NDArray[np.int64], lens: tuple[int, ...], rows: Rows
) -> NDArray[np.bool_]:
    """Rows that choose the same signature as the group's first row when it was not one in its argument range
    (the group key only foresees those): the same Concrete Inputs but in the max_seqlen slots, which must hold
    integers >= 1 there too; for an inferred signature also the same q/k/v window and scale (from their dims)."""
    inference = plan.choice.inference
    same = inference.agrees(mat, lens) if inference is not None else np.ones(len(members), dtype=bool)
    parts, back = np.unique(rows.part[members], return_inverse=True)
    rep = rows.concrete(int(members[0]))
    skip = set(_max_slots(plan))
    part_ok = np.ones(len(parts), dtype=bool)
    for j, part in enumerate(parts.tolist()):
        cell = rows.part_concrete[part]
        if cell is None or rep is None or len(cell) != len(rep):
            part_ok[j] = cell is rep
            continue
        pairs = enumerate(zip(cell, rep, strict=True))
        part_ok[j] = all(a == b and type(a) is type(b) for s, (a, b) in pairs if s not in skip)
        for s in skip:
            try:
                value = parse_int_str(cell[s]) if s < len(cell) else None
            except LiteralParseError:
                value = None
            part_ok[j] &= value is not None and value >= 1
    return same & part_ok[back.reshape(-1)]


def _max_seqlen_values(slots: tuple[int, ...], members: NDArray[np.intp], rows: Rows) -> dict[int, NDArray[np.int64]]:
    """The max_seqlen values of every row in inferred slots (checked to be integers >= 1 by _same_inference)."""
    parts, back = np.unique(rows.part[members], return_inverse=True)
    out = {}
    for s in slots:
        values = [parse_int_str(rows.part_concrete[p][s]) for p in parts.tolist()]
        out[s] = np.asarray(values, dtype=np.int64)[back.reshape(-1)]
    return out


def _build_block(
    spec: OpSpec, plan: RowPlan, members: NDArray[np.intp], shapes: ShapeCols, rows: Rows, res: Results
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
    gplan = GroupPlan(dtypes, spec.direction, plan.dropout, plan.signature.mask_unknown)
    table_cols = table_columns(cols, gplan, masks, case)
    check = rows.parse(int(members[0]))
    mine = config_from_columns({k: v[0] for k, v in table_cols.items()}, gplan, row_masks[0])
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
