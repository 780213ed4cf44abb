"""Where the rank tasks run: a process pool on this machine, or a Dask cluster beyond it.

Both engines run the same `server.ranks.task.analyze_rank` on `RankTask`s and hand each `RankOutcome` to
`on_done` as it arrives (in completion order), so progress and the summary are the same whichever ran them.
A task never raises for a bad trace; what an engine adds is the failures of the worker itself: a pool
process that died (killed for memory, a crash) or a Dask worker lost mid-task becomes that rank's error.

The pool's processes come from a fork server, not a fork of this process: the MCP server runs threads, and
forking a threaded process can deadlock the child. The fork server imports the analysis modules once, so a
worker starts in milliseconds. Each worker holds one trace at a time. A worker that dies takes the ranks in
flight with it; they are retried one at a time, so a dead worker costs only the rank that killed it.

Dask is imported only when chosen (`pip install 'sdpa-analyzer[cluster]'`). Without an address a
LocalCluster of `workers` single-threaded processes is started and closed again; with one, the tasks go
to that scheduler's workers, which must have sdpa-analyzer installed and see the traces and the output
folder at the same paths (shared storage). Only the outcomes travel back.
"""

from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

from server.errors import InputError
from server.ranks.task import RankOutcome, RankTask, analyze_rank, error_outcome

Engine = Literal["pool", "dask"]
OnDone = Callable[[RankOutcome], None]
CLUSTER_EXTRA = "pip install 'sdpa-analyzer[cluster]'"
CONNECT_TIMEOUT = "15s"  # Dask retries a refused connection until then
_DIED = (
    "the worker process died while analyzing this trace (killed for memory? try fewer --workers, or a machine "
    "with more memory)"
)


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------------- process pool
def run_pool(tasks: Sequence[RankTask], workers: int, on_done: OnDone) -> None:
    """When a pool process dies, every task in flight on that pool fails with it; those are run again one at a
    time, each on a pool of its own (alone, a rank that needed too much memory beside the others may fit), so
    only the rank that kills its worker by itself is reported."""
    for task in _pool_round(list(tasks), workers, on_done):
        if _pool_round([task], 1, on_done):
            on_done(error_outcome(task, _DIED))


def _pool_context() -> Any:
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows: spawn, each worker imports anew
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["server.ranks.task"])
    return ctx


def _pool_round(tasks: list[RankTask], workers: int, on_done: OnDone) -> list[RankTask]:
    """Run the tasks on one pool; returns the tasks lost to a dead worker process."""
    broken: list[RankTask] = []
    pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(tasks))), mp_context=_pool_context())
    try:
        futures: dict[Future[RankOutcome], RankTask] = {pool.submit(analyze_rank, t): t for t in tasks}
        todo = set(futures)
        while todo:
            done, todo = wait(todo, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: futures[f].index):
                try:
                    outcome = fut.result()
                except BrokenProcessPool:
                    broken.append(futures[fut])
                    continue
                on_done(outcome)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return broken


# ---------------------------------------------------------------------------------------------- Dask
def dask_available() -> bool:
    return importlib.util.find_spec("distributed") is not None


def run_dask(tasks: Sequence[RankTask], workers: int, on_done: OnDone, address: str | None = None) -> int:
    """Run the tasks on a Dask cluster; returns the number of workers that served them."""
    if not dask_available():
        raise InputError(f"engine 'dask' needs dask.distributed, which is not installed — {CLUSTER_EXTRA}")
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    try:
        if address:
            client = _connect(Client, address)
        else:
            cluster = LocalCluster(
                n_workers=max(1, min(workers, len(tasks))), threads_per_worker=1, processes=True,
                dashboard_address=None, silence_logs=logging.ERROR,
            )  # fmt: skip
            client = Client(cluster)
        try:
            served = len(client.scheduler_info().get("workers", {}))
            token = uuid.uuid4().hex[:8]
            keys = [f"sdpa-rank-{t.rank}-{t.index}-{token}" for t in tasks]
            futures = client.map(analyze_rank, list(tasks), key=keys, pure=False, retries=0)
            by_key = {fut.key: task for fut, task in zip(futures, tasks, strict=True)}
            for fut in as_completed(futures):
                task = by_key[fut.key]
                try:
                    outcome = fut.result()
                except Exception as exc:  # a worker lost mid-task (KilledWorker) or a task that could not run
                    outcome = error_outcome(task, f"the Dask worker failed on this trace ({type(exc).__name__}: {exc})")
                on_done(outcome)
                fut.release()
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()
    return served


def _connect(client_cls: Any, address: str) -> Any:
    try:
        return client_cls(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise InputError(
            f"cannot reach the Dask scheduler at {address} ({type(exc).__name__}: {exc}) — start it "
            "(`dask scheduler`, or dask-jobqueue) or check --dask-address"
        ) from None
