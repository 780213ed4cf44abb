"""analyze_ranks: every rank trace of one job → one analysis folder per rank + the cross-rank summary.

    OUT/rank_<r>/            what `analyze` writes for rank r's trace (every other tool works on it)
    OUT/ranks_summary.json   per rank and category, per shape, stragglers, missing / duplicate / failed ranks
    OUT/ranks_summary.csv    one line per rank and category
    OUT/ranks_shapes.csv     one line per attention shape and rank

One run per output folder: the run holds an exclusive lock on OUT (flock on the folder, released when the run
ends or its process dies), and a second run into the same folder (a retried call, two agents) is refused at once
instead of interleaving with it. An output folder that already holds rank folders or a summary is refused
unless `overwrite`: then each rank folder is replaced as its rank completes, a failed rank's old folder is
removed, and the old summary goes at the start (a summary is only ever the finished run's). Every path goes
through the data roots when it is used (server.roots: no link out of them followed, at any depth, at any time
of the run). Half-made folders (`.rank_*.staging-*`, `.rank_*.old-*`) of dead runs are removed at the start,
under the lock; at the end, only this run's own. Progress: one step per rank, as each completes.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ranks.discover import RankPlan, plan_ranks
from sdpa_analyzer.server.ranks.engines import Engine, default_workers, run_dask, run_pool
from sdpa_analyzer.server.ranks.forkserver import start_fork_server
from sdpa_analyzer.server.ranks.result import RanksResult, ranks_result
from sdpa_analyzer.server.ranks.summary import (
    RANK_FOLDER,
    SHAPES_CSV,
    SUMMARY_CSV,
    SUMMARY_JSON,
    build_summary,
    rank_folder_name,
    write_summary,
)
from sdpa_analyzer.server.ranks.task import RankOutcome, RankTask
from sdpa_analyzer.server.roots import DataRoots

if os.name == "posix":
    import fcntl
else:  # pragma: no cover - no cross-process locks elsewhere
    fcntl = None

Progress = Callable[[float, float, str], None]
_LEFTOVER = re.compile(r"\.rank_\d+\.(staging|old)-[0-9a-f]+")

def analyze_ranks(
    traces: list[Path],
    output_dir: Path,
    *,
    roots: DataRoots,
    workers: int | None = None,
    engine: Engine = "pool",
    dask_address: str | None = None,
    arch: str | None = None,
    arch_spec: dict[str, Any] | None = None,
    overwrite: bool = False,
    limit: int = 10,
    progress: Progress | None = None,
) -> RanksResult:
    """`dask_address`: the scheduler the caller was configured with (engine dask; None: a private LocalCluster).
    `arch_spec`: the content of the arch JSON file `arch` names, already read through the roots."""
    t0 = time.perf_counter()
    report = progress or (lambda _d, _t, _m: None)
    if not traces:
        raise InputError("no rank traces given — pass trace_paths (files) or trace_dir (their folder)")
    if engine == "pool":
        start_fork_server()  # its import of the analysis runs while the ranks are planned (a no-op once running)
    with one_run(roots, output_dir):
        plan = plan_ranks(traces, roots)
        warnings = _prepare_output(output_dir, plan, overwrite, roots)
        n_workers = workers or default_workers()
        tasks = [
            RankTask(
                index=i,
                rank=int(t.rank),
                trace_path=str(t.path),
                folder=str(output_dir / rank_folder_name(int(t.rank))),
                roots=tuple(str(r) for r in roots.roots),
                token=secrets.token_hex(4),
                arch=arch,
                arch_spec=arch_spec,
                overwrite=overwrite,
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
        try:
            if tasks:
                if engine == "dask":
                    served = run_dask(tasks, n_workers, on_done, dask_address)
                else:
                    served = min(n_workers, len(tasks))
                    run_pool(tasks, served, on_done)
        finally:
            _clear_own(tasks, roots)  # a worker killed mid-trace leaves its staging folder
        outcomes.sort(key=lambda o: o.index)
        plan.warnings += warnings
        run = {"engine": engine, "workers": served, "dask_address": dask_address if engine == "dask" else None}
        summary, cats, shapes = build_summary(plan, outcomes, output_dir, run)
        summary["seconds"] = round(time.perf_counter() - t0, 3)
        files = write_summary(output_dir, summary, cats, shapes, roots)
    return ranks_result(summary, str(output_dir), [str(p) for p in files], limit, time.perf_counter() - t0)


@contextmanager
def one_run(roots: DataRoots, out: Path) -> Iterator[None]:
    """The output folder, made if missing and locked for this run: a second run into it is refused at once."""
    with roots.directory(out, what="output_dir", create=True) as fd:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InputError(
                    f"output_dir {out} is being written by another analyze_ranks run — wait for it to finish, or "
                    "pass another output_dir"
                ) from None
        yield  # the lock goes with the descriptor, when the run ends (or its process dies)


def _prepare_output(out: Path, plan: RankPlan, overwrite: bool, roots: DataRoots) -> list[str]:
    """Refuse a folder holding another run's ranks (unless overwrite); clear dead runs' leftovers (we hold the
    folder's lock: no live run has any there)."""
    entries = roots.list_dir(out, what="output_dir")
    existing = sorted(
        (name for name, st in entries if stat.S_ISDIR(st.st_mode) and RANK_FOLDER.fullmatch(name)), key=_rank_key
    )
    summary_files = [name for name, _ in entries if name in (SUMMARY_JSON, SUMMARY_CSV, SHAPES_CSV)]
    if (existing or summary_files) and not overwrite:
        shown = ", ".join(existing[:3]) + (", …" if len(existing) > 3 else "") if existing else SUMMARY_JSON
        raise InputError(
            f"output_dir {out} already holds another run's ranks ({shown}) — pass --overwrite (overwrite=true) to "
            "replace them, or choose an empty folder"
        )
    for name, _ in entries:
        if _LEFTOVER.fullmatch(name):
            roots.remove_tree(out / name, ours=_LEFTOVER.fullmatch, what="leftover staging folder")
    for name in summary_files:
        roots.unlink(out / name, what="old ranks summary")
    planned = {rank_folder_name(int(t.rank)) for t in plan.runnable}
    stale = [name for name in existing if name not in planned]
    if stale:
        return [
            f"{len(stale)} rank folders in output_dir are not part of this run and were kept: "
            + ", ".join(stale[:5])
            + (", …" if len(stale) > 5 else "")
        ]
    return []


def _clear_own(tasks: list[RankTask], roots: DataRoots) -> None:
    """Remove what this run's tasks left (a worker killed mid-trace): their own staging and replaced folders."""
    for task in tasks:
        for folder in (task.staging, task.replaced):
            try:
                roots.remove_tree(folder, ours=task.own_name, what="staging folder")
            except (InputError, OSError):
                continue  # the output folder became unusable: the summary write says so


def _rank_key(name: str) -> int:
    return int(name.split("_", 1)[1])
