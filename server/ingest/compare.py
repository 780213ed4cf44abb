"""Comparative mode: match the attention calls of trace 2 to those of trace 1 and add the trace-2 columns.

Calls are matched by their anchor, the nearest enclosing op / module call / user-code frame (the
`attention` op of the microbenchmarks, `nn.Module: Qwen2Attention`, a model's `forward` frame): the
i-th call under an anchor label in trace 1 pairs with the i-th under the same label in trace 2. So a
fused op in trace 1 and the unfused matmul/softmax/matmul that replaced it in trace 2 line up.

Columns (docs/formats.md): `speedup (trace2/trace1)` = t2 / t1 and `delta_us (trace2 - trace1)` = t2 - t1
with t the summed kernel time of the matched calls, `lca_count_trace2` (matched trace-2 calls),
`lca_id`, `lca_name` (the anchor label), and `lca_total_kernel_time_trace{1,2}_us`: all kernel time
under the matched anchors (attention and everything else the anchor launched). `trace2_name` names the matched
trace-2 op(s) and `trace2_kernel_names` their kernels (a list literal of distinct names, first launched first: the
calls' kernels and KV-cache writes, as trace 1's `kernel_details_summary` lists them), so that a findings file may
name trace 2's kernels.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import ANN, CPU, PY
from sdpa_analyzer.server.ingest.rows import Row, union_by_group
from sdpa_analyzer.server.ingest.serving import owned_gpu_rows
from sdpa_analyzer.server.ingest.unfused import is_user_frame

_STEP = re.compile(r"^ProfilerStep#")
_MODULE_SUFFIX = re.compile(r"_\d+$")


def _anchors(ctx: TraceContext, calls: list[Call]) -> list[int]:
    f = ctx.forest
    mark = (
        (f.fam == CPU)
        | (ctx.name_mask(lambda n: not _STEP.match(n), ANN))
        | ctx.name_mask(lambda n: n.startswith("nn.Module: ") or is_user_frame(n), PY)
    )
    nma = f.nearest(mark)
    out = []
    for c in calls:
        if c.kind == "unfused" and c.anchor >= 0:
            out.append(c.anchor)
        elif c.top >= 0:
            out.append(int(nma[c.top]))
        elif c.node >= 0:
            out.append(int(nma[c.node]))
        else:
            out.append(-1)
    return out


def _label(ctx: TraceContext, node: int) -> str:
    if node < 0:
        return "<root>"
    return _MODULE_SUFFIX.sub("", ctx.node_name(node))


def _anchor_kernel_time(ctx: TraceContext, anchors: list[int]) -> dict[int, float]:
    uniq = sorted({a for a in anchors if a >= 0})
    if not uniq:
        return {}
    rows, owner = owned_gpu_rows(ctx, uniq)
    idx = np.searchsorted(np.asarray(uniq), owner)
    dur = np.maximum(ctx.ev.gpu["dur"][rows], 0.0)
    times = union_by_group(idx, ctx.ev.gpu["ts"][rows], dur, len(uniq))
    return {a: float(t) for a, t in zip(uniq, times.tolist(), strict=True)}


def add_comparison(
    ctx1: TraceContext, rows1: dict[str, list[Row]], ctx2: TraceContext, calls2: list[Call]
) -> list[str]:
    """Fill the trace-2 columns of every trace-1 row. Returns warnings (unmatched calls)."""
    calls1 = [c for rows in rows1.values() for r in rows for c in r.calls]
    a1 = _anchors(ctx1, calls1)
    a2 = _anchors(ctx2, calls2)
    kt1 = _anchor_kernel_time(ctx1, a1)
    kt2 = _anchor_kernel_time(ctx2, a2)
    by_label2: dict[str, list[tuple[float, Call, int]]] = {}
    for c, a in zip(calls2, a2, strict=True):
        by_label2.setdefault(_label(ctx2, a), []).append((c.ts, c, a))
    for lst in by_label2.values():
        lst.sort(key=lambda t: t[0])
    by_label1: dict[str, list[tuple[float, Call, int]]] = {}
    for c, a in zip(calls1, a1, strict=True):
        by_label1.setdefault(_label(ctx1, a), []).append((c.ts, c, a))
    match: dict[int, tuple[Call, int, int]] = {}  # id(call1) -> (call2, anchor2, anchor1)
    labels = sorted(by_label1)
    for label in labels:
        l1 = sorted(by_label1[label], key=lambda t: t[0])
        l2 = by_label2.get(label, [])
        for (_, c1, an1), (_, c2, an2) in zip(l1, l2, strict=False):
            match[id(c1)] = (c2, an2, an1)
    warnings: list[str] = []
    unmatched1 = len(calls1) - len(match)
    unmatched2 = len(calls2) - len(match)
    if unmatched1:
        warnings.append(f"{unmatched1} attention call(s) of trace 1 have no counterpart in trace 2 (same enclosing op)")
    if unmatched2 > 0:
        warnings.append(f"{unmatched2} attention call(s) of trace 2 have no counterpart in trace 1")
    lca_ids = {label: i for i, label in enumerate(labels)}
    for rows in rows1.values():
        for r in rows:
            _fill(r, match, kt1, kt2, lca_ids, ctx1, ctx2)
    return warnings


def _fill(
    r: Row,
    match: dict[int, tuple[Call, int, int]],
    kt1: dict[int, float],
    kt2: dict[int, float],
    lca_ids: dict[str, int],
    ctx1: TraceContext,
    ctx2: TraceContext,
) -> None:
    pairs = [(c, match[id(c)]) for c in r.calls if id(c) in match]
    v: dict[str, Any] = r.values
    if not pairs:
        for k in (
            "speedup (trace2/trace1)",
            "delta_us (trace2 - trace1)",
            "lca_count_trace2",
            "lca_id",
            "lca_name",
            "lca_total_kernel_time_trace1_us",
            "lca_total_kernel_time_trace2_us",
            "trace2_name",
            "trace2_kernel_names",
            "trace2_kernel_time_us_sum",
        ):
            v[k] = math.nan
        return
    t1 = sum(float(c.extra_params.get("_kernel_us", 0.0)) for c, _ in pairs)
    t2 = sum(float(c2.extra_params.get("_kernel_us", 0.0)) for _, (c2, _, _) in pairs)
    an1 = {a for _, (_, _, a) in pairs}
    an2 = {a for _, (_, a, _) in pairs}
    label = _label(ctx1, pairs[0][1][2])
    names2 = sorted({c2.name for _, (c2, _, _) in pairs})
    v["speedup (trace2/trace1)"] = t2 / t1 if t1 > 0 else math.nan
    v["delta_us (trace2 - trace1)"] = t2 - t1
    v["lca_count_trace2"] = float(len(pairs))
    v["lca_id"] = lca_ids.get(label, -1)
    v["lca_name"] = label
    v["lca_total_kernel_time_trace1_us"] = sum(kt1.get(a, 0.0) for a in an1)
    v["lca_total_kernel_time_trace2_us"] = sum(kt2.get(a, 0.0) for a in an2)
    v["trace2_name"] = names2[0] if len(names2) == 1 else repr(names2)
    v["trace2_kernel_names"] = repr(_kernel_names(ctx2, [c2 for _, (c2, _, _) in pairs]))
    v["trace2_kernel_time_us_sum"] = t2
    if len(pairs) < len(r.calls):
        v["trace2_unmatched_instances"] = len(r.calls) - len(pairs)


def _kernel_names(ctx: TraceContext, calls: list[Call]) -> list[str]:
    """The distinct kernel names of `calls` (their kernels and KV-cache writes), the first launched first."""
    rows = np.concatenate([np.concatenate([c.kernels, c.kv_kernels]) for c in calls]).astype(np.int64)
    if len(rows) == 0:
        return []
    codes = ctx.ev.gpu["name"][rows]
    order = np.argsort(ctx.ev.gpu["ts"][rows], kind="stable")
    uniq, first = np.unique(codes[order], return_index=True)
    return [ctx.ev.names[int(code)] for code in uniq[np.argsort(first)]]
