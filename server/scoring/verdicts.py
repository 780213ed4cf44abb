"""Verdicts in words, the same for every place that shows one (tool results, the findings template, the report).

The words are chosen to say no more than the numbers: a result below its band is "below the best published
kernels for this shape" (not a bottleneck by itself); one inside it is "within the band of the best published
kernels"; a shape with no published data has "no reference band"; above 100 % of the roofline is an anomaly.
"""

from __future__ import annotations

import math

from perf_models.bands import BELOW_WORDS, NO_BAND_WORDS

REGIME_WORDS = {
    "compute": "compute-bound",
    "memory": "memory-bound",
    "balanced": "balanced (near the ridge: neither roof alone limits it)",
}
BOUND_WORDS = {"lower": "at least", "upper": "at most", "unknown": "about"}
BOUND_WHY = {
    "lower": "the FLOPs are a lower bound (only the step's token sums are known)",
    "upper": "the FLOPs and bytes are upper bounds (a sliding window of unknown size, modeled causal)",
    "unknown": "the FLOPs are neither exact nor a one-sided bound",
}
WITHIN_WORDS = "within the expected band (the band of the best published kernels for this shape)"
ABOVE_WORDS = "above the band of the best published kernels"


def _num(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def band_words(status: str | None, low: float | None, high: float | None, metric: str | None) -> str:
    """`within the expected band (… 35–50 % of tensor peak)`, `below …`, `no reference band …`."""
    if status in (None, "none") or not (_num(low) and _num(high)):
        return NO_BAND_WORDS
    unit = "HBM bandwidth" if metric == "memory" else "tensor peak"
    span = f"{low:g}–{high:g} % of {unit} (datasheet)"
    if status == "within":
        return f"{WITHIN_WORDS}: {span}"
    if status == "below":
        return f"{BELOW_WORDS}: band {span}"
    return f"{ABOVE_WORDS}: band {span}"


def verdict(
    regime: str | None,
    compute_pct: float | None,
    memory_pct: float | None,
    band_status: str | None,
    band_low: float | None,
    band_high: float | None,
    band_metric: str | None,
    is_anomaly: bool,
    work_bound: str | None = None,
) -> str:
    """One sentence: both utilizations, the regime, the band (or the anomaly). A row whose work is a bound says so
    ("at least" / "at most") and gets no band verdict (perf_models.assess)."""
    if not (_num(compute_pct) and _num(memory_pct)):
        return "not measured or no roof: no verdict"
    head = f"{compute_pct:.1f} % of tensor peak, {memory_pct:.1f} % of HBM bandwidth"
    if work_bound in BOUND_WORDS:
        return f"{BOUND_WORDS[work_bound]} {head}: {BOUND_WHY[work_bound]}; a bound, so no band verdict"
    if is_anomaly:
        return f"{head}: above the roofline, an anomaly (check shapes, peaks, or a time that misses kernels)"
    regime_words = REGIME_WORDS.get(regime or "", "bound unknown")
    return f"{head}; {regime_words}; {band_words(band_status, band_low, band_high, band_metric)}"
