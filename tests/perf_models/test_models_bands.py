"""Band families: interpolation between published anchors (log2 N, log2 d), held above, none below, borrowed parts,
and the table's own checks. Expected values are worked out by hand from the anchors in perf_models/data/bands.json."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdpa_analyzer.perf_models.bands import NO_BAND_NOTES, _family, all_families, band_edges, family_by_id, lookup_bands
from sdpa_analyzer.perf_models.errors import PerfModelError


def look(gpu: str, arch: str, kind: str, mask: str, d: float, n: float, *, metric: str = "compute",
         dtype: str = "bf16", heads: str = "mha", mb: float = 0.0):
    return lookup_bands(gpu, arch, [kind], [mask], [dtype], [heads == "gqa"], [metric == "memory"], [d], [n], [mb])


def test_interpolation_in_log_n_and_log_d() -> None:
    # H100 forward, no mask: d64 anchors 48 % (4k), d128 64 % (4k). d96 at 4k: t = log2(96/64) = 0.585,
    # best = 48 + 0.585 · 16 = 57.36 %
    b = look("h100-sxm", "sm_90", "fwd", "none", 96, 4096)
    t = math.log2(96 / 64)
    assert b.reference_pct[0] == pytest.approx(48 + t * 16)
    low, high = band_edges()
    assert (b.low[0], b.high[0]) == (pytest.approx(low * (48 + t * 16)), pytest.approx(high * (48 + t * 16)))
    # d128 between 2k (63 %) and 4k (64 %) at N = 3000: 63 + log2(3000/2048) · 1
    b = look("h100-sxm", "sm_90", "fwd", "none", 128, 3000)
    assert b.reference_pct[0] == pytest.approx(63 + math.log2(3000 / 2048))
    assert b.reference_kernel[0] == "FlashAttention-3" and b.band_id[0] == "hopper-fwd-none"


def test_held_above_the_last_anchor_and_none_below_the_first() -> None:
    hi = look("h100-sxm", "sm_90", "fwd", "none", 128, 131072)
    assert hi.reference_pct[0] == pytest.approx(65.6)  # the 16k anchor, held
    lo = look("h100-sxm", "sm_90", "fwd", "none", 128, 256)
    assert np.isnan(lo.low[0]) and "shorter than the shortest published" in lo.note[0]
    out = look("h100-sxm", "sm_90", "fwd", "none", 512, 4096)
    assert np.isnan(out.low[0]) and "head dim outside" in out.note[0]
    fp8 = look("h100-sxm", "sm_90", "fwd", "none", 128, 4096, dtype="fp8_e4m3")  # FP8 d128: only from N = 8448
    assert np.isnan(fp8.low[0])


def test_a_disagreeing_reading_widens_the_band() -> None:
    # A100 causal d128 at 16k: the bar reads 148 TFLOPS (47.4 %), the transcription's own fwd+bwd and bwd bars
    # imply ~197 (63.1 %): the band spans 0.75 · 47.4 to 1.15 · 63.1
    b = look("a100-sxm-80gb", "sm_80", "fwd", "causal", 128, 16384)
    assert (b.low[0], b.high[0]) == (pytest.approx(0.75 * 47.4), pytest.approx(1.15 * 63.1))


def test_parts_and_borrowed_bands() -> None:
    own = look("h100-sxm", "sm_90", "fwd", "none", 128, 4096)
    borrowed = look("h200", "sm_90", "fwd", "none", 128, 4096)
    assert own.borrowed_from[0] is None and borrowed.borrowed_from[0] == "NVIDIA H100 SXM5 80GB (700 W)"
    assert borrowed.reference_pct[0] == own.reference_pct[0]
    # the MI355X families are the MI355X's only: the MI350X (same gfx950) gets none
    assert family_by_id("mi355x-fwd-none-mha").parts == ("mi355x",)
    assert not np.isnan(look("mi355x", "gfx950", "fwd", "none", 128, 4096).low[0])
    assert look("mi350x", "gfx950", "fwd", "none", 128, 4096).note[0] == NO_BAND_NOTES[2]
    # GQA and MHA are separate on MI355X: AITER's GQA forward at 1k is 40.7 %, the MHA best 32.9 %
    assert look("mi355x", "gfx950", "fwd", "none", 128, 1024, heads="gqa").reference_pct[0] == pytest.approx(40.7)
    assert look("mi355x", "gfx950", "fwd", "none", 128, 1024).reference_pct[0] == pytest.approx(32.9)


def test_decode_families_by_metric_and_work_size() -> None:
    mem = look("h100-sxm", "sm_90", "decode", "any", 576, 4096, metric="memory", mb=608.4)
    assert mem.reference_pct[0] == pytest.approx(89.6) and mem.reference_kernel[0] == "FlashMLA"
    # between 42.2 MB (44.4 %) and 75.5 MB (50.7 %) at 56 MB: 44.4 + log2(56/42.2)/log2(75.5/42.2) · 6.3
    mid = look("h100-sxm", "sm_90", "decode", "any", 128, 4096, metric="memory", mb=56.0)
    frac = math.log2(56 / 42.2) / math.log2(75.5 / 42.2)
    assert mid.reference_pct[0] == pytest.approx(44.4 + frac * 6.3)
    comp = look("h100-sxm", "sm_90", "decode", "any", 576, 4096, metric="compute", mb=100.0)
    assert comp.band_id[0] == "hopper-decode-compute" and comp.reference_pct[0] == pytest.approx(66.7)


def test_every_anchor_has_a_source_and_families_are_checked() -> None:
    fams = all_families()
    assert len(fams) >= 20 and len({f.id for f in fams}) == len(fams)
    sources = {a.source for f in fams for c in f.curves for a in c.anchors}
    assert sources <= set(__import__("sdpa_analyzer.perf_models.bands", fromlist=["_table"])._table().sources)
    good = {"id": "x", "arch": "sm_90", "parts": None, "measured_on": ["h100-sxm"], "measured_on_name": "H100",
            "kind": "fwd", "mask": "none", "dtypes": ["bf16"], "heads": "any", "metric": "compute", "axis": "seq",
            "curves": [{"head_dim": 128, "points": [{"at": 512, "pct": 50, "kernel": "k", "source": "s",
                                                     "published": "p"}]}]}
    assert _family("t", good, {"s": "a citation long enough"}).curves[0].min_at == 512
    with pytest.raises(PerfModelError, match="not in the file's sources"):
        _family("t", good, {})
    bad_pct = {**good, "curves": [{"head_dim": 128, "points": [{**good["curves"][0]["points"][0], "pct": 120}]}]}
    with pytest.raises(PerfModelError, match="pct"):
        _family("t", bad_pct, {"s": "a citation long enough"})
    with pytest.raises(PerfModelError, match="kind/mask"):
        _family("t", {**good, "metric": "latency"}, {"s": "a citation long enough"})
