"""End to end on every real trace: analyze → roofline → rank → findings template → fill the slots →
validate passes; then one broken number / Args cell / column makes it fail with the matching rule id."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call
from tests.support import SHARED, SHARED_SKIP_REASON, TRACES

ALL_TRACES = sorted(p.relative_to(TRACES).as_posix() for p in TRACES.rglob("*.json.gz")) if TRACES.exists() else []
SLOT = re.compile(r"\{\{FILL:[^}]*\}\}")


def fill(text: str) -> str:
    """Replace every prose slot with a plain sentence, as the LLM would."""
    return SLOT.sub("The tools measured this; see the table below for the numbers.", text)


@pytest.mark.skipif(not ALL_TRACES, reason=f"{SHARED_SKIP_REASON}: {TRACES} is absent")
@pytest.mark.parametrize("trace", ALL_TRACES)
def test_trace_to_valid_findings(trace: str, tmp_path: Path) -> None:
    roots = DataRoots([tmp_path, SHARED])
    out = tmp_path / "analysis"
    res = call("analyze_trace", roots, trace_path=str(TRACES / trace), output_dir=str(out))
    cats = [c.name for c in res.categories]
    if res.status == "NO_DATA":
        assert cats == []
        return
    assert cats, trace
    for cat in cats:
        roof = call("compute_roofline", roots, output_dir=str(out), category=cat)
        assert roof.status == "OK" and roof.total_rows >= 1
        ranked = call("rank_findings", roots, output_dir=str(out), category=cat)
        tpl = call("render_findings_template", roots, output_dir=str(out), category=cat)
        path = Path(tpl.findings_file)
        assert tpl.p_items == len(ranked.findings)
        unfilled = call("validate_findings", roots, findings_path=str(path))
        assert (not unfilled.passed) == (tpl.slots > 0)
        path.write_text(fill(path.read_text()))
        report = call("validate_findings", roots, findings_path=str(path))
        assert report.passed, (trace, cat, [e.model_dump() for e in report.errors])
        if not ranked.findings:
            continue
        good = path.read_text()
        f1 = ranked.findings[0]
        broken_marker = good.replace(f"mid={f1.impact_score}", f"mid={f1.impact_score + 0.01:.2f}", 1)
        path.write_text(broken_marker)
        assert "R9-marker-numbers" in {e.rule for e in call("validate_findings", roots, findings_path=str(path)).errors}
        lines = good.splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("| Operation |"))
        row = lines[header + 2].split(" | ")
        row[1] = row[1] + " fp32"  # an Args cell that is not verbatim any more
        path.write_text("\n".join([*lines[: header + 2], " | ".join(row), *lines[header + 3 :]]) + "\n")
        assert "R6-args" in {e.rule for e in call("validate_findings", roots, findings_path=str(path)).errors}
        dropped = [
            "|".join(c for j, c in enumerate(line.split("|")) if j != 3)
            if i in (header, header + 1, header + 2)
            else line
            for i, line in enumerate(lines)
        ]
        path.write_text("\n".join(dropped) + "\n")
        assert "R5-columns" in {e.rule for e in call("validate_findings", roots, findings_path=str(path)).errors}
