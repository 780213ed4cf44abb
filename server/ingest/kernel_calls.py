"""Calls made from the kernels: attention kernels launched from the CPU under an op the registry does not know.

A call otherwise exists only where a known attention op sits. A model's own `torch.autograd.Function`, a custom
op, a compiled region or a pybind extension called from Python launches FlashAttention (or any other attention
kernel) under an op name no list holds, often with no Input Dims. Those kernels still are attention calls: this pass
groups every attention kernel no call holds by the innermost host event around its launch (the CPU op, else the
user annotation or Python frame: the call's *caller*, whose name the row keeps), cuts each group into calls the way a
graph replay is cut (`segment_calls`: one call per main kernel, its helpers beside it), and takes the direction from
the kernel family (perf_models.kernels.kernel_direction). A backward whose caller carries an autograd Sequence number
is paired with the forward call whose ops (or, when they carry none, the nearest op around them: a model's own autograd
Function) have the same number, takes its config and is modeled from it.

What stays outside every call after this pass is only what has no CPU launch at all (the previous step's kernels,
lost runtime records): analyze lists it as outside every op, with its time.
"""

from __future__ import annotations

import numpy as np

from sdpa_analyzer.perf_models.kernels import HelperKind, KernelRole, classify_kernel, kernel_direction
from sdpa_analyzer.perf_models.ops.types import AttentionType
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.attention import BEFORE, MAIN, OTHER, match_forward, segment_calls, segment_kind
from sdpa_analyzer.server.ingest.calls import Call, has_tensor_shapes, held_gpu_events
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import CPU, GPU_ANN, RT
from sdpa_analyzer.server.vocab import INFERENCE, SDPA_BWD, SDPA_FWD

KERNEL_CALL = "kernel"  # Call.kind of a call made from its kernels
NO_OP, NO_LAUNCH = -1, -2  # the caller of kernels launched outside every host event / with no launch record


def attention_kernel_mask(ctx: TraceContext) -> np.ndarray:
    """A mask over the trace's GPU events: the kernels whose own name is an attention kernel's (main kernels, not
    their helpers)."""
    gpu = ctx.ev.gpu
    if not len(gpu):
        return np.zeros(0, dtype=bool)
    flags = np.zeros(len(ctx.ev.names), dtype=bool)
    for code in np.unique(gpu["name"]).tolist():  # once per distinct GPU event name
        flags[code] = classify_kernel(ctx.ev.names[code])[0] is KernelRole.ATTENTION
    return (gpu["kind"] == 0) & flags[gpu["name"]]


def find_kernel_calls(ctx: TraceContext, calls: list[Call]) -> list[Call]:
    """The calls of the attention kernels no call in `calls` holds and that have a CPU launch outside a graph
    replay (replays are find_graph_calls'), one per main kernel, under the innermost host event around the launch."""
    gpu = ctx.ev.gpu
    if not len(gpu):
        return []
    node = ctx.gpu_node
    # launched from the CPU, or without a launch record but inside the profiled window (lost runtime records) — unless
    # a known op's call lost its kernels' links too: such kernels may be its own, so they stay in the outside-every-op
    # list rather than count as calls twice. The kernels of another step (outside the window, no launch) stay outside.
    lost = any(c.kind == "fused" and not c.captured and len(c.kernels) == 0 for c in calls)
    reach = (node >= 0) | (ctx.baseline.in_window & (not lost))
    free = reach & ~ctx.links.graph & (gpu["kind"] != GPU_ANN) & ~held_gpu_events(calls, len(gpu))
    loose = np.flatnonzero(free & attention_kernel_mask(ctx))
    if len(loose) == 0:
        return []
    cand = np.flatnonzero(free)
    launched = node[cand] >= 0
    owner = np.full(len(cand), NO_LAUNCH, dtype=np.int64)
    owner[launched] = _callers(ctx, node[cand[launched]])
    wanted = np.unique(owner[np.isin(cand, loose)])
    keep = np.isin(owner, wanted)
    cand, owner = cand[keep], owner[keep]
    # one pass over the candidates sorted by (caller, stream, time): each run of one caller and stream is cut into
    # calls (linear in the kernels, however many callers)
    stream = gpu["thread"][cand]
    order = np.lexsort((gpu["ts"][cand], stream, owner))
    cand, owner, stream = cand[order], owner[order], stream[order]
    codes, inverse = np.unique(gpu["name"][cand], return_inverse=True)  # decided once per distinct kernel name
    kinds = np.array([_kind(ctx.ev.names[c]) for c in codes.tolist()], dtype=np.int8)[inverse.reshape(-1)]
    cuts = np.flatnonzero((np.diff(owner) != 0) | (np.diff(stream) != 0)) + 1
    out: list[Call] = []
    for a, b in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [len(cand)]]).tolist(), strict=True):
        idx, k = cand[a:b], kinds[a:b]
        if not (k == MAIN).any():
            continue
        for members, main in segment_calls(k, gpu["name"][idx]):
            for part, first in _split_by_direction(ctx, idx, k, members, main):
                out.append(_kernel_call(ctx, int(owner[a]), idx[part], int(idx[first])))
    _pair_backward(ctx, out, calls + out)
    return out


