"""One rank: the task every engine runs, on a pool process or a Dask worker, for one rank trace.

It runs the same ingest as `analyze` (server.ingest.analyze.analyze_trace) into a staging folder beside the
rank folder, scores each category the way compute_roofline does (time-weighted efficiency, time per
attention shape), and only then renames the staging folder into place: a rank folder is complete or absent,
never half-written. It returns a small `RankOutcome` (totals per category and per shape, never op rows), so
the cross-rank summary is reduced from a few KB per rank whatever the trace size. It never raises for a bad
trace: the outcome carries the one-line error, and the other ranks go on.
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from perf_models.errors import PerfModelError
from perf_models.hardware import get_gpu
from server.errors import InputError, os_error_message, shorten_message
from server.folder.read import load_category
from server.ingest.analyze import TraceError, analyze_trace
from server.numbers import finite
from server.roots import DataRoots
from server.scoring.arch import resolve_arch
from server.scoring.records import RooflineTable, compute_records

log = logging.getLogger("sdpa_analyzer")

# Shape keys and labels do not depend on the GPU: a folder with no usable peaks is tabulated with this one and
# its efficiencies dropped, so its shapes still line up with the other ranks'.
_SHAPES_ONLY_GPU = "h100-sxm"
MAX_WARNINGS = 5  # of analyze_trace's, per rank: the summary holds a thousand ranks


@dataclass(frozen=True)
class RankTask:
    """What a worker needs for one rank: plain, picklable values (absolute paths on the shared storage)."""

    index: int
    rank: int
    trace_path: str
    folder: str
    arch: str | None = None
    overwrite: bool = False
    roots: tuple[str, ...] = ("/",)


class RankCategory(BaseModel):
    category: str
    rows: int
    calls: int = Field(description="instances (sum of operation_count)")
    kernel_time_ms: float
    percent_of_e2e: float | None = None
    weighted_efficiency_pct: float | None = Field(None, description="ideal / measured time over modeled rows")


class RankShape(BaseModel):
    """One attention shape of one rank: the op rows with this op name and tensor arguments, added up."""

    category: str
    operation: str
    args: str = Field(description="tensor inputs as in the metrics JSON `operations[].args`")
    shape: str = Field(description="parsed shape label (B, heads, N, d, mask)")
    calls: int
    time_ms: float
    efficiency_pct: float | None = None


class RankOutcome(BaseModel):
    index: int
    rank: int
    trace_path: str
    folder: str
    status: str = Field(description="OK | NO_DATA | ERROR")
    error: str | None = None
    events: int = 0
    e2e_ms: float | None = None
    gpu: str | None = None
    seconds: float = 0.0
    cpu_seconds: float = Field(0.0, description="CPU time of the task; far below `seconds`: the core was shared")
    peak_rss_mb: float | None = Field(None, description="the worker process's peak resident memory so far")
    categories: list[RankCategory] = Field(default_factory=list)
    shapes: list[RankShape] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def analyze_rank(task: RankTask) -> RankOutcome:
    """Analyze one rank trace into its rank folder; every failure becomes the outcome's one-line error."""
    t0, c0 = time.perf_counter(), time.process_time()
    final = Path(task.folder)
    staging = final.parent / f".{final.name}.staging-{uuid.uuid4().hex[:8]}"
    try:
        result = analyze_trace(Path(task.trace_path), staging, arch=task.arch or "auto")
        arch = task.arch or result.gpu.arch
        e2e = result.e2e.total_time_ms
        categories, shapes, notes = [], [], []
        for cat in result.categories:
            c, s, n = _score(staging, cat.name, arch, e2e, task)
            categories.append(c)
            shapes += s
            notes += n
        _publish(staging, final, task.overwrite)
        return RankOutcome(
            index=task.index, rank=task.rank, trace_path=task.trace_path, folder=task.folder, status=result.status,
            events=result.events, e2e_ms=finite(e2e, 6), gpu=result.gpu.arch or result.gpu.device_name,
            seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0, peak_rss_mb=peak_rss_mb(),
            categories=categories, shapes=shapes, warnings=notes + result.warnings[:MAX_WARNINGS],
        )  # fmt: skip
    except (TraceError, InputError, PerfModelError, FileExistsError) as exc:
        message = str(exc)
    except OSError as exc:
        message = os_error_message(exc)
    except Exception as exc:  # a bug: its traceback goes to the worker's log; the other ranks go on
        log.exception("analyze_ranks: rank %s (%s) failed", task.rank, task.trace_path)
        message = f"internal error analyzing {task.trace_path} ({type(exc).__name__}: {exc}); see the worker's log"
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if task.overwrite:  # the old folder would be read as this run's: a failed rank leaves no folder
        remove_folder(final)
    return error_outcome(task, message, time.perf_counter() - t0)


