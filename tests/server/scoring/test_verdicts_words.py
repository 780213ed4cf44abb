"""Verdict sentences say what their numbers are: the reference kernel, a borrowed band, why there is no band, and for
unfused rows the intensity and bytes the regime was judged from next to the fused kernel's."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.verdicts import verdict
from sdpa_analyzer.server.tools import call
from tests.support import TRACES, need


def test_band_sentence_names_the_reference_and_a_borrowed_band() -> None:
    v = verdict("compute", 60.0, 10.0, "within", 49.2, 75.4, "compute", False,
                band_reference_kernel="FlashAttention-3", band_reference_pct=65.6,
                band_borrowed_from="NVIDIA H100 SXM5 80GB (700 W)")
    assert v.startswith("60.0 % of tensor peak, 10.0 % of HBM bandwidth; compute-bound; within the expected band")
    assert "49.2–75.4 % of tensor peak (datasheet)" in v and "best published here: FlashAttention-3 at 65.6 %" in v
    assert "band borrowed from NVIDIA H100 SXM5 80GB (700 W) measurements" in v
    none = verdict("memory", 1.0, 10.0, "none", None, None, None, False,
                   band_note="no reference band: the call moves less data than the smallest published decode")
    assert none.endswith("no reference band: the call moves less data than the smallest published decode")


def test_unfused_sentence_shows_its_own_intensity_and_the_fused_one() -> None:
    # B1 H8 N512 d64 bf16: 536,870,912 FLOP; fused bytes Q, K, V, O + LSE = 2,113,536 (254.0 FLOP/B); the unfused
    # chain adds S and P written and read: 4 · 8 · 512² · 2 = 16,777,216 -> 18,890,752 B, 28.4 FLOP/B
    v = verdict("memory", 0.1, 0.1, "none", None, None, None, False, unfused_intensity=536_870_912 / 18_890_752,
                unfused_bytes=18_890_752, fused_intensity=536_870_912 / 2_113_536, ridge=295.3)
    assert "memory-bound on its own unfused traffic: 28.4 FLOP/B counting the score matrices (18.9 MB)" in v
    assert "against a ridge of 295" in v and "the fused kernel's 254 FLOP/B" in v


def test_unfused_trace_row_verdict_agrees_with_its_numbers(tmp_path: Path) -> None:
    trace = need(TRACES / "mi300x-microbench/test03_attention_fused_vs_unfused_trace2.json.gz")
    roots = DataRoots([tmp_path, trace.parents[1]])
    call("analyze_trace", roots, trace_path=str(trace), output_dir=str(tmp_path / "out"))
    res = call("compute_roofline", roots, output_dir=str(tmp_path / "out"), category="sdpa_fwd")
    (row,) = [r for r in res.rows if r.attention_type == "unfused"]
    # the row shows the fused intensity (the roofline it is scored against); the verdict says so and gives the
    # unfused intensity its memory-bound regime comes from
    assert row.regime == "memory" and row.intensity == pytest.approx(254.02, abs=0.01)
    assert "on its own unfused traffic: 28.4 FLOP/B counting the score matrices" in row.verdict
    assert f"the fused kernel's {row.intensity:,.0f} FLOP/B" in row.verdict


def test_the_verdict_says_which_bytes_model_decides_the_regime() -> None:
    # MI300X backward, B1 H32 N1024 d128 causal (the seed PR's case): balanced on compulsory bytes (intensity 213
    # within ±30 % of the datasheet ridge 1307.4 / 5.3 = 246.7), memory-bound on the tiled estimate, which is the
    # better guess of HBM traffic on MI300-class parts
    from sdpa_analyzer.server.roots import DataRoots
    from sdpa_analyzer.server.tools import call

    kw = {"batch": 1, "heads_q": 32, "seq_q": 1024, "head_dim": 128, "mask": "causal", "direction": "bwd",
          "arch": "mi300x", "measured_us": 200.0}  # fmt: skip
    comp = call("model_attention", DataRoots(["/"]), **kw)
    tiled = call("model_attention", DataRoots(["/"]), **kw, bytes_model="tiled")
    assert "balanced (near the ridge: neither roof alone limits it) with compulsory bytes (memory-bound with " \
        "tiled bytes" in comp.verdict
    assert "memory-bound with tiled bytes (balanced (near the ridge" in tiled.verdict
    same = call("model_attention", DataRoots(["/"]), **{**kw, "arch": "h100-sxm", "direction": "fwd", "seq_q": 8192})
    assert "the bytes model decides" not in same.verdict


def test_a_derived_band_says_what_it_rests_on_and_the_binding_roof_is_named() -> None:
    rests = "derived from the fa3 ceiling model, fitted on 55 published points measured on h100-sxm"
    v = verdict("compute", 60.0, 10.0, "within", 63.5, 97.4, "compute", False,
                band_reference_kernel="fa3 ceiling model", band_reference_pct=84.7, band_basis="derived",
                band_rests_on=rests, binding_roof="tensor")
    assert f"63.5–97.4 % of tensor peak (datasheet); ceiling 84.7 % {rests}" in v
    assert "best published here" not in v and "binding roof: tensor cores" in v
    exp = verdict("compute", 20.0, 1.0, "below", 20.0, 30.0, "compute", False, binding_roof="exp")
    assert "binding roof: the exponential unit" in exp
