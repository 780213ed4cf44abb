"""The category's time-weighted efficiency averages only exact quantities: rows with exact work and a consistent
model. A bound ("at most") or an inconsistent row ("model inconsistent") is left out, and its time is reported
beside the average by why — compute_roofline and analyze_ranks through one definition (server.scoring.weighted).

The mix: the micro-batched decode step of test_model_inconsistent (upper bound, 110.76 % read alone) on MI300X, and
two rows of the aten flash call B 2, H 8, N 1024, d 64, bf16, causal added to its category:

* exact: 10 calls, 1000 µs. FLOPs 4 · 64 · (1024 · 1025 / 2) · 2 · 8 = 2,149,580,800 -> 1.64416 µs at 1307.4 TFLOP/s
  (the bytes, 4 · 2,097,152 + 65,536 LSE = 8,454,144 B, take 1.5951 µs at 5.3 TB/s: compute-bound), 1.644 % per call;
* inconsistent: the same shape, 1 call of 1 µs -> 164.4 % of the roofline, exact work: "model inconsistent".

Weighted over every modeled row (before): (16.4416 + 4 · 7.7530 + 1.64416) / (1000 + 28 + 1) = 4.77 %. Over the exact,
consistent rows: 16.4416 / 1000 = 1.64 %. Left out of 1.029 ms: 0.028 ms bound (2.72 %), 0.001 ms inconsistent
(0.10 %).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ranks.task import RankTask, _score, analyze_rank
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call
from tests.server.scoring.test_model_inconsistent import _micro_batched_step
from tests.support import FLASH_ROW, OPS_HEADER

CATEGORY = "inferenceattention"
FLASH_IDEAL_US = 4 * 64 * (1024 * 1025 // 2) * 2 * 8 / 1307.4e12 * 1e6  # 1.64416 µs


def _left_out(result: object) -> dict[str, tuple[int, float, float]]:
    return {x.why: (x.rows, x.time_ms, x.share_pct) for x in result.efficiency_left_out}  # type: ignore[attr-defined]


def _mixed_category(tmp: Path) -> Path:
    out = tmp / "out"
    analyze_trace(_micro_batched_step(tmp), out)
    ops = out / "category_data" / f"{CATEGORY}_ops.csv"
    with ops.open(newline="", encoding="utf-8") as f:
        fields = csv.DictReader(f).fieldnames
    flash = next(csv.DictReader(io.StringIO(f"{OPS_HEADER}\n{FLASH_ROW}\n")))
    fast = dict(flash, **{"operation_count": "1", "Kernel Time (µs)_sum": "1.0", "Kernel Time (µs)_mean": "1.0"})
    fast["kernel_details_summary"] = (flash["kernel_details_summary"].replace("'count': 10", "'count': 1")
                                      .replace("np.float64(1000.0)", "np.float64(1.0)"))
    with ops.open("a", newline="", encoding="utf-8") as f:
        csv.DictWriter(f, fieldnames=fields, restval="").writerows([flash, fast])
    return out


def test_the_category_efficiency_counts_only_exact_consistent_rows(tmp_path: Path) -> None:
    out = _mixed_category(tmp_path)
    roots = DataRoots([tmp_path])
    res = call("compute_roofline", roots, output_dir=str(out), category=CATEGORY)
    by = {(r.count, r.work_bound, r.model_check is not None): r for r in res.rows}
    assert set(by) == {(10, "exact", False), (4, "upper", False), (1, "exact", True)}
    assert by[(10, "exact", False)].ideal_us == pytest.approx(FLASH_IDEAL_US, abs=1e-3)
    assert by[(1, "exact", True)].efficiency_pct == pytest.approx(100 * FLASH_IDEAL_US / 1.0, abs=0.01)
    # 16.4416 / 1000 µs, not (16.4416 + 31.012 + 1.644) / 1029 = 4.77 %
    assert res.weighted_efficiency_pct == pytest.approx(100 * 10 * FLASH_IDEAL_US / 1000.0, abs=0.005)
    assert res.weighted_efficiency_pct == 1.64
    assert _left_out(res) == {"bound": (1, 0.028, 2.72), "inconsistent": (1, 0.001, 0.1)}
    # analyze_ranks scores a rank's category with the same definition
    cat, shapes, _ = _score(out, CATEGORY, None, 10.0, roots)
    assert cat.weighted_efficiency_pct == 1.64 and _left_out(cat) == _left_out(res)
    assert cat.efficiency_left_out_ms == 0.029  # the summary tables' column: 0.028 + 0.001
    # the flash shape holds both flash rows: its efficiency is the exact row's alone
    flash = next(s for s in shapes if s.operation.startswith("aten::"))
    assert flash.calls == 11 and flash.efficiency_pct == 1.64
    assert next(s for s in shapes if s.operation.startswith("vllm::")).efficiency_pct is None


def test_a_category_of_bounds_has_no_average_and_says_why(tmp_path: Path) -> None:
    # the micro-batched step alone: before, the category read 110.76 % (the row's "at most"), an impossible average
    trace = _micro_batched_step(tmp_path)
    analyze_trace(trace, tmp_path / "out")
    roots = DataRoots([tmp_path])
    res = call("compute_roofline", roots, output_dir=str(tmp_path / "out"), category=CATEGORY)
    assert res.weighted_efficiency_pct is None
    assert _left_out(res) == {"bound": (1, 0.028, 100.0)}
    outcome = analyze_rank(RankTask(index=0, rank=0, trace_path=str(trace), folder=str(tmp_path / "rank_0"),
                                    roots=(str(tmp_path),), token="t"))
    (cat,) = outcome.categories
    assert outcome.status == "OK" and cat.weighted_efficiency_pct is None and _left_out(cat) == _left_out(res)
    assert cat.efficiency_left_out_ms == 0.028
    assert outcome.shapes[0].efficiency_pct is None


def test_each_row_is_counted_or_left_out_with_its_reason() -> None:
    # one row per case, by hand: count × ideal and count × mean (µs), and the class each must land in
    import numpy as np
    import pandas as pd

    from sdpa_analyzer.server.scoring.weighted import left_out_time, left_out_total_ms, weigh_rows, weighted_efficiency

    nan = float("nan")
    check = "model inconsistent: …"
    rows = pd.DataFrame([
        # has_model, count, ideal_us, mean_us, work_bound, model_check, time_ms
        (True, 2, 30.0, 100.0, "exact", None, 0.2),  # counted: 60 / 200
        (True, 1, 40.0, 50.0, "exact", None, 0.05),  # counted: 40 / 50
        (True, 3, 90.0, 60.0, "upper", None, 0.18),  # "at most" 150 %: a bound, not inconsistent
        (True, 1, 5.0, 20.0, "lower", None, 0.02),  # "at least": a bound
        (True, 1, 30.0, 20.0, "exact", check, 0.02),  # 150 % of exact work: inconsistent
        (True, 1, 30.0, 20.0, "lower", check, 0.02),  # inconsistent before bound
        (False, 4, nan, 25.0, None, None, 0.1),  # no model
        (True, 1, nan, 10.0, "exact", None, 0.01),  # no roof for its dtype: no ideal time
        (True, 1, 10.0, nan, "exact", None, 0.0),  # no kernel time
    ], columns=["has_model", "count", "ideal_us", "mean_us", "work_bound", "model_check", "time_ms"])
    w = weigh_rows(rows)
    assert w.left_out.tolist() == [None, None, "bound", "bound", "inconsistent", "inconsistent", "unmodeled",
                                   "unmodeled", "unmodeled"]
    assert weighted_efficiency(float(w.ideal_us.sum()), float(w.measured_us.sum())) == 40.0  # 100 / 250
    # of 0.6 ms: bound 0.2 (33.33 %), inconsistent 0.04 (6.67 %), unmodeled 0.11 (18.33 %)
    got = {x.why: (x.rows, x.time_ms, x.share_pct) for x in left_out_time(w, rows["time_ms"])}
    assert got == {"bound": (2, 0.2, 33.33), "inconsistent": (2, 0.04, 6.67), "unmodeled": (3, 0.11, 18.33)}
    assert left_out_total_ms(w, rows["time_ms"]) == 0.35
    assert np.isfinite(w.ideal_us).all() and np.isfinite(w.measured_us).all()
