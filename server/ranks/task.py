"""One rank: the task every engine runs, on a pool process or a Dask worker, for one rank trace.

It runs the same ingest as `analyze` (server.ingest.analyze.analyze_trace) into a staging folder beside the
rank folder, scores each category the way compute_roofline does (time-weighted efficiency, time per
attention shape), and only then renames the staging folder into place: a rank folder is complete or absent,
never half-written. Every path is taken through the run's data roots (the real ones, not "/") at the moment it
is used: the trace is opened, the staging folder written, renamed and removed by folder descriptors, never
through a link out of the roots, whatever changed since the run was planned. Only the names this task makes
(`.rank_<r>.staging-<token>`, `.rank_<r>.old-<token>`) are ever deleted. It returns a small `RankOutcome`
(totals per category and per shape, never op rows), so the cross-rank summary is reduced from a few KB per
rank whatever the trace size. It never raises for a bad
trace: the outcome carries the one-line error, and the other ranks go on.
"""

from __future__ import annotations

import logging
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.hardware import GpuSpec, get_gpu, gpu_from_arch_dict
from sdpa_analyzer.server.errors import InputError, os_error_message, shorten_message
from sdpa_analyzer.server.folder.read import load_category
from sdpa_analyzer.server.ingest.analyze import TraceError, analyze_trace
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.numbers import finite
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.arch import resolve_arch
from sdpa_analyzer.server.scoring.records import RooflineTable, compute_records
from sdpa_analyzer.server.scoring.weighted import (
    EfficiencyLeftOut,
    left_out_time,
    left_out_total_ms,
    weigh_rows,
    weighted_efficiency,
)

log = logging.getLogger("sdpa_analyzer")

# Shape keys and labels do not depend on the GPU: a folder with no usable peaks is tabulated with this one and
# its efficiencies dropped, so its shapes still line up with the other ranks'.
_SHAPES_ONLY_GPU = "h100-sxm"
MAX_WARNINGS = 5  # of analyze_trace's, per rank: the summary holds a thousand ranks


