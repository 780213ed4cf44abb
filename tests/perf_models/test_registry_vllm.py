"""vLLM unified attention: THD shapes from the op, step token counts from perf_params / annotation."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Mask, MaskKind, PagedInfo
from sdpa_analyzer.perf_models.ops.types import RowError
from sdpa_analyzer.perf_models.ops.vllm import parse_vllm_annotation
from sdpa_analyzer.perf_models.registry import AttentionType, Source, parse_op

CAUSAL_BR = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)
# the b200 trace's row: query fp8 (888, 8, 64), key/value bf16 (888, 1, 64), output bf16 (888, 8, 64)
DIMS = [[888, 8, 64], [888, 1, 64], [888, 1, 64], [888, 8, 64], [], [], []]
TYPES = ["c10::Float8_e4m3fn", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", ""]
CONCRETE = ["", "", "", "", "", "", ""]
NAME = "vllm::unified_attention_with_output"


def test_upstream_style_perf_params_only():
    # perf_params as the upstream InferenceAttention model writes them (B=1, N_Q = tokens, c_*/g_* sums,
    # dtype_Q / dtype_KV, causal hard-coded False). One 888-token prefill: exact, causal bottom-right.
    pp = {
        "B": 1,
        "N_Q": 888,
        "H_Q": 8,
        "N_KV": 888,
        "H_KV": 1,
        "d_h_qk": 64,
        "d_h_v": 64,
        "dropout": 0.0,
        "causal": False,
        "flash_impl": True,
        "c_sq": 888,
        "c_sk": 888,
        "c_sqsq": 788544,
        "c_sqsk": 788544,
        "g_sq": 0,
        "g_sk": 0,
        "g_sqsq": 0,
        "g_sqsk": 0,
        "dtype_Q": "c10::Float8_e4m3fn",
        "dtype_KV": "c10::BFloat16",
    }
    p = parse_op(NAME, None, None, None, pp)
    assert p.source is Source.PERF_PARAMS and p.attention_type is AttentionType.PAGED
    assert p.config == AttentionConfig(
        batch=1,
        heads_q=8,
        heads_kv=1,
        seq_q=888,
        seq_kv=888,
        head_dim_qk=64,
        head_dim_v=64,
        dtype_q="fp8_e4m3",
        dtype_k="bf16",
        dtype_v="bf16",
        dtype_kv_cache="bf16",
        mask=CAUSAL_BR,
        # the sums make the pairs exact: Σq² = Σq·k = 888² (k = q: no cached prefix)
        paged=PagedInfo(num_requests=1, sum_context_tokens=888, sum_query_tokens=888, sum_query_sq=788544,
                        sum_query_key=788544),
    )
    assert any("hard-codes" in w for w in p.warnings)


def test_mixed_prefill_and_decode_step():
    # 1 prefill chunk of 100 tokens (100^2 = 10000 -> one request) + 4 decode requests with 4000 context
    # tokens in total: 5 requests, 104 query tokens, 4100 KV tokens; per-request means 21 and 820.
    pp = {"c_sq": 100, "c_sk": 100, "c_sqsq": 10000, "g_sq": 4, "g_sk": 4000}
    p = parse_op(NAME, DIMS, TYPES, CONCRETE, pp)
    # c_sk = c_sq: the prefill request has k = q, so Σq·k = Σq² = 10000; each decode request adds q² = 1 and
    # q·k = its k: Σq² = 10004, Σq·k = 10000 + 4000 = 14000
    assert p.config.paged == PagedInfo(num_requests=5, sum_context_tokens=4100, sum_query_tokens=104,
                                       sum_query_sq=10004, sum_query_key=14000)
    assert (p.config.batch, p.config.seq_q, p.config.seq_kv) == (5, 21, 820)
    assert any("per-request means" in w for w in p.warnings)
    assert any("differ from the query tensor" in w for w in p.warnings)  # 104 tokens vs the 888-row tensor


def test_prefill_request_count_estimated_from_sum_of_squares():
    # two chunks of 444: c_sq = 888, c_sqsq = 2 * 444^2 = 394272 -> 888^2 / 394272 = 2 requests
    p = parse_op(NAME, DIMS, TYPES, CONCRETE, {"c_sq": 888, "c_sqsq": 394272, "g_sq": 0})
    assert p.config.paged.num_requests == 2 and p.config.seq_q == 444
    assert any("estimated as 2" in w for w in p.warnings)


def test_sum_tokens_without_counts_has_reason():
    p = parse_op(NAME, DIMS, TYPES, CONCRETE, {"sum_ctx_tokens": 888, "sum_gen_tokens": 0})
    assert p.config is None and "number of prefill requests is unknown" in p.reason


def test_decode_without_context_lengths_has_reason():
    p = parse_op(NAME, DIMS, TYPES, CONCRETE, {"c_sq": 0, "g_sq": 8})
    assert p.config is None and "g_sk" in p.reason


def test_annotation_parser():
    assert parse_vllm_annotation("execute_context_2(512_131072)_generation_3(0)") == {
        "num_ctx_requests": 2,
        "c_sq": 512,
        "c_sk": 512,
        "c_sqsq": 131072,
        "c_sqsk": 131072,
        "num_gen_requests": 3,
        "g_sq": 3,
    }
    with pytest.raises(RowError, match="not a vLLM step annotation"):
        parse_vllm_annotation("ProfilerStep#3")


def test_two_dimensional_query_has_reason():
    p = parse_op(
        "vllm::unified_attention",
        [[888, 512], [888, 64], [888, 64], []],
        ["c10::BFloat16"] * 3 + [""],
        ["", "", "", ""],
        {"c_sq": 888, "c_sqsq": 788544},
    )
    assert p.config is None and "head count is not in the arguments" in p.reason
