"""Parse a trace file into a TraceContext: events -> host forest -> launch links -> E2E baseline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from sdpa_analyzer.perf_models.literals import MAX_NESTING
from sdpa_analyzer.server.gc_pause import gc_paused
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.e2e import compute_baseline
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.events import ANN, CPU, KERNEL, PY, RT, EventTablesBuilder, TraceEvents
from sdpa_analyzer.server.ingest.linking import link_gpu_events
from sdpa_analyzer.server.ingest.reader import TraceReader
from sdpa_analyzer.server.ingest.tree import HostForest
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

Stage = Callable[[float, str], None]
STREAMING = True  # False: every trace parsed as one document (the reference the streamed read is tested against)


def load_trace(
    path: Path, stage: Stage | None = None, roots: DataRoots = UNRESTRICTED, *, require_gpu: bool = True
) -> TraceContext:
    """Read and index one trace (opened through `roots`). Raises TraceError (one line) for anything that is not
    a GPU trace (a graph-capture trace may have no kernels at all: `require_gpu=False`)."""
    report = stage or (lambda _f, _m: None)
    builder = EventTablesBuilder(keep_args=N.keep_args)
    reader = TraceReader(
        path, progress=lambda frac: report(frac, "parse"), roots=roots, decode=builder.decoder(), stream=STREAMING
    )
    # The raw event objects are acyclic and die with their chunk; the cyclic GC only rescans them.
    try:
        with gc_paused():
            for chunk in reader.chunks():
                builder.add(chunk)
    except TraceError as exc:
        msg = str(exc)
        raise TraceError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None
    ev = builder.finish()
    del builder
    release_free_heap()
    if reader.n_events == 0:
        raise TraceError(f"{path}: traceEvents is empty — record with torch.profiler and export the trace again")
    if require_gpu and (len(ev.gpu) == 0 or not (ev.gpu["kind"] == KERNEL).any()) and ev.excluded:
        raise TraceError(
            f"{path}: no GPU kernel with a usable time: {ev.excluded} event(s) have a ts/dur that is not a "
            f"finite number, a negative dur, or a time far outside the trace (e.g. {ev.excluded_example}) — "
            "export the trace again"
        )
    if require_gpu and (len(ev.gpu) == 0 or not (ev.gpu["kind"] == KERNEL).any()):
        launches = _kernel_launches(ev)
        if launches:  # CUDA profiling was on: the runtime launched kernels, their records are missing
            raise TraceError(
                f"{path}: {launches} kernel launch runtime event(s) but no kernel records — GPU profiling was on, the "
                "kernel records were lost (CUPTI/roctracer buffer overflow in a long window, a profiler stopped "
                "before the GPU finished, a truncated export): profile a shorter window, one active step "
                "(docs/recording.md)"
            )
        raise TraceError(
            f"{path}: CPU-only trace (no GPU kernels among {reader.n_events} events) — profile with "
            "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] so kernels are recorded (docs/recording.md)"
        )
    report(1.0, "tree")
    forest = HostForest.over_tables([(CPU, ev.cpu.cols), (RT, ev.rt.cols), (PY, ev.py.cols), (ANN, ev.ann.cols)])
    report(1.0, "link")
    links = link_gpu_events(ev)
    baseline = compute_baseline(ev, links)
    if require_gpu and not baseline.total_time_ms > 0:
        raise TraceError(
            f"{path}: every GPU kernel, memcpy and memset in the profiled window has zero duration, so the E2E "
            "baseline is 0 ms — the durations were lost: export the trace again (or profile again)"
        )
    ctx = TraceContext(path=Path(path), ev=ev, forest=forest, links=links, baseline=baseline, header=reader.header)
    if ev.excluded:
        ctx.warnings.append(
            f"{ev.excluded} event(s) left out: ts/dur not a finite number, a negative dur, or a time far outside "
            f"the trace (e.g. {ev.excluded_example})"
        )
    if ev.deep_args:
        ctx.warnings.append(
            f"{ev.deep_args} op event(s) have Input Dims/type/Strides/Concrete Inputs nested deeper than "
            f"{MAX_NESTING} levels: kept without their arguments (no perf model)"
        )
    if ev.bad_ids:
        ctx.warnings.append(
            f"{ev.bad_ids} id(s) (External id, correlation, flow id, Sequence number) are not 64-bit integers: "
            "those events are not linked by them"
        )
    return ctx


def _kernel_launches(ev: TraceEvents) -> int:
    """How many runtime events launch kernels (cudaLaunchKernel, hipModuleLaunchKernel, cuLaunchKernelEx,
    *GraphLaunch, ...)."""
    if not len(ev.rt):
        return 0
    codes, counts = np.unique(ev.rt["name"], return_counts=True)
    return int(sum(n for c, n in zip(codes.tolist(), counts.tolist(), strict=True) if "Launch" in ev.names[c]))
