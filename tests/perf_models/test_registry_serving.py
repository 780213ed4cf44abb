"""The serving ops of serving-traces.md in the registry: aiter paged prefill, SGLang's profiler wrappers, SGLang paged
decode, SageAttention, aiter's OPUS forward, and graph replays without a capture. Expected numbers by hand."""

from __future__ import annotations

from sdpa_analyzer.perf_models.config import MaskKind
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.ops.types import GRAPH_REPLAY_REASON
from sdpa_analyzer.perf_models.ops.vllm import parse_step_annotation
from sdpa_analyzer.perf_models.registry import is_attention_op, is_wrapper_op, lookup, parse_op
from sdpa_analyzer.perf_models.table import ConfigTable

BF16 = "c10::BFloat16"


def _prefill_row(is_causal: str = "True") -> tuple[list, list, list]:
    # aiter::mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, max_seqlen_q, max_seqlen_k,
    #   dropout_p, softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left, window_size_right,
    #   return_softmax_lse, return_dropout_randval, out, alibi_slopes, gen): 15 requests of 1024 tokens,
    # q (15360, 32, 128), paged cache (page_num, page_size 16, Hkv 8, d 128)
    dims = [[15360, 32, 128], [40000, 16, 8, 128], [40000, 16, 8, 128], [16], [16], [960], [], [], [], [], [], [],
            [], [], [], [], [], [15360, 32, 128], [], []]
    types = [BF16, BF16, BF16, "int", "int", "int", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar",
             "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", BF16, "", ""]
    conc = ["", "", "", "", "", "", "1024", "1024", "0.", "0.088388347648318447", "0.", "False", is_causal, "-1",
            "-1", "False", "False", "", "", ""]
    return dims, types, conc


def test_aiter_batch_prefill_exact_from_the_sglang_annotation() -> None:
    # execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640): 15 requests of q = k = 1024.
    # pairs = Σq·k − (Σq² − Σq)/2 = 15728640 − (15728640 − 15360)/2 = 7872000 = 15 · 1024 · 1025 / 2.
    # FLOPs = 2 · 32 · 7872000 · (128 + 128) = 128,974,848,000.
    step = parse_step_annotation("execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640)")
    assert step == {"num_ctx_requests": 15, "num_gen_requests": 0, "step_tokens": 15360, "c_sq": 15360,
                    "c_sk": 15360, "c_sqsq": 15728640, "c_sqsk": 15728640, "g_sq": 0, "g_sk": 0,
                    "sum_ctx_tokens": 15360, "sum_gen_tokens": 0}
    p = parse_op("aiter::mha_batch_prefill", *_prefill_row(), step)
    assert p.config is not None, p.reason
    assert (p.config.heads_q, p.config.heads_kv, p.config.head_dim_qk) == (32, 8, 128)
    assert p.config.mask.kind is MaskKind.CAUSAL and p.family == "aiter"
    w = estimate_work(ConfigTable.from_configs([p.config]))
    assert w.kept_pairs[0] == 7_872_000 and w.work_bound[0] == "exact"
    assert w.flops_useful[0] == 128_974_848_000.0


def test_aiter_batch_prefill_without_annotation_is_a_flagged_bound() -> None:
    # no step annotation: 15 requests (cu_seqlens_q has 16 entries), 15360 query tokens, max_seqlen_k 1024 →
    # Σk ≥ max(15360, 1024 + 15360 − 1024) = 15360: the pairs are a lower bound, and the row says so
    p = parse_op("aiter::mha_batch_prefill", *_prefill_row())
    assert p.config is not None, p.reason
    assert p.config.paged.sum_context_tokens == 15360 and p.config.paged.sum_query_key is None
    assert any("lower bound" in w for w in p.warnings)
    assert estimate_work(ConfigTable.from_configs([p.config])).work_bound[0] == "lower"


def test_sglang_prefill_wrapper_is_a_wrapper_and_alone_has_no_causal_flag() -> None:
    name = "sglang_profiler::mha__mha_batch_prefill_12"
    assert is_attention_op(name) and is_wrapper_op(name) and not is_wrapper_op("aiter::mha_batch_prefill")
    # the wrapper records tensors only: q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, alibi_slopes, out
    dims = [[15360, 32, 128], [40000, 16, 8, 128], [40000, 16, 8, 128], [16], [16], [960], [], [15360, 32, 128]]
    types = [BF16, BF16, BF16, "int", "int", "int", "", BF16]
    p = parse_op(name, dims, types, [""] * 8)
    assert p.config is None and "tensor arguments only" in p.reason


