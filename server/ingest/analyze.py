"""analyze_trace: a raw PyTorch profiler trace (Kineto JSON, plain or .gz) -> the analysis folder.

Stages (each reported to `progress(done, total, message)`): parse (streamed, once) -> tree (host
nesting) -> link (launch -> kernel) -> attention (calls, unfused patterns, backward links, copies,
inference workload) -> write (ops CSV, metadata, manifest per docs/formats.md).

Input errors raise TraceError (one line, nothing written): missing file, truncated gzip, not JSON,
no `traceEvents`, a CPU-only trace, an explicit unknown arch. A trace without attention is not an
error: status NO_DATA, and the manifest has no sdpa_* entry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdpa_analyzer.perf_models.devices import DeviceMatch, identify_device
from sdpa_analyzer.perf_models.errors import UnknownArchError
from sdpa_analyzer.perf_models.hardware import GpuSpec, get_gpu
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.write import gpu_metadata, relative_trace_path, write_folder
from sdpa_analyzer.server.ingest.attention import find_fused_calls, find_graph_calls
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.capture import CaptureSet, load_capture_dir, sibling_capture_dir
from sdpa_analyzer.server.ingest.compare import add_comparison
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.copies import add_copy_overhead
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.kernel_calls import attention_kernel_mask, find_kernel_calls
from sdpa_analyzer.server.ingest.layers import apply_model_hints, check_shapes
from sdpa_analyzer.server.ingest.load import load_trace
from sdpa_analyzer.server.ingest.model_config import ModelHints, load_model_config
from sdpa_analyzer.server.ingest.names import short_kernel_name
from sdpa_analyzer.server.ingest.paged import add_workload
from sdpa_analyzer.server.ingest.result import AnalyzeResult, CategoryResult, E2EResult, GpuResult, UnlinkedResult
from sdpa_analyzer.server.ingest.rows import Row, build_rows, category_totals, row_frame
from sdpa_analyzer.server.ingest.serving import (
    add_kernel_hints,
    attach_helper_kernels,
    attach_side_ops,
    graph_launches,
    mark_captured,
    match_replays,
    split_kv_kernels,
)
from sdpa_analyzer.server.ingest.unfused import find_unfused_backward, find_unfused_calls
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots
from sdpa_analyzer.server.vocab import CATEGORIES, INFERENCE

Progress = Callable[[float, float, str], None]

__all__ = ["AnalyzeResult", "TraceError", "analyze_trace"]


def analyze_trace(
    trace_path: Path,
    output_dir: Path,
    *,
    arch: str | GpuSpec = "auto",
    trace2_path: Path | None = None,
    progress: Progress | None = None,
    capture_dir: Path | None = None,
    model_config: Path | None = None,
    roots: DataRoots = UNRESTRICTED,
) -> AnalyzeResult:
    """Analyze one trace (two in comparative mode) into `output_dir`; every file is read and written through
    `roots` (the folder is written all-or-nothing: server.folder.write). `capture_dir`: the serving profiler's
    capture_traces/ folder of a graph-replay trace (the shapes of the replayed calls). `arch`: a GPU table name, or
    the GpuSpec of an arch JSON file the caller read through the roots. `model_config`: the model's Hugging Face
    config.json (per-layer sliding windows and MLA for serving calls: server.ingest.layers)."""
    t_start = time.perf_counter()
    trace_path, output_dir = Path(trace_path), Path(output_dir)
    report = _reporter(progress, two=trace2_path is not None)
    explicit = _explicit_gpu(arch)
    if roots.exists(output_dir, what="output_dir") and not roots.is_dir(output_dir, what="output_dir"):
        raise TraceError(f"output_dir {output_dir} exists and is not a folder — pass a folder path")
    capture = load_capture_dir(Path(capture_dir), roots) if capture_dir is not None else None
    hints = load_model_config(Path(model_config), roots) if model_config is not None else None

    ctx = load_trace(trace_path, lambda f, m: report(0, f, m), roots)
    calls = find_calls(ctx, capture, hints)
    if capture is None and (beside := sibling_capture_dir(trace_path, roots)) is not None:
        ctx.warnings.append(
            f"a capture folder sits beside the trace ({beside}): not read; pass capture_dir (--capture-dir "
            f"{beside}) to take the shapes of graph-replayed calls from it"
        )
    report(0, 1.0, "attention")
    ctx2: TraceContext | None = None
    calls2: list[Call] = []
    if trace2_path is not None:
        ctx2 = load_trace(Path(trace2_path), lambda f, m: report(1, f, m), roots)
        calls2 = find_calls(ctx2)

    warnings = list(ctx.warnings)
    gpu_meta, gpu_result = _gpu(ctx, explicit, warnings)
    rows = build_rows(ctx, calls)
    warnings += check_shapes(hints, [r.parsed.config for r in rows.get(INFERENCE, [])
                                     if r.parsed is not None and r.parsed.config is not None])
    if ctx2 is not None:
        build_rows(ctx2, calls2)  # fills each trace-2 call's kernel time
        warnings += add_comparison(ctx, rows, ctx2, calls2)
    unlinked = _unlinked(ctx, calls, warnings)
    unlinked2: UnlinkedResult | None = None
    if ctx2 is not None:  # trace 2's kernels outside every op (or outside its window) are said too, as trace 2's
        said2: list[str] = []
        unlinked2 = _unlinked(ctx2, calls2, said2)
        warnings += [f"trace 2: {w}" for w in said2]
    warnings += _row_warnings(rows)
    outside = {"trace1": outside_rows_summary(ctx, calls)}
    if ctx2 is not None:
        outside["trace2"] = outside_rows_summary(ctx2, calls2)

    report(2, 0.0, "write")
    baseline = ctx.baseline
    common_meta: dict[str, Any] = {
        **gpu_meta,
        "trace_path": relative_trace_path(trace_path.resolve(), output_dir.resolve()),
        "output_dir": ".",
        "gpu_utilization": baseline.gpu_utilization(),
        "e2e_window": {
            "source": baseline.source,
            "steps": baseline.steps,
            "start_us": baseline.window_start_us,
            "end_us": baseline.window_end_us,
            # the time base side by side: E2E (the window), GPU busy time within it, and the idle rest
            "e2e_time_ms": baseline.total_time_ms,
            "busy_time_ms": baseline.busy_time_ms,
            "idle_time_ms": max(baseline.total_time_ms - baseline.busy_time_ms, 0.0),
            **baseline.counts,
        },
        "trace_loading_policy": "DO_NOT_LOAD_TRACE_use_precomputed_tree_data",
        "generated_by": "sdpa-analyzer analyze_trace",
        # what every category's tools should say too (attention kernels outside every row, graph captures)
        "warnings": _category_warnings(unlinked, ctx),
        "attention_outside_rows": outside,
        "model_config": hints.metadata() if hints is not None else None,
    }
    manifest_extra: dict[str, Any] = {"comparison_scope": "standalone"}
    if ctx2 is not None:
        manifest_extra = {
            "comparison_scope": "comparative",
            "trace2_path": relative_trace_path(Path(trace2_path).resolve(), output_dir.resolve()),  # type: ignore[arg-type]
            "trace2_gpu_utilization": ctx2.baseline.gpu_utilization(),
        }
        common_meta["comparison_scope"] = "comparative"
        common_meta["trace2_path"] = manifest_extra["trace2_path"]
    tables = {cat: row_frame(rs) for cat, rs in rows.items()}
    totals = {cat: category_totals(rs) for cat, rs in rows.items()}
    written = write_folder(output_dir, tables, totals, common_meta, manifest_extra, roots=roots)
    report(2, 1.0, "done")

    e2e_ms, busy_ms = baseline.total_time_ms, baseline.busy_time_ms
    cats = []
    for cat in CATEGORIES:
        if cat not in rows:
            continue
        t = totals[cat]
        cats.append(
            CategoryResult(
                name=cat,
                display_name=tables[cat]["op category"].iloc[0] if len(tables[cat]) else cat,
                rows=int(t["rows"]),
                instances=int(t["instances"]),
                kernel_time_ms=float(t["gpu_kernel_time_ms"]),
                percent_of_e2e=100.0 * float(t["gpu_kernel_time_ms"]) / e2e_ms if e2e_ms > 0 else None,
                percent_of_busy=100.0 * float(t["gpu_kernel_time_ms"]) / busy_ms if busy_ms > 0 else None,
                unfused_instances=sum(len(r.calls) for r in rows[cat] if r.first.kind == "unfused"),
                files=[layout.ops_csv(cat), layout.metadata_json(cat)],
            )
        )
    if not cats:
        warnings.append("no attention calls in this trace: status NO_DATA (the manifest lists no sdpa_* category)")
    return AnalyzeResult(
        status="OK" if cats else "NO_DATA",
        trace_path=str(trace_path),
        output_dir=str(output_dir),
        events=ctx.ev.n_events,
        categories=cats,
        gpu=gpu_result,
        e2e=_e2e(ctx),
        unlinked=unlinked,
        comparison_scope=manifest_extra["comparison_scope"],
        trace2_path=str(trace2_path) if trace2_path is not None else None,
        trace2_e2e=_e2e(ctx2) if ctx2 is not None else None,
        trace2_unlinked=unlinked2,
        config_json=hints.source if hints is not None else None,
        warnings=_dedupe(warnings),
        files_written=[str(p) for p in written],
        seconds=time.perf_counter() - t_start,
    )


def find_calls(ctx: TraceContext, capture: CaptureSet | None = None, hints: ModelHints | None = None) -> list[Call]:
    """Every attention call of one trace, each counted once, with copies, KV-cache writes and the inference workload
    attached. `capture`: the capture traces of a replay (a serving profiler's capture_traces/ folder); `hints`: the
    model's config (each serving call's layer: its window, MLA)."""
    fused = find_fused_calls(ctx)
    attach_side_ops(ctx, fused)
    regions = mark_captured(ctx, fused)
    attach_helper_kernels(ctx, fused)
    unfused = find_unfused_calls(ctx, fused)
    unfused_bwd = find_unfused_backward(ctx, unfused)
    graph = find_graph_calls(ctx)
    replays = graph_launches(graph)
    if regions and replays:  # captured and replayed in this trace: each call once, its shapes on its replays
        used, warns = match_replays(ctx, replays, regions, "this trace's graph capture")
        ctx.warnings.extend(warns)
        dropped = {id(c) for i in used for c in regions[i]}
        fused = [c for c in fused if id(c) not in dropped]
    if capture is not None:
        ctx.warnings.extend(capture.apply(ctx, replays))
    calls = fused + unfused + unfused_bwd + graph
    calls += find_kernel_calls(ctx, calls)  # attention kernels under ops no list knows: calls from their kernels
    split_kv_kernels(ctx, calls)
    add_copy_overhead(ctx, fused + unfused)
    add_workload(ctx, calls)
    add_kernel_hints(ctx, calls)
    ctx.warnings.extend(apply_model_hints(ctx, calls, hints))
    _captured_warnings(ctx, fused)
    return calls


def _captured_warnings(ctx: TraceContext, calls: list[Call]) -> None:
    captured = [c for c in calls if c.captured and c.kind == "fused"]
    if captured:
        ctx.warnings.append(
            f"{len(captured)} attention calls were made while a CUDA/HIP graph was being captured (between "
            "*StreamBeginCapture and *StreamEndCapture): their kernels run only in the graph's replays, which this "
            "trace does not hold. They keep their shapes and have no kernel time; analyze the replay trace with "
            "capture_dir (--capture-dir) pointing at this capture folder to model them"
        )


# ---- GPU ---------------------------------------------------------------------------------------------


def _explicit_gpu(arch: str | GpuSpec | None) -> Any:
    if isinstance(arch, GpuSpec):
        return arch
    if arch is None or str(arch).strip().lower() in ("", "auto"):
        return None
    try:
        return get_gpu(str(arch).strip())
    except UnknownArchError as exc:
        raise TraceError(str(exc)) from None


def _device(ctx: TraceContext) -> tuple[DeviceMatch | None, str | None]:
    """The trace's first GPU (its name, memory, SMs and arch pick the part: perf_models.devices) and how to call
    it (its name; an unnamed device by what its properties say)."""
    props = ctx.header.get("deviceProperties")
    first = next((p for p in props if isinstance(p, dict)), None) if isinstance(props, list) else None
    if first is None:
        return None, None
    name = first.get("name") if isinstance(first.get("name"), str) else ""
    found = identify_device(first)
    return found, name.strip() or found.label


def _gpu(ctx: TraceContext, explicit: Any, warnings: list[str]) -> tuple[dict[str, Any], GpuResult]:
    found, device = _device(ctx)
    matched = found.gpu if found is not None else None
    if explicit is not None:
        if device:
            if matched is None or matched.key != explicit.key:
                warnings.append(f"arch {explicit.key} was requested; the trace was recorded on {device!r}")
        meta = gpu_metadata(explicit)
        meta["gpu_device_name"] = device
        source = "arch_json" if explicit.origin == "arch_json" else "argument"
        meta["arch_source"] = source
        return meta, GpuResult(device_name=device, arch=explicit.key, name=explicit.name, source=source)
    if device is None:
        warnings.append(
            "the trace has no deviceProperties GPU name: metadata written without peaks; pass arch= to score it"
        )
        return {"platform": None, "gpu_device_name": None, "arch_source": "none"}, GpuResult()
    gpu = matched
    if gpu is None:
        assert found is not None
        warnings.append(
            f"{found.reason}: metadata written without peaks; pass arch= (one of list_architectures) to score it"
        )
        platform = None if device.startswith("unnamed device") else device
        return {"platform": platform, "gpu_device_name": device, "arch_source": "none"}, GpuResult(device_name=device)
    if found is not None and found.warning:
        warnings.append(found.warning)
    meta = gpu_metadata(gpu)
    meta["gpu_device_name"] = device
    meta["arch_source"] = "trace"
    return meta, GpuResult(device_name=device, arch=gpu.key, name=gpu.name, source="trace")


# ---- summaries ---------------------------------------------------------------------------------------


def _e2e(ctx: TraceContext | None) -> E2EResult:
    assert ctx is not None
    b = ctx.baseline
    return E2EResult(
        total_time_ms=b.total_time_ms,
        window_source=b.source,
        steps=b.steps,
        computation_time_percent=b.computation_time_percent,
        exposed_comm_time_percent=b.exposed_comm_time_percent,
        exposed_memcpy_time_percent=b.exposed_memcpy_time_percent,
        idle_time_percent=b.idle_time_percent,
        busy_time_ms=b.busy_time_ms,
        idle_time_ms=max(b.total_time_ms - b.busy_time_ms, 0.0),
    )


def _unlinked(ctx: TraceContext, calls: list[Call], warnings: list[str]) -> UnlinkedResult:
    import numpy as np

    c = ctx.baseline.counts
    gpu, links = ctx.ev.gpu, ctx.links
    no_launch = np.flatnonzero((links.launch < 0) & (links.ext_op < 0) & attention_kernel_mask(ctx))
    att = no_launch.tolist()
    att_time = float(np.maximum(gpu["dur"][att], 0.0).sum()) if att else 0.0
    outside = _outside_rows(ctx, calls)
    outside_us = float(np.maximum(gpu["dur"][outside], 0.0).sum())
    late = outside[~ctx.baseline.in_window[outside]] if len(outside) else outside
    late_us = float(np.maximum(gpu["dur"][late], 0.0).sum())
    res = UnlinkedResult(
        kernels_without_cpu_launch=int(c.get("without_cpu_launch", 0)),
        time_without_cpu_launch_us=float(c.get("without_cpu_launch_time_us", 0.0)),
        in_window=int(c.get("without_cpu_launch_in_window", 0)),
        in_window_time_us=float(c.get("without_cpu_launch_in_window_time_us", 0.0)),
        gpu_events_outside_window=int(c.get("outside_window", 0)),
        outside_window_time_us=float(c.get("outside_window_time_us", 0.0)),
        attention_kernels_without_cpu_launch=len(att),
        attention_time_without_cpu_launch_us=att_time,
        attention_kernels_outside_rows=len(outside),
        attention_time_outside_rows_us=outside_us,
        attention_kernels_outside_window=len(late),
        attention_time_outside_window_us=late_us,
    )
    if len(outside) > len(late):
        warnings.append(_outside_warning(res, ctx, outside[ctx.baseline.in_window[outside]]))
    if len(late):
        warnings.append(
            f"{len(late)} attention kernels ({late_us:.1f} µs) ran outside the profiled window ({ctx.baseline.source}) "
            "with no CPU launch in the trace — another step's kernels: named here, not counted as a share of the "
            "window nor as calls"
        )
    if res.kernels_without_cpu_launch:
        warnings.append(
            f"{res.kernels_without_cpu_launch} GPU events ({res.time_without_cpu_launch_us:.1f} µs) have no CPU launch "
            f"in the trace ({res.in_window} of them inside the E2E window); "
            f"{len(att)} are attention kernels ({att_time:.1f} µs), not counted as calls"
        )
    if res.gpu_events_outside_window:
        warnings.append(
            f"{res.gpu_events_outside_window} GPU events ({res.outside_window_time_us:.1f} µs) lie outside the "
            f"E2E window ({ctx.baseline.source}) and are not part of the baseline"
        )
    return res


OUTSIDE_NAMES_LISTED = 5


def _outside_rows(ctx: TraceContext, calls: list[Call]) -> Any:
    import numpy as np

    in_rows = np.zeros(len(ctx.ev.gpu), dtype=bool)
    for call in calls:
        in_rows[call.kernels] = True
    return np.flatnonzero(attention_kernel_mask(ctx) & ~in_rows)


def outside_rows_summary(ctx: TraceContext, calls: list[Call]) -> dict[str, Any]:
    """The attention kernels no row accounts for, as the category metadata records them for the findings: those
    inside the profiled window (count, time, share of E2E, the longest by name) and, apart, those that ran outside
    it (another step's kernels with no CPU launch in the trace: named as such, never a share of the window)."""
    import numpy as np

    rows = _outside_rows(ctx, calls)
    inside = ctx.baseline.in_window[rows] if len(rows) else np.zeros(0, dtype=bool)
    e2e_us = ctx.baseline.total_time_ms * 1000.0
    entry = _kernel_list(ctx, rows[inside])
    entry["percent_of_e2e"] = round(100.0 * entry["time_us"] / e2e_us, 2) if e2e_us > 0 else None
    entry["outside_window"] = _kernel_list(ctx, rows[~inside])
    return entry


def _kernel_list(ctx: TraceContext, rows: Any) -> dict[str, Any]:
    """count, time, distinct names and the longest kernels by name of some GPU rows."""
    import numpy as np

    gpu = ctx.ev.gpu
    dur = np.maximum(gpu["dur"][rows], 0.0) if len(rows) else np.zeros(0)
    names = gpu["name"][rows] if len(rows) else np.zeros(0, dtype=np.int64)
    by_name: dict[str, list[float]] = {}
    for code, us in zip(names.tolist(), dur.tolist(), strict=True):
        entry = by_name.setdefault(ctx.ev.names[int(code)], [0, 0.0])
        entry[0] += 1
        entry[1] += us
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:OUTSIDE_NAMES_LISTED]
    return {
        "kernels": len(rows),
        "time_us": round(float(dur.sum()), 3),
        "kernel_names": len(by_name),
        "longest": [{"name": n, "count": int(c), "time_us": round(t, 3)} for n, (c, t) in top],
    }


