"""Find the attention calls of a trace: one Call per call, whatever the op nesting looks like.

A call is a maximal nest of attention ops (`aten::scaled_dot_product_attention` ->
`aten::_scaled_dot_product_flash_attention` -> `aten::_flash_attention_forward` is one call). The row
op is the outermost op of the nest that carries tensor shapes, skipping pure dispatchers
(`aten::scaled_dot_product_attention`, `autograd::engine::evaluate_function: ...`); a nest with no
shapes anywhere (an autograd backward node alone) keeps the node name and gets its shapes from the
linked forward (Sequence number + Fwd thread id).

Kernels belong to the call whose subtree holds their launch. Kernels replayed from a CUDA/HIP graph
all share one launch, so they are grouped by name instead (graph calls): one call per main attention kernel,
with the helpers beside it (quantization and KV-cache write before it, split-KV reduce after it; see
`segment_calls`), so a replay counts the calls its capture holds.
"""

from __future__ import annotations

import numpy as np

from sdpa_analyzer.perf_models.kernels import HELPERS_BEFORE_MAIN, HelperKind
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.calls import Call, has_tensor_shapes
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import CPU, GPU_ANN, KERNEL
from sdpa_analyzer.server.ingest.tree import nearest_marked_ancestor
from sdpa_analyzer.server.vocab import INFERENCE, SDPA_BWD, SDPA_FWD


def find_fused_calls(ctx: TraceContext) -> list[Call]:
    f = ctx.forest
    is_att = ctx.name_mask(N.is_attention_op, CPU)
    att_nodes = np.flatnonzero(is_att)
    if len(att_nodes) == 0:
        return []
    nma = f.nearest(is_att)
    # outer ops first, so a node's attention ancestor already knows its top
    order = att_nodes[np.lexsort((-f.dur[att_nodes], f.ts[att_nodes]))]
    top_of: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    ups = nma[order].tolist()
    for node, up in zip(order.tolist(), ups, strict=True):
        top = node if up < 0 else top_of.get(up, up)
        top_of[node] = top
        members.setdefault(top, []).append(node)

    calls: list[Call] = []
    for top, chain in members.items():
        calls.append(_call_from_chain(ctx, top, chain))
    _assign_kernels(ctx, calls)
    _link_backward(ctx, calls)
    return calls


def _call_from_chain(ctx: TraceContext, top: int, chain: list[int]) -> Call:
    f, ev = ctx.forest, ctx.ev
    chain_names = [ctx.node_name(n) for n in chain]
    candidates = [n for n, nm in zip(chain, chain_names, strict=True) if not N.is_wrapper(nm)] or chain
    # the outermost op with the call's real signature; an autograd node's Input Dims are its grads only
    shaped = [
        n for n in candidates if not N.is_autograd_node(ctx.node_name(n)) and has_tensor_shapes(ctx.signature(n)[0])
    ]
    if shaped:
        row_node = shaped[0]
        dims, types, strides, concrete = ctx.signature(row_node)
    else:
        row_node = candidates[0]
        dims = types = strides = concrete = None
        if not N.is_autograd_node(ctx.node_name(row_node)):
            dims, types, strides, concrete = ctx.signature(row_node)
    name = ctx.node_name(row_node)
    backward = any(N.is_backward_name(nm) for nm in chain_names)
    inference = any(N.is_inference_op(nm) for nm in chain_names)
    category = SDPA_BWD if backward else (INFERENCE if inference else SDPA_FWD)
    seq_keys: list[tuple[object, int]] = []
    fwd_key = None
    for n in chain:
        r = f.row(n)
        seq = int(ev.cpu["seq"][r])
        if seq < 0:
            continue
        tid = ctx.thread_tid(int(f.thread[n]))
        seq_keys.append((tid, seq))
        fwd_tid = int(ev.cpu["fwd_tid"][r])
        if backward and fwd_key is None:
            fwd_key = (fwd_tid if fwd_tid >= 0 else None, seq)
    # the path from the top op down to the row op (for call stacks)
    path = [top]
    anc = set(f.ancestors(row_node))
    path += [n for n in chain[1:] if n in anc or n == row_node]
    if row_node not in path:
        path.append(row_node)
    return Call(
        category=category,
        name=name,
        kind="fused",
        node=row_node,
        top=top,
        thread=int(f.thread[row_node]),
        ts=float(f.ts[row_node]),
        dur=float(f.dur[row_node]),
        ordinal=ctx.node_ordinal(row_node),
        dims=dims,
        types=types,
        strides=strides,
        concrete=concrete,
        direction="bwd" if backward else "fwd",
        chain=[ctx.node_name(n) for n in path],
        seq_keys=seq_keys,
        fwd_key=fwd_key,
    )


