"""Every signal a host sends stops the pool's processes within seconds (issue 18): `analyze-ranks` with the
process pool, and `serve` during an analyze_ranks call, each sent SIGTERM, SIGHUP and SIGINT while its workers are
busy. No process below it (fork server, resource tracker, pool workers) may survive.

The ranks are kept busy by a sitecustomize module on the children's PYTHONPATH that makes each rank task sleep
first (it is imported by every Python process of the run, the fork server included, so the pool workers forked
from it sleep too). Processes are found by reading /proc here (psutil is not a dependency).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from tests.support import REPO

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

SLOW_RANK = '''
import os, time
if os.environ.get("SDPA_TEST_SLOW_RANK"):
    import sdpa_analyzer.server.ranks.task as _task
    _real = _task.analyze_rank

    def analyze_rank(task):
        time.sleep(float(os.environ["SDPA_TEST_SLOW_RANK"]))
        return _real(task)

    analyze_rank.__module__, analyze_rank.__qualname__ = "sdpa_analyzer.server.ranks.task", "analyze_rank"
    _task.analyze_rank = analyze_rank
'''
EXPECTED_RC = {signal.SIGTERM: 128 + signal.SIGTERM, signal.SIGHUP: 128 + signal.SIGHUP, signal.SIGINT: 130,
               signal.SIGKILL: -signal.SIGKILL}  # fmt: skip


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, from /proc/<pid>/stat."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        rest = text[text.rfind(")") + 2 :].split()
        out[int(entry)] = (int(rest[1]), rest[0])
    return out


def _below(pid: int) -> set[int]:
    table = _parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, (pp, _) in table.items() if pp in frontier and p not in found}
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _parents()
    return {p for p in pids if p in table and table[p][1] != "Z"}


def _env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SLOW_RANK)
    path = os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "SDPA_TEST_SLOW_RANK": "120"}


def _job(tmp_path: Path, world: int = 3) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    c = SyntheticAttentionCall(flavour="aten_flash", heads_q=8, seq_q=256, repeat=1, kernel_us=50.0)
    for r in range(world):
        info = {"backend": "nccl", "rank": r, "world_size": world}
        write_trace(build_trace([c], seed=r, distributed_info=info), folder / f"rank_{r}.json.gz")
    return folder


def _wait_for_workers(proc: subprocess.Popen[Any], at_least: int, timeout: float = 90.0) -> set[int]:
    """The processes below `proc` once the pool is up (fork server + resource tracker + workers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited early with {proc.returncode}"
        below = _alive(_below(proc.pid))
        if len(below) >= at_least:
            time.sleep(0.5)  # let the last worker take its task
            return _alive(_below(proc.pid))
        time.sleep(0.2)
    raise AssertionError(f"the pool never started: {sorted(_below(proc.pid))}")


def _stop_and_check(proc: subprocess.Popen[Any], sig: int, children: set[int]) -> None:
    """Signal the parent; it must exit with the code for that signal and leave no child behind. The deadline is
    generous (a loaded machine); how long it took is reported, never asserted."""
    os.kill(proc.pid, sig)
    try:
        rc = proc.wait(timeout=90)
        left = _gone_within(children, 90.0)
        assert not left, f"{signal.Signals(sig).name}: {sorted(left)} still running 90 s after the parent exited"
        assert rc == EXPECTED_RC[sig], rc
    finally:
        for pid in _alive(children | {proc.pid}):  # ours to clean up if the test failed
            os.kill(pid, signal.SIGKILL)


def _gone_within(pids: set[int], timeout: float) -> set[int]:
    """Wait until none of `pids` runs (or the deadline): those still running."""
    deadline = time.monotonic() + timeout
    left = _alive(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _alive(pids)
    return left


SLOW = pytest.mark.slow  # each run starts a pool of processes that import the whole project: ~10-20 s
CLI_SIGNALS = [signal.SIGTERM, pytest.param(signal.SIGHUP, marks=SLOW), pytest.param(signal.SIGINT, marks=SLOW)]
SERVE_SIGNALS = [pytest.param(s, marks=SLOW) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]


@pytest.mark.parametrize("sig", CLI_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_analyze_ranks_pool_stops_every_child(tmp_path: Path, sig: int) -> None:
    traces = _job(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "analyze-ranks", str(traces), "-o", str(tmp_path / "out"),
         "--workers", "2"],
        env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    children = _wait_for_workers(proc, at_least=4)
    _stop_and_check(proc, sig, children)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert "Traceback" not in err, err


@pytest.mark.parametrize("sig", [*SERVE_SIGNALS, pytest.param(signal.SIGKILL, marks=SLOW)],
                         ids=lambda s: signal.Signals(s).name)  # fmt: skip
def test_serve_stops_every_child_during_analyze_ranks(tmp_path: Path, sig: int) -> None:
    """SIGKILL (issue 31): no handler runs; the pool workers watch the server process and end with it."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    _job(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "serve", "--root", str(tmp_path)],
        env=_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(msg) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    assert json.loads(proc.stdout.readline())["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "analyze_ranks", "arguments": {"trace_dir": "traces", "output_dir": "out", "workers": 2}}})
    children = _wait_for_workers(proc, at_least=4)
    try:
        _stop_and_check(proc, sig, children)
    finally:
        proc.stdin.close()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_serve_http_stops_every_child_during_analyze_ranks(tmp_path: Path, sig: int) -> None:
    """uvicorn waits for the calls in flight before it stops: the pool must not keep it (and itself) alive."""
    import socket
    import threading

    import anyio
    from mcp import Client

    _job(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "serve", "--http", "--port", str(port), "--root", str(tmp_path)],
        env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    async def client() -> None:
        for _ in range(300):
            try:
                async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                    await c.call_tool("analyze_ranks", {"trace_dir": "traces", "output_dir": "out", "workers": 2})
                return
            except Exception:  # not listening yet, or the server went away mid-call (what this test does)
                if proc.poll() is not None:
                    return
                await anyio.sleep(0.1)

    caller = threading.Thread(target=lambda: anyio.run(client), daemon=True)
    caller.start()
    children = _wait_for_workers(proc, at_least=4)
    _stop_and_check(proc, sig, children)


# ---- issue 31: a parent killed outright, and Ctrl-C from a terminal ---------------------------------------------


def _analyze_ranks(tmp_path: Path, **popen: Any) -> subprocess.Popen[Any]:
    traces = _job(tmp_path)
    return subprocess.Popen(
        [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "analyze-ranks", str(traces), "-o", str(tmp_path / "out"),
         "--workers", "2"],
        env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **popen,
    )  # fmt: skip


@SLOW
def test_sigkill_of_analyze_ranks_takes_every_child_with_it(tmp_path: Path) -> None:
    """SIGKILL runs no handler: the fork server sees its parent's pipe close and exits, and the workers (blocked in
    a 120 s task) get the parent-death signal. Before, the workers stayed until their task ended and then waited on
    the pool's pipes for good."""
    proc = _analyze_ranks(tmp_path)
    children = _wait_for_workers(proc, at_least=4)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    try:
        left = _gone_within(children, 90.0)
        assert not left, f"{sorted(left)} still running 90 s after the parent was killed"
    finally:
        for pid in _alive(children):
            os.kill(pid, signal.SIGKILL)


@SLOW
def test_ctrl_c_from_a_terminal_prints_one_line(tmp_path: Path) -> None:
    """A terminal's Ctrl-C sends SIGINT to the whole foreground process group (parent, fork server, workers,
    resource tracker): one line on stderr, exit 130, no traceback from any process, no child left."""
    proc = _analyze_ranks(tmp_path, start_new_session=True)  # its own group, as a shell's job
    children = _wait_for_workers(proc, at_least=4)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        rc = proc.wait(timeout=90)
        left = _gone_within(children, 90.0)
        assert not left, f"{sorted(left)} still running 90 s after Ctrl-C"
    finally:
        for pid in _alive(children | {proc.pid}):
            os.kill(pid, signal.SIGKILL)
    err = proc.stderr.read().decode() if proc.stderr else ""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[")]  # not progress lines
    assert rc == 130 and "Traceback" not in err and len(lines) == 1 and "interrupted" in lines[0], err
