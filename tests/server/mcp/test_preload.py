"""The server starts importing the analysis in the background when it starts (issue 36, item 3), and a call made
while that import is still in progress works: shown by the order of events with a held preload, never by timing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server, import_the_analysis
from tests.support import FLASH_ROW, REPO, make_folder

pytestmark = pytest.mark.anyio


async def test_a_call_works_while_the_background_import_is_held(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    events: list[str] = []
    started, release = threading.Event(), threading.Event()

    def held_preload() -> None:
        events.append("preload started")
        started.set()
        release.wait(timeout=600)  # held until the call is done: the import is "in progress" throughout
        events.append("preload done")

    server = create_server([tmp_path], preload=held_preload)
    assert await anyio.to_thread.run_sync(started.wait, 600)  # create_server started it
    async with Client(server, raise_exceptions=True) as c:
        r = await c.call_tool("load_category_data", {"output_dir": str(folder), "category": "sdpa_fwd"})
        assert not r.is_error and r.structured_content["instances"] == 10  # FLASH_ROW: 10 calls
        events.append("call done")
    release.set()
    for t in threading.enumerate():
        if t.name == "sdpa-preload":
            t.join(timeout=600)
    assert events == ["preload started", "call done", "preload done"]


async def test_a_failing_preload_is_logged_and_the_call_still_works(tmp_path: Path) -> None:
    def broken() -> None:
        raise ImportError("no such module")  # what a broken install would raise on the background thread

    async with Client(create_server([tmp_path], preload=broken), raise_exceptions=True) as c:
        r = await c.call_tool("list_architectures", {})
    assert not r.is_error and r.structured_content["count"] > 0


def test_the_real_preload_overlaps_the_first_call_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """In a fresh interpreter nothing heavy is loaded when the server is built; the preload imports the analysis on
    its thread while the first call imports what it needs on its own; both finish, the call is right."""
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    code = textwrap.dedent(f"""
        import sys, threading
        import anyio
        from mcp import Client
        from sdpa_analyzer.server.mcp_server import create_server
        assert "pandas" not in sys.modules
        server = create_server([{str(tmp_path)!r}])
        preload = next(t for t in threading.enumerate() if t.name == "sdpa-preload")

        async def first_call():
            async with Client(server, raise_exceptions=True) as c:
                return await c.call_tool("compute_roofline", {{"output_dir": {str(folder)!r}, "category": "sdpa_fwd",
                                                             "arch": "h100-sxm"}})

        r = anyio.run(first_call)
        preload.join(timeout=600)
        assert not preload.is_alive() and not r.is_error, r
        print(r.structured_content["rows"][0]["flops_useful"], "pandas" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    flops, pandas_loaded = done.stdout.split()
    assert float(flops) == 2 * 2 * 8 * (1024 * 1025 // 2) * 128 and pandas_loaded == "True"  # causal N=1024, d=64


def test_the_preload_imports_what_the_flow_runs_on() -> None:
    code = "from server.mcp_server import import_the_analysis as f; f(); import sys; print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("numpy", "pandas", "sdpa_analyzer.server.scoring.category", "sdpa_analyzer.server.findings.validate"):
        assert f"'{name}'" in done.stdout, name
    for name in ("matplotlib", "dask"):  # ~40 MB resident each: only plot/report and analyze_ranks load them
        assert f"'{name}'" not in done.stdout, name
    assert import_the_analysis.__doc__