@dataclass(frozen=True)
class RankTask:
    """What a worker needs for one rank: plain values (absolute paths on the shared storage), sent as they are to a
    pool process or as a dict (`to_plain`) to a Dask worker. `token` names this task's staging and replaced folders;
    `arch_spec` is an arch JSON file's content, read by the caller through the roots."""

    index: int
    rank: int
    trace_path: str
    folder: str
    roots: tuple[str, ...]
    token: str
    arch: str | None = None
    arch_spec: dict[str, Any] | None = None
    overwrite: bool = False

    @property
    def staging(self) -> Path:
        final = Path(self.folder)
        return final.parent / f".{final.name}.staging-{self.token}"

    @property
    def replaced(self) -> Path:
        final = Path(self.folder)
        return final.parent / f".{final.name}.old-{self.token}"

    def own_name(self, name: str) -> bool:
        """Whether `name` is one of the folders this task makes (the only ones it deletes)."""
        return name in (self.staging.name, self.replaced.name)

    def data_roots(self) -> DataRoots:
        return DataRoots([Path(r) for r in self.roots])

    def gpu(self) -> GpuSpec | None:
        """The GPU of an arch JSON file (checked by the caller), else None (a table name, or the trace's own)."""
        if self.arch_spec is None:
            return None
        return gpu_from_arch_dict(self.arch_spec, name=self.arch_spec.get("name") or self.arch or "arch-json")

    def to_plain(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> RankTask:
        return cls(**{**data, "roots": tuple(data["roots"])})


class RankCategory(BaseModel):
    category: str
    rows: int
    calls: int = Field(description="instances (sum of operation_count)")
    kernel_time_ms: float
    percent_of_e2e: float | None = None
    weighted_efficiency_pct: float | None = Field(
        None, description="Σ ideal / Σ measured time over the rows with exact work and a consistent model")
    efficiency_left_out: list[EfficiencyLeftOut] = Field(
        default_factory=list, description="the time weighted_efficiency_pct leaves out, by why")
    efficiency_left_out_ms: float = Field(0.0, description="their time in all (a column of the summary tables)")


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
    staging = task.staging
    roots = task.data_roots()
    try:
        gpu = task.gpu()
        result = analyze_trace(Path(task.trace_path), staging, arch=gpu or task.arch or "auto", roots=roots)
        arch: GpuSpec | str | None = gpu or task.arch or result.gpu.arch
        e2e = result.e2e.total_time_ms
        categories, shapes, notes = [], [], []
        for cat in result.categories:
            c, s, n = _score(staging, cat.name, arch, e2e, roots)
            categories.append(c)
            shapes += s
            notes += n
        _publish(task, roots)
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
        _remove_own(task, roots, staging)
        # the trace's freed heap back to the OS: a worker waiting for its next trace (a Dask worker, whose memory
        # limit counts what the process holds) keeps ~0.1 GB instead of ~0.4 GB after a 4 GB trace
        release_free_heap()
    if task.overwrite:  # the old folder would be read as this run's: a failed rank leaves no folder
        try:
            remove_folder(task, roots)
        except (InputError, OSError) as exc:
            message += f"; its old folder could not be removed ({exc})"
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


def _publish(task: RankTask, roots: DataRoots) -> None:
    """Rename the complete staging folder into place (the old rank folder goes only once the new one is there)."""
    final = Path(task.folder)
    try:
        roots.rename(task.staging, final, what="rank folder")  # never replaces what stands there
        return
    except FileExistsError:
        if not task.overwrite:
            raise FileExistsError(f"{final} already exists — pass overwrite to replace it") from None
    roots.rename(final, task.replaced, what="rank folder")
    roots.rename(task.staging, final, what="rank folder")
    _remove_own(task, roots, task.replaced)


def remove_folder(task: RankTask, roots: DataRoots) -> None:
    """Remove the task's rank folder (renamed to this task's own name first, then deleted by folder descriptors)."""
    if roots.is_dir(task.folder, what="rank folder"):
        roots.rename(task.folder, task.replaced, what="rank folder")
        _remove_own(task, roots, task.replaced)


def _remove_own(task: RankTask, roots: DataRoots, folder: Path) -> None:
    try:
        roots.remove_tree(folder, ours=task.own_name, what="staging folder")
    except (InputError, OSError):
        log.warning("analyze_ranks: could not remove %s", folder, exc_info=True)


def _records(
    folder: Path, category: str, arch: GpuSpec | str | None, roots: DataRoots
) -> tuple[RooflineTable, list[str]]:
    """compute_roofline's records of one category, uncached: a pool process holds one rank's data at a time."""
    data = load_category(folder, category, roots)
    try:
        gpu = arch if isinstance(arch, GpuSpec) else resolve_arch(arch, data.metadata, folder, roots).gpu
    except (InputError, PerfModelError) as exc:
        table = compute_records(data, get_gpu(_SHAPES_ONLY_GPU))
        table.records["has_model"] = False
        return table, [f"{category}: no peaks to score against ({exc}); efficiency not computed"]
    return compute_records(data, gpu), []


def _score(
    folder: Path, category: str, arch: GpuSpec | str | None, e2e_ms: float, roots: DataRoots
) -> tuple[RankCategory, list[RankShape], list[str]]:
    table, notes = _records(folder, category, arch, roots)
    r = table.records
    weighted = weigh_rows(r)
    frame = pd.DataFrame(
        {
            "operation": r["name"].astype(str),
            "args": r["args"].astype(str),
            "shape": r["shape"].astype(str),
            "calls": r["count"].to_numpy(dtype=np.int64),
            "time_ms": r["time_ms"].to_numpy(dtype=float),
            # compute_roofline's time-weighted efficiency: the rows with exact work and a consistent model
            "ideal_us": weighted.ideal_us,
            "meas_us": weighted.measured_us,
        }
    )
    kernel_ms = float(frame["time_ms"].sum())
    cat = RankCategory(
        category=category,
        rows=len(frame),
        calls=int(frame["calls"].sum()),
        kernel_time_ms=round(kernel_ms, 6),
        percent_of_e2e=finite(100.0 * kernel_ms / e2e_ms, 4) if e2e_ms > 0 else None,
        weighted_efficiency_pct=weighted_efficiency(frame["ideal_us"].sum(), frame["meas_us"].sum()),
        efficiency_left_out=left_out_time(weighted, frame["time_ms"]),
        efficiency_left_out_ms=left_out_total_ms(weighted, frame["time_ms"]),
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
            efficiency_pct=weighted_efficiency(ideal, meas),
        )
        for (op, args), shape, calls, t, ideal, meas in zip(
            g.index, g["shape"], g["calls"], g["time_ms"], g["ideal_us"], g["meas_us"], strict=True
        )
    ]
    return cat, shapes, notes

