"""Rule 3's block order and rule 8's stray markers, on the valid standalone corpus file with one edit each.

The P-items and the candidate blocks share two checks (server.findings.document: first_misplaced, markers_outside);
these cases are the ones the corpus did not hold: candidate blocks moved whole out of rank order (R3-rank, not the
swapped-attribute fix), and an impact marker of each kind outside every block of its kind. Each expected line is
found by searching the edited text, not by running the validator.
"""

from __future__ import annotations

import pytest

from sdpa_analyzer.server.findings import load_metrics, validate_findings_text
from tests.support import FINDINGS_CORPUS

VALID = (FINDINGS_CORPUS / "valid" / "standalone.md").read_text(encoding="utf-8")
METRICS = FINDINGS_CORPUS / "metrics" / "standalone.json"
P_MARKER = "<!-- impact-begin kind=p_item low=9.3 mid=10.85 high=12.4 -->\n<!-- impact-end -->\n"
DETAIL_MARKER = "<!-- impact-begin kind=detail_estimate low=9.3 high=12.4 -->\n<!-- impact-end -->\n"


def _line_of(text: str, needle: str) -> int:
    """1-based line of the only line that starts with `needle`."""
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith(needle)]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def _errors(text: str, metrics: dict | None, rule: str) -> list[tuple[int | None, str]]:
    report = validate_findings_text(text, metrics)
    return [(e.line, e.message) for e in report.errors if e.rule == rule]


@pytest.mark.parametrize("with_metrics", [False, True], ids=["no-metrics", "metrics"])
def test_candidate_blocks_moved_out_of_rank_order(with_metrics: bool) -> None:
    first = VALID.index("<!-- reasoning-candidate tier=compute rank=1 -->")
    second = VALID.index("<!-- reasoning-candidate tier=compute rank=2 -->")
    text = VALID[:first] + VALID[second:].rstrip("\n") + "\n\n" + VALID[first:second]
    metrics = load_metrics(METRICS) if with_metrics else None
    line = _line_of(text, "<!-- reasoning-candidate tier=compute rank=2 -->")
    assert _errors(text, metrics, "R3-rank") == [(line, "candidate rank=2 where rank=1 belongs.")]
    assert validate_findings_text(VALID, metrics).passed  # the edit is the only defect


def _lines_equal_to(text: str, line: str) -> list[int]:
    return [i + 1 for i, s in enumerate(text.splitlines()) if s == line]


def test_p_item_marker_outside_every_p_item() -> None:
    at = VALID.index("<!-- reasoning-candidate tier=compute rank=1 -->")
    text = VALID[:at] + P_MARKER + "\n" + VALID[at:]
    line = _lines_equal_to(text, P_MARKER.splitlines()[0])[-1]  # after P1's own marker, the copied one
    assert _errors(text, None, "R8-p-item") == [(line, "p_item marker outside any P-item.")]


def test_detail_marker_outside_every_candidate_block() -> None:
    at = VALID.index("### P1:")
    text = VALID[:at] + DETAIL_MARKER + "\n" + VALID[at:]
    line = _lines_equal_to(text, DETAIL_MARKER.splitlines()[0])[0]  # before rank 1's own marker, the copied one
    assert _errors(text, None, "R8-detail-estimate") == [(line, "detail_estimate marker outside any candidate block.")]
