"""What a command imports before it answers: a CLI command loads neither the MCP SDK nor what its work does not
need (pandas, matplotlib, dask, the synthetic writer), so `--help` and `model` start fast; `serve` lists its tools
without the analysis libraries. Each check runs in a fresh interpreter and reads its `sys.modules` afterwards
(a behaviour, not a timing: the timings are bench/bench_start.py's)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.support import REPO

# top-level packages a start must not load (a prefix match on module names)
SDK = ("mcp", "mcp_types", "starlette", "uvicorn", "anyio", "httpx")
ANALYSIS = ("pandas", "matplotlib", "dask", "distributed", "msgspec", "markdown_it")
OURS_HEAVY = ("sdpa_analyzer.server.synthetic", "sdpa_analyzer.server.ingest.analyze", "sdpa_analyzer.server.scoring.records", "sdpa_analyzer.server.findings.validate",
              "sdpa_analyzer.server.render", "sdpa_analyzer.server.ranks.task")  # fmt: skip


def _loaded_after(code: str) -> set[str]:
    """The modules loaded once `code` ran in a fresh interpreter (stdout of `code` is thrown away)."""
    script = textwrap.dedent(code) + textwrap.dedent("""
        import json, sys
        sys.__stdout__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


def _present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def _cli(argv: list[str]) -> str:
    return f"""
        import contextlib, io
        from sdpa_analyzer.server.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main({argv!r})
            except SystemExit as exc:  # --help exits through argparse
                code = exc.code
        assert code == 0, code
    """


def test_help_loads_no_sdk_no_numpy_no_analysis() -> None:
    loaded = _loaded_after(_cli(["--help"]))
    assert not _present(loaded, (*SDK, *ANALYSIS, "numpy", *OURS_HEAVY))


@pytest.mark.parametrize("command", ["model", "analyze", "analyze-ranks", "validate", "rank", "run"])
def test_a_command_help_loads_no_sdk_no_analysis(command: str) -> None:
    loaded = _loaded_after(_cli([command, "--help"]))
    assert not _present(loaded, (*SDK, *ANALYSIS, "numpy", *OURS_HEAVY))


def test_model_loads_numpy_but_no_sdk_no_pandas() -> None:
    loaded = _loaded_after(_cli(["model", "-b", "1", "--heads", "16", "-n", "4096", "-d", "128", "--json"]))
    assert "sdpa_analyzer.perf_models.model_attention" in loaded  # it did the work
    assert not _present(loaded, (*SDK, *ANALYSIS, *OURS_HEAVY))


def test_archs_loads_no_sdk_no_numpy() -> None:
    loaded = _loaded_after(_cli(["archs"]))
    assert not _present(loaded, (*SDK, *ANALYSIS, "numpy", *OURS_HEAVY))


def test_the_server_lists_its_tools_without_the_analysis_libraries() -> None:
    # preload=None: the listing's own path (the server imports the analysis in the background from its start:
    # tests/server/mcp/test_preload.py)
    loaded = _loaded_after("""
        import anyio
        from mcp import Client
        from sdpa_analyzer.server.mcp_server import create_server

        async def listed() -> int:
            async with Client(create_server(preload=None)) as c:
                return len((await c.list_tools()).tools)

        assert anyio.run(listed) > 0
    """)
    assert not _present(loaded, (*ANALYSIS, "numpy", *OURS_HEAVY))