def _assign_kernels(ctx: TraceContext, calls: list[Call]) -> None:
    """Every GPU event launched inside a call's subtree (graph replays excluded) belongs to that call."""
    if not calls:
        return
    f = ctx.forest
    tops = np.fromiter((c.top for c in calls), dtype=np.int64, count=len(calls))
    mark = np.zeros(len(f), dtype=bool)
    mark[tops] = True
    # top node -> call index, by search in the sorted tops (not an array over every host node: 8 bytes a node);
    # the last call of a top, as assigning in call order would leave it
    by_top = np.argsort(tops, kind="stable")
    sorted_tops = tops[by_top]
    nma = nearest_marked_ancestor(f.parent, mark)
    gnode = ctx.gpu_node
    linked = np.flatnonzero((gnode >= 0) & ~ctx.links.graph & _activity(ctx))
    nodes = gnode[linked]
    owner = np.where(mark[nodes], nodes, nma[nodes])
    has = owner >= 0
    rows = linked[has]
    call_idx = by_top[np.searchsorted(sorted_tops, owner[has], side="right") - 1]
    order = np.argsort(call_idx, kind="stable")
    rows, call_idx = rows[order], call_idx[order]
    bounds = np.searchsorted(call_idx, np.arange(len(calls) + 1))
    for i, c in enumerate(calls):
        c.kernels = rows[bounds[i] : bounds[i + 1]]


def _activity(ctx: TraceContext) -> np.ndarray:
    return ctx.ev.gpu["kind"] != GPU_ANN  # kernels, memcpys, memsets


def _link_backward(ctx: TraceContext, calls: list[Call]) -> None:
    """Backward calls -> their forward call, through the autograd Sequence number.

    `Fwd thread id` is PyTorch's own thread index (1, 2, ...), not the OS tid the trace shows; it is
    used when it happens to equal a tid, otherwise the latest forward with that sequence number
    before the backward wins.
    """
    by_seq: dict[int, list[tuple[float, object, Call]]] = {}
    for c in calls:
        if c.direction != "fwd":
            continue
        for tid, seq in c.seq_keys:
            by_seq.setdefault(seq, []).append((c.ts, tid, c))
    for c in calls:
        if c.direction != "bwd" or c.fwd_key is None:
            continue
        c.forward = match_forward(by_seq, c.fwd_key, c.ts)
        if c.forward is None and not c.has_shapes:
            c.warnings.append(
                f"{c.name}: no forward op with Sequence number {c.fwd_key[1]} in the trace; shapes unknown"
            )


def match_forward(
    by_seq: dict[int, list[tuple[float, object, Call]]], key: tuple[object, int], before: float
) -> Call | None:
    tid, seq = key
    cands = by_seq.get(seq, [])
    if not cands:
        return None
    same = [t for t in cands if tid is not None and t[1] == tid]
    pool = same or cands
    earlier = [t for t in pool if t[0] <= before]
    return max(earlier or pool, key=lambda t: t[0])[2]


# ---- graph-replayed kernels ------------------------------------------------------------------------


