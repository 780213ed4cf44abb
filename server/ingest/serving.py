"""Serving-engine structure around attention calls: KV-cache writes, quantization pre-ops, graph capture and replay.

* KV-cache writes are accounted one way whatever the engine version: a write kernel launched inside the attention
  op (vLLM's older unified_attention_with_output), under a sibling write op just before it (newer vLLM's
  unified_kv_cache_update, SGLang's set_kv_buffer / store_cache) or right before the attention kernels of a graph
  replay goes to the call's `kv_kernels`, never into its kernel time (docs/formats.md: kv_cache_write_us_sum).
* A quantization op right before a quantized attention call (SageAttention's sage_quant_kernel) is auxiliary time
  of that call; so is any helper kernel (quantization, split-KV reduce, page indices: perf_models.kernels.helper_kind)
  an op outside every call launched — one call is its main kernel plus its helpers, never one call per kernel.
* Calls made while a CUDA/HIP graph was being captured (between *StreamBeginCapture and *StreamEndCapture) launch
  no kernel events: their kernels run in the replays. Each such call is counted once: a replay of its graph in the
  same trace (or in the replay trace, for a capture folder) takes the captured call's shapes and adds its times;
  a captured call without a replay keeps its shapes and has no time.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import numpy as np

from sdpa_analyzer.perf_models.kernels import HELPERS_BEFORE_MAIN, HelperKind, kernel_kv_cache_dtype, kernel_window_hint
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.calls import Call, held_gpu_events
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import CPU, GPU_ANN
from sdpa_analyzer.server.ingest.tree import nearest_marked_ancestor
from sdpa_analyzer.server.vocab import INFERENCE

# ---- gpu rows owned by op subtrees -------------------------------------------------------------------------------


def owned_gpu_rows(ctx: TraceContext, tops: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
    """GPU rows (kernels, memcpys, memsets; graph replays excluded) launched in the subtree of one of the `tops`
    nodes, in row order, and the owner of each: the nearest of the tops at or above the node that launched it."""
    f = ctx.forest
    mark = np.zeros(len(f), dtype=bool)
    mark[tops] = True
    nma = nearest_marked_ancestor(f.parent, mark)
    gnode = ctx.gpu_node
    rows = np.flatnonzero((gnode >= 0) & ~ctx.links.graph & (ctx.ev.gpu["kind"] != GPU_ANN))
    nodes = gnode[rows]
    owner = np.where(mark[nodes], nodes, nma[nodes])
    keep = owner >= 0
    return rows[keep], owner[keep]


def _owned_rows(ctx: TraceContext, tops: np.ndarray) -> dict[int, np.ndarray]:
    """owned_gpu_rows grouped by their top node."""
    if len(tops) == 0:
        return {}
    rows, owner = owned_gpu_rows(ctx, tops)
    order = np.argsort(owner, kind="stable")
    rows, owner = rows[order], owner[order]
    out: dict[int, np.ndarray] = {}
    if len(owner):
        cut = np.flatnonzero(np.diff(owner)) + 1
        for a, b in zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(owner)]]), strict=True):
            out[int(owner[a])] = rows[a:b]
    return out


# ---- KV-cache writes and quantization pre-ops ----------------------------------------------------------------------


def _start(ctx: TraceContext, c: Call) -> float:
    """When a call starts on its CPU thread: its op's start, or (a call made from its kernels, whose caller may be a
    whole compiled region) its main kernel's launch."""
    return float(c.ts) if c.kind == "kernel" or c.top < 0 else float(ctx.forest.ts[c.top])


def _calls_by_thread(ctx: TraceContext, calls: list[Call]) -> tuple[dict[int, list[Call]], dict[int, list[float]]]:
    """The calls of each CPU thread in time order, and their start times (for a bisection by time)."""
    by_thread: dict[int, list[Call]] = {}
    for c in sorted(calls, key=lambda c: _start(ctx, c)):
        by_thread.setdefault(c.thread, []).append(c)
    return by_thread, {t: [_start(ctx, c) for c in cs] for t, cs in by_thread.items()}


