"""Exact pairs of a serving step from its annotation sums, bounds flagged as bounds, split compute specs.

Every expected number is worked out by hand in the comments from the sums, never from the code's output.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdpa_analyzer.perf_models.assess import assess
from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Mask, MaskKind, PagedInfo, VarlenInfo
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.perf_models.ops.vllm import parse_step_annotation
from sdpa_analyzer.perf_models.registry import parse_op
from sdpa_analyzer.perf_models.table import ConfigTable

CAUSAL = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)


def paged(hq: int = 4, hkv: int = 1, d: int = 64, **kw: object) -> AttentionConfig:
    info = PagedInfo(**kw)  # type: ignore[arg-type]
    n = info.num_requests
    return AttentionConfig(batch=n, heads_q=hq, heads_kv=hkv, seq_q=1, seq_kv=max(1, info.sum_context_tokens // n),
                           head_dim_qk=d, head_dim_v=d, mask=CAUSAL, paged=info)


def test_exact_pairs_of_three_requests() -> None:
    # requests (q, k): (4, 10), (1, 7), (3, 3). Per request, bottom-right causal: q·k − q(q−1)/2:
    # 40 − 6 = 34, 7 − 0 = 7, 9 − 3 = 6: 47 pairs per query head.
    # Sums: Σq = 8, Σk = 20, Σq² = 16 + 1 + 9 = 26, Σq·k = 40 + 7 + 9 = 56 → 56 − (26 − 8)/2 = 47.
    cfg = paged(num_requests=3, sum_context_tokens=20, sum_query_tokens=8, sum_query_sq=26, sum_query_key=56)
    w = estimate_work(ConfigTable.from_configs([cfg]))
    assert w.kept_pairs[0] == w.kept_pairs_upper[0] == 47
    assert w.work_bound[0] == "exact"
    # FLOPs: 2 · Hq · P · (d_qk + d_v) = 2 · 4 · 47 · 128 = 48128
    assert w.flops_useful[0] == 48128.0


def test_without_the_sums_the_pairs_are_a_flagged_lower_bound() -> None:
    # the same step known only by Σq = 8, Σk = 20, 3 requests: lower = Σk + (Σq − R) = 20 + 5 = 25
    cfg = paged(num_requests=3, sum_context_tokens=20, sum_query_tokens=8)
    w = estimate_work(ConfigTable.from_configs([cfg]))
    assert w.kept_pairs[0] == 25 and w.work_bound[0] == "lower"
    # a pure decode step (one query token per request) is exact without the sums: Σk = 20 pairs
    dec = paged(num_requests=3, sum_context_tokens=20, sum_query_tokens=3)
    assert estimate_work(ConfigTable.from_configs([dec])).work_bound[0] == "exact"


def test_vllm_piecewise_step_flops_from_its_annotation() -> None:
    # the real gpt-oss step on MI300X: execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)
    #   _generation_37(sq37sk34489sqsq37sqsk34489), query (8192, 64, 64), key (8192, 8, 64).
    # Context pairs: 7671310 − (7475785 − 8155)/2 = 7671310 − 3733815 = 3937495; the 37 decodes add their k:
    # 34489 → 3971984 pairs per query head. FLOPs: 2 · 64 · 3971984 · 128 = 65,076,985,856 (the lower bound
    # the code gave before, Σk + Σq − R = 42919 + 8192 − 46 = 51065 pairs, is 77.8× too low).
    step = parse_step_annotation(
        "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)"
    )
    assert step is not None and step["step_tokens"] == 8192
    dims = [[8192, 64, 64], [8192, 8, 64], [8192, 8, 64], [8192, 64, 64], [], [], [], [0]]
    types = ["c10::BFloat16"] * 4 + ["", "", "", "c10::BFloat16"]
    p = parse_op("vllm::unified_attention_with_output", dims, types, [""] * 8, step)
    assert p.config is not None, p.reason
    assert p.config.paged.sum_query_sq == 7475785 + 37 and p.config.paged.sum_query_key == 7671310 + 34489
    w = estimate_work(ConfigTable.from_configs([p.config]))
    assert w.kept_pairs[0] == 3971984 and w.work_bound[0] == "exact"
    assert w.flops_useful[0] == 65_076_985_856.0


def test_b200_prefill_flops_from_the_older_annotation() -> None:
    # execute_context_1(888_788544)_generation_0(0): one 888-token prefill. No Σk in this format: assumed k = q
    # (said in a warning) → pairs 888 · 889 / 2 = 394716; FLOPs 2 · 8 · 394716 · 128 = 808,378,368 per layer
    step = parse_step_annotation("execute_context_1(888_788544)_generation_0(0)")
    dims = [[888, 8, 64], [888, 1, 64], [888, 1, 64], [888, 8, 64], [], [], []]
    types = ["c10::Float8_e4m3fn", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", ""]
    p = parse_op("vllm::unified_attention_with_output", dims, types, [""] * 7, step)
    assert any("no cached prefix" in w for w in p.warnings)
    w = estimate_work(ConfigTable.from_configs([p.config]))
    assert w.kept_pairs[0] == 394716 and w.flops_useful[0] == 808_378_368.0


def test_sglang_decode_bytes_follow_the_cache() -> None:
    # execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785): 32 decode requests,
    # 32785 cached tokens, Hkv 8, d 128, bf16 cache: K + V = 32785 · 8 · (128 + 128) · 2 = 134,287,360 B;
    # Q + O = 2 · 32 · 32 · 128 · 2 = 524,288 B; no LSE → 134,811,648 B. Pairs: Σk = 32785.
    cfg = AttentionConfig(batch=32, heads_q=32, heads_kv=8, seq_q=1, seq_kv=1025, head_dim_qk=128, head_dim_v=128,
                          mask=CAUSAL, paged=PagedInfo(num_requests=32, sum_context_tokens=32785, sum_query_tokens=32,
                                                       sum_query_sq=32, sum_query_key=32785))
    w = estimate_work(ConfigTable.from_configs([cfg]))
    assert w.bytes_compulsory[0] == 134_811_648.0 and w.kept_pairs[0] == 32785


def test_paged_sums_are_validated() -> None:
    with pytest.raises(ConfigError, match="sum_query_key"):
        PagedInfo(num_requests=1, sum_context_tokens=10, sum_query_tokens=4, sum_query_sq=16, sum_query_key=12)
    with pytest.raises(ConfigError, match="together"):
        PagedInfo(num_requests=1, sum_context_tokens=10, sum_query_tokens=4, sum_query_sq=16)


def test_unknown_window_is_an_upper_bound_without_a_band() -> None:
    # a sliding-window layer whose window is unknown is modeled causal: at most this many pairs; the same row with
    # an exact mask gets a band on H100 (FA3 forward d128 causal), the bound does not
    base = dict(batch=4, heads_q=32, heads_kv=32, seq_q=4096, seq_kv=4096, head_dim_qk=128, head_dim_v=128,
                mask=CAUSAL)
    table = ConfigTable.from_configs([AttentionConfig(**base), AttentionConfig(**base, window_unknown=True)])
    w = estimate_work(table)
    assert list(w.work_bound) == ["exact", "upper"]
    assert w.kept_pairs[0] == w.kept_pairs[1] == 4 * 4096 * 4097 // 2
    a = assess(table, w, get_gpu("h100-sxm"), np.array([900.0, 900.0]))
    assert np.isfinite(a.band_low[0]) and a.band_status[0] != "none"
    assert not np.isfinite(a.band_low[1]) and a.band_status[1] == "none" and a.work_bound[1] == "upper"


def test_varlen_lower_bound_has_no_band() -> None:
    # 4 sequences, 10000 query tokens, the longest 4096: the pairs are a lower bound → no band verdict
    v = VarlenInfo(total_q=10000, total_kv=10000, num_seqs=4, max_seqlen_q=4096, max_seqlen_kv=4096)
    cfg = AttentionConfig(batch=4, heads_q=32, heads_kv=32, seq_q=4096, seq_kv=4096, head_dim_qk=128,
                          head_dim_v=128, mask=CAUSAL, varlen=v)
    table = ConfigTable.from_configs([cfg])
    w = estimate_work(table)
    assert w.work_bound[0] == "lower"
    assert assess(table, w, get_gpu("h100-sxm"), np.array([500.0])).band_status[0] == "none"


def test_sage_compute_roof_combines_int8_and_fp8() -> None:
    # SageAttention on MI300X: Q·Kᵀ on int8, P·V on fp8; d_qk = d_v: half the FLOPs on each, run one after the other.
    # Every roof is the datasheet (one roof kind per ratio): on MI300X int8 and fp8 are both 2614.9. The combination
    # shows where the two datasheet rates differ: RTX 4090 int8 660.6 and fp8 330.3 (Ada whitepaper), at the card's
    # sustained clock 2.73 GHz over the rated 2.52: 1 / (0.5/660.6 + 0.5/330.3) × 2.73 / 2.52 = 477.1 TFLOPS
    cfg = AttentionConfig(batch=1, heads_q=24, heads_kv=24, seq_q=4096, seq_kv=4096, head_dim_qk=128,
                          head_dim_v=128, dtype_q="int8", dtype_k="int8", dtype_v="fp8_e4m3", dtype_o="bf16",
                          compute_spec="matrix_int8", compute_spec_pv="matrix_fp8")
    table = ConfigTable.from_configs([cfg])
    a = assess(table, estimate_work(table), get_gpu("mi300x"), np.array([1000.0]))
    assert a.peak_tflops[0] == pytest.approx(2614.9) and a.peak_tflops_kind[0] == "datasheet"
    b = assess(table, estimate_work(table), get_gpu("rtx-4090"), np.array([1000.0]))
    assert b.peak_tflops[0] == pytest.approx(1.0 / (0.5 / 660.6 + 0.5 / 330.3) * 2.73 / 2.52)
    assert b.compute_spec[0] == "matrix_int8+matrix_fp8" and b.peak_tflops_kind[0] == "sustained"
    # datasheet: 1 / (0.5/660.6 + 0.5/330.3) = 440.4 at the rated clock
    assert b.peak_tflops_datasheet[0] == pytest.approx(440.4, abs=0.05)