def _outside_warning(res: UnlinkedResult, ctx: TraceContext, rows: Any) -> str:
    """The attention kernels inside the profiled window that no call holds (find_kernel_calls makes a call of every
    kernel it can place, so what stays here is what the analysis could not cut into calls)."""
    import numpy as np

    names = sorted({ctx.ev.names[int(k)] for k in ctx.ev.gpu["name"][rows].tolist()}, key=len)
    shown = ", ".join(short_kernel_name(n) for n in names[:3])
    if len(names) > 3:
        shown += f" and {len(names) - 3} more"
    us = float(np.maximum(ctx.ev.gpu["dur"][rows], 0.0).sum())
    return (
        f"{len(rows)} attention kernels ({us:.1f} µs) inside the profiled window lie outside every row ({shown}): "
        "their time is in no category"
    )


def _category_warnings(unlinked: UnlinkedResult, ctx: TraceContext) -> list[str]:
    out = [w for w in ctx.warnings if "graph" in w and ("capture" in w or "replay" in w)]
    if unlinked.attention_kernels_outside_rows:
        out.append(
            f"{unlinked.attention_kernels_outside_rows} attention kernels "
            f"({unlinked.attention_time_outside_rows_us:.1f} µs) lie outside every row of the analysis (see "
            "analyze_trace's unlinked.attention_kernels_outside_rows): the category's time misses them"
        )
    return out[:10]