def find_graph_calls(ctx: TraceContext) -> list[Call]:
    """Attention kernels replayed from a CUDA/HIP graph: no CPU op per call, so calls are cut from each stream's
    kernels (`segment_calls`): one call per main attention kernel, with its helpers."""
    ev, links = ctx.ev, ctx.links
    gpu = ev.gpu
    sel = np.flatnonzero(links.graph & (gpu["kind"] == KERNEL))
    if len(sel) == 0:
        return []
    kinds = np.array([segment_kind(ev.names[c]) for c in gpu["name"][sel].tolist()], dtype=np.int8)
    if not (kinds == MAIN).any():
        return []
    calls: list[Call] = []
    streams = gpu["thread"][sel]
    for stream in np.unique(streams).tolist():
        on = streams == stream
        idx, k = sel[on], kinds[on]
        o = np.argsort(gpu["ts"][idx], kind="stable")
        idx, k = idx[o], k[o]
        for rows, main in segment_calls(k, gpu["name"][idx]):
            calls.append(_graph_call(ctx, idx[rows], int(idx[main])))
    return calls


# what a kernel is to the call segmentation of a graph replay
OTHER, MAIN, BEFORE, AFTER = 0, 1, 2, 3


def segment_kind(name: str) -> int:
    role = N.kernel_role(name)
    if role == "attention":
        return MAIN
    if role == "kv_cache":
        return BEFORE
    if role == "helper":
        kind = N.helper_kind(name)
        if kind is HelperKind.PREPARE:  # page indices / metadata outside a call's op serve a whole step
            return OTHER
        return BEFORE if kind in HELPERS_BEFORE_MAIN else AFTER
    return OTHER


def segment_calls(kinds: np.ndarray, names: np.ndarray) -> list[tuple[list[int], int]]:
    """The attention calls of one stream's replayed kernels (in time order): (positions of the call's kernels, the
    position of its first main kernel).

    A call is its main attention kernel plus its helpers, never one call per kernel: the helpers that run before a
    main kernel (quantization, KV-cache write) wait for the next main kernel; those that run after it
    (split-KV reduce / combine) join the call of the last main kernel. Two main kernels of different names back to
    back are one call (a step's prefill and decode kernels); the same kernel again is the next layer's call.
    Helpers no main kernel claims stay outside every call (counted nowhere, as any other kernel)."""
    calls: list[tuple[list[int], int]] = []
    pending: list[int] = []
    current: list[int] | None = None
    last_main = -1  # the code of the main kernel right before (no kernel between), else -1
    for i, (kind, code) in enumerate(zip(kinds.tolist(), names.tolist(), strict=True)):
        if kind == MAIN:
            if current is not None and not pending and last_main >= 0 and last_main != code:
                current.append(i)
            else:
                current = [*pending, i]
                calls.append((current, i))
                pending = []
            last_main = code
            continue
        last_main = -1
        if kind == BEFORE:
            pending.append(i)
        elif kind == AFTER and current is not None and not pending:
            current.append(i)
    return calls


def _graph_call(ctx: TraceContext, rows: np.ndarray, main_row: int) -> Call:
    ev = ctx.ev
    main_name = ev.names[int(ev.gpu["name"][main_row])]
    kernel_names = [ev.names[int(c)] for c in ev.gpu["name"][rows].tolist()]
    paged = any(N.is_decode_kernel(k) or N.kernel_role(k) == "kv_cache" for k in kernel_names)
    backward = any(N.is_backward_name(k) or "bwd" in k.lower() for k in kernel_names)
    category = SDPA_BWD if backward else (INFERENCE if paged else SDPA_FWD)
    launch = int(ctx.gpu_node[main_row])
    f = ctx.forest
    thread = int(f.thread[launch]) if launch >= 0 else -1
    return Call(
        category=category,
        name=f"cuda_graph::{N.short_kernel_name(main_name)}",
        kind="graph",
        node=launch,
        top=-1,
        thread=thread,
        ts=float(ev.gpu["ts"][rows[0]]),
        dur=float("nan"),
        ordinal=int(ev.gpu["ordinal"][main_row]),
        kernels=rows,
        direction="bwd" if backward else "fwd",
        chain=[],
        attention_type="paged" if paged else None,
    )
