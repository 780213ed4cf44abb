"""analyze_ranks: every rank trace of one job → one analysis folder per rank + the cross-rank summary.

    OUT/rank_<r>/            what `analyze` writes for rank r's trace (every other tool works on it)
    OUT/ranks_summary.json   per rank and category, per shape, stragglers, missing / duplicate / failed ranks
    OUT/ranks_summary.csv    one line per rank and category
    OUT/ranks_shapes.csv     one line per attention shape and rank

An output folder that already holds rank folders or a summary is refused unless `overwrite`: then each rank
folder is replaced as its rank completes, a failed rank's old folder is removed, and the old summary goes at
the start (a summary is only ever the finished run's). Half-made folders (`.rank_*.staging-*`) of killed workers
are removed, at the start and at the end. Progress: one step per rank, as each completes.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from server.errors import InputError
from server.ranks.discover import RankPlan, plan_ranks
from server.ranks.engines import Engine, default_workers, run_dask, run_pool
from server.ranks.result import RanksResult, ranks_result
from server.ranks.summary import SHAPES_CSV, SUMMARY_CSV, SUMMARY_JSON, build_summary, write_summary
from server.ranks.task import RankOutcome, RankTask
from server.roots import DataRoots

Progress = Callable[[float, float, str], None]
RANK_FOLDER = re.compile(r"rank_\d+")
_LEFTOVER = re.compile(r"\.rank_\d+\.(staging|old)-[0-9a-f]+")


def rank_folder_name(rank: int) -> str:
    return f"rank_{rank}"


def analyze_ranks(
    traces: list[Path],
    output_dir: Path,
    *,
    roots: DataRoots,
    workers: int | None = None,
    engine: Engine = "pool",
    dask_address: str | None = None,
    arch: str | None = None,
    overwrite: bool = False,
    limit: int = 10,
    progress: Progress | None = None,
) -> RanksResult:
    t0 = time.perf_counter()
    report = progress or (lambda _d, _t, _m: None)
    if not traces:
        raise InputError("no rank traces given — pass trace_paths (files) or trace_dir (their folder)")
    if dask_address and engine != "dask":
        raise InputError("dask_address is only used with engine='dask' — add --engine dask or drop --dask-address")
    plan = plan_ranks(traces)
    warnings = _prepare_output(output_dir, plan, overwrite)
    n_workers = workers or default_workers()
    tasks = [
        RankTask(
            index=i,
            rank=int(t.rank),
            trace_path=str(t.path),
            folder=str(output_dir / rank_folder_name(int(t.rank))),
            arch=arch,
            overwrite=overwrite,
            roots=tuple(str(r) for r in roots.roots),
        )
        for i, t in enumerate(plan.runnable)
    ]
    total = len(plan.traces)
    outcomes: list[RankOutcome] = []
    unplanned = total - len(tasks)  # traces refused by the plan count as done

    def on_done(o: RankOutcome) -> None:
        outcomes.append(o)
        k = unplanned + len(outcomes)
        report(k, total, f"rank {o.rank} {o.status.lower()} ({k}/{total})")

    report(unplanned, total, f"{len(tasks)} ranks to analyze")
    served: int | None = None
    if tasks:
        if engine == "dask":
            served = run_dask(tasks, n_workers, on_done, dask_address)
        else:
            served = min(n_workers, len(tasks))
            run_pool(tasks, served, on_done)
    clear_leftovers(output_dir)  # a worker killed mid-trace leaves its staging folder
    outcomes.sort(key=lambda o: o.index)
    plan.warnings += warnings
    run = {"engine": engine, "workers": served, "dask_address": dask_address or None}
    summary, cats, shapes = build_summary(plan, outcomes, output_dir, run)
    summary["seconds"] = round(time.perf_counter() - t0, 3)
    files = write_summary(output_dir, summary, cats, shapes)
    return ranks_result(summary, str(output_dir), [str(p) for p in files], limit, time.perf_counter() - t0)


def _prepare_output(out: Path, plan: RankPlan, overwrite: bool) -> list[str]:
    """Refuse a folder holding another run's ranks (unless overwrite); clear half-made leftovers."""
    if out.exists() and not out.is_dir():
        raise InputError(f"output_dir {out} exists and is not a folder — pass a folder path")
    out.mkdir(parents=True, exist_ok=True)
    existing = sorted((p.name for p in out.iterdir() if p.is_dir() and RANK_FOLDER.fullmatch(p.name)), key=_rank_key)
    summary_files = [out / name for name in (SUMMARY_JSON, SUMMARY_CSV, SHAPES_CSV) if (out / name).exists()]
    if (existing or summary_files) and not overwrite:
        shown = ", ".join(existing[:3]) + (", …" if len(existing) > 3 else "") if existing else SUMMARY_JSON
        raise InputError(
            f"output_dir {out} already holds another run's ranks ({shown}) — pass --overwrite (overwrite=true) to "
            "replace them, or choose an empty folder"
        )
    clear_leftovers(out)
    for p in summary_files:
        p.unlink()
    planned = {rank_folder_name(int(t.rank)) for t in plan.runnable}
    stale = [name for name in existing if name not in planned]
    if stale:
        return [
            f"{len(stale)} rank folders in output_dir are not part of this run and were kept: "
            + ", ".join(stale[:5])
            + (", …" if len(stale) > 5 else "")
        ]
    return []


def clear_leftovers(out: Path) -> None:
    """Remove the staging folders of tasks whose process was killed mid-trace (by now, or by an earlier run)."""
    for p in out.iterdir():
        if _LEFTOVER.fullmatch(p.name):
            shutil.rmtree(p, ignore_errors=True)


def _rank_key(name: str) -> int:
    return int(name.split("_", 1)[1])
