"""The processes a run starts, and stopping them all when the host stops us (SIGTERM, SIGHUP, SIGINT).

A process pool leaves three kinds of processes: the fork server (a child of ours), the resource tracker (a
child) and the pool workers (children of the fork server); a Dask LocalCluster leaves its worker processes
(children of ours, restarted by their nannies when they die). Python's default for SIGTERM and SIGHUP ends
this process at once and leaves all of them running, blocked on pipes nobody writes any more; SIGINT sent to
this process alone waits for every worker to finish its trace. So the CLI (`analyze-ranks`, `serve`) installs
`stop_on_signals`: the handler marks the process as stopping (no new pool or cluster starts, a retry does not
happen: `Stopped`), ends every descendant process (SIGTERM, then SIGKILL after a grace period: the resource
tracker ignores SIGTERM), and unwinds with SystemExit (KeyboardInterrupt for SIGINT); a watchdog ends the
process after EXIT_GRACE_S if unwinding hangs (a worker thread of the MCP server blocked somewhere), killing
the descendants once more first. Descendants are found in /proc (Linux); elsewhere, the direct children.

A parent killed outright (SIGKILL, the OOM killer) runs no handler, so the pool workers also watch the process
that made the pool (`die_with`, the pool's initializer: a thread waits on a pidfd of that process and ends the
worker when it ends). A parent-death signal (PR_SET_PDEATHSIG) would not do: a worker's parent is the fork server,
and the fork server stays while any worker holds its alive pipe. Once the workers are gone, the fork server sees
that pipe close and exits, and the resource tracker follows when the last holder of its pipe is gone. Workers
ignore SIGINT, as the fork server and the resource tracker already do: a terminal's Ctrl-C reaches the whole
process group, and it is this process's handler that stops them, without a traceback from each.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))
TERM_GRACE_S = 1.0  # after SIGTERM, before SIGKILL
EXIT_GRACE_S = 5.0  # after the signal, before the process ends without unwinding
_stopping = threading.Event()


class Stopped(BaseException):
    """This process was told to stop: no worker is started or retried. A BaseException, so no rank catches it as
    its own failure."""


def stopping() -> bool:
    return _stopping.is_set()


def check_running() -> None:
    """Raise Stopped once a stop signal arrived (before starting a pool or a cluster, and before retrying)."""
    if _stopping.is_set():
        raise Stopped("stopped by a signal")


def die_with(owner: int) -> None:
    """A pool worker's initializer: ignore SIGINT (the owner's handler stops us) and end this process (SIGKILL)
    as soon as the process `owner` ends, however it ends, watched by a thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch, args=(owner,), name="die-with-owner", daemon=True).start()


def _watch(owner: int) -> None:
    try:
        fd = os.pidfd_open(owner)  # Linux 5.3+: readable once the process has ended
    except ProcessLookupError:
        fd = -1  # already gone
    except (AttributeError, OSError):  # elsewhere: ask every second
        fd = None
    if fd is None:
        while True:
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                break
            except PermissionError:  # the pid was reused by someone else's process: the owner is gone
                break
            time.sleep(1.0)
    elif fd >= 0:
        select.select([fd], [], [])
    os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


def descendants(pid: int | None = None) -> list[int]:
    """Every live process below `pid` (default: this one), children first; zombies left out."""
    root = os.getpid() if pid is None else pid
    proc = Path("/proc")
    if not proc.is_dir():
        import multiprocessing  # elsewhere than Linux only: the CLI's start does not load it

        return [p.pid for p in multiprocessing.active_children() if p.pid is not None] if root == os.getpid() else []
    parent: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": the name may hold spaces and parens
        if len(fields) > 1 and fields[0] != "Z":
            parent[int(entry.name)] = int(fields[1])
    out, frontier = [], [root]
    while frontier:
        below = [p for p, pp in parent.items() if pp in frontier and p not in out]
        out += below
        frontier = below
    return out


def stop_children(grace: float = TERM_GRACE_S) -> int:
    """Mark this process as stopping and end every descendant: SIGTERM, then SIGKILL for those left after
    `grace` seconds (new ones that appear meanwhile, e.g. a nanny's restart, are ended too). Returns how many."""
    _stopping.set()
    # we end the resource tracker on purpose: multiprocessing's warning when it restarts it for the pool's clean-up
    # would be a second line after the one the interrupted run prints
    warnings.filterwarnings("ignore", message="resource_tracker: process died unexpectedly")
    seen: set[int] = set()
    deadline = time.monotonic() + grace
    sig = signal.SIGTERM
    while True:
        alive = descendants()
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, sig if pid not in seen or sig == signal.SIGKILL else 0)
            seen.add(pid)
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                break
            sig = getattr(signal, "SIGKILL", signal.SIGTERM)
            deadline = time.monotonic() + grace
        time.sleep(0.05)
        _reap()
    _reap()
    return len(seen)


def _reap() -> None:
    """Collect our direct children that ended (a killed child stays a zombie until its parent waits for it)."""
    with contextlib.suppress(ChildProcessError, OSError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the block runs (main thread only), SIGTERM, SIGHUP and SIGINT stop every descendant first and then
    unwind (see the module docstring); the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        first = not _stopping.is_set()
        stop_children()
        if first:
            threading.Thread(target=_exit_later, args=(128 + signum,), daemon=True).start()
        if signum == getattr(signal, "SIGINT", None):
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if _stopping.is_set():
            stop_children(grace=0.2)


def _exit_later(code: int) -> None:
    time.sleep(EXIT_GRACE_S)
    stop_children(grace=0.2)
    os._exit(code)
