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
) -> str:
    """One sentence: both utilizations, the regime, the band (or the anomaly)."""
    if not (_num(compute_pct) and _num(memory_pct)):
        return "not measured or no roof: no verdict"
    head = f"{compute_pct:.1f} % of tensor peak, {memory_pct:.1f} % of HBM bandwidth"
    if is_anomaly:
        return f"{head}: above the roofline, an anomaly (check shapes, peaks, or a time that misses kernels)"
    regime_words = REGIME_WORDS.get(regime or "", "bound unknown")
    return f"{head}; {regime_words}; {band_words(band_status, band_low, band_high, band_metric)}"
