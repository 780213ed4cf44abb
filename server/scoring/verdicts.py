"""Verdicts in words, the same for every place that shows one (tool results, the findings template, the report).

The words are chosen to say no more than the numbers: a result below its band is "below the best published
kernels for this shape" (not a bottleneck by itself); one inside it is "within the band of the best published
kernels"; a shape with no published data has "no reference band" (and why); above 100 % of the roofline is an
anomaly. A band derived from the ceiling model (a part or shape without a published point) says so and what it rests
on; the sentence names the binding roof among tensor, exponential unit and HBM. An unfused row says which
numbers its regime comes from (its own traffic, the score matrices included) and which its efficiency is scored
against (the fused kernel's roofline), so the sentence never contradicts the intensity shown beside it.
"""

from __future__ import annotations

import math
from typing import Any

from sdpa_analyzer.perf_models.bands import BELOW_WORDS, NO_BAND_WORDS
from sdpa_analyzer.perf_models.terms import BYTES_MODELS
from sdpa_analyzer.server.numbers import finite

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
# the binding roof among three (perf_models.exp_roof): the one on which the call's ideal time is longest
BINDING_WORDS = {
    "tensor": "binding roof: tensor cores (of tensor, exponential unit and HBM)",
    "exp": "binding roof: the exponential unit (softmax exps take longer than the GEMMs at the datasheet rates)",
    "hbm": "binding roof: HBM (of tensor, exponential unit and HBM)",
}
WITHIN_WORDS = "within the expected band (the band of the best published kernels for this shape)"
ABOVE_WORDS = "above the band of the best published kernels"


def _num(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def band_words(status: str | None, low: float | None, high: float | None, metric: str | None, *,
               note: str | None = None, reference_kernel: str | None = None, reference_pct: float | None = None,
               borrowed_from: str | None = None, basis: str | None = None, rests_on: str | None = None) -> str:
    """`within the expected band (… 35–50 % of tensor peak); best published here: FlashAttention-3 at 47.0 %`,
    `below …`, `no reference band: <why>`; a band derived from the ceiling model says so and what it rests on."""
    if status in (None, "none") or not (_num(low) and _num(high)):
        return note or NO_BAND_WORDS
    unit = "HBM bandwidth" if metric == "memory" else "tensor peak"
    span = f"{low:.3g}–{high:.3g} % of {unit} (datasheet)"
    if basis == "derived" and _num(reference_pct):
        span += f"; ceiling {reference_pct:.1f} % {rests_on or 'derived from the ceiling model'}"
    elif reference_kernel and _num(reference_pct):
        span += f"; best published here: {reference_kernel} at {reference_pct:.1f} %"
    if borrowed_from:
        span += f"; band borrowed from {borrowed_from} measurements"
    if status == "within":
        return f"{WITHIN_WORDS}: {span}"
    if status == "below":
        return f"{BELOW_WORDS}: band {span}"
    return f"{ABOVE_WORDS}: band {span}"


def regime_words(regime: str | None, *, unfused_intensity: float | None = None, unfused_bytes: float | None = None,
                 fused_intensity: float | None = None, ridge: float | None = None) -> str:
    """The regime; for an unfused row, with the intensity and bytes it was judged from and what it is scored
    against (the fused kernel's roofline)."""
    words = REGIME_WORDS.get(regime or "", "bound unknown")
    if not (_num(unfused_intensity) and _num(unfused_bytes)):
        return words
    size = f"{unfused_bytes / 1e9:,.2f} GB" if unfused_bytes >= 1e9 else f"{unfused_bytes / 1e6:,.1f} MB"
    own = f"{unfused_intensity:,.1f} FLOP/B counting the score matrices ({size})"
    if _num(ridge):
        own += f" against a ridge of {ridge:,.0f}"
    fused = f" (the fused kernel's {fused_intensity:,.0f} FLOP/B)" if _num(fused_intensity) else ""
    return f"{words} on its own unfused traffic: {own}; efficiency scored against the fused kernel's roofline{fused}"


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
    *,
    band_note: str | None = None,
    band_reference_kernel: str | None = None,
    band_reference_pct: float | None = None,
    band_borrowed_from: str | None = None,
    band_basis: str | None = None,
    band_rests_on: str | None = None,
    binding_roof: str | None = None,
    unfused_intensity: float | None = None,
    unfused_bytes: float | None = None,
    fused_intensity: float | None = None,
    ridge: float | None = None,
    bytes_model: str | None = None,
    regime_compulsory: str | None = None,
    regime_tiled: str | None = None,
) -> str:
    """One sentence: both utilizations, the regime, the band (or the anomaly). A row whose work is a bound says so
    ("at least" / "at most") and gets no band verdict (perf_models.assess). When the regime depends on the bytes
    model (compulsory vs tiled: on MI300-class parts the tiled estimate is the better guess of HBM traffic), the
    sentence says which one it used and what the other gives."""
    if not (_num(compute_pct) and _num(memory_pct)):
        return "not measured or no roof: no verdict"
    head = f"{compute_pct:.1f} % of tensor peak, {memory_pct:.1f} % of HBM bandwidth"
    if work_bound in BOUND_WORDS:
        return f"{BOUND_WORDS[work_bound]} {head}: {BOUND_WHY[work_bound]}; a bound, so no band verdict"
    if is_anomaly:
        return f"{head}: above the roofline, an anomaly (check shapes, peaks, or a time that misses kernels)"
    regime_text = regime_words(regime, unfused_intensity=unfused_intensity, unfused_bytes=unfused_bytes,
                               fused_intensity=fused_intensity, ridge=ridge)
    if regime_compulsory and regime_tiled and regime_compulsory != regime_tiled and bytes_model in BYTES_MODELS:
        other = "tiled" if bytes_model == "compulsory" else "compulsory"
        other_regime = regime_tiled if other == "tiled" else regime_compulsory
        regime_text += (f" with {bytes_model} bytes ({REGIME_WORDS.get(other_regime, other_regime)} with {other} "
                        "bytes: the bytes model decides the regime here)")
    band_text = band_words(band_status, band_low, band_high, band_metric, note=band_note,
                           reference_kernel=band_reference_kernel, reference_pct=band_reference_pct,
                           borrowed_from=band_borrowed_from, basis=band_basis, rests_on=band_rests_on)
    if binding_roof in BINDING_WORDS:
        regime_text += f"; {BINDING_WORDS[binding_roof]}"
    return f"{head}; {regime_text}; {band_text}"


