"""server.ranks.forkserver: the pool's fork server starts in the background, once, before the caller imports the
analysis (so the two imports overlap), and the pool then forks its workers from it."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO

pytestmark = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server on this platform"
)


def test_the_fork_server_starts_at_once_and_only_once_without_importing_the_analysis_here(tmp_path) -> None:
    # A preload module of the test's own, next to the analysis, that holds the fork server's import until this
    # process says go (or 60 s pass, then it marks itself done). If start_fork_server waited for the fork server's
    # imports, the done mark would exist when it returns. Nothing here is timed: the order of events is the test.
    (tmp_path / "held_preload.py").write_text(textwrap.dedent(f"""
        import os, time
        go, done = {str(tmp_path / "go")!r}, {str(tmp_path / "done")!r}
        end = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < end:
            time.sleep(0.01)
        open(done, "w").close()
    """))
    code = textwrap.dedent(f"""
        import json, os, sys, time
        from multiprocessing import forkserver
        from sdpa_analyzer.server.ranks import forkserver as ours
        ours.PRELOAD = [*ours.PRELOAD, "held_preload"]

        ours.start_fork_server()
        done_when_returned = os.path.exists({str(tmp_path / "done")!r})
        pid = forkserver._forkserver._forkserver_pid
        ours.start_fork_server()  # running already: the same process
        same = forkserver._forkserver._forkserver_pid == pid
        open({str(tmp_path / "go")!r}, "w").close()
        # the kernel fills /proc/<pid>/cmdline once the new interpreter has exec'd: wait for it, do not race it
        end = time.monotonic() + 60
        cmdline = ""
        while "multiprocessing.forkserver" not in cmdline and time.monotonic() < end:
            with open(f"/proc/{{pid}}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\\0", b" ").decode()
            time.sleep(0.005)
        heavy = [m for m in ("pandas", "numpy", "sdpa_analyzer.server.ranks.task") if m in sys.modules]
        while not os.path.exists({str(tmp_path / "done")!r}) and time.monotonic() < end:
            time.sleep(0.005)  # the held import did run in the fork server, and went on once told
        print(json.dumps({{"done_when_returned": done_when_returned, "same": same, "cmdline": cmdline,
                          "heavy": heavy, "held_import_ran": os.path.exists({str(tmp_path / "done")!r})}}))
    """)
    # PYTHONPATH, not sys.path: the fork server of Python 3.11 does not take the parent's sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "multiprocessing.forkserver" in got["cmdline"] and "sdpa_analyzer.server.ranks.task" in got["cmdline"], got
    assert got["same"]
    assert got["heavy"] == []  # this process did not import the analysis: the fork server does, meanwhile
    # it returned while the fork server's imports were still held: it does not wait for them
    assert got["held_import_ran"] and got["done_when_returned"] is False, got


def test_a_pool_after_an_early_start_runs_its_tasks_on_that_fork_server() -> None:
    code = textwrap.dedent("""
        import json, os
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import forkserver
        from sdpa_analyzer.server.ranks.forkserver import pool_context, start_fork_server

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
