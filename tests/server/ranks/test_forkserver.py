"""server.ranks.forkserver: the pool's fork server starts in the background, once, before the caller imports the
analysis (so the two imports overlap), and the pool then forks its workers from it."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO

pytestmark = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server on this platform"
)


def test_the_fork_server_starts_at_once_and_only_once_without_importing_the_analysis_here() -> None:
    code = textwrap.dedent("""
        import json, os, sys, time
        from multiprocessing import forkserver
        from server.ranks.forkserver import start_fork_server

        t0 = time.perf_counter()
        start_fork_server()
        returned = time.perf_counter() - t0
        pid = forkserver._forkserver._forkserver_pid
        start_fork_server()  # running already: the same process
        same = forkserver._forkserver._forkserver_pid == pid
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
        heavy = [m for m in ("pandas", "numpy", "server.ranks.task") if m in sys.modules]
        print(json.dumps({"returned": returned, "same": same, "cmdline": cmdline, "heavy": heavy}))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "multiprocessing.forkserver" in got["cmdline"] and "server.ranks.task" in got["cmdline"]
    assert got["same"]
    assert got["heavy"] == []  # this process did not import the analysis: the fork server does, meanwhile
    # it returned before the fork server finished importing the analysis (which alone takes ~0.5 s or more)
    assert got["returned"] < 0.3, got


def test_a_pool_after_an_early_start_runs_its_tasks_on_that_fork_server() -> None:
    code = textwrap.dedent("""
        import json, os
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import forkserver
        from server.ranks.forkserver import pool_context, start_fork_server

        start_fork_server()
        server_pid = forkserver._forkserver._forkserver_pid
        with ProcessPoolExecutor(2, mp_context=pool_context()) as pool:
            parents = {pool.submit(os.getppid).result() for _ in range(4)}
        print(json.dumps({"server": server_pid, "parents": sorted(parents),
                          "after": forkserver._forkserver._forkserver_pid}))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["parents"] == [got["server"]] and got["after"] == got["server"]
