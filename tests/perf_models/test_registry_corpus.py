"""A corpus of real signature variants per library, across releases: for each, a row as torch.profiler records a call
of that signature (one Input Dims / Input type / Concrete Inputs entry per positional argument, tensors as shapes with
'' values, scalars as strings, None as ''), and the config it must parse to, worked out by hand from the shapes.

Each variant's signature and where it was read (repository, path, version or commit) are quoted above its case;
the specs in perf_models/ops/specs/ quote the same. Then drift: rows of releases we have not seen (arguments
appended, moved or inserted) must be modeled from the slots that still hold their roles, with a warning naming them.
tests/perf_models/conftest.py checks every row here against the batch parser as well.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Direction, Mask, MaskKind, VarlenInfo
from sdpa_analyzer.perf_models.registry import Layout, parse_op

BF16, FP16, FP8 = "c10::BFloat16", "c10::Half", "c10::Float8_e4m3fn"
NONE = Mask()
CAUSAL_BR = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)
CAUSAL_TL = Mask(MaskKind.CAUSAL, Alignment.TOP_LEFT)
SCALE_128 = "0.088388347648318447"  # 1/sqrt(128)
SCALE_64 = "0.125"


def T(*shape: int, dtype: str = BF16) -> tuple[list[int], str, str]:
    return list(shape), dtype, ""


def S(value: str, dtype: str = "Scalar") -> tuple[list[int], str, str]:
    return [], dtype, value


NA = ([], "", "")  # an optional argument passed as None
I32 = "int"  # cu_seqlens / page indices as the profiler names int32


def parse(name: str, *slots: tuple[list[int], str, str], perf_params: Any = None):
    return parse_op(name, [s[0] for s in slots], [s[1] for s in slots], [s[2] for s in slots], perf_params)


def cfg(**kw: Any) -> AttentionConfig:
    kw.setdefault("dtype_q", "bf16")
    return AttentionConfig(**kw)


def dense(b: int, hq: int, hkv: int, nq: int, nkv: int, d: int, **kw: Any) -> AttentionConfig:
    return cfg(batch=b, heads_q=hq, heads_kv=hkv, seq_q=nq, seq_kv=nkv, head_dim_qk=d, head_dim_v=d, **kw)


# --- Dao-AILab flash-attention -------------------------------------------------------------------------------------


def test_flash_attn_2_7_custom_op():
    # flash_attn::_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
    #   softcap, alibi_slopes, return_softmax)
    #   (flash_attn/flash_attn_interface.py, flash-attn >= 2.7: mutates_args=())
    # Llama-3-8B prefill: B2, N 1024, Hq 32 / Hkv 8, d 128, causal.
    q, kv = T(2, 1024, 32, 128), T(2, 1024, 8, 128)
    p = parse("flash_attn::_flash_attn_forward", q, kv, kv, S("0.0"), S(SCALE_128), S("True"), S("-1"), S("-1"),
              S("0.0"), NA, S("False"))  # fmt: skip
    assert p.config == dense(2, 32, 8, 1024, 1024, 128, mask=CAUSAL_BR) and not p.warnings


def test_flash_attn_2_6_namespace_and_varlen_without_zero_tensors():
    # flashattn::_flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
    #   dropout_p, softmax_scale, causal, window_size_left=-1, window_size_right=-1, softcap=0.0, alibi_slopes=None,
    #   return_softmax=False, block_table=None, leftpad_k=None, seqused_k=None)
    #   (flash_attn/flash_attn_interface.py @0053002, flash-attn 2.6.x: 18 arguments, no zero_tensors)
    # 3 sequences, 6144 tokens, the longest 4096; Hq = Hkv = 16, d 64, causal.
    q = T(6144, 16, 64)
    p = parse("flashattn::_flash_attn_varlen_forward", q, q, q, T(4, dtype=I32), T(4, dtype=I32), S("4096"),
              S("4096"), S("0.0"), S(SCALE_64), S("True"), S("-1"), S("-1"), S("0.0"), NA, S("False"), NA, NA,
              NA)  # fmt: skip
    assert p.config == cfg(batch=3, heads_q=16, heads_kv=16, seq_q=4096, seq_kv=4096, head_dim_qk=64, head_dim_v=64,
                           mask=CAUSAL_BR, varlen=VarlenInfo(6144, 6144, 3, 4096, 4096))  # fmt: skip


def test_flash_attn_func_2_0_to_2_2():
    # FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, return_softmax)
    #   (flash_attn/flash_attn_interface.py, flash-attn v2.0-v2.2: no window_size; slot 6 is a bool)
    q = T(4, 512, 12, 64, dtype=FP16)
    p = parse("FlashAttnFunc", q, q, q, S("0.1"), S(SCALE_64), S("False"), S("False"))
    assert p.config == dense(4, 12, 12, 512, 512, 64, dtype_q="fp16", dropout_p=0.1)
    assert not p.warnings


def test_flash_attn_func_2_3_window_list():
    # FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size, alibi_slopes, deterministic,
    #   return_softmax)   (flash_attn/flash_attn_interface.py, flash-attn v2.3-v2.5: window as a (left, right) list)
    # Mistral-style sliding window 4096 over 8192 keys, non-causal flag with right edge 0: a sliding window.
    q = T(1, 8192, 32, 128)
    p = parse("FlashAttnFunc", q, T(1, 8192, 8, 128), T(1, 8192, 8, 128), S("0.0"), S(SCALE_128), S("False"),
              S("[4096, 0]"), NA, S("False"), S("False"))  # fmt: skip
    assert p.config == dense(1, 32, 8, 8192, 8192, 128, mask=Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT,
                                                                   4096, 0))  # fmt: skip


def test_flash_attn_func_1_x_is_varlen():
    # flash-attn 1.x FlashAttnFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
    #   dropout_p, softmax_scale, causal, return_softmax)   (flash_attn/flash_attn_interface.py @88c4e5db)
    # 8 sequences packed into 2048 tokens, the longest 512; H 16, d 64, causal (bottom-right, as flash-attn does).
    q = T(2048, 16, 64, dtype=FP16)
    p = parse("FlashAttnFunc", q, q, q, T(9, dtype=I32), T(9, dtype=I32), S("512"), S("512"), S("0.0"), S(SCALE_64),
              S("True"), S("False"))  # fmt: skip
    assert p.config == cfg(batch=8, heads_q=16, heads_kv=16, seq_q=512, seq_kv=512, head_dim_qk=64, head_dim_v=64,
                           dtype_q="fp16", mask=CAUSAL_BR, varlen=VarlenInfo(2048, 2048, 8, 512, 512))  # fmt: skip
    assert p.layout is Layout.THD


def test_fa3_func_late_2024_window_before_sink():
    # FlashAttention-3 (late 2024) FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, q_descale, k_descale,
    #   v_descale, window_size=(-1, -1), sink_token_length=0, softcap=0.0, num_splits=1, pack_gqa=None,
    #   deterministic=False)   (hopper/flash_attn_interface.py before qv was added: the window is slot 8)
    q = T(2, 4096, 16, 128)
    p = parse("FlashAttnFunc", q, q, q, S(SCALE_128), S("False"), NA, NA, NA, S("[1024, 0]"), S("0"), S("0.0"),
              S("1"), NA, S("False"))  # fmt: skip
    assert p.config == dense(2, 16, 16, 4096, 4096, 128, mask=Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT,
                                                                   1024, 0))  # fmt: skip
    assert p.family == "flash_attn_3"


def test_fa3_func_2025_with_qv():
    # FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, qv=None, q_descale=None, k_descale=None,
    #   v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, num_splits=1, pack_gqa=None,
    #   deterministic=False, sm_margin=0, return_attn_probs=False)   (hopper/flash_attn_interface.py @c082294e)
    q = T(8, 2048, 64, 128)
    p = parse("FlashAttnFunc", q, T(8, 2048, 8, 128), T(8, 2048, 8, 128), S(SCALE_128), S("True"), NA, NA, NA, NA,
              S("[-1, -1]"), S("0"), S("0.0"), S("1"), NA, S("False"), S("0"), S("False"))  # fmt: skip
    assert p.config == dense(8, 64, 8, 2048, 2048, 128, mask=CAUSAL_BR) and p.family == "flash_attn_3"


def test_fa4_cute_func_window_in_slot_5():
    # FlashAttention-4 FlashAttnFunc.apply(q, k, v, softmax_scale, causal, window_size=(None, None), learnable_sink,
    #   softcap, num_splits, pack_gqa, deterministic, mask_mod, full_block_cnt, full_block_idx, mask_block_cnt,
    #   mask_block_idx, block_size, return_lse)   (flash_attn/cute/interface.py @004b1a2e)
    # Slot 5 is the window (FA3's qv tensor slot): a recorded list there is FA4, not FA3. (None, 128) keeps 128 keys
    # to the right: window left -1 (no limit), right 128; non-causal -> a sliding window (-1, 128).
    q = T(1, 8192, 16, 128)
    rest = [NA, S("0.0"), S("1"), NA, S("False"), NA, NA, NA, NA, NA, NA, S("False")]
    p = parse("FlashAttnFunc", q, q, q, S(SCALE_128), S("True"), S("[None, None]"), *rest)
    assert p.config == dense(1, 16, 16, 8192, 8192, 128, mask=CAUSAL_BR) and p.family == "flash_attn_4"
    sliding = parse("FlashAttnFunc", q, q, q, S(SCALE_128), S("False"), S("[2048, 0]"), *rest)
    assert sliding.config.mask == Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, 2048, 0)


def test_fa4_cute_varlen_func():
    # FA4 FlashAttnVarlenFunc.apply(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
    #   max_seqlen_k, page_table, softmax_scale, causal, window_size, learnable_sink, softcap, num_splits, pack_gqa,
    #   deterministic, score_mod, mask_mod, block_sparse_tensors, cu_total_m_blocks, cu_total_n_blocks, aux_tensors,
    #   return_lse)   (flash_attn/cute/interface.py @004b1a2e)
    # 4 sequences, 12288 tokens, the longest 4096; Hq 32 / Hkv 4, d 128, causal.
    q, kv = T(12288, 32, 128), T(12288, 4, 128)
    p = parse("FlashAttnVarlenFunc", q, kv, kv, T(5, dtype=I32), T(5, dtype=I32), NA, NA, S("4096"), S("4096"), NA,
              S(SCALE_128), S("True"), S("[None, None]"), NA, S("0.0"), S("1"), NA, S("False"), NA, NA, NA, NA, NA,
              NA, S("False"))  # fmt: skip
    assert p.config == cfg(batch=4, heads_q=32, heads_kv=4, seq_q=4096, seq_kv=4096, head_dim_qk=128,
                           head_dim_v=128, mask=CAUSAL_BR, varlen=VarlenInfo(12288, 12288, 4, 4096, 4096))  # fmt: skip
    assert p.family == "flash_attn_4"


def test_flash_attn_varlen_func_2_0_to_2_2():
    # FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
    #   softmax_scale, causal, return_softmax)   (flash_attn/flash_attn_interface.py, v2.0-v2.2)
    q = T(3000, 8, 64)
    p = parse("FlashAttnVarlenFunc", q, q, q, T(5, dtype=I32), T(5, dtype=I32), S("1500"), S("1500"), S("0.0"),
              S(SCALE_64), S("False"), S("False"))  # fmt: skip
    assert p.config == cfg(batch=4, heads_q=8, heads_kv=8, seq_q=1500, seq_kv=1500, head_dim_qk=64, head_dim_v=64,
                           varlen=VarlenInfo(3000, 3000, 4, 1500, 1500))  # fmt: skip


# --- ROCm aiter -------------------------------------------------------------------------------------------------


def _aiter_fwd_tail(n: int) -> list:
    return [NA] * n


@pytest.mark.parametrize(
    ("label", "extra"),
    [
        # mha_fwd(q, k, v, dropout_p, softmax_scale, is_causal, window_size_left, window_size_right,
        #   return_softmax_lse, return_dropout_randval, out=None, alibi_slopes=None, gen=None)  (aiter 2024, 13 args;
        #   aiter/ops/mha.py)
        ("2024", [S("False"), S("False"), NA, NA, NA]),
        # 2025: ..., return_dropout_randval, out=None, bias=None, alibi_slopes=None, gen=None  (14 args)
        ("2025", [S("False"), S("False"), NA, NA, NA, NA]),
        # 2026: ..., window_size_right, sink_size, return_softmax_lse, return_dropout_randval, cu_seqlens_q=None,
        #   cu_seqlens_kv=None, out=None, bias=None, alibi_slopes=None, q_descale=None, k_descale=None,
        #   v_descale=None, sink_ptr=None  (20 args: the first eight slots never moved)
        ("2026", [S("0"), S("False"), S("False"), NA, NA, NA, NA, NA, NA, NA, NA, NA]),
    ],
)
def test_aiter_mha_fwd_releases(label: str, extra: list):
    q = T(4, 2048, 32, 128)
    p = parse("aiter::mha_fwd", q, T(4, 2048, 8, 128), T(4, 2048, 8, 128), S("0.0"), S(SCALE_128), S("True"),
              S("-1"), S("0"), *extra)  # fmt: skip
    # causal with window (-1, 0): causal bottom-right
    assert p.config == dense(4, 32, 8, 2048, 2048, 128, mask=CAUSAL_BR), label
    assert not p.warnings


def _batch_prefill(n_args: int, sink: bool = False) -> tuple[list, list, list]:
    # mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, max_seqlen_q, max_seqlen_k, dropout_p,
    #   softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left, window_size_right, [sink_size,]
    #   return_softmax_lse, return_dropout_randval, out=None, alibi_slopes=None, gen=None)
    # 4 requests of 512 new tokens over 2048 cached ones: q (2048, 32, 128), cache (pages, 16, Hkv 8, d 128)
    slots = [T(2048, 32, 128), T(1000, 16, 8, 128), T(1000, 16, 8, 128), T(5, dtype=I32), T(5, dtype=I32),
             T(512, dtype=I32), S("512"), S("2048"), S("0."), S(SCALE_128), S("0."), S("False"), S("True"), S("-1"),
             S("-1")]  # fmt: skip
    if sink:
        slots.append(S("0"))
    slots += [S("False"), S("False"), T(2048, 32, 128)]
    slots += [NA] * (n_args - len(slots))
    return [s[0] for s in slots], [s[1] for s in slots], [s[2] for s in slots]


def test_aiter_batch_prefill_2025_and_2026():
    # 2025: 20 arguments (aiter/ops/mha.py compile_ops "module_mha_batch_prefill"); 2026: sink_size after the window.
    # The step annotation execute_2048_context_4(sq2048sk8192sqsq1048576sqsk4194304): 4 requests, q 512, k 2048.
    step = {"c_sq": 2048, "c_sk": 8192, "c_sqsq": 1048576, "c_sqsk": 4194304, "g_sq": 0, "g_sk": 0,
            "num_ctx_requests": 4, "num_gen_requests": 0}  # fmt: skip
    for dims, types, conc in (_batch_prefill(20), _batch_prefill(21, sink=True)):
        p = parse_op("aiter::mha_batch_prefill", dims, types, conc, step)
        assert p.config is not None, p.reason
        c = p.config
        assert (c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_kv, c.head_dim_qk) == (4, 32, 8, 512, 2048, 128)
        assert c.mask.kind is MaskKind.CAUSAL and c.paged.sum_query_key == 4194304
        assert not any("appended" in w for w in p.warnings)


def test_aiter_batch_prefill_with_30_arguments_is_modeled_from_its_known_slots():
    # The newer aiter build of issue 20: 30 arguments, slots 0-17 as before, then optional tensors. It used to be
    # "no perf model" for the whole SGLang prefill; the known slots still hold their roles, so it is modeled from
    # them, with a warning that names the signature and the causal slot.
    step = {"c_sq": 2048, "c_sk": 8192, "c_sqsq": 1048576, "c_sqsk": 4194304, "g_sq": 0, "g_sk": 0,
            "num_ctx_requests": 4, "num_gen_requests": 0}  # fmt: skip
    p = parse_op("aiter::mha_batch_prefill", *_batch_prefill(30), step)
    assert p.config is not None, p.reason
    c = p.config
    assert (c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_kv) == (4, 32, 8, 512, 2048)
    assert c.mask.kind is MaskKind.CAUSAL
    (note,) = [w for w in p.warnings if "appended" in w]
    assert "30 arguments, 6 more than the 24 of signature 'aiter 2025-2026'" in note and "is_causal=12" in note


# --- PyTorch aten (native_functions.yaml) -----------------------------------------------------------------------


def test_sdpa_flash_2_0_without_scale():
    # PyTorch 2.0: _scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0.0,
    #   bool is_causal=False, bool return_debug_mask=False)  (6 arguments; `scale` came in 2.1)
    q = T(2, 16, 1024, 64, dtype=FP16)
    p = parse("aten::_scaled_dot_product_flash_attention", q, q, q, S("0."), S("True"), S("False"))
    assert p.config == dense(2, 16, 16, 1024, 1024, 64, dtype_q="fp16", mask=CAUSAL_BR) and not p.warnings


def test_sdpa_dispatcher_2_0_2_1_2_5():
    # scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False)      (2.0)
    #   + *, scale=None (2.1) + enable_gqa=False (2.5)   (aten/src/ATen/native/native_functions.yaml)
    q, kv = T(1, 32, 512, 128), T(1, 8, 512, 128)
    base = [q, kv, kv, NA, S("0."), S("True")]
    for extra in ([], [S(SCALE_128)], [S(SCALE_128), S("True")]):
        p = parse("aten::scaled_dot_product_attention", *base, *extra)
        assert p.config == dense(1, 32, 8, 512, 512, 128, mask=CAUSAL_TL), extra


def test_aten_flash_attention_forward_2_0_and_2_5():
    # 2.0-2.4: _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
    #   return_debug_mask, *, scale=None)   2.5+: + window_size_left, window_size_right, seqused_k, alibi_slopes
    q = T(2, 559, 16, 64)
    old = parse("aten::_flash_attention_forward", q, q, q, NA, NA, S("559"), S("559"), S("0."), S("True"), S("False"))
    new = parse("aten::_flash_attention_forward", q, q, q, NA, NA, S("559"), S("559"), S("0."), S("True"), S("False"),
                S(SCALE_64), S("-1"), S("-1"), NA, NA)  # fmt: skip
    assert old.config == new.config == dense(2, 16, 16, 559, 559, 64, mask=CAUSAL_BR)


def test_aten_efficient_attention_forward_2_2_plus():
    # _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
    #   dropout_p, custom_mask_type, compute_log_sumexp=False, *, scale=None, seqlen_k=None, window_size=None)
    #   (native_functions.yaml, PyTorch >= 2.2; the same schema string xformers checks in is_pt_cutlass_compatible)
    q = T(2, 1024, 16, 64)
    p = parse("aten::_efficient_attention_forward", q, q, q, NA, NA, NA, S("1024"), S("1024"), S("0.0"), S("1"),
              S("True"), S(SCALE_64), NA, NA)  # fmt: skip
    assert p.config == dense(2, 16, 16, 1024, 1024, 64, mask=CAUSAL_TL)


# --- TransformerEngine --------------------------------------------------------------------------------------------


def test_transformer_engine_1_x_fused_attn_func():
    # TE 1.x FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv, q, k,
    #   v, qkv_dtype, attn_bias, attn_scale, dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, attn_mask_type,
    #   rng_gen, fused_attention_backend, use_FAv2_bwd)   (transformer_engine/pytorch/attention.py, TE 1.x)
    # sbhd q (2048, 2, 32, 128): S 2048, B 2, H 32; 'causal' is top-left.
    q = T(2048, 2, 32, 128)
    p = parse("FusedAttnFunc", S("True"), S("2048"), S("2048"), T(3, dtype=I32), T(3, dtype=I32), q, q, q, NA, NA,
              S(SCALE_128), S("0.0"), S("True"), S("sbhd_sbhd_sbhd"), S("no_bias"), S("causal"), NA, NA,
              S("False"))  # fmt: skip
    assert p.config == dense(2, 32, 32, 2048, 2048, 128, mask=CAUSAL_TL) and p.layout is Layout.SBHD


def test_transformer_engine_2_x_with_softmax_type():
    # TE 2.x (2025) FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv,
    #   cu_seqlens_q_padded, cu_seqlens_kv_padded, page_table_k, page_table_v, q, k, v, attn_bias, attn_scale,
    #   dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, attn_mask_type, softmax_type, window_size, rng_gen,
    #   fused_attention_backend, use_FAv2_bwd, fp8, fp8_meta, quantizers, deterministic, softmax_offset, fp8_output,
    #   layer_number, return_max_logit)   (transformer_engine/pytorch/attention/dot_product_attention/backends.py)
    # bshd q (2, 4096, 32, 128) over k (2, 4096, 8, 128), causal_bottom_right, window (-1, 0).
    q, kv = T(2, 4096, 32, 128), T(2, 4096, 8, 128)
    p = parse("FusedAttnFunc", S("True"), S("4096"), S("4096"), NA, NA, NA, NA, NA, NA, q, kv, kv, NA, S(SCALE_128),
              S("0.0"), S("True"), S("bshd_bshd_bshd"), S("no_bias"), S("causal_bottom_right"), S("vanilla"),
              S("[-1, 0]"), NA, NA, S("False"), S("False"), NA, NA, S("False"), NA, S("False"), S("3"),
              S("False"))  # fmt: skip
    assert p.config == dense(2, 32, 8, 4096, 4096, 128, mask=CAUSAL_BR) and p.layout is Layout.BNHD


# --- vLLM --------------------------------------------------------------------------------------------------------

_STEP = {"c_sq": 0, "c_sk": 0, "g_sq": 8, "g_sk": 8 * 1025, "num_ctx_requests": 0, "num_gen_requests": 8,
         "H_KV": 8}  # fmt: skip


@pytest.mark.parametrize(
    ("version", "tail"),
    [
        # v0.7 (V1 early): unified_attention_with_output(query, key, value, output, kv_cache, attn_type, layer_name)
        ("0.7", [T(2, 1000, 16, 8, 128), S("decoder"), S("model.layers.0.self_attn.attn")]),
        # v0.8: (query, key, value, output, layer_name)   vllm/attention/layer.py
        ("0.8", [S("model.layers.0.self_attn.attn")]),
        # v0.9: + output_scale=None
        ("0.9", [S("model.layers.0.self_attn.attn"), NA]),
        # v0.10: + output_block_scale=None
        ("0.10", [S("model.layers.0.self_attn.attn"), NA, NA]),
        # v0.11+: + kv_cache_dummy_dep=None   (vllm/model_executor/layers/attention/attention.py)
        ("0.11", [S("model.layers.0.self_attn.attn"), NA, NA, NA]),
    ],
)
def test_vllm_unified_attention_with_output_releases(version: str, tail: list):
    # 8 decode requests, each 1 new token over 1025 keys: q (8, 32, 128), k/v (8, 8, 128), output (8, 32, 128)
    p = parse("vllm::unified_attention_with_output", T(8, 32, 128), T(8, 8, 128), T(8, 8, 128), T(8, 32, 128),
              *tail, perf_params=_STEP)  # fmt: skip
    assert p.config is not None, (version, p.reason)
    c = p.config
    assert (c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_kv, c.head_dim_qk) == (8, 32, 8, 1, 1025, 128)
    assert not any("appended" in w for w in p.warnings)


# --- drift: releases we have not seen --------------------------------------------------------------------------------


def test_vllm_with_one_more_optional_argument_is_modeled_with_a_warning():
    p = parse("vllm::unified_attention_with_output", T(8, 32, 128), T(8, 8, 128), T(8, 8, 128), T(8, 32, 128),
              S("model.layers.0.self_attn.attn"), NA, NA, NA, NA, perf_params=_STEP)  # fmt: skip
    assert p.config is not None and p.config.seq_kv == 1025
    assert any("9 arguments, 1 more than the 8 of signature 'vLLM v1'" in w for w in p.warnings)


def test_aiter_varlen_with_an_inserted_argument_is_read_off_its_roles():
    # a hypothetical aiter release that inserts cu_seqlens_q_padded after cu_seqlens_k: every slot after it moves
    # by one, so no known signature fits; q/k/v, cu_seqlens, max_seqlen, scale, causal and the window are recognized
    # from their shapes and values. 4 sequences, 8192 tokens, the longest 4096; Hq 32 / Hkv 8, d 128, causal.
    q, kv = T(8192, 32, 128), T(8192, 8, 128)
    p = parse("aiter::mha_varlen_fwd", q, kv, kv, T(5, dtype=I32), T(5, dtype=I32), T(5, dtype=I32), S("4096"),
              S("4096"), S("0"), S("0.0"), S(SCALE_128), S("0.0"), S("False"), S("True"), S("-1"), S("-1"),
              S("False"), S("False"))  # fmt: skip
    assert p.config == cfg(batch=4, heads_q=32, heads_kv=8, seq_q=4096, seq_kv=4096, head_dim_qk=128,
                           head_dim_v=128, mask=CAUSAL_BR, varlen=VarlenInfo(8192, 8192, 4, 4096, 4096))  # fmt: skip
    (warning,) = p.warnings
    assert "aiter::mha_varlen_fwd with 18 arguments: no known signature fits (aiter 2024, aiter 2025+)" in warning
    assert ("q=0, k=1, v=2, cu_seqlens_q=3, cu_seqlens_k=4, max_seqlen_q=6, max_seqlen_k=7, dropout_p=9, "
            "softmax_scale=10, causal=13, window_left=14, window_right=15 (THD)") in warning


def test_flash_attn_backward_gqa_drift_takes_q_after_dout():
    # a backward whose scalars moved (an argument inserted before dropout_p): dout comes first, so q is slot 1 and
    # k/v have the KV heads; causal from the bool followed by its window.
    q, kv = T(2, 2048, 32, 128), T(2, 2048, 8, 128)
    p = parse("flash_attn::_flash_attn_backward", q, q, kv, kv, q, T(2, 32, 2048, dtype="float"), q, kv, kv, NA,
              S("0.0"), S(SCALE_128), S("True"), S("-1"), S("-1"), S("0.0"), NA, S("False"), NA)  # fmt: skip
    assert p.config == dense(2, 32, 8, 2048, 2048, 128, mask=CAUSAL_BR, direction=Direction.BWD)
    (warning,) = p.warnings
    assert "dout=0, q=1, k=2, v=3, out=4" in warning and "causal=12, window_left=13, window_right=14" in warning


def test_sdpa_flash_drift_with_an_inserted_tensor():
    # a release that adds an optional attn_bias after value: dropout 4, is_causal 5 (the bool after dropout_p)
    q = T(2, 8, 1024, 64)
    p = parse("aten::_scaled_dot_product_flash_attention", q, q, q, NA, S("0."), S("True"), S("False"), S(SCALE_64))
    assert p.config == dense(2, 8, 8, 1024, 1024, 64, mask=CAUSAL_BR)
    assert "dropout_p=4, causal=5, softmax_scale=7 (BHND)" in p.warnings[0]


def test_unrecognizable_rows_stay_unmodeled_with_every_misfit():
    # no three adjacent attention tensors whose dims agree: not modeled, and the reason lists each signature's misfit
    p = parse("aiter::mha_fwd", T(4, 2048, 32, 128), T(4, 2048, 8, 64), T(4, 2048, 8, 128), S("True"), S("0.1"),
              S("0.0"), S("-1"), S("-1"))  # fmt: skip
    assert p.config is None and "match no known signature" in p.reason and "aiter 2024-2026" in p.reason
