"""A row's regime is a function of the intensity it shows and the ridge of the same roofs, under every bytes model
and for every attention type — unfused rows included, whose own traffic (the score matrices) decides their regime.

Before, an unfused row showed the fused kernel's intensity (254 FLOP/B on MI300X, above the 247 ridge) next to a
memory-bound regime and bound, and its per-bytes-model regimes were the fused kernel's (balanced with compulsory
bytes), so its verdict said "the bytes model decides the regime here" where both models give memory-bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from sdpa_analyzer.server.scoring.verdicts import row_verdict
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace_with_truth, write_trace
from tests.support import TRACES, need

MI300X_RIDGE = 1307.4 / 5.3  # datasheet dense bf16 TFLOP/s over datasheet TB/s (the roofs of every ratio) = 246.68


def _regime(intensity: float, ridge: float) -> str:
    """compute | memory | balanced (within ±30 % of the ridge), written out here rather than imported."""
    if intensity > 1.3 * ridge:
        return "compute"
    if intensity < ridge / 1.3:
        return "memory"
    return "balanced"


def _records(folder: Path, category: str, bytes_model: str = "compulsory"):  # type: ignore[no-untyped-def]
    scored = score_category(DataRoots([folder.parent, TRACES]), folder, category, None, bytes_model)
    assert scored.table is not None
    return scored.table.records


def _check_every_row(records) -> int:  # type: ignore[no-untyped-def]
    """Every modeled row: regime = f(intensity, ridge), bound agrees with it, each bytes model's regime with that
    model's intensity. Returns how many rows were checked."""
    rows = records[records["has_model"] & records["regime"].notna()]
    for _, r in rows.iterrows():
        assert r["regime"] == _regime(r["intensity"], r["ridge"]), r["name"]
        if r["regime"] != "balanced":
            assert r["bound"] == r["regime"], r["name"]
        for model in ("compulsory", "tiled"):
            assert r[f"regime_{model}"] == _regime(r[f"intensity_{model}"], r["ridge"]), (r["name"], model)
    return len(rows)


def test_a_real_unfused_row_shows_the_intensity_its_regime_comes_from(tmp_path: Path) -> None:
    trace = need(TRACES / "mi300x-microbench/test02_attention_both_unfused_trace1.json.gz")
    analyze_trace(trace, tmp_path / "out")
    recs = _records(tmp_path / "out", "sdpa_fwd")
    (r,) = [r for _, r in recs.iterrows() if r["attention_type"] == "unfused"]
    # B1 H8 N512 d64 bf16, no mask: FLOPs 4 · 8 · 512² · 64 = 536,870,912. Fused compulsory bytes: Q, K, V, O
    # 4 · 8 · 512 · 64 · 2 = 2,097,152 + LSE 8 · 512 · 4 = 16,384 -> 2,113,536 (254.02 FLOP/B); tiled (CK tiles)
    # 5,259,264. The chain writes and reads S and P: 4 · 8 · 512² · 2 = 16,777,216 more.
    own_compulsory = 536_870_912 / (2_113_536 + 16_777_216)  # 28.42
    own_tiled = 536_870_912 / (5_259_264 + 16_777_216)  # 24.36
    assert r["ridge"] == pytest.approx(MI300X_RIDGE)
    assert r["intensity"] == pytest.approx(own_compulsory) and r["intensity_fused"] == pytest.approx(254.02, abs=0.01)
    assert r["intensity_compulsory"] == pytest.approx(own_compulsory)
    assert r["intensity_tiled"] == pytest.approx(own_tiled)
    # 28.42 / 246.68 = 0.115 and 24.36 / 246.68 = 0.099: memory-bound under both bytes models (the fused 254.02
    # would be balanced: 1.03 × the ridge)
    assert r["regime"] == r["bound"] == r["regime_compulsory"] == r["regime_tiled"] == "memory"
    assert "the bytes model decides" not in row_verdict(r, "compulsory")
    # its own HBM time, (2,113,536 + 16,777,216) B / 5.3 TB/s = 3.564 µs, binds (tensor: 0.411 µs)
    assert r["hbm_time_us"] == pytest.approx(18_890_752 / 5.3e6) and r["binding_roof"] == "hbm"
    # the efficiency stays scored against the fused kernel's roofline: 0.4106 µs ideal over 275 µs measured
    assert r["efficiency_pct"] == pytest.approx(100 * 536_870_912 / 1307.4e6 / 275.0, rel=1e-3)


@pytest.mark.parametrize("shape", [(2, 16, 1024, 128, "fp16", "NVIDIA H100 80GB HBM3"),
                                   (1, 12, 197, 64, "fp32", "NVIDIA A100-SXM4-80GB"),
                                   (4, 32, 256, 128, "bf16", "AMD Instinct MI300X")],
                         ids=["h100-fp16-n1024", "a100-fp32-n197", "mi300x-bf16-n256"])
def test_synthetic_unfused_rows_agree_with_their_intensity(tmp_path: Path, shape: tuple) -> None:
    # held out: shapes, dtypes and parts the fix was not written on
    b, h, n, d, dtype, gpu = shape
    call = SyntheticAttentionCall(flavour="unfused", batch=b, heads_q=h, heads_kv=h, seq_q=n, seq_kv=n,
                                  head_dim_qk=d, dtype=dtype, kernel_us=50.0, repeat=2)
    truth = build_trace_with_truth([call], gpu_name=gpu)
    analyze_trace(write_trace(truth.trace, tmp_path / "t.json.gz"), tmp_path / "out")
    for model in ("compulsory", "tiled"):
        recs = _records(tmp_path / "out", "sdpa_fwd", model)
        unfused = recs[recs["attention_type"] == "unfused"]
        assert len(unfused) == 1 and _check_every_row(unfused) == 1
        r = unfused.iloc[0]
        # own intensity = FLOPs / (the bytes model's bytes + 4 passes over the B·H·N² score elements)
        score = 4 * b * h * n * n * {"fp16": 2, "bf16": 2, "fp32": 4}[dtype]
        assert r["intensity"] == pytest.approx(r["flops_useful"] / (r[f"bytes_{model}"] + score))
        assert r["intensity_fused"] == pytest.approx(r["flops_useful"] / r[f"bytes_{model}"])


@pytest.mark.parametrize("rel", ["mi300x-microbench/test02_attention_both_unfused_trace2.json.gz",
                                 "mi300x-microbench/sdpa_03_short_seq_overhead.json.gz",
                                 "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                                 "inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"])
def test_every_row_of_real_traces_agrees_with_its_intensity(tmp_path: Path, rel: str) -> None:
    trace = need(TRACES / rel)
    capture = trace.parent / "capture_traces"
    analyze_trace(trace, tmp_path / "out", capture_dir=capture if capture.is_dir() else None)
    checked = 0
    for cat_file in sorted((tmp_path / "out" / "category_data").glob("*_ops.csv")):
        for model in ("compulsory", "tiled"):
            checked += _check_every_row(_records(tmp_path / "out", cat_file.name[: -len("_ops.csv")], model))
    assert checked > 0
