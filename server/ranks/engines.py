"""Where the rank tasks run: a process pool on this machine, or a Dask cluster beyond it.

Both engines run the same `server.ranks.task.analyze_rank` on `RankTask`s and hand each `RankOutcome` to
`on_done` as it arrives (in completion order), so progress and the summary are the same whichever ran them.
A task never raises for a bad trace; what an engine adds is the failures of the worker itself: a pool
process that died (killed for memory, a crash) or a Dask worker lost mid-task becomes that rank's error.

The pool's processes come from a fork server, not a fork of this process: the MCP server runs threads, and
forking a threaded process can deadlock the child. The fork server imports the analysis modules once, so a
worker starts in milliseconds (server.ranks.forkserver: started before this process imports the analysis). Each
worker holds one trace at a time. A worker that dies takes the ranks in flight with it; they are retried one at
a time, so a dead worker costs only the rank that killed it.

Dask is imported only when chosen (`pip install 'sdpa-analyzer[cluster]'`). The scheduler address is the
caller's configuration (`serve --dask-address`, `SDPA_DASK_ADDRESS`, `analyze-ranks --dask-address`), never a
tool argument: a scheduler we connect to, and its workers, can run code in this process (distributed unpickles
what they send), so only the person who starts the server or the CLI chooses one. Without an address a private
LocalCluster of `workers` single-threaded processes is started and closed again: TLS with temporary credentials
made for this run (`Security.temporary()`: only a client holding them can connect), every port on 127.0.0.1, no
dashboard and no HTTP routes; a process of this machine that connects without the credentials is refused. With
an address, the tasks go to that scheduler's workers, which must have sdpa-analyzer installed and see the traces
and the output folder at the same paths (shared storage). The tasks travel as plain dicts, and the outcomes
come back as JSON text re-validated here (RankOutcome): a worker's result is data, never an object of its
choosing (what Dask's own protocol unpickles is beyond our reach: hence the trust rule above).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Literal

from pydantic import ValidationError

from sdpa_analyzer.server.errors import InputError, shorten_message
from sdpa_analyzer.server.ranks.children import check_running, die_with, stopping
from sdpa_analyzer.server.ranks.forkserver import pool_context
from sdpa_analyzer.server.ranks.task import RankOutcome, RankTask, analyze_rank, error_outcome

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
        check_running()  # a pool killed by a stop signal is not retried
        if _pool_round([task], 1, on_done):
            on_done(error_outcome(task, _DIED))


def _pool_round(tasks: list[RankTask], workers: int, on_done: OnDone) -> list[RankTask]:
    """Run the tasks on one pool; returns the tasks lost to a dead worker process."""
    check_running()
    broken: list[RankTask] = []
    pool = ProcessPoolExecutor(
        max_workers=max(1, min(workers, len(tasks))), mp_context=pool_context(), initializer=die_with,
        initargs=(os.getpid(),),
    )
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
        pool.shutdown(wait=not stopping(), cancel_futures=True)
    check_running()
    return broken


# ---------------------------------------------------------------------------------------------- Dask
def dask_available() -> bool:
    return importlib.util.find_spec("distributed") is not None


def run_dask(tasks: Sequence[RankTask], workers: int, on_done: OnDone, address: str | None = None) -> int:
    """Run the tasks on a Dask cluster (the configured scheduler, else a private LocalCluster); returns the number
    of workers that served them."""
    if not dask_available():
        raise InputError(f"engine 'dask' needs dask.distributed, which is not installed — {CLUSTER_EXTRA}")
    from distributed import Client, as_completed

    check_running()
    cluster = None
    try:
        if address:
            client = _connect(Client, address)
        else:
            cluster = private_cluster(max(1, min(workers, len(tasks))))
            client = Client(cluster, security=cluster.security)
        try:
            served = len(client.scheduler_info().get("workers", {}))
            token = uuid.uuid4().hex[:8]
            keys = [f"sdpa-rank-{t.rank}-{t.index}-{token}" for t in tasks]
            futures = client.map(analyze_rank_json, [t.to_plain() for t in tasks], key=keys, pure=False, retries=0)
            by_key = {fut.key: task for fut, task in zip(futures, tasks, strict=True)}
            for fut in as_completed(futures):
                check_running()
                task = by_key[fut.key]
                try:
                    outcome = outcome_from_json(task, fut.result())
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


def analyze_rank_json(task: dict[str, Any]) -> str:
    """The Dask task: a plain dict in, the outcome as JSON text out."""
    return analyze_rank(RankTask.from_plain(task)).model_dump_json()


def outcome_from_json(task: RankTask, result: Any) -> RankOutcome:
    """A worker's result, validated: JSON text of a RankOutcome for this very task, or that rank's error."""
    if not isinstance(result, str):
        return error_outcome(task, f"the Dask worker returned a {type(result).__name__}, not the rank's JSON result")
    try:
        outcome = RankOutcome.model_validate_json(result)
    except ValidationError as exc:
        return error_outcome(task, shorten_message(f"the Dask worker returned an invalid result ({exc.errors()[0]})"))
    if (outcome.index, outcome.rank, outcome.trace_path, outcome.folder) != (
        task.index, task.rank, task.trace_path, task.folder
    ):  # fmt: skip
        return error_outcome(task, "the Dask worker returned the result of another task")
    return outcome


def private_cluster(n_workers: int) -> Any:
    """A LocalCluster only this process can use: TLS with credentials made now, loopback only, no HTTP routes."""
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    if importlib.util.find_spec("cryptography") is None:  # it makes the temporary certificates
        raise InputError(f"engine 'dask' needs the cryptography package for a private cluster — {CLUSTER_EXTRA}")
    security = Security.temporary()
    no_http = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
    with dask.config.set(no_http):  # the nannies pass this configuration on to the worker processes they start
        return LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, protocol="tls", host="127.0.0.1",
            security=security, dashboard_address=None, worker_dashboard_address=None, silence_logs=logging.ERROR,
        )  # fmt: skip


def _connect(client_cls: Any, address: str) -> Any:
    try:
        return client_cls(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise InputError(
            f"cannot reach the Dask scheduler at {address} ({type(exc).__name__}: {exc}) — start it "
            "(`dask scheduler`, or dask-jobqueue) or check --dask-address"
        ) from None
