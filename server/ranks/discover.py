"""Which trace is which rank: the plan of an analyze-ranks run, made before any worker starts.

A trace's rank comes from its header's `distributedInfo.rank` (server.ranks.header), else from its file name
(`rank_3`, `rank3`, `rank-3`, `…_rank_3.1773….pt.trace.json.gz`); when no trace has either, ranks follow
the sorted file names (a warning says so). The job's world size is the one most headers agree on. A trace
that cannot be given a rank of its own is not analyzed and gets a one-line error: a world size that differs
from the job's (a trace of another job), a rank outside the world size, a rank another trace already
claimed (the first by path keeps it), no rank at all among traces that have one. Ranks below the world size
(or, without one, below the largest rank) that no trace claims are reported as missing. Folders are listed and
headers read through the data roots (a link in the folder that leads out of them is refused).
"""

from __future__ import annotations

import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ranks.header import distributed_info, read_header_prefix
from sdpa_analyzer.server.roots import DataRoots

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"(?i)(?:^|[^a-z0-9])rank[_\-.]?(\d+)")


@dataclass
class TraceRank:
    """One input trace and the rank it was given (None: not analyzed, see `error`)."""

    path: Path
    rank: int | None = None
    rank_source: str = "none"  # trace | file_name | order | none
    world_size: int | None = None  # the trace header's own
    error: str | None = None


@dataclass
class RankPlan:
    traces: list[TraceRank]
    world_size: int | None
    world_size_source: str  # trace | unknown
    missing_ranks: list[int] = field(default_factory=list)
    duplicate_ranks: list[dict[str, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> list[TraceRank]:
        return [t for t in self.traces if t.error is None]


def rank_from_name(path: Path) -> int | None:
    """The rank a file name states (`rank_3`, `rank3`, `rank-3`), or None."""
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else None


def list_trace_dir(folder: Path, roots: DataRoots) -> list[Path]:
    """The trace files (*.json, *.json.gz) directly in `folder`, sorted by name, each checked under the roots (a
    link among them is followed only when it stays under a root: one that leads out is refused)."""
    if not roots.is_dir(folder, what="trace_dir"):
        raise InputError(f"trace_dir {folder} is not a folder — pass the folder that holds the rank traces")
    found = []
    for name, st in roots.list_dir(folder, what="trace_dir"):
        if not name.lower().endswith(TRACE_SUFFIXES):
            continue
        if stat.S_ISLNK(st.st_mode):
            target = roots.resolve(folder / name, what="trace_dir file")
            if roots.is_file(target, what="trace_dir file"):
                found.append(target)
        elif stat.S_ISREG(st.st_mode):
            found.append(folder / name)
    if not found:
        raise InputError(f"trace_dir {folder} holds no trace files (*.json, *.json.gz) — pass the rank traces' folder")
    return found


def plan_ranks(paths: list[Path], roots: DataRoots) -> RankPlan:
    """Give every trace its rank (or its error) and check the set of ranks against the world size."""
    traces = []
    for p in sorted(dict.fromkeys(paths), key=str):
        rank, world = distributed_info(read_header_prefix(p, roots))
        named = rank_from_name(p)
        t = TraceRank(p, world_size=world)
        if rank is not None:
            t.rank, t.rank_source = rank, "trace"
        elif named is not None:
            t.rank, t.rank_source = named, "file_name"
        traces.append(t)
    plan = RankPlan(traces, *_job_world_size(traces))
    for t in traces:
        named = rank_from_name(t.path)
        if t.rank_source == "trace" and named is not None and named != t.rank:
            plan.warnings.append(
                f"{t.path.name}: the trace says rank {t.rank}, its file name rank {named}; using {t.rank}"
            )
    _assign_unranked(plan)
    _check_world(plan)
    _check_duplicates(plan)
    plan.missing_ranks = _missing(plan)
    return plan


def _job_world_size(traces: list[TraceRank]) -> tuple[int | None, str]:
    sizes = Counter(t.world_size for t in traces if t.world_size is not None)
    if not sizes:
        return None, "unknown"
    # the size most traces state; a tie goes to the larger job (its traces cannot all be from a smaller one)
    return max(sizes.items(), key=lambda kv: (kv[1], kv[0]))[0], "trace"


def _assign_unranked(plan: RankPlan) -> None:
    unranked = [t for t in plan.traces if t.rank is None]
    if not unranked:
        return
    if len(unranked) == len(plan.traces):
        for i, t in enumerate(plan.traces):
            t.rank, t.rank_source = i, "order"
        plan.warnings.append(
            "no trace names its rank (distributedInfo or a rank_N file name): ranks follow the sorted file names"
        )
        return
    for t in unranked:
        t.error = (
            f"{t.path.name}: no rank in the trace's distributedInfo or its file name (rank_0, rank0, …) — rename it "
            "rank_<N>, or pass only the job's rank traces"
        )


def _check_world(plan: RankPlan) -> None:
    world = plan.world_size
    if world is None:
        return
    for t in plan.traces:
        if t.error is not None:
            continue
        if t.world_size is not None and t.world_size != world:
            t.error = (
                f"{t.path.name}: world size {t.world_size} differs from the job's {world} — a trace of another "
                "job? pass only one job's rank traces"
            )
        elif t.rank is not None and t.rank >= world:
            t.error = f"{t.path.name}: rank {t.rank} is outside the job's world size {world} — check the file"


def _check_duplicates(plan: RankPlan) -> None:
    owner: dict[int, TraceRank] = {}
    dups: dict[int, list[str]] = {}
    for t in plan.traces:
        if t.error is not None or t.rank is None:
            continue
        first = owner.setdefault(t.rank, t)
        if first is t:
            continue
        t.error = f"{t.path.name}: rank {t.rank} is also claimed by {first.path.name} — pass each rank's trace once"
        dups.setdefault(t.rank, [str(first.path)]).append(str(t.path))
    plan.duplicate_ranks = [{"rank": r, "traces": paths} for r, paths in sorted(dups.items())]


def _missing(plan: RankPlan) -> list[int]:
    claimed = {t.rank for t in plan.traces if t.rank is not None and t.error is None}
    if plan.world_size is not None:
        expected = plan.world_size
    else:
        expected = max(claimed) + 1 if claimed else 0
    return sorted(set(range(expected)) - claimed)