def attach_side_ops(ctx: TraceContext, calls: list[Call], targets: list[Call] | None = None) -> None:
    """Give each KV-cache write op and quantization op outside every attention call to the next attention call on its
    thread: KV writes to a paged (inference) call's kv_kernels, quantization kernels to the next quantized call.
    `targets`: the calls that may take them (default: the known ops' calls in `calls`; the calls made from kernels,
    found later, take what no call took: server.ingest.kernel_calls)."""
    f = ctx.forest
    fused = [c for c in calls if c.kind == "fused" and c.top >= 0]
    targets = fused if targets is None else targets
    if not targets:
        return
    call_mark = np.zeros(len(f), dtype=bool)
    call_mark[[c.top for c in fused]] = True
    kv = ctx.name_mask(N.is_kv_cache_op, CPU)
    quant = ctx.name_mask(N.is_quant_op, CPU)
    side = (kv | quant) & ~call_mark
    if not side.any():
        return
    side_up = f.nearest(side)
    call_up = f.nearest(call_mark)
    tops = np.flatnonzero(side & (side_up < 0) & (call_up < 0))
    owned = _owned_rows(ctx, tops)
    ids = {id(c) for c in calls}
    held = held_gpu_events(calls + [c for c in targets if id(c) not in ids], len(ctx.ev.gpu))
    by_thread, starts = _calls_by_thread(ctx, targets)
    for node in tops.tolist():
        rows = owned.get(node)
        if rows is not None:
            rows = rows[~held[rows]]  # a write an earlier pass gave to a call stays there
        if rows is None or not len(rows):
            continue
        thread = int(f.thread[node])
        cands = by_thread.get(thread, [])
        i = bisect.bisect_left(starts.get(thread, []), float(f.ts[node]))
        is_kv = bool(kv[node])
        for c in cands[i:]:
            if is_kv and c.category == INFERENCE:
                c.kv_kernels = np.concatenate([c.kv_kernels, rows]).astype(np.int64)
                break
            if not is_kv and c.name.startswith("sage_fwd"):
                c.kernels = np.sort(np.concatenate([c.kernels, rows]).astype(np.int64))
                break


def attach_helper_kernels(ctx: TraceContext, calls: list[Call], targets: list[Call] | None = None) -> int:
    """Helper kernels of attention calls (perf_models.kernels.helper_kind) launched outside every call of an eager
    trace — by an op the names above do not know — join the call they serve on their CPU thread: a helper that runs
    before its main kernel (quantization, a KV-cache write) the next call, a split-KV reduce the previous one.
    Preparation kernels outside a call (FlashInfer's `_copy_page_indices`, once per step for every layer) serve the
    whole step: they stay outside. KV-cache writes go to an inference call's kv_kernels, the others into the call's
    kernels (their time is the call's auxiliary time, never a call of its own). `targets`: the calls that may take
    them (default: the known ops' calls in `calls`). Returns how many were attached."""
    fused = [c for c in (calls if targets is None else targets)
             if ((c.kind == "fused" and c.top >= 0) or c.kind == "kernel") and not c.captured]
    gpu = ctx.ev.gpu
    if not fused or not len(gpu):
        return 0
    names = ctx.ev.names
    kind_of: dict[int, HelperKind] = {}
    for code in np.unique(gpu["name"]).tolist():
        kind = N.helper_kind(names[code])
        if kind is not None and kind is not HelperKind.PREPARE:  # metadata kernels outside a call serve a whole step
            kind_of[code] = kind
    if not kind_of:
        return 0
    owned = np.zeros(len(gpu), dtype=bool)
    for c in calls:
        owned[c.kernels] = True
        owned[c.kv_kernels] = True
    gnode = ctx.gpu_node
    cand = np.flatnonzero(np.isin(gpu["name"], list(kind_of)) & ~owned & (gnode >= 0) & ~ctx.links.graph)
    if not len(cand):
        return 0
    f = ctx.forest
    by_thread, starts = _calls_by_thread(ctx, fused)
    extra: dict[int, list[int]] = {}
    extra_kv: dict[int, list[int]] = {}
    for row in cand.tolist():
        node = int(gnode[row])
        thread, at = int(f.thread[node]), float(f.ts[node])
        cands = by_thread.get(thread)
        if not cands:
            continue
        i = bisect.bisect_left(starts[thread], at)
        kind = kind_of[int(gpu["name"][row])]
        if kind in HELPERS_BEFORE_MAIN:
            later = cands[i:]
            if kind is HelperKind.KV_WRITE:
                target = next((c for c in later if c.category == INFERENCE), None)
                if target is not None:
                    extra_kv.setdefault(id(target), []).append(row)
                continue
            target = later[0] if later else None
        else:
            target = cands[i - 1] if i > 0 else None
        if target is not None:
            extra.setdefault(id(target), []).append(row)
    for c in fused:
        if id(c) in extra:
            c.kernels = np.sort(np.concatenate([c.kernels, extra[id(c)]]).astype(np.int64))
        if id(c) in extra_kv:
            c.kv_kernels = np.concatenate([c.kv_kernels, extra_kv[id(c)]]).astype(np.int64)
    return sum(map(len, extra.values())) + sum(map(len, extra_kv.values()))


