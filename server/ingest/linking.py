"""Link GPU activity (kernels, memcpys, memsets) to the host runtime call that launched it.

Order of evidence, per GPU event:
1. `args.correlation` equal to a runtime/driver event's `args.correlation` (CUPTI / roctracer id);
2. the `ac2g` flow arrow: an `f` event at the kernel's (pid, tid, ts) whose `s` partner sits on a
   runtime event's (pid, tid, ts);
3. `args["External id"]` equal to a cpu_op's External id (no runtime event: the op itself).
Vectorized with sorted keys; the flow fallback (rare: traces without correlation args) uses dicts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sdpa_analyzer.server.ingest.events import TraceEvents


@dataclass
class Links:
    launch: np.ndarray  # gpu row -> rt row (-1: no runtime launch found)
    ext_op: np.ndarray  # gpu row -> cpu row matched by External id when `launch` is -1 (else -1)
    graph: np.ndarray  # gpu row -> True when launched by a graph launch (cuda/hipGraphLaunch)
    via_flow: int  # how many links came from flow arrows


def link_gpu_events(ev: TraceEvents) -> Links:
    gpu, rt = ev.gpu, ev.rt
    n = len(gpu)
    launch = np.full(n, -1, dtype=np.int64)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return Links(z, z.copy(), np.zeros(0, dtype=bool), 0)

    # 1. correlation ids
    if len(rt):
        rc = rt["corr"]
        valid = np.flatnonzero(rc >= 0)
        order = valid[np.argsort(rc[valid], kind="stable")]
        keys = rc[order]
        gc = gpu["corr"]
        pos = np.searchsorted(keys, gc, side="left")
        hit = (gc >= 0) & (pos < len(keys))
        hit[hit] = keys[pos[hit]] == gc[hit]
        launch[hit] = order[pos[hit]]

    # 2. flow arrows for what is still unlinked
    via_flow = 0
    missing = np.flatnonzero(launch < 0)
    if len(missing) and len(ev.flow) and len(rt):
        via_flow = _link_by_flow(ev, missing, launch)

    # 3. External id straight to the op
    ext_op = np.full(n, -1, dtype=np.int64)
    missing = np.flatnonzero((launch < 0) & (gpu["ext"] >= 0))
    if len(missing) and len(ev.cpu):
        ce = ev.cpu["ext"]
        valid = np.flatnonzero(ce >= 0)
        order = valid[np.argsort(ce[valid], kind="stable")]
        keys = ce[order]
        ge = gpu["ext"][missing]
        pos = np.searchsorted(keys, ge, side="left")
        ok = pos < len(keys)
        ok[ok] = keys[pos[ok]] == ge[ok]
        ext_op[missing[ok]] = order[pos[ok]]

    graph = np.zeros(n, dtype=bool)
    if len(rt):
        graph_names = np.array(["GraphLaunch" in nm for nm in ev.names], dtype=bool)
        linked = launch >= 0
        graph[linked] = graph_names[rt["name"][launch[linked]]]
    return Links(launch, ext_op, graph, via_flow)


def _link_by_flow(ev: TraceEvents, missing: np.ndarray, launch: np.ndarray) -> int:
    """Flow arrows for the GPU rows still unlinked. Only the arrows and runtime events that can meet one of them are
    put in the dicts (numpy narrows them first: a time that no unlinked row has cannot match), the first of each key
    winning as in a walk over all of them."""
    flow, gpu, rt = ev.flow, ev.gpu, ev.rt
    is_start = flow["is_start"]
    ends = np.flatnonzero(~is_start & np.isin(flow["ts"], gpu["ts"][missing]))
    starts = np.flatnonzero(is_start & np.isin(flow["id"], flow["id"][ends]))
    finish: dict[tuple[int, float], int] = {}
    for fid, thr, ts in zip(
        flow["id"][ends].tolist(), flow["thread"][ends].tolist(), flow["ts"][ends].tolist(), strict=True
    ):
        finish.setdefault((thr, ts), fid)
    start: dict[int, tuple[int, float]] = {}
    for fid, thr, ts in zip(
        flow["id"][starts].tolist(), flow["thread"][starts].tolist(), flow["ts"][starts].tolist(), strict=True
    ):
        start.setdefault(fid, (thr, ts))
    rt_at: dict[tuple[int, float], int] = {}
    near = np.flatnonzero(np.isin(rt["ts"], flow["ts"][starts]))
    for i, thr, ts in zip(near.tolist(), rt["thread"][near].tolist(), rt["ts"][near].tolist(), strict=True):
        rt_at.setdefault((thr, ts), i)
    linked = 0
    g_thr, g_ts = gpu["thread"], gpu["ts"]
    for g in missing.tolist():
        fid = finish.get((int(g_thr[g]), float(g_ts[g])))
        if fid is None:
            continue
        src = start.get(fid)
        if src is None:
            continue
        r = rt_at.get(src)
        if r is not None:
            launch[g] = r
            linked += 1
    return linked