def error_outcome(task: RankTask, message: str, seconds: float = 0.0) -> RankOutcome:
    return RankOutcome(
        index=task.index, rank=task.rank, trace_path=task.trace_path, folder=task.folder, status="ERROR",
        error=shorten_message(message), seconds=seconds, peak_rss_mb=None,
    )  # fmt: skip


def peak_rss_mb() -> float:
    """This process's peak resident set size (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20) if sys.platform == "darwin" else peak / 1024, 1)


def _publish(staging: Path, final: Path, overwrite: bool) -> None:
    """Rename the complete staging folder into place (the old rank folder goes only once the new one is there)."""
    if not final.exists():
        os.rename(staging, final)
        return
    if not overwrite:
        raise FileExistsError(f"{final} already exists — pass overwrite to replace it")
    old = final.parent / f".{final.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(final, old)
    os.rename(staging, final)
    shutil.rmtree(old, ignore_errors=True)


def remove_folder(folder: Path) -> None:
    if folder.is_dir():
        old = folder.parent / f".{folder.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(folder, old)
        shutil.rmtree(old, ignore_errors=True)


def _records(folder: Path, category: str, arch: str | None, roots: DataRoots) -> tuple[RooflineTable, list[str]]:
    """compute_roofline's records of one category, uncached: a pool process holds one rank's data at a time."""
    data = load_category(folder, category)
    try:
        gpu = resolve_arch(arch, data.metadata, folder, roots).gpu
    except (InputError, PerfModelError) as exc:
        table = compute_records(data, get_gpu(_SHAPES_ONLY_GPU))
        table.records["has_model"] = False
        return table, [f"{category}: no peaks to score against ({exc}); efficiency not computed"]
    return compute_records(data, gpu), []


def _score(
    folder: Path, category: str, arch: str | None, e2e_ms: float, task: RankTask
) -> tuple[RankCategory, list[RankShape], list[str]]:
    table, notes = _records(folder, category, arch, DataRoots([Path(r) for r in task.roots]))
    r = table.records
    modeled = r["has_model"].to_numpy(dtype=bool)
    frame = pd.DataFrame(
        {
            "operation": r["name"].astype(str),
            "args": r["args"].astype(str),
            "shape": r["shape"].astype(str),
            "calls": r["count"].to_numpy(dtype=np.int64),
            "time_ms": r["time_ms"].to_numpy(dtype=float),
            # compute_roofline's time-weighted efficiency: Σ ideal / Σ measured over the modeled rows
            "ideal_us": np.where(modeled, np.nan_to_num(r["ideal_us"].to_numpy(dtype=float) * r["count"]), 0.0),
            "meas_us": np.where(modeled, np.nan_to_num(r["mean_us"].to_numpy(dtype=float) * r["count"]), 0.0),
        }
    )
    kernel_ms = float(frame["time_ms"].sum())
    cat = RankCategory(
        category=category,
        rows=len(frame),
        calls=int(frame["calls"].sum()),
        kernel_time_ms=round(kernel_ms, 6),
        percent_of_e2e=finite(100.0 * kernel_ms / e2e_ms, 4) if e2e_ms > 0 else None,
        weighted_efficiency_pct=_efficiency(frame["ideal_us"].sum(), frame["meas_us"].sum()),
    )
    g = frame.groupby(["operation", "args"], sort=False).agg(
        shape=("shape", "first"), calls=("calls", "sum"), time_ms=("time_ms", "sum"), ideal_us=("ideal_us", "sum"),
        meas_us=("meas_us", "sum"),
    )  # fmt: skip
    shapes = [
        RankShape(
            category=category,
            operation=op,
            args=args,
            shape=shape,
            calls=int(calls),
            time_ms=round(float(t), 6),
            efficiency_pct=_efficiency(ideal, meas),
        )
        for (op, args), shape, calls, t, ideal, meas in zip(
            g.index, g["shape"], g["calls"], g["time_ms"], g["ideal_us"], g["meas_us"], strict=True
        )
    ]
    return cat, shapes, notes


def _efficiency(ideal_us: float, measured_us: float) -> float | None:
    return finite(100.0 * ideal_us / measured_us, 2) if measured_us > 0 else None
