"""What surrounds the events in a Kineto file: the header (deviceProperties, runtime versions, trace id),
process and thread metadata, the profiler span and instant events, and the ns -> µs conversion."""

from __future__ import annotations

import zlib
from typing import Any

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.gpus import Gpu

_BASE_TIME_NS = 1_751_410_836_000_000_000  # baseTimeNanoseconds of the header: a fixed wall-clock origin


def metadata_events(b: TraceBuilder, ts: int, with_autograd: bool) -> list[dict]:
    """Process and thread name / sort-index events (the autograd thread's only when it ran)."""
    cpu, gpu = b.pid, 0
    events = [
        {"name": "process_name", "ph": "M", "ts": ts, "pid": cpu, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": ts, "pid": cpu, "tid": 0, "args": {"labels": "CPU"}},
        {"name": "process_sort_index", "ph": "M", "ts": ts, "pid": cpu, "tid": 0, "args": {"sort_index": cpu}},
        {"name": "process_name", "ph": "M", "ts": ts, "pid": gpu, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": ts, "pid": gpu, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "process_sort_index", "ph": "M", "ts": ts, "pid": gpu, "tid": 0, "args": {"sort_index": 5000000}},
        {"name": "thread_name", "ph": "M", "ts": ts, "pid": gpu, "tid": b.gpu.stream,
         "args": {"name": f"stream {b.gpu.stream} "}},
        {"name": "thread_sort_index", "ph": "M", "ts": ts, "pid": gpu, "tid": b.gpu.stream,
         "args": {"sort_index": b.gpu.stream}},
        {"name": "thread_name", "ph": "M", "ts": ts, "pid": cpu, "tid": b.main_tid,
         "args": {"name": f"thread {b.main_tid} (python3)"}},
        {"name": "thread_sort_index", "ph": "M", "ts": ts, "pid": cpu, "tid": b.main_tid,
         "args": {"sort_index": b.main_tid}},
    ]
    if with_autograd:
        events += [
            {"name": "thread_name", "ph": "M", "ts": ts, "pid": cpu, "tid": b.autograd_tid,
             "args": {"name": f"thread {b.autograd_tid} (pt_autograd_0)"}},
            {"name": "thread_sort_index", "ph": "M", "ts": ts, "pid": cpu, "tid": b.autograd_tid,
             "args": {"sort_index": b.autograd_tid}},
        ]
    return events


def span_events(start: int, end: int) -> tuple[list[dict], list[dict]]:
    """(the profiler's span events, its iteration-start and record-window-end instants)."""
    span = [{"ph": "X", "cat": "Trace", "ts": start, "dur": end - start, "pid": "Spans", "tid": "PyTorch Profiler",
             "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
            {"name": "process_sort_index", "ph": "M", "ts": start, "pid": "Spans", "tid": 0,
             "args": {"sort_index": 536870912}}]
    instants = [{"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
                 "tid": "Trace PyTorch Profiler", "ts": start},
                {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": end + 1_000_000}]
    return span, instants


def trace_header(gpu: Gpu, seed: int, name: str, distributed_info: dict | None) -> dict[str, Any]:
    """The top-level keys before ``traceEvents``; the trace id is a stable hash of (name, seed)."""
    head: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [{"id": 0, **gpu.props}], **gpu.versions}
    if distributed_info is not None:
        head["distributedInfo"] = distributed_info
    trace_id = "".join(f"{zlib.crc32(f'{name}:{seed}:{i}'.encode()):08X}" for i in range(4))
    head.update({"record_shapes": 1, "with_stack": 1, "with_modules": 1, "profile_memory": 0, "with_flops": 0,
                 "trace_id": trace_id, "displayTimeUnit": "ms", "baseTimeNanoseconds": _BASE_TIME_NS})
    return head


def to_us(events: list[dict]) -> None:
    """Convert ``ts`` / ``dur`` from integer ns to µs in place (exact for multiples of 125 ns)."""
    for ev in events:
        ev["ts"] = ev["ts"] / 1000
        if "dur" in ev:
            ev["dur"] = ev["dur"] / 1000
