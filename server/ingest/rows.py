"""Attention calls -> the per-category op tables of docs/formats.md (one row per argument signature).

Grouping key, as upstream: name, op category, process/thread, Input Dims, Input type, Input Strides,
Concrete Inputs, number of kernels (+ the linked forward's signature for a shapeless backward node,
whose perf_params come from that forward; + the attention kernels' names for inference calls, so that
sliding-window and full layers, whose kernels differ by name, are separate rows). Per instance, the kernel
time is the union of the GPU intervals of all its kernels (auxiliary kernels included, KV-cache writes
not); the time of the main (non-auxiliary) kernels alone is kept beside it, and the KV-cache writes that
feed the call in their own columns. A call none of whose kernels is attention compute (a capture run that
only zeroes its output) has no kernel time: its fills are auxiliary time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdpa_analyzer.perf_models.kernels import HelperKind, classify_kernels, is_auxiliary_kernel
from sdpa_analyzer.perf_models.ops.hinted import BOUND_KEYS
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest import op_config
from sdpa_analyzer.server.ingest import shape_source as S
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import CPU, PY
from sdpa_analyzer.server.ingest.kernel_calls import KERNEL_CALL
from sdpa_analyzer.server.ingest.paged import kernel_breakdown
from sdpa_analyzer.server.ingest.serving import attention_kernel_names
from sdpa_analyzer.server.ingest.unfused import is_user_frame
from sdpa_analyzer.server.vocab import DISPLAY_NAMES, INFERENCE

KT = "Kernel Time (µs)"
_MODULE_SUFFIX = re.compile(r"_\d+$")
TRUNC = 64


@dataclass
class Row:
    category: str
    key: tuple[Any, ...]
    calls: list[Call]
    values: dict[str, Any] = field(default_factory=dict)
    parsed: op_config.Parsed | None = None
    perf_params: dict[str, Any] | None = None

    @property
    def first(self) -> Call:
        return self.calls[0]


def build_rows(ctx: TraceContext, calls: list[Call]) -> dict[str, list[Row]]:
    """Group calls into rows per category and fill every column value."""
    kernel_union, main_union, aux_union = _call_kernel_times(ctx, calls)
    kv_union = union_by_group(*_gpu_intervals(ctx, calls, kv=True), len(calls)) if calls else np.zeros(0)
    quant_us, reduce_us, helpers = _helper_times(ctx, calls)
    for i, c in enumerate(calls):
        c.extra_params.setdefault("_kernel_us", float(kernel_union[i]))
        c.extra_params.setdefault("_main_us", float(main_union[i]))
        c.extra_params.setdefault("_aux_us", float(aux_union[i]))
        c.extra_params.setdefault("_kv_us", float(kv_union[i]))
        c.extra_params.setdefault("_quant_us", float(quant_us[i]))
        c.extra_params.setdefault("_reduce_us", float(reduce_us[i]))
        c.extra_params.setdefault("_helpers", int(helpers[i]))
    groups: dict[tuple[Any, ...], Row] = {}
    # forwards first: a shapeless backward row reads its forward row's perf_params
    ordered = sorted(calls, key=lambda c: (c.direction != "fwd", c.ts))
    for c in ordered:
        key = _group_key(ctx, c)
        row = groups.get(key)
        if row is None:
            row = groups[key] = Row(c.category, key, [])
        row.calls.append(c)
    fwd_params: dict[int, dict[str, Any] | None] = {}
    out: dict[str, list[Row]] = {}
    for row in groups.values():
        row.calls.sort(key=lambda c: c.ts)
        _mark_unresolved_layers(row)
        _parse_row(ctx, row, fwd_params)
        for c in row.calls:
            fwd_params[id(c)] = row.perf_params
        out.setdefault(row.category, []).append(row)
    for cat, rows in out.items():
        for row in rows:
            row.values = _row_values(ctx, row)
        rows.sort(key=lambda r: -r.values[f"{KT}_sum"])
        total = sum(r.values[f"{KT}_sum"] for r in rows)
        cum = 0.0
        for r in rows:
            pct = 100.0 * r.values[f"{KT}_sum"] / total if total > 0 else 0.0
            cum += pct
            r.values["Percentage (%)"] = pct
            r.values["Cumulative Percentage (%)"] = cum
            r.values["enhanced_category"] = cat
            r.values["display_name"] = DISPLAY_NAMES[cat]
    return out


def _group_key(ctx: TraceContext, c: Call) -> tuple[Any, ...]:
    labels = ctx.thread_labels(c.thread) if c.thread >= 0 else ("Unknown", "Unknown", "Unknown")
    fwd = None
    if c.direction == "bwd" and not c.has_shapes and c.forward is not None:
        f = c.forward
        fwd = (f.name, repr(f.dims), repr(f.types), repr(f.concrete))
    # inference calls and calls made from their kernels: the attention kernels' names too (layers of two kinds, two
    # kernels under one unknown op are separate rows)
    kernels = attention_kernel_names(ctx, c) if c.category == INFERENCE or c.kind == KERNEL_CALL else ()
    if c.kind == KERNEL_CALL and not c.has_shapes:  # no shapes: calls of other launch grids are other shapes
        kernels = (*kernels, tuple(sorted(set(ctx.ev.gpu["grid"][c.kernels].tolist()))))
    return (
        c.category,
        c.name,
        *labels,
        repr(c.dims),
        repr(c.types),
        repr(c.strides),
        repr(c.concrete),
        len(c.kernels),
        fwd,
        repr(sorted((k, v) for k, v in c.extra_params.items() if not k.startswith("_"))),
        kernels,
    )


def _parse_row(ctx: TraceContext, row: Row, fwd_params: dict[int, dict[str, Any] | None]) -> None:
    c = row.first
    extra = {k: v for k, v in c.extra_params.items() if not k.startswith("_") and k != "mask"}
    name = c.name
    if c.kind == "unfused":
        # modeled as the fused op it replaces (same layout), typed unfused
        name = "aten::scaled_dot_product_attention"
    given: dict[str, Any] | None = dict(extra) if extra else None
    if c.direction == "bwd" and not c.has_shapes and c.forward is not None:
        base = fwd_params.get(id(c.forward))
        if base:  # the forward's config, in this row's own direction (what the registry reads for an unknown op)
            given = {**base, **(given or {}), "direction": c.direction}
    # graph replays: a call whose capture was found has its captured op's name and shapes; the others are named
    # cuda_graph::<kernel>, for which the registry gives the one graph-replay reason (the roofline says the same)
    # a backward made from its kernels under an op the registry does not know keeps its linked forward's config and
    # its own direction as its perf_params (shape_source "linked forward"): the registry models it from them, here
    # and when scoring re-reads the row
    parsed = op_config.parse(name, c.dims, c.types, c.concrete, given)
    if parsed.attention_type is None:
        parsed.attention_type = c.attention_type
    if parsed.direction is None:
        parsed.direction = c.direction
    atype = c.attention_type or parsed.attention_type
    if atype in (None, "unknown"):
        atype = _type_from_kernels(ctx, row) or atype
    parsed.attention_type = atype
    bound: dict[str, Any] = {}
    if parsed.config is None and (not c.has_shapes or c.kind == KERNEL_CALL) and c.category != INFERENCE:
        parsed, bound = _bounded_from_kernels(ctx, row, name, given, parsed)
    row.parsed = parsed
    if parsed.config is not None:
        params = op_config.perf_params_from_config(parsed.config, atype)
        params.update({k: v for k, v in extra.items() if k not in params})
        # the range a bound config sits at: its own, or its linked forward's (a backward made from that config)
        params.update({k: v for k, v in (bound or given or {}).items() if k in BOUND_KEYS})
        row.perf_params = params
    elif given:
        row.perf_params = given
    else:
        row.perf_params = None


def _bounded_from_kernels(ctx: TraceContext, row: Row, name: str, given: dict[str, Any] | None,
                          parsed: op_config.Parsed) -> tuple[op_config.Parsed, dict[str, Any]]:  # fmt: skip
    """A call with no config whose kernel gives all of its shape but the sequence length (a range from its launch
    grid): modeled at the range's low end as a lower bound (shape_source.bound_params: the Parsed and the perf_params
    it was read from), or its reason says why not."""
    c = row.first
    hints = S.main_kernel_hints(ctx, row.calls)
    if not hints:
        return parsed, {}
    params, why = S.bound_params(c, hints, parsed.attention_type)
    if params is not None:
        bounded = op_config.parse(name, c.dims, c.types, c.concrete, {**(given or {}), **params})
        if bounded.config is not None:
            bounded.attention_type = parsed.attention_type
            bounded.direction = bounded.direction or parsed.direction
            return bounded, params
        why = bounded.reason or why
    parsed.reason = f"{parsed.reason}; no lower bound from the kernel: {why}"
    return parsed, {}


def _type_from_kernels(ctx: TraceContext, row: Row) -> str | None:
    """The implementation the dominant kernel names (for dispatcher ops and graph replays)."""
    rows = np.concatenate([c.kernels for c in row.calls]).astype(np.int64)
    if len(rows) == 0:
        return None
    names = [ctx.ev.names[int(c)] for c in ctx.ev.gpu["name"][rows].tolist()]
    verdict = classify_kernels(names, np.maximum(ctx.ev.gpu["dur"][rows], 0.0).tolist())
    atype = getattr(verdict, "attention_type", None)
    return str(getattr(atype, "value", atype)) if atype is not None else None


def _gpu_intervals(ctx: TraceContext, calls: list[Call], kv: bool = False) -> tuple[np.ndarray, ...]:
    """(call index, start, duration) of every kernel of the calls (their KV-cache writes with kv=True)."""
    parts = [c.kv_kernels if kv else c.kernels for c in calls]
    gid = np.concatenate([np.full(len(p), i, dtype=np.int64) for i, p in enumerate(parts)])
    rows = np.concatenate(parts).astype(np.int64)
    return gid, ctx.ev.gpu["ts"][rows], np.maximum(ctx.ev.gpu["dur"][rows], 0.0)


def _call_kernel_times(ctx: TraceContext, calls: list[Call]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call (µs): its kernel time (union of all its GPU intervals, KV-cache writes excluded), the union of its
    non-auxiliary (attention compute) kernels, and the union of its auxiliary ones. A call without any attention
    compute kernel (a capture run that only zeroes its output, a call whose kernels run in a graph replay) has no
    kernel time: what its fills took is auxiliary time only."""
    n = len(calls)
    if n == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    gid, start, dur = _gpu_intervals(ctx, calls)
    if len(gid) == 0:
        return np.zeros(n), np.zeros(n), np.zeros(n)
    ev = ctx.ev
    rows = np.concatenate([c.kernels for c in calls]).astype(np.int64)
    aux_name = np.array([is_auxiliary_kernel(nm) for nm in ev.names], dtype=bool)
    aux = aux_name[ev.gpu["name"][rows]]
    total = union_by_group(gid, start, dur, n)
    main = union_by_group(gid[~aux], start[~aux], dur[~aux], n)
    aux_us = union_by_group(gid[aux], start[aux], dur[aux], n)
    has_main = np.bincount(gid[~aux], minlength=n) > 0
    total = np.where(has_main, total, 0.0)
    return total, main, aux_us


