"""load_ranked reads the metrics JSON through the one reader (server.folder.metrics_file.metrics_document): streamed
in rank_findings' line layout, whole otherwise, and a whole read that fails is said in the RankedMetrics, never
raised. Expected values are written by hand from the documents below."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.metrics_file import open_streamed
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.ranked import TRACE2_NOT_FASTER, load_ranked

CAT = "sdpa_fwd"
HEAD = '{"comparison_scope": "comparative", "category_findings": [], "operations":['
# a difference, a non-object entry (skipped), a tie, an op without a trace-2 time
OPS = ['{"name": "a", "difference_ms": 1.5}', "7", '{"name": "b", "difference_ms": 0}', '{"name": "c"}']
DIFFERENCES = [1.5, 0.0, None]


def _write(tmp_path: Path, text: str) -> tuple[Path, DataRoots]:
    path = tmp_path / layout.metrics_json(CAT)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path, DataRoots([tmp_path])


@pytest.mark.parametrize("streamed", [True, False], ids=["line layout", "compact"])
def test_the_differences_are_read_from_either_layout(tmp_path: Path, streamed: bool) -> None:
    text = HEAD + "\n" + ",\n".join(OPS) + "\n]}\n" if streamed else HEAD + ", ".join(OPS) + "]}"
    path, roots = _write(tmp_path, text)
    doc = open_streamed(path, roots, "float")
    assert (doc is not None) == streamed  # each layout takes the path it names
    if doc is not None:
        doc["operations"].close()
    ranked = load_ranked(tmp_path, CAT, roots)
    assert ranked is not None and ranked.error is None
    assert ranked.differences == DIFFERENCES
    assert ranked.comparison_scope == "comparative"
    # 1.5 and 0 known, none negative: trace 2 is nowhere faster; one op has no trace-2 time
    reason = ranked.no_findings_reason
    assert reason is not None and reason.startswith(TRACE2_NOT_FASTER + "; the 1 op")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "not valid JSON: "),
        ("[1, 2]", "not a JSON object"),
        ('"operations"', "not a JSON object"),
    ],
)
def test_a_whole_read_that_fails_is_said_not_raised(tmp_path: Path, text: str, error: str) -> None:
    _, roots = _write(tmp_path, text)
    ranked = load_ranked(tmp_path, CAT, roots)
    assert ranked is not None and ranked.error is not None and ranked.error.startswith(error)
    assert ranked.findings == [] and ranked.differences == []
    assert ranked.no_findings_reason == f"the metrics JSON could not be read ({ranked.error}): re-run rank_findings"


def test_no_metrics_json_is_none(tmp_path: Path) -> None:
    (tmp_path / layout.CATEGORY_DATA).mkdir()
    assert load_ranked(tmp_path, CAT, DataRoots([tmp_path])) is None


def test_operations_that_are_not_a_list_give_no_differences(tmp_path: Path) -> None:
    _, roots = _write(tmp_path, '{"comparison_scope": "standalone", "operations": "abc"}')
    ranked = load_ranked(tmp_path, CAT, roots)
    assert ranked is not None and ranked.error is None and ranked.differences == []