def _text(x: object) -> str | None:
    """A text cell of the records, None where it is missing (pandas reads a missing text as NaN)."""
    return x if isinstance(x, str) else None


def row_verdict(r: Any, bytes_model: str | None = None) -> str:
    """The verdict in words of one records row (anything indexed by the records' column names), scored with
    `bytes_model` (named in the verdict when the regime differs between the bytes models)."""
    unfused = r["attention_type"] == "unfused"
    return verdict(
        _text(r["regime"]), finite(r["compute_pct"], 2), finite(r["memory_pct"], 2), str(r["band_status"]),
        finite(r["band_low"]), finite(r["band_high"]), _text(r["band_metric"]), bool(r["is_anomaly"]),
        _text(r["work_bound"]), band_note=_text(r["band_note"]),
        band_reference_kernel=_text(r["band_reference_kernel"]), band_reference_pct=finite(r["band_reference_pct"], 1),
        band_borrowed_from=_text(r["band_borrowed_from"]), band_basis=_text(r["band_basis"]),
        band_rests_on=_text(r["band_rests_on"]), binding_roof=_text(r["binding_roof"]),
        unfused_intensity=finite(r["regime_intensity"], 1) if unfused else None,
        unfused_bytes=finite(r["regime_bytes"], 0) if unfused else None,
        fused_intensity=finite(r["intensity"], 1) if unfused else None,
        ridge=finite(r["ridge"], 1) if unfused else None, bytes_model=bytes_model,
        regime_compulsory=_text(r["regime_compulsory"]), regime_tiled=_text(r["regime_tiled"]),
    )  # fmt: skip