def _helper_times(ctx: TraceContext, calls: list[Call]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per call: the union of its quantization kernels and of its split-KV reduce kernels (µs), and how many helper
    kernels (quantization, preparation, reduce: perf_models.kernels.helper_kind) it has. They are in its kernel time
    already; these say how much of it they are."""
    n = len(calls)
    zeros = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
    if n == 0:
        return zeros
    gid, start, dur = _gpu_intervals(ctx, calls)
    if len(gid) == 0:
        return zeros
    ev = ctx.ev
    rows = np.concatenate([c.kernels for c in calls]).astype(np.int64)
    kind_code = np.zeros(len(ev.names), dtype=np.int8)  # 0 none, 1 quant, 2 reduce, 3 another helper
    codes = {None: 0, HelperKind.QUANT: 1, HelperKind.REDUCE: 2}
    for code in np.unique(ev.gpu["name"][rows]).tolist():
        kind_code[code] = codes.get(N.helper_kind(ev.names[code]), 3)
    k = kind_code[ev.gpu["name"][rows]]
    quant = union_by_group(gid[k == 1], start[k == 1], dur[k == 1], n)
    reduce = union_by_group(gid[k == 2], start[k == 2], dur[k == 2], n)
    return quant, reduce, np.bincount(gid[k > 0], minlength=n)


def union_by_group(group: np.ndarray, start: np.ndarray, dur: np.ndarray, n_groups: int) -> np.ndarray:
    """Union length of intervals per group id (vectorized: groups shifted apart on one time axis).

    Times are taken relative to the earliest start before durations are added: absolute µs
    timestamps (~1e12) have a 0.24 ns grid, and `ts + dur` on them would round every kernel.
    """
    out = np.zeros(n_groups)
    if len(group) == 0:
        return out
    rel = start - float(start.min())
    span = float((rel + dur).max()) + 1.0
    s = rel + group * span
    e = s + dur
    o = np.lexsort((s, group))
    g, s, e = group[o], s[o], e[o]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    seg = np.maximum.reduceat(e, first) - s[first]
    return np.bincount(g[first], weights=seg, minlength=n_groups)


def _stats(x: np.ndarray) -> dict[str, float]:
    n = len(x)
    return {
        "sum": float(x.sum()) if n else 0.0,
        "mean": float(x.mean()) if n else math.nan,
        "median": float(np.median(x)) if n else math.nan,
        "std": float(x.std(ddof=1)) if n > 1 else math.nan,
        "min": float(x.min()) if n else math.nan,
        "max": float(x.max()) if n else math.nan,
    }


def _row_values(ctx: TraceContext, row: Row) -> dict[str, Any]:
    c0 = row.first
    calls = row.calls
    labels = ctx.thread_labels(c0.thread) if c0.thread >= 0 else ("Unknown", "Unknown", "Unknown")
    cpu = np.array([c.dur for c in calls], dtype=float)
    cpu = cpu[np.isfinite(cpu)]
    kt = np.array([c.extra_params["_kernel_us"] for c in calls], dtype=float)
    mt = np.array([c.extra_params["_main_us"] for c in calls], dtype=float)
    at = np.array([c.extra_params["_aux_us"] for c in calls], dtype=float)
    kv = np.array([c.extra_params["_kv_us"] for c in calls], dtype=float)
    ks, cs = _stats(kt), _stats(cpu)
    copy_us = np.array([c.copy_us for c in calls], dtype=float)
    details = _kernel_details(ctx, calls)
    stack, entry, modules = _call_stack(ctx, c0)
    parsed = row.parsed
    hints = S.main_kernel_hints(ctx, calls)
    source, unknown = S.describe(c0, bool(parsed is not None and parsed.config is not None), row.perf_params, hints)
    v: dict[str, Any] = {
        "name": c0.name,
        "op category": DISPLAY_NAMES[row.category],
        "process_name": labels[0],
        "process_label": labels[1],
        "thread_name": labels[2],
        "Input Dims": _lit(c0.dims),
        "Input type": _lit(c0.types),
        "Input Strides": _lit(c0.strides),
        "Concrete Inputs": _lit(c0.concrete),
        "ex_UID": c0.ordinal,
        "operation_count": len(calls),
        "total_duration_us": cs["sum"] if len(cpu) else math.nan,
        "mean_duration_us": cs["mean"],
        "std_duration_us": cs["std"],
        f"{KT}_mean": ks["mean"],
        f"{KT}_std": ks["std"],
        f"{KT}_sum": ks["sum"],
        "duration_us_median": cs["median"],
        "duration_us_min": cs["min"],
        "duration_us_max": cs["max"],
        f"{KT}_median": ks["median"],
        f"{KT}_min": ks["min"],
        f"{KT}_max": ks["max"],
        "kernel_details_summary": repr(details) if details else math.nan,
        "trunc_kernel_details": repr(_trunc(details)) if details else math.nan,
        "perf_params": repr(row.perf_params) if row.perf_params else math.nan,
        "has_perf_model": bool(parsed is not None and parsed.config is not None),
        "entry_point": entry,
        "call_stack_full": repr(stack) if stack else math.nan,
        # ours, beside the upstream columns
        "attention_type": (parsed.attention_type if parsed else None) or c0.attention_type or math.nan,
        "direction": c0.direction,
        "call_kind": c0.kind,
        "module_chain": repr(modules) if modules else math.nan,
        "attention_kernel_time_us_sum": float(mt.sum()),
        # the kernel time beyond the attention kernels (overlap-aware); for a call without attention compute, all
        # of its auxiliary time
        "aux_kernel_time_us_sum": float(np.where(kt > 0, kt - mt, at).sum()),
        # the call's helpers, inside its kernel time: never calls of their own
        "quant_kernel_time_us_sum": float(sum(c.extra_params["_quant_us"] for c in calls)),
        "reduce_kernel_time_us_sum": float(sum(c.extra_params["_reduce_us"] for c in calls)),
        "helper_kernel_count": int(sum(c.extra_params["_helpers"] for c in calls)),
        "kv_cache_write_us_sum": float(kv.sum()),
        "kv_cache_write_count": int(sum(len(c.kv_kernels) for c in calls)),
        "copy_overhead_us_sum": float(copy_us.sum()),
        "copy_overhead_us_mean": float(copy_us.mean()) if len(copy_us) else 0.0,
        "copy_overhead_count": int(sum(c.copy_count for c in calls)),
        "perf_model_reason": (parsed.reason if parsed is not None and parsed.config is None else math.nan) or math.nan,
        # where the shapes came from (recorded inputs, linked forward, kernel names, none) and what stays unknown
        "shape_source": source,
        "shape_unknown": repr(unknown) if unknown else math.nan,
        "kernel_shape_hints": repr(hints) if hints else math.nan,
        "shape_advice": S.advice(c0, source, hints, unknown) or math.nan,
        "warnings": repr(_row_warnings(row)) if _row_warnings(row) else math.nan,
    }
    if c0.forward is not None:
        v["linked_forward"] = c0.forward.name
    if row.category == INFERENCE or c0.attention_type == "paged":
        v["kernel_breakdown"] = repr(_breakdown(ctx, calls))
        if c0.annotation:
            v["step_annotation"] = c0.annotation
    if any(c.captured for c in calls):
        v["captured"] = True
    if c0.kind == "unfused":
        v["unfused_ops"] = repr(c0.chain)
    return v


# an inference row whose calls' kernel times fall into two groups this far apart (the smaller holding at least
# LAYER_GROUP_SHARE of the calls): layers of two kinds under one kernel name
SPREAD_WARN = 1.5
LAYER_GROUP_SHARE = 0.1


def layer_time_groups(times: list[float]) -> tuple[float, float] | None:
    """(fast, slow) mean kernel times when a row's calls split into two groups whose boundary is a jump of more
    than SPREAD_WARN× between consecutive sorted times, the smaller group holding at least LAYER_GROUP_SHARE of the
    calls (and at least one): sliding-window and full layers; one slow outlier is not a second group."""
    t = np.sort(np.asarray([x for x in times if x > 0], dtype=float))
    if len(t) < 4:
        return None
    ratio = t[1:] / t[:-1]
    cut = int(np.argmax(ratio))
    small = min(cut + 1, len(t) - cut - 1)
    if ratio[cut] <= SPREAD_WARN or small < max(1, LAYER_GROUP_SHARE * len(t)):
        return None
    return float(t[: cut + 1].mean()), float(t[cut + 1 :].mean())


def _mark_unresolved_layers(row: Row) -> None:
    """A serving row that no layer hint resolved (no model config, no kernel name stating the mask) whose calls'
    times fall into two groups holds layers of two kinds: modeled causal it is an upper bound (perf_params
    sliding_window "unresolved"), never exact."""
    if row.category != INFERENCE or any("layer_type" in c.extra_params or "sliding_window" in c.extra_params
                                        for c in row.calls):
        return
    if layer_time_groups([c.extra_params.get("_kernel_us", 0.0) for c in row.calls]) is None:
        return
    for c in row.calls:
        c.extra_params["sliding_window"] = "unresolved"


def _row_warnings(row: Row) -> list[str]:
    seen: list[str] = []
    for c in row.calls:
        for w in c.warnings:
            if w not in seen:
                seen.append(w)
    no_attention = [c for c in row.calls if len(c.kernels) and c.extra_params.get("_kernel_us") == 0]
    if no_attention:
        seen.append(
            f"{len(no_attention)} calls launched no attention kernel (only fills or copies, e.g. a capture run "
            "zeroing its output): their kernels are auxiliary time, the row's kernel time does not count them"
        )
    times = [c.extra_params.get("_kernel_us", 0.0) for c in row.calls]
    groups = layer_time_groups(times) if row.category == INFERENCE else None
    if groups is not None:
        hinted = "layer_type" in row.first.extra_params
        seen.append(
            f"the calls' kernel times spread {groups[1] / groups[0]:.1f}× (two groups, {groups[0]:.1f} and "
            f"{groups[1]:.1f} µs) under one kernel name: "
            + ("the model config gives these calls one kind of layer (is it this model's?)" if hinted else
               "layers of different kinds (sliding-window and full attention) share this row, so its causal work is "
               "an upper bound; pass the model's config.json (--model-config / model_config) to resolve each layer")
        )
    if row.parsed is not None:
        for w in row.parsed.warnings:
            if w not in seen:
                seen.append(w)
    return seen[:10]


def _lit(x: Any) -> Any:
    return repr(x) if x is not None else math.nan


def _kernel_details(ctx: TraceContext, calls: list[Call]) -> list[dict[str, Any]]:
    """One summary per (kernel, stream): the call's kernels, then its KV-cache writes (flagged kv_cache_write)."""
    rows = np.concatenate([c.kernels for c in calls]).astype(np.int64) if calls else np.zeros(0, np.int64)
    kv_rows = np.concatenate([c.kv_kernels for c in calls]).astype(np.int64) if calls else np.zeros(0, np.int64)
    out = _details(ctx, rows)
    for d in _details(ctx, kv_rows):
        d["kv_cache_write"] = True
        out.append(d)
    return out


def _details(ctx: TraceContext, rows: np.ndarray) -> list[dict[str, Any]]:
    if len(rows) == 0:
        return []
    ev = ctx.ev
    names = ev.gpu["name"][rows]
    streams = ev.gpu["stream"][rows]
    dur = np.maximum(ev.gpu["dur"][rows], 0.0)
    first_ts = ev.gpu["ts"][rows]
    keys = np.stack([names, streams], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out = []
    for g in range(len(uniq)):
        d = dur[inv == g]
        nm = ev.names[int(uniq[g, 0])]
        out.append(
            (
                float(first_ts[inv == g].min()),
                {
                    "name": nm,
                    "stream": int(uniq[g, 1]),
                    "count": len(d),
                    "total_duration_us": float(d.sum()),
                    "mean_duration_us": float(d.mean()),
                    "median_duration_us": float(np.median(d)),
                    "std_dev_duration_us": float(d.std()),
                    "min_duration_us": float(d.min()),
                    "max_duration_us": float(d.max()),
                    "auxiliary": bool(is_auxiliary_kernel(nm)),
                },
            )
        )
    out.sort(key=lambda t: t[0])
    return [d for _, d in out]


def _trunc(details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": d["name"] if len(d["name"]) <= TRUNC else d["name"][:TRUNC] + "...",
            "stream": d["stream"],
            "mean_duration_us": round(d["mean_duration_us"], 2),
        }
        for d in details
    ]


def _breakdown(ctx: TraceContext, calls: list[Call]) -> dict[str, Any]:
    """% of the call's kernel durations plus its KV-cache writes, per component (the writes are not in Kernel
    Time: reshape_cache_percent says how large they are beside it)."""
    rows = np.concatenate([c.kernels for c in calls] + [c.kv_kernels for c in calls]).astype(np.int64)
    names = [ctx.ev.names[int(c)] for c in ctx.ev.gpu["name"][rows].tolist()]
    return kernel_breakdown(names, np.maximum(ctx.ev.gpu["dur"][rows], 0.0))


# ---- call stacks --------------------------------------------------------------------------------------


def _frame_label(ctx: TraceContext, node: int) -> str | None:
    fam = int(ctx.forest.fam[node])
    if fam not in (CPU, PY):
        return None
    name = ctx.node_name(node)
    if fam == PY:
        if name.startswith("<built-in"):
            return None
        if name.startswith("nn.Module: "):
            return _MODULE_SUFFIX.sub("", name)
    return name


def _call_stack(ctx: TraceContext, c: Call) -> tuple[list[Any], str, list[str]]:
    """call_stack_full (root -> kernel), entry point, module chain, for one representative call."""
    f = ctx.forest
    root = c.top if c.kind == "fused" else (c.anchor if c.kind == "unfused" else c.node)
    if root is None or root < 0:
        return [], "Not found", []
    base_nodes = f.ancestors(root) + ([root] if c.kind != "graph" else [])
    base = [lab for n in base_nodes if (lab := _frame_label(ctx, n)) is not None]
    entry = "Not found"
    for n in reversed(base_nodes):
        if int(f.fam[n]) == PY and is_user_frame(ctx.node_name(n)):
            entry = ctx.node_name(n)
            break
    modules = [
        _MODULE_SUFFIX.sub("", ctx.node_name(n)[len("nn.Module: ") :])
        for n in base_nodes
        if int(f.fam[n]) == PY and ctx.node_name(n).startswith("nn.Module: ")
    ]
    # one path per distinct kernel (first instance), below the root
    paths: list[list[str]] = []
    seen: set[str] = set()
    gnode = ctx.gpu_node
    for g in c.kernels[np.argsort(ctx.ev.gpu["ts"][c.kernels], kind="stable")].tolist():
        kname = ctx.ev.names[int(ctx.ev.gpu["name"][g])]
        if kname in seen:
            continue
        seen.add(kname)
        path: list[str] = []
        launch = int(gnode[g])
        if launch >= 0 and c.kind != "graph":
            anc = f.ancestors(launch)
            if root in anc:
                below = anc[anc.index(root) + 1 :]
                if int(f.fam[launch]) == CPU:
                    below.append(launch)
                path = [lab for n in below if (lab := _frame_label(ctx, n)) is not None]
        paths.append([*path, kname])
    if not paths:
        return base, entry, modules
    if len(paths) == 1:
        return base + paths[0], entry, modules
    common: list[str] = []
    for parts in zip(*paths, strict=False):
        if all(p == parts[0] for p in parts) and parts[0] not in seen:
            common.append(parts[0])
        else:
            break
    tails = [p[len(common) :] for p in paths]
    return [*base, *common, *tails], entry, modules


def row_frame(rows: list[Row]) -> pd.DataFrame:
    return pd.DataFrame([r.values for r in rows])


def category_totals(rows: list[Row]) -> dict[str, float | int]:
    """Instances, kernel time and CPU time of one category (for the manifest and the result)."""
    kt = sum(r.values[f"{KT}_sum"] for r in rows)
    cpu = 0.0
    for r in rows:
        d = r.values["total_duration_us"]
        if isinstance(d, float) and math.isfinite(d):
            cpu += d
    return {
        "rows": len(rows),
        "instances": sum(len(r.calls) for r in rows),
        "gpu_kernel_time_ms": kt / 1000.0,
        "cpu_duration_ms": cpu / 1000.0,
    }
