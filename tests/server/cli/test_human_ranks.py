"""The terminal renderings of analyze_ranks and load_rank_summary share their failed-rank lines and spread table
(server.cli.human_ranks._failures_and_spreads): each failed rank is a line of its own, the unknown rank a dash, and
the per-category spread follows, in both. Expected lines written by hand."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from sdpa_analyzer.server.cli.human_ranks import human_analyze_ranks, human_rank_summary

ERRORS = [NS(rank=3, error="not a trace: bad JSON at byte 9"), NS(rank=None, error="unreadable")]
SPREAD = NS(category="sdpa_fwd", ranks=4, kernel_time_ms_min=1.0, kernel_time_ms_median=2.0, kernel_time_ms_max=3.5,
            slowest_rank=2, straggler_ranks=[2])  # fmt: skip


def _analyze(categories: list[NS]) -> str:
    return human_analyze_ranks(NS(
        workers=2, status="PARTIAL", traces=5, output_dir="/o", engine="pool", seconds=1.5, ranks_ok=3,
        ranks_no_data=0, ranks_failed=2, world_size=4, world_size_source="file", missing_total=0, missing_ranks=[],
        duplicate_ranks=[], errors=ERRORS, categories=categories, stragglers=[], stragglers_total=0,
        summary_file="/o/ranks_summary.json", warnings=[],
    ))  # fmt: skip


def _summary(categories: list[NS]) -> str:
    return human_rank_summary(NS(
        summary_file="/o/ranks_summary.json", traces=5, ranks_ok=3, ranks_failed=2, world_size=4, folder_rank=None,
        missing_ranks=[], errors=ERRORS, categories=categories, findings=[], findings_total=0, partial_shapes_total=0,
        offset=0,
    ))  # fmt: skip


@pytest.mark.parametrize("render", [_analyze, _summary], ids=["analyze-ranks", "rank-summary"])
def test_failed_ranks_then_the_spread(render) -> None:
    lines = render([SPREAD]).splitlines()
    assert lines[1:3] == ["rank 3 failed: not a trace: bad JSON at byte 9", "rank — failed: unreadable"]
    assert lines[3].split() == ["category", "ranks", "min", "ms", "median", "ms", "max", "ms", "slowest", "stragglers"]
    assert lines[5].split() == ["sdpa_fwd", "4", "1.0", "2.0", "3.5", "2", "2"]  # the result's digits
    without = render([]).splitlines()
    assert without[1:3] == lines[1:3] and not any(line.startswith("category") for line in without)