def split_kv_kernels(ctx: TraceContext, calls: Iterable[Call]) -> None:
    """Move every KV-cache write kernel of a call out of its kernels into its kv_kernels."""
    used = np.unique(ctx.ev.gpu["name"]) if len(ctx.ev.gpu) else np.zeros(0, dtype=np.int64)
    is_kv = np.zeros(len(ctx.ev.names), dtype=bool)
    for code in used.tolist():  # once per distinct GPU event name
        is_kv[code] = N.kernel_role(ctx.ev.names[code]) == "kv_cache"
    if not is_kv.any():
        return
    row_kv = is_kv[ctx.ev.gpu["name"]]
    for c in calls:
        if len(c.kernels):
            flags = row_kv[c.kernels]
            if flags.any():
                c.kv_kernels = np.concatenate([c.kv_kernels, c.kernels[flags]]).astype(np.int64)
                c.kernels = c.kernels[~flags]


def add_kernel_hints(ctx: TraceContext, calls: Iterable[Call]) -> None:
    """perf_params hints the kernel names give an inference call: a sliding-window kernel (window size unknown) and
    an fp8 KV cache (`(vllm::Fp8KVCacheDataType)1` in the cache-write or attention kernel's template)."""
    names, codes = ctx.ev.names, ctx.ev.gpu["name"]
    for c in calls:
        if c.category != INFERENCE:
            continue
        kernel_names = {names[int(k)] for k in codes[c.kernels].tolist()}
        if any(kernel_window_hint(k) == "sliding" for k in kernel_names):
            c.extra_params.setdefault("sliding_window", "unknown")
        kv_names = {names[int(k)] for k in codes[c.kv_kernels].tolist()} | kernel_names
        cache = next((d for d in map(kernel_kv_cache_dtype, sorted(kv_names)) if d), None)
        if cache is not None:
            c.extra_params.setdefault("kv_cache_dtype", cache)


def attention_kernel_names(ctx: TraceContext, c: Call) -> tuple[str, ...]:
    """The distinct attention kernels of a call (sorted): rows whose kernels differ by name are not merged."""
    names, codes = ctx.ev.names, ctx.ev.gpu["name"]
    return tuple(sorted({n for n in (names[int(k)] for k in codes[c.kernels].tolist())
                         if N.kernel_role(n) == "attention"}))


# ---- graph capture -------------------------------------------------------------------------------------------------


def capture_regions(ctx: TraceContext) -> dict[int, list[tuple[float, float]]]:
    """Per CPU thread: the (start, end) of every graph capture (cuda/hipStreamBeginCapture .. EndCapture)."""
    rt = ctx.ev.rt
    if not len(rt):
        return {}
    names = ctx.ev.names
    codes = np.unique(rt["name"])
    begin = {int(c) for c in codes.tolist() if "StreamBeginCapture" in names[int(c)]}
    end = {int(c) for c in codes.tolist() if "StreamEndCapture" in names[int(c)]}
    if not begin:
        return {}
    sel = np.flatnonzero(np.isin(rt["name"], list(begin | end)))
    sel = sel[np.lexsort((rt["ts"][sel], rt["thread"][sel]))]
    out: dict[int, list[tuple[float, float]]] = {}
    open_at: dict[int, float] = {}
    for r in sel.tolist():
        thread, ts, nm = int(rt["thread"][r]), float(rt["ts"][r]), int(rt["name"][r])
        if nm in begin:
            open_at[thread] = ts
        elif thread in open_at:
            out.setdefault(thread, []).append((open_at.pop(thread), ts + float(rt["dur"][r])))
    for thread, ts in open_at.items():  # a capture still open when the trace ends
        out.setdefault(thread, []).append((ts, float("inf")))
    return out


