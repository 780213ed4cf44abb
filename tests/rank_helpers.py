"""A pool task for tests/test_ranks.py that kills its worker process, in a module of its own: the pool's processes
unpickle it by reference, and importing this small module is faster than importing the test module."""

from __future__ import annotations

import os

from server.ranks.task import RankOutcome, RankTask, analyze_rank


def die_on_rank_1(task: RankTask) -> RankOutcome:
    """Rank 1 kills its pool process, as the OOM killer would; the other ranks are analyzed as usual."""
    if task.rank == 1:
        os._exit(137)
    return analyze_rank(task)
