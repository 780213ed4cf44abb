"""Issue 31: `report` on a folder that is not an analysis folder (empty, or holding traces) is refused in one line,
as load, roofline and template refuse it, and writes nothing (before, it wrote a report.html saying "No SDPA
operations found" and exited 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FLASH_ROW, REPO, make_folder


def _traces(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    c = SyntheticAttentionCall(flavour="aten_flash", heads_q=8, seq_q=256, repeat=1, kernel_us=50.0)
    write_trace(build_trace([c]), folder / "rank_0.json.gz")
    return folder


@pytest.mark.parametrize("kind", ["empty", "traces"])
def test_report_refuses_a_folder_that_is_not_an_analysis_folder(kind: str, tmp_path: Path) -> None:
    folder = _traces(tmp_path) if kind == "traces" else tmp_path / "empty"
    folder.mkdir(exist_ok=True)
    before = sorted(p.name for p in folder.rglob("*"))
    with pytest.raises(ToolFailure) as err:
        call("render_report", DataRoots([tmp_path]), output_dir=str(folder))
    msg = str(err.value)
    assert not err.value.internal and "\n" not in msg and "is not an analysis folder" in msg, msg
    assert ("it is empty" in msg) if kind == "empty" else ("run analyze_trace on one first" in msg), msg
    assert sorted(p.name for p in folder.rglob("*")) == before  # nothing written
    proc = subprocess.run([sys.executable, "-m", "sdpa_analyzer.server.cli.main", "report", str(folder)], capture_output=True,
                          text=True, cwd=REPO, timeout=120)  # fmt: skip
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "is not an analysis folder" in proc.stderr and not (folder / "report.html").exists()


def test_report_still_renders_an_analysis_folder(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    res = call("render_report", DataRoots([tmp_path]), output_dir=str(folder), arch="h100-sxm")
    assert Path(res.report_file).is_file() and res.categories


def test_a_huge_findings_file_is_read_only_as_far_as_the_page_shows(tmp_path: Path) -> None:
    """The page shows the first MAX_CHARS characters of the prose: a 256 MiB (sparse) findings file costs the
    report a few MB, not the file (tracemalloc's peak; before, the file was read and decoded whole)."""
    import tracemalloc

    from sdpa_analyzer.server.render.markdown import MAX_CHARS

    folder = make_folder(tmp_path, [FLASH_ROW])
    (folder / "category_findings").mkdir()
    with (folder / "category_findings" / "sdpa_fwd_findings.md").open("wb") as fh:
        fh.write(b"# Findings\n")
        fh.truncate(256 << 20)
    tracemalloc.start()
    try:
        res = call("render_report", DataRoots([tmp_path]), output_dir=str(folder), arch="h100-sxm")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 128 << 20, f"{peak >> 20} MiB"
    page = Path(res.report_file).read_text()
    assert f"longer than {MAX_CHARS:,} characters" in page