def mark_captured(ctx: TraceContext, calls: list[Call]) -> list[list[Call]]:
    """Flag the fused calls made inside a graph capture and record the kernels their launches name; returns the
    captured calls grouped by capture region, in time order (the order their kernels have in the graph)."""
    regions = capture_regions(ctx)
    if not regions:
        return []
    f, rt, names = ctx.forest, ctx.ev.rt, ctx.ev.names
    groups: dict[tuple[int, int], list[Call]] = {}
    for c in calls:
        if c.kind != "fused" or c.top < 0:
            continue
        t0, t1 = float(f.ts[c.top]), float(f.ts[c.top] + f.dur[c.top])
        spans = regions.get(c.thread, [])
        k = next((i for i, (a, b) in enumerate(spans) if a <= t0 <= b), None)
        if k is None:
            continue
        c.captured = True
        sel = np.flatnonzero((rt["thread"] == c.thread) & (rt["ts"] >= t0) & (rt["ts"] <= t1) & (rt["kernel"] >= 0))
        c.launched = tuple(names[int(x)] for x in rt["kernel"][sel].tolist())
        groups.setdefault((c.thread, k), []).append(c)
    return [sorted(g, key=lambda c: float(f.ts[c.top])) for _, g in sorted(groups.items())]


def graph_launches(calls: Iterable[Call]) -> dict[int, list[Call]]:
    """Graph-replayed calls grouped by the graph launch they came from, each group in time order."""
    out: dict[int, list[Call]] = {}
    for c in calls:
        if c.kind == "graph":
            out.setdefault(c.node, []).append(c)
    return {k: sorted(v, key=lambda c: c.ts) for k, v in out.items()}


def _agreement(ctx: TraceContext, replay: list[Call], captured: list[Call]) -> tuple[int, int]:
    """(positions whose captured launches name the replayed attention kernel, positions where both are known)."""
    names, codes = ctx.ev.names, ctx.ev.gpu["name"]
    agree = known = 0
    for g, cap in zip(replay, captured, strict=True):
        if not cap.launched or not len(g.kernels):
            continue
        known += 1
        replayed = {N.short_kernel_name(names[int(k)]) for k in codes[g.kernels].tolist()}
        launched = {N.short_kernel_name(n) for n in cap.launched}
        agree += bool(replayed & launched)
    return agree, known


def adopt(g: Call, cap: Call, source: str) -> None:
    """The graph-replayed call `g` takes the shapes and name of the call `cap` that was captured into its graph."""
    g.name = cap.name
    g.category = cap.category
    g.direction = cap.direction
    g.dims, g.types, g.strides, g.concrete = cap.dims, cap.types, cap.strides, cap.concrete
    g.chain = list(cap.chain)
    g.attention_type = None
    g.captured = True
    g.warnings.append(f"{cap.name}: shapes from the call captured into the graph ({source}); times from the replay")


def match_replays(
    ctx: TraceContext, replays: dict[int, list[Call]], regions: list[list[Call]], source: str
) -> tuple[set[int], list[str]]:
    """Match each graph launch's replayed calls with the calls of one capture region, position by position (one
    per layer), and adopt their shapes. Returns the ids of the regions used and warnings."""
    used: set[int] = set()
    warnings: list[str] = []
    flat = [c for r in regions for c in r]
    for replay in replays.values():
        cands = [(i, r) for i, r in enumerate(regions) if len(r) == len(replay)]
        if not cands and len(flat) == len(replay):
            cands = [(-1, flat)]
        if not cands:
            counts = sorted({len(r) for r in regions})
            warnings.append(
                f"a graph replay with {len(replay)} attention calls matches no capture in {source} (captures hold "
                f"{counts or 'no'} attention calls): its calls keep no shapes"
            )
            continue
        scored = [(*_agreement(ctx, replay, r), -k, i, r) for k, (i, r) in enumerate(reversed(cands))]
        agree, known, _, i, region = max(scored, key=lambda t: (t[0], t[2]))
        if known and agree < known:
            warnings.append(
                f"the kernels captured in {source} differ from the replayed ones at {known - agree} of {known} "
                "layers: shapes not taken"
            )
            continue
        for g, cap in zip(replay, region, strict=True):
            adopt(g, cap, source)
        if i == -1:
            used.update(range(len(regions)))
        else:
            used.add(i)
    return used, warnings