def _reporter(progress: Progress | None, two: bool) -> Callable[[int, float, str], None]:
    """Map (phase, fraction, stage) onto one 0..100 scale: trace 1, [trace 2], write."""
    spans = [(0.0, 45.0), (45.0, 90.0), (90.0, 100.0)] if two else [(0.0, 90.0), (90.0, 90.0), (90.0, 100.0)]
    weights = {"parse": (0.0, 0.6), "tree": (0.6, 0.75), "link": (0.75, 0.85), "attention": (0.85, 1.0)}

    def report(phase: int, frac: float, stage: str) -> None:
        if progress is None:
            return
        lo, hi = spans[phase]
        a, b = weights.get(stage, (0.0, 1.0))
        progress(lo + (hi - lo) * (a + (b - a) * max(0.0, min(1.0, frac))), 100.0, stage)

    return report


def _dedupe(items: list[str]) -> list[str]:
    out: list[str] = []
    for w in items:
        if w not in out:
            out.append(w)
    return out


def _row_warnings(rows: dict[str, list[Row]], limit: int = 20) -> list[str]:
    out: list[str] = []
    for cat, cat_rows in rows.items():
        for r in cat_rows:
            for c in r.calls:
                out.extend(w for w in c.warnings if w not in out)
            if r.parsed is not None and r.parsed.config is None:
                advice = r.values.get("shape_advice")
                said = f"; {advice}" if isinstance(advice, str) else ""
                out.append(f"{cat}: {r.first.name} has no perf model ({r.parsed.reason}){said}")
    if len(out) > limit:
        out = [*out[:limit], f"... and {len(out) - limit} more (see the warnings column of the ops CSVs)"]
    return out
