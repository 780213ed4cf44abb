"""The fork server the process pool's workers are forked from, started as early as the caller can.

The fork server is a fresh interpreter that imports the analysis once (`server.ranks.task`: numpy, pandas, the
ingest, the scoring: about 1 s here) and then forks a worker per pool process in milliseconds; it lives as long
as this process, so an MCP server pays for it on its first analyze_ranks call only. Until its import is done no
worker can start, so its start is serial time in every run. Started here, before this process imports the same
modules for the run (the tool imports server.ranks.run when it runs), the two imports overlap on two cores
instead of following each other. Nothing heavy is imported by this module itself.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

PRELOAD = ["sdpa_analyzer.server.ranks.task"]


def pool_context() -> Any:
    """The multiprocessing context of the pool: the fork server (spawn where there is none: each worker imports
    anew)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_fork_server() -> None:
    """Start the fork server now (its import runs in the background) if it is not running yet; the pool's first
    worker then waits only for what is left of it."""
    ctx = pool_context()
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


__all__ = ["PRELOAD", "pool_context", "start_fork_server"]