def _split_by_direction(ctx: TraceContext, idx: np.ndarray, kinds: np.ndarray, members: list[int],
                        main: int) -> list[tuple[list[int], int]]:  # fmt: skip
    """A segment whose back-to-back main kernels run a forward then a backward (under one caller, nothing between)
    is two calls: cut before each main kernel whose direction differs from the one before it; the helpers stay
    with the main kernel they follow (the first part keeps the helpers before its main kernel)."""
    names = ctx.ev.names
    mains = [i for i in members if kinds[i] == MAIN]
    dirs = [kernel_direction(names[int(ctx.ev.gpu["name"][idx[i]])]) for i in mains]
    if len(set(dirs)) < 2:
        return [(members, main)]
    cuts = {m for m, d, prev in zip(mains[1:], dirs[1:], dirs[:-1], strict=True) if d != prev}
    parts: list[tuple[list[int], int]] = [([], main)]
    for i in members:
        if i in cuts:
            parts.append(([], i))
        parts[-1][0].append(i)
    return parts


def _kind(name: str) -> int:
    """segment_kind, except that a preparing helper (the backward's dO·O preprocess, varlen metadata) joins the
    next main kernel: under one caller op it serves that call, not a whole step as in a graph replay."""
    kind = segment_kind(name)
    if kind == OTHER and N.helper_kind(name) is HelperKind.PREPARE:
        return BEFORE
    return kind


def _callers(ctx: TraceContext, launch_nodes: np.ndarray) -> np.ndarray:
    """The innermost CPU op around each launch (the launch itself when the kernel was matched to its op by External
    id), else the innermost annotation or Python frame, else -1."""
    f = ctx.forest
    is_cpu = f.fam == CPU
    up_cpu = f.nearest(is_cpu)
    owner = np.where(is_cpu[launch_nodes], launch_nodes, up_cpu[launch_nodes])
    if (owner < 0).any():
        up_any = f.nearest(f.fam != RT)
        owner = np.where(owner >= 0, owner, up_any[launch_nodes])
    return owner


