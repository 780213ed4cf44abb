"""The kernel advisor's what-ifs (perf_models.advice) against hand computations: fp8 at the same % of roofline, the
same hidden size at head dim 128 at its band's upper edge, the time at today's band edge."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.config import AttentionConfig, Mask
from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.perf_models.model_attention import model_attention

H100 = get_gpu("h100-sxm")


def _flops(b: int, h: int, n: int, d: int, causal: bool = False) -> float:
    pairs = n * (n + 1) // 2 if causal else n * n
    return 4.0 * b * h * pairs * d


def test_fp8_at_the_same_share_of_the_roofline() -> None:
    # B1 H32 N4096 d128 non-causal bf16: compute-bound both in bf16 and fp8, so the roofline time halves with the roof
    cfg = AttentionConfig(1, 32, 32, 4096, 4096, 128, 128, dtype_q="bf16")
    flops = _flops(1, 32, 4096, 128)
    ideal_bf16 = flops / 989.4e12 * 1e6
    est = model_attention(cfg, H100, measured_us=2 * ideal_bf16)  # at 50 % of its roofline
    ideal_fp8 = flops / 1978.9e12 * 1e6
    assert est.fp8_time_us == pytest.approx(2 * ideal_fp8, rel=1e-6)


def test_fp8_does_not_apply_to_a_memory_bound_decode_or_without_fp8_tensor_cores() -> None:
    decode = AttentionConfig(64, 32, 8, 1, 4096, 128, 128, dtype_q="bf16")
    assert model_attention(decode, H100, measured_us=500.0).fp8_time_us is None
    a100 = get_gpu("a100-sxm-80gb")  # sm_80: no fp8 tensor cores
    cfg = AttentionConfig(1, 32, 32, 4096, 4096, 128, 128, dtype_q="bf16")
    assert model_attention(cfg, a100, measured_us=5000.0).fp8_time_us is None


def test_head_dim_128_at_the_best_published_kernel_for_it() -> None:
    # B8 H32 N2048 d64 causal -> B8 H16 N2048 d128 causal: the same FLOPs (heads x d kept)
    cfg = AttentionConfig(8, 32, 32, 2048, 2048, 64, 64, dtype_q="bf16", mask=Mask("causal"))
    alt_cfg = AttentionConfig(8, 16, 16, 2048, 2048, 128, 128, dtype_q="bf16", mask=Mask("causal"))
    flops = _flops(8, 32, 2048, 64, causal=True)
    assert flops == _flops(8, 16, 2048, 128, causal=True)
    measured = 1200.0
    est = model_attention(cfg, H100, measured_us=measured)
    now, alt = est.band, model_attention(alt_cfg, H100).band
    assert now is not None and alt is not None and alt.reference_pct > now.reference_pct  # d128 kernels do better
    achieved_pct = 100.0 * flops / (measured * 1e-6) / 989.4e12  # tensor % of the datasheet (the band's metric)
    assert est.band_reference_time_us == pytest.approx(measured * achieved_pct / now.reference_pct, rel=1e-3)
    assert est.head_dim_alt == 128
    assert est.head_dim_alt_time_us == pytest.approx(flops / (989.4e12 * alt.reference_pct / 100.0) * 1e6, rel=1e-6)


def test_head_dim_what_if_needs_a_hidden_size_that_divides() -> None:
    cfg = AttentionConfig(8, 3, 3, 2048, 2048, 64, 64, dtype_q="bf16")  # 3 x 64 = 192: not a multiple of 128
    est = model_attention(cfg, H100, measured_us=300.0)
    assert est.head_dim_alt == 0 and est.head_dim_alt_time_us is None


def test_regime_under_each_bytes_model() -> None:
    # MI300X backward, B1 H32 N1024 d128 causal: balanced on compulsory bytes (101 MB), memory-bound on the
    # tiled two-pass estimate (hundreds of MB): intensity 21.5 GFLOP / 101 MB = 213 (within ±30 % of the ridge
    # 1307.4 / 5.3 = 246.7) vs / 400+ MB < 54
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, dtype_q="bf16", direction="bwd", mask=Mask("causal"))
    est = model_attention(cfg, get_gpu("mi300x"), measured_us=200.0)
    assert est.regime_compulsory == "balanced"
    assert est.regime_tiled == "memory"
