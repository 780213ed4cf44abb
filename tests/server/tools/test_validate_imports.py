"""validate_findings imports the ranks reader (and so pandas, ~0.7 s of a CLI call) only where a ranks summary can
be read: a fresh interpreter validating a plain folder's findings loads no pandas; beside a ranks_summary.json it
loads the reader. (A behaviour, not a timing: bench/bench_findings.py times the tool.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import FINDINGS_CORPUS, REPO


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "job" / "analysis"
    (folder / "category_data").mkdir(parents=True)
    (folder / "category_findings").mkdir()
    shutil.copy(FINDINGS_CORPUS / "metrics" / "standalone.json", folder / "category_data" / "sdpa_fwd_metrics.json")
    shutil.copy(FINDINGS_CORPUS / "valid" / "standalone.md", folder / "category_findings" / "sdpa_fwd_findings.md")
    return folder


def _validate_loads(tmp_path: Path, findings: Path) -> set[str]:
    code = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from sdpa_analyzer.server.roots import DataRoots
        from sdpa_analyzer.server.tools import call
        report = call("validate_findings", DataRoots([Path({str(tmp_path)!r})]), findings_path={str(findings)!r})
        sys.__stdout__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


@pytest.mark.parametrize("summary_in", ["none", "folder", "parent"])
def test_the_ranks_reader_is_imported_only_beside_a_summary(summary_in: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    if summary_in != "none":
        where = folder if summary_in == "folder" else folder.parent
        (where / "ranks_summary.json").write_text("{}")  # unreadable as a summary: validate goes on without it
    loaded = _validate_loads(tmp_path, folder / "category_findings" / "sdpa_fwd_findings.md")
    assert ("sdpa_analyzer.server.ranks.read" in loaded) == (summary_in != "none")
    if summary_in == "none":
        assert "pandas" not in loaded
