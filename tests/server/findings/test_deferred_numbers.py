"""The category's numbers are added when first asked (grounding.DeferredNumbers): the set a question sees is the one
eager additions build — the same values, sources in the same order, the same rounded spellings — on the corpus's and
the shared folders' metrics, with questions before, between and after additions."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.findings.grounding import DeferredNumbers, Pool, numbers_in_text
from sdpa_analyzer.server.findings.spec import CONTRACT_NUMBERS
from tests.support import ANALYSIS_FOLDERS, FINDINGS_CORPUS

SOURCES = sorted((FINDINGS_CORPUS / "metrics").glob("*.json")) + (
    sorted(ANALYSIS_FOLDERS.glob("*/category_data/*_metrics.json"))[:4] if ANALYSIS_FOLDERS.exists() else []
)
TEXT = "the op took 12.5 ms (1,234.5 µs), 3.25% of E2E; fwd B2 H32/8 N4096 d128 at 45.678 TFLOPS"


def _fill(pool: Pool, metrics: dict[str, Any]) -> None:
    """What build_grounding gives the category pool: every top-level field but the lists, the contract's numbers, a
    line of the skeleton."""
    pool.keys.update(str(key) for key in metrics)
    for key, value in metrics.items():
        if key not in ("operations", "category_findings", "impact_estimates"):
            pool.take(value, key)
    for text, unit in CONTRACT_NUMBERS:
        pool.numbers.add(Decimal(text), unit, "the contract")
    pool.take_text(TEXT, "the template")


def _state(pool: Pool) -> tuple[str, str, list[str]]:
    return repr(pool.numbers.values), repr(sorted(pool.keys)), list(pool.strings)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_deferred_numbers_are_the_eager_ones(path: Path) -> None:
    metrics = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    eager, deferred = Pool(), Pool(numbers=DeferredNumbers())
    _fill(eager, metrics)
    _fill(deferred, metrics)
    assert deferred.keys == eager.keys and deferred.strings == eager.strings  # names are never deferred
    asked = [n for n in numbers_in_text(TEXT)] + [
        n for value in list(eager.numbers.values)[:40] for n in numbers_in_text(f"{float(value):.1f} ms")
    ]
    for number in asked:
        assert deferred.numbers.sources(number.value) == eager.numbers.sources(number.value)
        assert deferred.numbers.rounding_of(number) == eager.numbers.rounding_of(number)
    assert _state(deferred) == _state(eager)


def test_additions_after_a_question_are_seen_by_the_next() -> None:
    eager, deferred = Pool(), Pool(numbers=DeferredNumbers())
    for pool in (eager, deferred):
        pool.take({"time_ms": Decimal("1.25"), "shape": "N4096"}, "a")
    assert deferred.numbers.sources(Decimal("1.25")) == eager.numbers.sources(Decimal("1.25"))
    for pool in (eager, deferred):
        pool.take({"time_ms": Decimal("2.5")}, "b")
        pool.take_text("took 7.75 ms", "the template")
    (seven,) = numbers_in_text("7.8 ms")
    assert deferred.numbers.rounding_of(seven) == eager.numbers.rounding_of(seven) != []
    assert [s.path for s in deferred.numbers.sources(Decimal("2500"))] == ["b.time_ms × 1000"]
    assert _state(deferred) == _state(eager)


def test_p_item_numbers_wait_for_prose_that_types_one() -> None:
    """A P-item's pool (its finding and its members' operations) adds its numbers when prose first types one: building
    the grounding adds none; then a member's time is found in ms and, converted, in µs, and a near miss is not."""
    from sdpa_analyzer.server.findings.grounding import build_grounding
    from sdpa_analyzer.server.findings.metrics_view import view_metrics

    op = {"name": "aten::sdpa", "args": "(1,)", "time_ms": Decimal("1.25"), "efficiency": {"efficiency_percent": 40}}
    finding = {"rank": 1, "library": None, "members": [{"operation": "aten::sdpa", "args": "(1,)"}],
               "impact_low_ms": None, "impact_mid_ms": None, "impact_high_ms": None}  # fmt: skip
    metrics = {"category": "sdpa_fwd", "status": "ok", "operations": [op], "category_findings": [finding]}
    grounding = build_grounding(metrics, view_metrics(metrics), None)
    numbers = grounding.by_rank[1].numbers
    assert isinstance(numbers, DeferredNumbers) and numbers._values == {}  # nothing added yet
    assert "value_ranks" not in vars(grounding)
    (ms,), (us,), (near,) = (numbers_in_text(t) for t in ("1.25 ms", "1250 µs", "1.26 ms"))
    assert grounding.has_number(1, ms) and grounding.has_number(1, us) and not grounding.has_number(1, near)
    assert grounding.number_ranks(ms) == [1]
    assert "operations[0].time_ms" in [s.path for s in grounding.by_rank[1].numbers.sources(Decimal("1.25"))]
