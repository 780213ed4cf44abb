"""Issue 23: values that used to get through, each through the MCP client and the CLI.

Metadata numbers of the wrong type or range are refused before anything is written, in one line naming the field;
control characters and bidi overrides quoted from a path, a trace or a CSV are escaped in everything we print or
return (errors, warnings, tables, results). Hand-edited rank summaries and arch files for ranks are in
tests/server/ranks/test_ranks_sandbox.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from sdpa_analyzer.server.errors import InputError, printable, shorten_message
from sdpa_analyzer.server.mcp_server import create_server
from tests.support import FLASH_ROW, make_folder

pytestmark = pytest.mark.anyio
CAT = "sdpa_fwd"
ESC_CLEAR = "\x1b[2J\x1b]0;pwned\x07"  # clear the screen, set the window title
RLO = "\u202e"  # right-to-left override: `txt.exe` shown as `exe.txt`
HOSTILE = f"a{ESC_CLEAR}b{RLO}c\x9bd\u2066e\u200bf\rg"


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sdpa_analyzer.server.cli.main", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def raw_controls(text: str) -> list[str]:
    """The characters of `text` a terminal would act on or that reorder what it shows (line breaks allowed)."""
    return [c for c in text if not c.isprintable() and c not in "\n\t"]


# ---------------------------------------------------------------------------------------------- the escape itself
def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    got = printable(HOSTILE)
    # written out by hand: each character as repr() spells it
    assert got == "a\\x1b[2J\\x1b]0;pwned\\x07b\\u202ec\\x9bd\\u2066e\\u200bf\\rg"
    assert printable("plain text — µs, ≥ 5 %, 日本") == "plain text — µs, ≥ 5 %, 日本"  # printable Unicode stays
    assert printable("two\nlines\tok", keep_lines=True) == "two\nlines\tok"
    assert printable("two\nlines") == "two\\nlines"
    # an error line collapses whitespace first (the carriage return becomes a space), then escapes the rest
    assert str(InputError(f"path {HOSTILE} is bad")) == f"path {printable(HOSTILE.replace(chr(13), ' '))} is bad"
    assert not raw_controls(shorten_message(f"x {HOSTILE} " * 40))


# ---------------------------------------------------------------------------------------------- metadata numbers
BAD_E2E: list[tuple[Any, str]] = [
    (True, "bool"),  # read as 1.0 ms before: an op at 324.5 % of E2E, no warning
    ("10", "str"),
    (None, "NoneType"),
    ([10], "list"),
    (5e-324, "between"),  # a denormal: an internal error after the metrics file was written, before
    (-3.0, "between"),
    (0, "between"),
    (1e300, "between"),
    (1e-4, "more than 64x overlap"),  # a real number, but the ops alone ran 10,000 x longer than that window
]


def _set_e2e(folder: Path, value: Any) -> None:
    meta_path = folder / "metadata" / f"{CAT}_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["gpu_utilization"]["total_time_ms"] = value
    meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize(("value", "said"), BAD_E2E, ids=[repr(v)[:12] for v, _ in BAD_E2E])
async def test_bad_e2e_baselines_are_refused_before_anything_is_written(
    tmp_path: Path, value: Any, said: str
) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    _set_e2e(folder, value)
    before = files(folder)
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        for tool in ("load_category_data", "compute_roofline", "rank_findings"):
            arch = {} if tool == "load_category_data" else {"arch": "h100-sxm"}
            r = await c.call_tool(tool, {"output_dir": "folder", "category": CAT, **arch})
            assert r.is_error, (tool, r.structured_content)
            text = r.content[0].text
            assert "gpu_utilization.total_time_ms" in text and said in text and "sdpa_fwd_metadata.json" in text, text
            assert "\n" not in text and len(text) <= 300 and "internal error" not in text, text
    assert files(folder) == before  # no metrics JSON, no roofline CSV: nothing half-done
    proc = cli("rank", "folder", CAT, "--arch", "h100-sxm", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "gpu_utilization.total_time_ms" in lines[0] and "Traceback" not in proc.stderr
    assert files(folder) == before


async def test_bad_trace2_baseline_is_named_not_dropped(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    (folder / "metadata" / "trace2_gpu_utilization.json").write_text(json.dumps({"total_time_ms": False}))
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        r = await c.call_tool("load_category_data", {"output_dir": "folder", "category": CAT})
    assert r.is_error and "trace-2 gpu_utilization.total_time_ms" in r.content[0].text, r.content[0].text


async def test_kernel_time_above_the_window_is_said(tmp_path: Path) -> None:
    """FLASH_ROW runs 1 ms: an E2E baseline of 0.5 ms is possible (overlap) but said, with the numbers."""
    make_folder(tmp_path, [FLASH_ROW], e2e_ms=0.5)
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        r = await c.call_tool("load_category_data", {"output_dir": "folder", "category": CAT})
    assert not r.is_error, r.content[0].text
    assert r.structured_content["percent_of_e2e"] == pytest.approx(200.0)
    assert any("exceeds the E2E baseline (0.5 ms" in w and "(1 ms)" in w for w in r.structured_content["warnings"])


# ---------------------------------------------------------------------------------------------- control characters
async def test_control_characters_in_a_path_are_escaped_in_errors(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        r = await c.call_tool("load_category_data", {"output_dir": f"no{ESC_CLEAR}{RLO}pe", "category": CAT})
        unknown = await c.call_tool("compute_roofline", {"output_dir": "x", "category": CAT, f"k{RLO}": 1})
    for res in (r, unknown):
        assert res.is_error
        text = res.content[0].text
        assert not raw_controls(text), repr(text)
    assert "\\x1b[2J" in r.content[0].text and "\\u202e" in r.content[0].text
    proc = cli("load", f"no{ESC_CLEAR}{RLO}pe", CAT, cwd=tmp_path)
    assert proc.returncode == 2 and not raw_controls(proc.stderr) and "\\x1b[2J" in proc.stderr, repr(proc.stderr)


HOSTILE_ROW = (  # an op the registry does not know, named with control characters: its name lands in warnings
    f'"aten::my_attention{ESC_CLEAR}{RLO}",SDPA_fwd,"((2, 8, 1024, 64),)","(\'c10::BFloat16\',)","(\'\',)",3,300.0,'
    f'100.0,"[{{\'name\': \'k{ESC_CLEAR}\', \'stream\': 7, \'count\': 3, \'total_duration_us\': 300.0}}]",x.py(1): f'
)


async def test_control_characters_from_a_csv_are_escaped_in_results_and_tables(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW, HOSTILE_ROW])
    assert ESC_CLEAR in (folder / "category_data" / f"{CAT}_ops.csv").read_text()
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        for tool in ("load_category_data", "compute_roofline", "rank_findings"):
            r = await c.call_tool(tool, {"output_dir": "folder", "category": CAT})
            assert not r.is_error, r.content[0].text
            dumped = json.dumps(r.structured_content, ensure_ascii=False)
            assert not raw_controls(dumped) and not raw_controls(r.content[0].text), (tool, dumped[:300])
    roof = r.structured_content
    assert roof["status"] == "OK"
    for args in (["load", "folder", CAT], ["roofline", "folder", CAT], ["roofline", "folder", CAT, "--json"]):
        proc = cli(*args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert not raw_controls(proc.stdout) and not raw_controls(proc.stderr), (args, proc.stdout[-500:])
        shown = json.dumps(json.loads(proc.stdout)) if "--json" in args else proc.stdout  # JSON doubles a backslash
        assert "my_attention\\x1b[2J" in shown.replace("\\\\", "\\"), (args, proc.stdout[-800:])