def test_sglang_paged_decode_from_the_real_capture_row() -> None:
    # the real capture trace's row (bs 32): out, workspace, query, key_cache (835874, 1, 8, 128), value_cache,
    # kv_indptr (33), kv_page_indices, kv_last_page_lens, alibi_slopes, k_scale, v_scale, fp8_out_scale
    dims = [[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128], [33],
            [20971520], [4096], [], [1], [1], []]
    types = [BF16, "unsigned char", BF16, BF16, BF16, "int", "int", "int", "", "float", "float", ""]
    name = "sglang_profiler::attention_paged_attention_ragged_100"
    assert lookup(name) is lookup("sglang_profiler::attention_paged_attention_ragged")
    bare = parse_op(name, dims, types, [""] * 12)
    assert bare.config is None and "step annotation" in bare.reason
    step = parse_step_annotation(
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)"
    )
    p = parse_op(name, dims, types, [""] * 12, step)
    assert p.config is not None, p.reason
    # Hq 32 from the query, Hkv 8 from the NHD cache (blocks, page 1, Hkv, d): GQA 4, as the kernel's template says
    assert (p.config.heads_q, p.config.heads_kv, p.config.head_dim_qk, p.config.head_dim_v) == (32, 8, 128, 128)
    assert p.config.paged.num_requests == 32 and p.config.paged.sum_context_tokens == 32785


def test_sage_fwd_runs_int8_and_fp8() -> None:
    # sage_fwd(Q, K, V, bias, Q_Descale, K_Descale, V_Descale, 8 strides, LSE, Out): int8 Q/K, fp8 V, [B, H, N, d]
    q = [1, 24, 4608, 128]
    dims = [q, q, q, [], [1, 24, 36], [1, 24, 72], [1, 24, 128], *([[]] * 8), [], q]
    types = ["signed char", "signed char", "c10::Float8_e4m3fnuz", "", "float", "float", "float",
             *(["Scalar"] * 8), "", BF16]
    conc = [""] * 7 + ["0"] * 8 + ["", ""]
    p = parse_op("sage_fwd_8", dims, types, conc)
    assert p.config is not None, p.reason
    c = p.config
    assert (c.batch, c.heads_q, c.seq_q, c.head_dim_qk) == (1, 24, 4608, 128)
    assert (c.compute_spec, c.compute_spec_pv, c.dtype_q, c.dtype_v, c.dtype_o) == (
        "matrix_int8", "matrix_fp8", "int8", "fp8_e4m3", "bf16")
    assert c.mask.kind is MaskKind.NONE and any("Triton constexpr" in w for w in p.warnings)
    t = ConfigTable.from_configs([c])
    assert (t.compute_spec[0], t.compute_spec_pv[0]) == ("matrix_int8", "matrix_fp8")
    # bytes: Q, K (int8) and V (fp8) 1 B each, O bf16, fp32 LSE: 4608 · 24 · 128 · (1 + 1 + 1 + 2) + 4 · 24 · 4608
    w = estimate_work(t)
    assert w.bytes_compulsory[0] == 4608 * 24 * 128 * 5 + 4 * 24 * 4608


def test_aiter_opus_forward_slots() -> None:
    # _fmha_fwd_bf16_opus_fwd(q, k, v, out, causal, softmax_scale, lse, seqstart_q, seqstart_k, seqstart_q_pad,
    #   seqstart_k_pad, max_seqlen_q, max_seqlen_k): causal is slot 4 (not 5 as in fmha_v3_fwd)
    q = [2, 1024, 16, 128]
    dims = [q, q, q, q, [], [], [], [], [], [], [], [], []]
    types = [BF16] * 4 + ["Scalar", "Scalar", "", "", "", "", "", "Scalar", "Scalar"]
    conc = ["", "", "", "", "True", "0.088388347648318447", "", "", "", "", "", "0", "0"]
    p = parse_op("aiter::fmha_fwd_bf16_opus_fwd", dims, types, conc)
    assert p.config is not None, p.reason
    assert p.config.mask.kind is MaskKind.CAUSAL and (p.config.batch, p.config.seq_q) == (2, 1024)


def test_graph_replay_rows_have_one_reason() -> None:
    p = parse_op("cuda_graph::paged_attention_ll4mi_QKV_mfma16_kernel", None, None, None,
                 {"num_gen_requests": 32, "g_sq": 32, "g_sk": 32785})
    assert p.config is None and p.reason == GRAPH_REPLAY_REASON and "capture_dir" in p.reason
