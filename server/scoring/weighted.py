"""The time-weighted efficiency of a set of op rows, and the time it leaves out: one definition for every place that
shows one (compute_roofline's totals, a rank's category and shapes in analyze_ranks).

Σ ideal time / Σ measured time is the efficiency of the rows taken together only where each row's ideal time is an
exact quantity. A row whose work is a bound (`work_bound` lower / upper / unknown: "at least" / "at most") has an
ideal time that is a bound too, and a row whose model is inconsistent (`model_check`: the modeled work would run
above the roofline) has one that is wrong; averaging either in moves the result by an amount nobody knows (a step's
token sums split over two calls read 110.76 % as the whole category's efficiency). So the average counts only the
rows with exact work and a consistent model, and the time of every other row is reported beside it by why it is out
— never dropped in silence. A row without a perf model, a roof or a kernel time is out as "unmodeled".

Declarations at import (the result model is part of tool schemas); numpy only when rows are weighed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from sdpa_analyzer.server.numbers import rounded
from sdpa_analyzer.server.results import ResultModel

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

LeftOutWhy = Literal["bound", "inconsistent", "unmodeled"]
# in the order a row is classed (a row with no model is unmodeled whatever else it is; an upper bound above the
# roofline is a bound, not inconsistent: its model_check is empty)
LEFT_OUT_WHY: tuple[LeftOutWhy, ...] = ("unmodeled", "inconsistent", "bound")


class EfficiencyLeftOut(ResultModel):
    """Rows the time-weighted efficiency leaves out, for one reason."""

    why: LeftOutWhy = Field(description="bound: work is a bound (at least / at most); inconsistent: model_check "
                            "is set; unmodeled: no perf model, roof or kernel time")
    rows: int
    time_ms: float
    share_pct: float = Field(description="% of the category's kernel time")


@dataclass(frozen=True)
class WeightedRows:
    """Per row: count × ideal time and count × measured time (µs; 0 where the row is left out), and why it is left
    out (None: counted)."""

    ideal_us: np.ndarray
    measured_us: np.ndarray
    left_out: np.ndarray


def weigh_rows(records: pd.DataFrame) -> WeightedRows:
    """Each row's part in the time-weighted efficiency (see the module doc)."""
    import numpy as np

    count = records["count"].to_numpy(dtype=float)
    ideal = records["ideal_us"].to_numpy(dtype=float) * count
    measured = records["mean_us"].to_numpy(dtype=float) * count
    scored = records["has_model"].to_numpy(dtype=bool) & np.isfinite(ideal) & np.isfinite(measured) & (measured > 0)
    inconsistent = records["model_check"].notna().to_numpy(dtype=bool)  # None where the model is consistent
    exact = (records["work_bound"] == "exact").to_numpy(dtype=bool)
    why = np.select([~scored, inconsistent, ~exact], list(LEFT_OUT_WHY), default="")
    left_out = np.where(why == "", None, why).astype(object)
    counted = left_out == None  # noqa: E711 (element-wise)
    return WeightedRows(np.where(counted, ideal, 0.0), np.where(counted, measured, 0.0), left_out)


def weighted_efficiency(ideal_us: float, measured_us: float) -> float | None:
    """Σ ideal / Σ measured in %, rounded once (a percentage's digits); None when nothing was counted."""
    return rounded(100.0 * ideal_us / measured_us, "pct") if measured_us > 0 else None


def left_out_total_ms(weighted: WeightedRows, time_ms: Any) -> float:
    """The time of every row the efficiency leaves out, whatever the reason (ms, rounded once)."""
    import numpy as np

    return rounded(float(np.nansum(np.asarray(time_ms, dtype=float)[weighted.left_out != None])), "ms") or 0.0  # noqa: E711


def left_out_time(weighted: WeightedRows, time_ms: Any) -> list[EfficiencyLeftOut]:
    """The time the efficiency leaves out, by why, with its share of the rows' whole kernel time."""
    import numpy as np

    times = np.asarray(time_ms, dtype=float)
    total = float(np.nansum(times))
    out = []
    for why in LEFT_OUT_WHY:
        hit = weighted.left_out == why
        if hit.any():
            ms = float(np.nansum(times[hit]))
            share = rounded(100.0 * ms / total, "pct") if total > 0 else None
            out.append(EfficiencyLeftOut(why=why, rows=int(hit.sum()), time_ms=rounded(ms, "ms") or 0.0,
                                         share_pct=share or 0.0))
    return out


__all__ = [
    "LEFT_OUT_WHY",
    "EfficiencyLeftOut",
    "WeightedRows",
    "left_out_time",
    "left_out_total_ms",
    "weigh_rows",
    "weighted_efficiency",
]