def _kernel_call(ctx: TraceContext, caller: int, rows: np.ndarray, main_row: int) -> Call:
    ev, f = ctx.ev, ctx.forest
    main_name = ev.names[int(ev.gpu["name"][main_row])]
    kernel_names = [ev.names[int(c)] for c in ev.gpu["name"][rows].tolist()]
    # KV-cache writes feeding the call are accounted beside it, never in its kernel time (as for a known op's call)
    is_kv = np.array([N.kernel_role(k) == "kv_cache" for k in kernel_names], dtype=bool)
    direction = kernel_direction(main_name) or "fwd"
    paged = classify_kernel(main_name)[1] is AttentionType.PAGED or any(
        N.is_decode_kernel(k) or N.kernel_role(k) == "kv_cache" for k in kernel_names
    )
    category = SDPA_BWD if direction == "bwd" else (INFERENCE if paged else SDPA_FWD)
    launch = int(ctx.gpu_node[main_row])
    if caller >= 0:
        name = ctx.node_name(caller)
    else:
        name = f"{'(no op)' if caller == NO_OP else '(no CPU launch)'}::{N.short_kernel_name(main_name)}"
    dims = types = strides = concrete = None
    seq_keys: list[tuple[object, int]] = []
    fwd_key = None
    if caller >= 0 and int(f.fam[caller]) == CPU:
        if not N.is_autograd_node(name):  # an autograd node's Input Dims are its grads only
            dims, types, strides, concrete = ctx.signature(caller)
            if not has_tensor_shapes(dims):
                dims = types = strides = concrete = None
        r = f.row(caller)
        seq = int(ev.cpu["seq"][r])
        if seq >= 0:
            seq_keys.append((ctx.thread_tid(int(f.thread[caller])), seq))
            if direction == "bwd":
                fwd_tid = int(ev.cpu["fwd_tid"][r])
                fwd_key = (fwd_tid if fwd_tid >= 0 else None, seq)
    return Call(
        category=category,
        name=name,
        kind=KERNEL_CALL,
        node=caller,
        top=caller,
        thread=int(f.thread[launch]) if launch >= 0 else -1,
        ts=float(f.ts[launch]) if launch >= 0 else float(ev.gpu["ts"][main_row]),
        dur=float("nan"),
        ordinal=ctx.node_ordinal(caller) if caller >= 0 else int(ev.gpu["ordinal"][main_row]),
        dims=dims,
        types=types,
        strides=strides,
        concrete=concrete,
        kernels=rows[~is_kv],
        kv_kernels=rows[is_kv],
        direction=direction,
        chain=[name],
        seq_keys=seq_keys,
        fwd_key=fwd_key,
        attention_type="paged" if paged else None,
    )


def _pair_backward(ctx: TraceContext, new: list[Call], every: list[Call]) -> None:
    """A backward kernel call -> the forward call (a known op's or one made from kernels) whose ops carry its
    autograd Sequence number: a backward made from its kernels then takes that forward's shapes (and is modeled from
    them: perf_models.ops.registry reads an unknown op's full perf_params). A forward call whose own ops carry no
    Sequence number (a known op run inside a model's own autograd Function's forward, where grad mode is off) is
    keyed by the nearest op around it that carries one: the Function, whose backward node has the same number."""
    wanted = [c for c in new if c.direction == "bwd" and c.fwd_key is not None]
    if not wanted:
        return
    by_seq: dict[int, list[tuple[float, object, Call]]] = {}
    around = _enclosing_sequence(ctx, [c.top for c in every if c.direction == "fwd" and not c.seq_keys])
    for c in every:
        if c.direction != "fwd":
            continue
        keys = c.seq_keys or ([around[c.top]] if c.top in around else [])
        for tid, seq in keys:
            by_seq.setdefault(seq, []).append((c.ts, tid, c))
    for c in wanted:
        c.forward = match_forward(by_seq, c.fwd_key, c.ts)


def _enclosing_sequence(ctx: TraceContext, nodes: list[int]) -> dict[int, tuple[object, int]]:
    """node -> (thread id, Sequence number) of the nearest CPU op strictly around it that carries one (one pass over
    the host forest, whatever the nesting depth)."""
    nodes = [n for n in nodes if n >= 0]
    if not nodes:
        return {}
    f, cpu = ctx.forest, ctx.ev.cpu
    is_cpu = np.flatnonzero(f.fam == CPU)
    seq = np.full(len(f), -1, dtype=np.int64)
    seq[is_cpu] = cpu["seq"][is_cpu - f.offset[CPU]]
    up = f.nearest(seq >= 0)
    out: dict[int, tuple[object, int]] = {}
    for n in nodes:
        a = int(up[n])
        if a >= 0:
            out[n] = (ctx.thread_tid(int(f.thread[a])), int(seq[a]))
    return out
