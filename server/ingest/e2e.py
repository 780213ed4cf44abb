"""The E2E baseline: which GPU activity belongs to the profiled window, and how busy the GPU was.

Window, in order of preference:
1. the GPU-side `ProfilerStep#N` annotations (Kineto draws them on the GPU timeline from the first to
   the last GPU op launched inside the step): their span;
2. the CPU-side `ProfilerStep#N` annotations: the span of the GPU work launched inside them;
3. first-to-last GPU activity in the trace.

`total_time_ms` is first start to last end of the kernels, memcpys and memsets inside the window (idle
gaps included). Shares, as in the upstream tool: computation = union of compute kernels and memsets;
exposed communication = collective kernels not hidden under computation; exposed memcpy = copies hidden
under neither; idle = the rest. GPU work outside the window and kernels without any CPU launch are
counted and reported, never silently dropped (docs/perf-model.md, pitfall 9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sdpa_analyzer.server.ingest.events import GPU_ANN, KERNEL, MEMCPY, MEMSET, TraceEvents
from sdpa_analyzer.server.ingest.linking import Links

_COMM_RE = re.compile(
    r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|multimem|cross_device_reduce|"
    r"SendRecv|ncclDevKernel|msccl|custom_ar",
    re.I,
)
_STEP_RE = re.compile(r"^ProfilerStep#\d+")


@dataclass
class Baseline:
    window_start_us: float
    window_end_us: float
    source: str  # gpu_profiler_step | cpu_profiler_step | gpu_activity
    steps: list[str]
    total_time_ms: float
    computation_time_percent: float
    exposed_comm_time_percent: float
    exposed_memcpy_time_percent: float
    idle_time_percent: float
    busy_time_ms: float
    in_window: np.ndarray  # gpu row -> overlaps the window (activity rows only)
    is_comm: np.ndarray  # gpu row -> collective kernel
    counts: dict[str, Any] = field(default_factory=dict)

    def gpu_utilization(self) -> dict[str, float]:
        return {
            "total_time_ms": self.total_time_ms,
            "computation_time_percent": self.computation_time_percent,
            "exposed_comm_time_percent": self.exposed_comm_time_percent,
            "exposed_memcpy_time_percent": self.exposed_memcpy_time_percent,
            "idle_time_percent": self.idle_time_percent,
        }


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length covered by a set of intervals (overlaps counted once)."""
    n = len(starts)
    if n == 0:
        return 0.0
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    reach = np.maximum.accumulate(e)
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    seg_end = np.maximum.reduceat(e, first)
    return float(np.sum(seg_end - s[first]))


def compute_baseline(ev: TraceEvents, links: Links) -> Baseline:
    gpu = ev.gpu
    kind = gpu["kind"] if len(gpu) else np.zeros(0, dtype=np.int64)
    ts = gpu["ts"] if len(gpu) else np.zeros(0)
    dur = np.maximum(gpu["dur"], 0.0) if len(gpu) else np.zeros(0)
    end = ts + dur
    activity = np.isin(kind, (KERNEL, MEMCPY, MEMSET))
    names = ev.names
    comm_name = np.array([bool(_COMM_RE.search(n)) for n in names], dtype=bool)
    is_comm = activity & (kind == KERNEL) & comm_name[gpu["name"]] if len(gpu) else np.zeros(0, dtype=bool)

    start_w, end_w, source, steps = _window(ev, links, activity, ts, end)
    in_window = activity & (end > start_w) & (ts < end_w)
    # relative times: absolute µs stamps (~1e12) sit on a 0.24 ns grid; add durations after shifting
    rel = ts[in_window] - start_w
    cs = np.clip(rel, 0.0, end_w - start_w)
    ce = np.clip(rel + dur[in_window], 0.0, end_w - start_w)
    k = kind[in_window]
    comm = is_comm[in_window]
    compute = ((k == KERNEL) & ~comm) | (k == MEMSET)
    if len(cs):
        t0, t1 = float(cs.min()), float(ce.max())
    else:
        t0 = t1 = 0.0
    total = max(t1 - t0, 0.0)
    u_compute = union_length(cs[compute], ce[compute])
    u_cc = union_length(cs[compute | comm], ce[compute | comm])
    u_all = union_length(cs, ce)

    def pct(x: float) -> float:
        return 100.0 * x / total if total > 0 else 0.0

    counts = _unlinked_counts(gpu, links, activity, in_window, dur, names)
    return Baseline(
        window_start_us=float(start_w),
        window_end_us=float(end_w),
        source=source,
        steps=steps,
        total_time_ms=total / 1000.0,
        computation_time_percent=pct(u_compute),
        exposed_comm_time_percent=pct(u_cc - u_compute),
        exposed_memcpy_time_percent=pct(u_all - u_cc),
        idle_time_percent=pct(total - u_all),
        busy_time_ms=u_all / 1000.0,
        in_window=in_window,
        is_comm=is_comm,
        counts=counts,
    )


def _window(
    ev: TraceEvents, links: Links, activity: np.ndarray, ts: np.ndarray, end: np.ndarray
) -> tuple[float, float, str, list[str]]:
    gpu, ann = ev.gpu, ev.ann
    names = ev.names
    if len(gpu):
        gann = np.flatnonzero(gpu["kind"] == GPU_ANN)
        step = [i for i in gann.tolist() if _STEP_RE.match(names[gpu["name"][i]])]
        if step:
            s = np.asarray(step)
            return (
                float(ts[s].min()),
                float(end[s].max()),
                "gpu_profiler_step",
                sorted({names[gpu["name"][i]] for i in step}),
            )
    if len(ann) and len(ev.rt):
        step = [i for i in range(len(ann)) if _STEP_RE.match(names[ann["name"][i]])]
        if step:
            s = np.asarray(step)
            a0 = ann["ts"][s]
            a1 = a0 + ann["dur"][s]
            linked = activity & (links.launch >= 0)
            idx = np.flatnonzero(linked)
            lts = ev.rt["ts"][links.launch[idx]]
            inside = np.zeros(len(idx), dtype=bool)
            for lo, hi in zip(a0.tolist(), a1.tolist(), strict=True):
                inside |= (lts >= lo) & (lts <= hi)
            if inside.any():
                sel = idx[inside]
                return (
                    float(ts[sel].min()),
                    float(end[sel].max()),
                    "cpu_profiler_step",
                    sorted({names[ann["name"][i]] for i in step}),
                )
    act = np.flatnonzero(activity)
    if len(act) == 0:
        return 0.0, 0.0, "gpu_activity", []
    return float(ts[act].min()), float(end[act].max()), "gpu_activity", []


def _unlinked_counts(
    gpu: Any, links: Links, activity: np.ndarray, in_window: np.ndarray, dur: np.ndarray, names: list[str]
) -> dict[str, Any]:
    if len(gpu) == 0:
        return {}
    no_launch = activity & (links.launch < 0) & (links.ext_op < 0)
    outside = activity & ~in_window
    kern = gpu["kind"] == KERNEL
    return {
        "gpu_events": int(activity.sum()),
        "kernels": int((activity & kern).sum()),
        "in_window": int(in_window.sum()),
        "outside_window": int(outside.sum()),
        "outside_window_time_us": float(dur[outside].sum()),
        "without_cpu_launch": int(no_launch.sum()),
        "without_cpu_launch_time_us": float(dur[no_launch].sum()),
        "without_cpu_launch_in_window": int((no_launch & in_window).sum()),
        "without_cpu_launch_in_window_time_us": float(dur[no_launch & in_window].sum()),
        "linked_via_flow": int(links.via_flow),
        "graph_launched": int((links.graph & activity).sum()),
    }
