"""parse_op for op families with no real row in /work/shared: rows built from each library's signature.

Each row is what torch.profiler records for the call (one Input Dims / Input type / Concrete Inputs entry
per positional argument, tensors as shapes with '' values, scalars as strings, None as ''); the signature
and where it came from are quoted above each test. Expected configs are worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Direction, Mask, MaskKind, VarlenInfo
from sdpa_analyzer.perf_models.registry import (
    ATTENTION_OP_NAMES,
    AttentionType,
    Layout,
    Source,
    is_attention_op,
    lookup,
    parse_op,
)

BF16 = "c10::BFloat16"
NONE = Mask()
CAUSAL_BR = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)
CAUSAL_TL = Mask(MaskKind.CAUSAL, Alignment.TOP_LEFT)


def T(*shape: int, dtype: str = BF16) -> tuple[list[int], str, str]:
    """A tensor argument."""
    return list(shape), dtype, ""


def S(value: str, dtype: str = "Scalar") -> tuple[list[int], str, str]:
    """A scalar argument with its recorded value."""
    return [], dtype, value


NA = ([], "", "")  # an optional argument passed as None


def parse(name: str, *slots: tuple[list[int], str, str], perf_params: Any = None):
    dims = [s[0] for s in slots]
    types = [s[1] for s in slots]
    concrete = [s[2] for s in slots]
    return parse_op(name, dims, types, concrete, perf_params)


def cfg(**kw: Any) -> AttentionConfig:
    kw.setdefault("dtype_q", "bf16")
    return AttentionConfig(**kw)


# --- aten SDPA backends (BHND) ----------------------------------------------------------------------


def test_sdpa_flash_backward():
    # _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q,
    #   cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *, scale=None)
    #   (pytorch native_functions.yaml). Causal B=2, H=8, N=1024, d=64.
    q = T(2, 8, 1024, 64)
    p = parse(
        "aten::_scaled_dot_product_flash_attention_backward",
        q,
        q,
        q,
        q,
        q,
        T(2, 8, 1024, dtype="float"),
        NA,
        NA,
        S("1024"),
        S("1024"),
        S("0."),
        S("True"),
        T(dtype="long int"),
        T(dtype="long int"),
        S("0.125"),
    )
    assert p.config == cfg(
        batch=2,
        heads_q=8,
        heads_kv=8,
        seq_q=1024,
        seq_kv=1024,
        head_dim_qk=64,
        head_dim_v=64,
        direction=Direction.BWD,
        mask=CAUSAL_BR,
    )
    assert (p.attention_type, p.direction, p.family) == (
        AttentionType.FLASH,
        Direction.BWD,
        "aten_sdpa_flash",
    )


def test_sdpa_efficient_forward_is_top_left_for_nq_lt_nkv():
    # _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp,
    #   dropout_p=0., is_causal=False, *, scale=None). Nq=256 < Nkv=1024 with is_causal: top-left.
    p = parse(
        "aten::_scaled_dot_product_efficient_attention",
        T(4, 16, 256, 64),
        T(4, 16, 1024, 64),
        T(4, 16, 1024, 64),
        NA,
        S("True"),
        S("0."),
        S("True"),
        NA,
    )
    assert p.config == cfg(
        batch=4,
        heads_q=16,
        heads_kv=16,
        seq_q=256,
        seq_kv=1024,
        head_dim_qk=64,
        head_dim_v=64,
        mask=CAUSAL_TL,
    )
    assert p.attention_type is AttentionType.MEMORY_EFFICIENT


def test_sdpa_efficient_forward_pytorch_2_0_signature():
    # 2.0: _scaled_dot_product_efficient_attention(query, key, value, compute_log_sumexp,
    #   is_causal=False, *, scale=None) -- 6 arguments, is_causal in slot 4, no dropout.
    q = T(1, 4, 128, 64)
    p = parse("aten::_scaled_dot_product_efficient_attention", q, q, q, S("True"), S("True"), NA)
    assert p.config == cfg(
        batch=1, heads_q=4, heads_kv=4, seq_q=128, seq_kv=128, head_dim_qk=64, head_dim_v=64, mask=CAUSAL_TL
    )


def test_sdpa_efficient_backward():
    # _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias, out,
    #   logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal=False, *, scale=None)
    q = T(2, 12, 512, 64, dtype="c10::Half")
    p = parse(
        "aten::_scaled_dot_product_efficient_attention_backward",
        q,
        q,
        q,
        q,
        NA,
        q,
        T(2, 12, 512, dtype="float"),
        T(dtype="long int"),
        T(dtype="long int"),
        S("0.1"),
        S("[True, True, True, False]", "ScalarList"),
        S("False"),
        NA,
    )
    assert p.config == cfg(
        batch=2,
        heads_q=12,
        heads_kv=12,
        seq_q=512,
        seq_kv=512,
        head_dim_qk=64,
        head_dim_v=64,
        dtype_q="fp16",
        direction=Direction.BWD,
        dropout_p=0.1,
    )


def test_sdpa_cudnn_forward_both_versions():
    # >= 2.5: _scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp,
    #   dropout_p=0., is_causal=False, return_debug_mask=False, *, scale=None)
    # 2.3-2.4: (query, key, value, dropout_p=0., is_causal=False, return_debug_mask=False, *, scale=None)
    q = T(8, 32, 2048, 128)
    expected = cfg(
        batch=8,
        heads_q=32,
        heads_kv=32,
        seq_q=2048,
        seq_kv=2048,
        head_dim_qk=128,
        head_dim_v=128,
        mask=CAUSAL_TL,
    )
    new = parse(
        "aten::_scaled_dot_product_cudnn_attention",
        q,
        q,
        q,
        NA,
        S("True"),
        S("0."),
        S("True"),
        S("False"),
        NA,
    )
    old = parse("aten::_scaled_dot_product_cudnn_attention", q, q, q, S("0."), S("True"), S("False"), NA)
    assert new.config == expected and old.config == expected
    assert new.attention_type is AttentionType.CUDNN


def test_sdpa_cudnn_backward():
    # _scaled_dot_product_cudnn_attention_backward(grad_out, query, key, value, out, logsumexp,
    #   philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
    #   *, scale=None)
    q = T(1, 16, 4096, 128)
    p = parse(
        "aten::_scaled_dot_product_cudnn_attention_backward",
        q,
        q,
        q,
        q,
        q,
        T(1, 16, 4096, 1, dtype="float"),
        T(dtype="long int"),
        T(dtype="long int"),
        NA,
        NA,
        NA,
        S("4096"),
        S("4096"),
        S("0."),
        S("False"),
        S("0.088388347648318433"),
    )
    assert p.config == cfg(
        batch=1,
        heads_q=16,
        heads_kv=16,
        seq_q=4096,
        seq_kv=4096,
        head_dim_qk=128,
        head_dim_v=128,
        direction=Direction.BWD,
    )


def test_sdpa_math_and_cpu_flash():
    # _scaled_dot_product_attention_math(query, key, value, attn_mask=None, dropout_p=0., is_causal=False,
    #   dropout_mask=None, *, scale=None, enable_gqa=False)
    # _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0., is_causal=False, *,
    #   attn_mask=None, scale=None)
    q = T(2, 4, 64, 32, dtype="float")
    math = parse(
        "aten::_scaled_dot_product_attention_math", q, q, q, NA, S("0."), S("True"), NA, NA, S("False")
    )
    cpu = parse("aten::_scaled_dot_product_flash_attention_for_cpu", q, q, q, S("0."), S("True"), NA, NA)
    expected = cfg(
        batch=2,
        heads_q=4,
        heads_kv=4,
        seq_q=64,
        seq_kv=64,
        head_dim_qk=32,
        head_dim_v=32,
        dtype_q="fp32",
        mask=CAUSAL_TL,
    )
    assert math.config == expected and cpu.config == expected
    assert math.attention_type is AttentionType.MATH


def test_sdpa_dispatcher_with_mask_tensor_warns():
    # scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, *, scale, enable_gqa)
    # An arbitrary boolean mask: its sparsity is unknown, so the pairs are counted as full and it says so.
    q = T(2, 8, 128, 64)
    p = parse(
        "aten::scaled_dot_product_attention",
        q,
        q,
        q,
        T(2, 1, 128, 128, dtype="bool"),
        S("0."),
        S("False"),
        NA,
        S("False"),
    )
    assert p.config.mask == NONE
    assert any("attn_mask/bias tensor (2, 1, 128, 128) (slot 3)" in w for w in p.warnings)


# --- aten flash / mem-efficient primitives (BNHD) ----------------------------------------------------


def test_efficient_attention_forward_is_bnhd():
    # _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
    #   max_seqlen_k, dropout_p, custom_mask_type, compute_log_sumexp=False, *, scale=None, seqlen_k=None,
    #   window_size=None). q is [B, M, H, K] = [2, 1024, 16, 64]: read as BHND it would give 1024 heads
    #   of length 16 (the seed PR's bug). custom_mask_type 2 = causal from the bottom right.
    p = parse(
        "aten::_efficient_attention_forward",
        T(2, 1024, 16, 64),
        T(2, 2048, 16, 64),
        T(2, 2048, 16, 64),
        NA,
        NA,
        NA,
        NA,
        NA,
        S("0."),
        S("2"),
        S("True"),
        NA,
        NA,
        NA,
    )
    assert p.config == cfg(
        batch=2,
        heads_q=16,
        heads_kv=16,
        seq_q=1024,
        seq_kv=2048,
        head_dim_qk=64,
        head_dim_v=64,
        mask=CAUSAL_BR,
    )
    assert p.layout is Layout.BNHD


@pytest.mark.parametrize(("code", "mask"), [("0", NONE), ("1", CAUSAL_TL), ("2", CAUSAL_BR)])
def test_efficient_attention_custom_mask_types(code, mask):
    q = T(1, 256, 8, 128)
    p = parse(
        "aten::_efficient_attention_forward",
        q,
        q,
        q,
        NA,
        NA,
        NA,
        NA,
        NA,
        S("0."),
        S(code),
        S("False"),
        NA,
        NA,
        NA,
    )
    assert p.config.mask == mask


def test_efficient_attention_forward_pytorch_2_1_signature():
    # 2.1 (torch/_meta_registrations.py): (query, key, value, bias, cu_seqlens_q, cu_seqlens_k,
    #   max_seqlen_q, dropout_p, custom_mask_type, compute_log_sumexp=False, *, scale=None,
    #   causal_diagonal=None, seqlen_k=None) -- no max_seqlen_k, so dropout is slot 7, mask type slot 8.
    q = T(4, 512, 8, 64)
    p = parse(
        "aten::_efficient_attention_forward", q, q, q, NA, NA, NA, NA, S("0."), S("1"), S("True"), NA, NA, NA
    )
    assert p.config == cfg(
        batch=4, heads_q=8, heads_kv=8, seq_q=512, seq_kv=512, head_dim_qk=64, head_dim_v=64, mask=CAUSAL_TL
    )


def test_efficient_attention_backward_bnhd():
    # _efficient_attention_backward(grad_out_, query, key, value, bias, out, cu_seqlens_q, cu_seqlens_k,
    #   max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, philox_seed, philox_offset, custom_mask_type,
    #   bias_requires_grad, *, scale=None, num_splits_key=None, window_size=None,
    #   shared_storage_dqdkdv=False)
    q = T(2, 1024, 16, 64)
    p = parse(
        "aten::_efficient_attention_backward",
        q,
        q,
        q,
        q,
        NA,
        q,
        NA,
        NA,
        S("1024"),
        S("1024"),
        T(2, 16, 1024, dtype="float"),
        S("0."),
        T(dtype="long int"),
        T(dtype="long int"),
        S("1"),
        S("False"),
        NA,
        NA,
        NA,
        S("False"),
    )
    assert p.config == cfg(
        batch=2,
        heads_q=16,
        heads_kv=16,
        seq_q=1024,
        seq_kv=1024,
        head_dim_qk=64,
        head_dim_v=64,
        direction=Direction.BWD,
        mask=CAUSAL_TL,
    )


def test_aten_flash_attention_backward_with_window():
    # _flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q,
    #   max_k, dropout_p, is_causal, rng_state, unused, *, scale=None, window_size_left=None,
    #   window_size_right=None). Causal with a 256-token left window: sliding window (256, 0).
    q = T(1, 8192, 32, 128)
    p = parse(
        "aten::_flash_attention_backward",
        q,
        q,
        q,
        q,
        q,
        T(1, 32, 8192, dtype="float"),
        NA,
        NA,
        S("8192"),
        S("8192"),
        S("0."),
        S("True"),
        T(2, dtype="long int"),
        T(dtype="long int"),
        NA,
        S("256"),
        S("0"),
    )
    assert p.config.mask == Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, 256, 0)
    assert (p.config.batch, p.config.heads_q, p.config.seq_q) == (1, 32, 8192)


def test_aten_flash_attention_forward_varlen():
    # _flash_attention_forward with cum_seq_q/cum_seq_k: packed q (total, H, D) = (3000, 16, 64),
    # 4 sequences (cu_seqlens has 5 entries), max length 1500.
    p = parse(
        "aten::_flash_attention_forward",
        T(3000, 16, 64),
        T(3000, 16, 64),
        T(3000, 16, 64),
        T(5, dtype="int"),
        T(5, dtype="int"),
        S("1500"),
        S("1500"),
        S("0."),
        S("True"),
        S("False"),
        NA,
    )
    assert p.config.varlen == VarlenInfo(
        total_q=3000, total_kv=3000, num_seqs=4, max_seqlen_q=1500, max_seqlen_kv=1500
    )
    assert (p.config.batch, p.config.seq_q, p.config.heads_q) == (4, 1500, 16)


# --- flash-attn 2.x --------------------------------------------------------------------------------------


def test_flash_attn_backward_reads_causal_from_slot_11():
    # _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
    #   window_size_left, window_size_right, softcap, alibi_slopes, deterministic, rng_state)
    #   (flash_attn/flash_attn_interface.py). Same row as the synthetic fixture with causal=True.
    q, kv = T(2, 4096, 32, 128), T(2, 4096, 8, 128)
    base = [q, q, kv, kv, q, T(2, 32, 4096, dtype="float"), q, kv, kv, S("0.0"), S("0.088388347648318433")]
    tail = [S("-1"), S("-1"), S("0.0"), NA, S("False"), T(2, dtype="long int")]
    causal = parse("flash_attn::_flash_attn_backward", *base, S("True"), *tail)
    plain = parse("flash_attn::_flash_attn_backward", *base, S("False"), *tail)
    assert causal.config.mask == CAUSAL_BR and plain.config.mask == NONE


def test_flash_attn_backward_with_scale_in_causal_slot_is_not_read_as_causal():
    # A row whose slot 11 holds a float (an argument list shifted by one) matches no known signature: it is read off
    # its roles (q/k/v from the shapes, the scale from its value), and no causal flag is made of softmax_scale.
    q, kv = T(2, 4096, 32, 128), T(2, 4096, 8, 128)
    p = parse(
        "flash_attn::_flash_attn_backward",
        q,
        q,
        kv,
        kv,
        q,
        T(2, 32, 4096, dtype="float"),
        q,
        kv,
        kv,
        S("0.0"),
        S("0.0"),
        S("0.088388347648318433"),
        S("-1"),
        S("-1"),
        S("0.0"),
        NA,
        S("False"),
        NA,
    )
    # no causal flag can be told in these slots: modeled without a mask, and marked so (an upper bound of the work)
    assert p.config == cfg(
        batch=2, heads_q=32, heads_kv=8, seq_q=4096, seq_kv=4096, head_dim_qk=128, head_dim_v=128,
        direction=Direction.BWD, mask=NONE, mask_unknown=True,
    )  # fmt: skip
    (warning,) = p.warnings
    assert "no known signature fits (flash-attn >= 2.6)" in warning
    assert "dout=0, q=1, k=2, v=3, out=4, dropout_p=10, softmax_scale=11" in warning
    assert "no causal flag recognized" in warning


def test_flashattn_namespace_alias_and_sliding_window():
    # flash-attn 2.6.x registers the same op as flashattn::_flash_attn_forward; window (128, 0) non-causal
    # is a sliding window, (-1, 0) non-causal is causal bottom-right.
    q = T(1, 2048, 16, 64)
    win = parse(
        "flashattn::_flash_attn_forward",
        q,
        q,
        q,
        S("0.0"),
        S("0.125"),
        S("False"),
        S("128"),
        S("0"),
        S("0.0"),
        NA,
        S("False"),
    )
    assert win.config.mask == Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, 128, 0)
    causal = parse(
        "flash_attn::_flash_attn_forward",
        q,
        q,
        q,
        S("0.0"),
        S("0.125"),
        S("False"),
        S("-1"),
        S("0"),
        S("0.0"),
        NA,
        S("False"),
    )
    assert causal.config.mask == CAUSAL_BR


def test_flash_attn_varlen_forward_and_backward():
    # _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
    #   softmax_scale, causal, window_size_left=-1, window_size_right=-1, softcap=0.0, alibi_slopes=None,
    #   return_softmax=False, block_table=None, leftpad_k=None, seqused_k=None)
    # 4 sequences packed into 8192 tokens, longest 4096; GQA 32/8, d=128, causal.
    q, kv, cu = T(8192, 32, 128), T(8192, 8, 128), T(5, dtype="int")
    fwd = parse(
        "flash_attn::_flash_attn_varlen_forward",
        q,
        kv,
        kv,
        cu,
        cu,
        S("4096"),
        S("4096"),
        S("0.0"),
        S("0.088388347648318433"),
        S("True"),
        S("-1"),
        S("-1"),
        S("0.0"),
        NA,
        S("False"),
        NA,
        NA,
        NA,
    )
    varlen = VarlenInfo(total_q=8192, total_kv=8192, num_seqs=4, max_seqlen_q=4096, max_seqlen_kv=4096)
    assert fwd.config == cfg(
        batch=4,
        heads_q=32,
        heads_kv=8,
        seq_q=4096,
        seq_kv=4096,
        head_dim_qk=128,
        head_dim_v=128,
        mask=CAUSAL_BR,
        varlen=varlen,
    )
    assert fwd.layout is Layout.THD
    # _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
    #   max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
    #   softcap, alibi_slopes, deterministic, rng_state=None)
    bwd = parse(
        "flash_attn::_flash_attn_varlen_backward",
        q,
        q,
        kv,
        kv,
        q,
        T(32, 8192, dtype="float"),
        q,
        kv,
        kv,
        cu,
        cu,
        S("4096"),
        S("4096"),
        S("0.0"),
        S("0.088388347648318433"),
        S("True"),
        S("-1"),
        S("-1"),
        S("0.0"),
        NA,
        S("False"),
        T(2, dtype="long int"),
    )
    assert (
        bwd.config.varlen == varlen and bwd.config.direction is Direction.BWD and bwd.config.mask == CAUSAL_BR
    )


def test_flash_attn_varlen_with_block_table_needs_perf_params():
    # A paged KV cache (block_table, slot 15): k is [num_blocks, block_size, H, D], KV lengths unknown.
    q, cache, cu = T(64, 32, 128), T(1000, 256, 8, 128), T(5, dtype="int")
    p = parse(
        "flash_attn::_flash_attn_varlen_forward",
        q,
        cache,
        cache,
        cu,
        cu,
        S("16"),
        S("4096"),
        S("0.0"),
        S("0.088"),
        S("True"),
        S("-1"),
        S("-1"),
        S("0.0"),
        NA,
        S("False"),
        T(4, 16, dtype="int"),
        NA,
        NA,
    )
    assert p.config is None


def test_flash_attn_func_fa3_variant():
    # hopper/flash_attn_interface.py FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, qv=None,
    #   q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), attention_chunk=0,
    #   softcap=0.0, num_splits=1, pack_gqa=None, deterministic=False, sm_margin=0, return_softmax=False)
    # Slot 4 is causal here (slot 5 in flash-attn 2.x): the kind check picks the FA3 signature.
    q = T(4, 8192, 64, 128)
    p = parse(
        "FlashAttnFunc",
        q,
        T(4, 8192, 8, 128),
        T(4, 8192, 8, 128),
        S("0.088"),
        S("True"),
        NA,
        NA,
        NA,
        NA,
        S("[-1, -1]", "ScalarList"),
        S("0"),
        S("0.0"),
        S("1"),
        NA,
        S("False"),
        S("0"),
        S("False"),
    )
    assert p.family == "flash_attn_3"
    assert p.config == cfg(
        batch=4,
        heads_q=64,
        heads_kv=8,
        seq_q=8192,
        seq_kv=8192,
        head_dim_qk=128,
        head_dim_v=128,
        mask=CAUSAL_BR,
    )


def test_flash_attn_varlen_func():
    # flash-attn 2.x FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
    #   max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
    #   return_softmax, block_table, is_grad_enabled)
    q, cu = T(1000, 8, 64), T(3, dtype="int")
    p = parse(
        "FlashAttnVarlenFunc",
        q,
        q,
        q,
        cu,
        cu,
        S("600"),
        S("600"),
        S("0.0"),
        S("0.125"),
        S("False"),
        S("[64, 64]", "ScalarList"),
        S("0.0"),
        NA,
        S("False"),
        S("False"),
        NA,
        S("True"),
    )
    assert p.config.varlen == VarlenInfo(1000, 1000, 2, 600, 600)
    assert p.config.mask == Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, 64, 64)


# --- FlashAttention-3 ---------------------------------------------------------------------------------


def _fa3_fwd_slots(q, k, v, causal: str) -> list:
    # flash_attn_3::fwd(q, k, v, k_new, v_new, q_v, out, cu_seqlens_q, cu_seqlens_k, cu_seqlens_k_new,
    #   seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, page_table, kv_batch_idx, leftpad_k, rotary_cos,
    #   rotary_sin, seqlens_rotary, q_descale, k_descale, v_descale, softmax_scale, is_causal,
    #   window_size_left, window_size_right, attention_chunk, softcap, is_rotary_interleaved,
    #   scheduler_metadata, num_splits, pack_gqa, sm_margin)  (hopper/flash_api.cpp TORCH_LIBRARY)
    return [
        q,
        k,
        v,
        *[NA] * 20,
        S("0.088388347648318433"),
        S(causal),
        S("-1"),
        S("-1"),
        S("0"),
        S("0.0"),
        S("False"),
        NA,
        S("1"),
        NA,
        S("0"),
    ]


def test_fa3_fwd_and_sglang_alias():
    q, kv = T(2, 4096, 32, 128), T(2, 4096, 8, 128)
    expected = cfg(
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=4096,
        seq_kv=4096,
        head_dim_qk=128,
        head_dim_v=128,
        mask=CAUSAL_BR,
    )
    for name in ("flash_attn_3::fwd", "sgl_kernel::fwd"):
        p = parse(name, *_fa3_fwd_slots(q, kv, kv, "True"))
        assert p.config == expected, name
        assert p.family == "flash_attn_3"


def test_fa3_bwd():
    # flash_attn_3::bwd(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k, seqused_q,
    #   seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, is_causal, window_size_left=-1,
    #   window_size_right=-1, softcap=0.0, deterministic=False, sm_margin=0)
    q, kv = T(2, 4096, 32, 128), T(2, 4096, 8, 128)
    p = parse(
        "flash_attn_3::bwd",
        q,
        q,
        kv,
        kv,
        q,
        T(2, 32, 4096, dtype="float"),
        q,
        kv,
        kv,
        NA,
        NA,
        NA,
        NA,
        NA,
        NA,
        S("0.088388347648318433"),
        S("False"),
        S("-1"),
        S("-1"),
        S("0.0"),
        S("False"),
        S("0"),
    )
    assert p.config == cfg(
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=4096,
        seq_kv=4096,
        head_dim_qk=128,
        head_dim_v=128,
        direction=Direction.BWD,
    )


# --- aiter (ROCm) -----------------------------------------------------------------------------------------


def test_aiter_forward_ops():
    # aiter/ops/mha.py: mha_fwd / fmha_v3_fwd(q, k, v, dropout_p, softmax_scale, is_causal,
    #   window_size_left, window_size_right, [sink_size,] return_softmax_lse, return_dropout_randval, ...)
    #   _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
    #   sink_size, bias, alibi_slopes, q_descale, k_descale, v_descale, return_lse, return_softmax, ...)
    q = T(8, 512, 16, 64)
    expected = cfg(
        batch=8, heads_q=16, heads_kv=16, seq_q=512, seq_kv=512, head_dim_qk=64, head_dim_v=64, mask=CAUSAL_BR
    )
    mha = parse(
        "aiter::mha_fwd",
        q,
        q,
        q,
        S("0.0"),
        S("0.125"),
        S("True"),
        S("-1"),
        S("-1"),
        S("0"),
        S("True"),
        S("False"),
        NA,
        NA,
        NA,
        NA,
        NA,
    )
    v3 = parse(
        "aiter::fmha_v3_fwd",
        q,
        q,
        q,
        S("0.0"),
        S("0.125"),
        S("True"),
        S("-1"),
        S("-1"),
        S("True"),
        S("False"),
        S("1"),
        NA,
        NA,
        NA,
        NA,
    )
    fa = parse(
        "aiter::_flash_attn_forward",
        q,
        q,
        q,
        S("0.0"),
        S("0.125"),
        S("True"),
        S("-1"),
        S("-1"),
        S("0"),
        NA,
        NA,
        NA,
        NA,
        NA,
        S("True"),
        S("False"),
        S("1"),
        NA,
        NA,
        NA,
        NA,
        S("0"),
    )
    assert mha.config == expected and v3.config == expected and fa.config == expected
    assert fa.family == "aiter"


def test_aiter_flash_attn_backward_both_versions():
    # 2025+: _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dbias, dropout_p,
    #   softmax_scale, causal, window_size_left, window_size_right, bias, alibi_slopes, deterministic,
    #   rng_state, is_v3_atomic_fp32, how_v3_bf16_cvt)
    # 2024: (dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
    #   window_size_left, window_size_right, alibi_slopes, deterministic, rng_state)
    q = T(1, 2048, 16, 128)
    lse = T(1, 16, 2048, dtype="float")
    new = parse(
        "aiter::_flash_attn_backward",
        q,
        q,
        q,
        q,
        q,
        lse,
        q,
        q,
        q,
        NA,
        S("0.0"),
        S("0.088"),
        S("True"),
        S("-1"),
        S("-1"),
        NA,
        NA,
        S("False"),
        T(2, dtype="long int"),
        S("True"),
        S("1"),
    )
    old = parse(
        "aiter::_flash_attn_backward",
        q,
        q,
        q,
        q,
        q,
        lse,
        q,
        q,
        q,
        S("0.0"),
        S("0.088"),
        S("True"),
        S("-1"),
        S("-1"),
        NA,
        S("False"),
        T(2, dtype="long int"),
    )
    expected = cfg(
        batch=1,
        heads_q=16,
        heads_kv=16,
        seq_q=2048,
        seq_kv=2048,
        head_dim_qk=128,
        head_dim_v=128,
        direction=Direction.BWD,
        mask=CAUSAL_BR,
    )
    assert new.config == expected and old.config == expected


def test_aiter_mha_bwd():
    # mha_bwd / fmha_v3_bwd(dout, q, k, v, out, softmax_lse, dropout_p, softmax_scale, is_causal,
    #   window_size_left, window_size_right, deterministic, [is_v3_atomic_fp32, how_v3_bf16_cvt,] dq, ...)
    q = T(1, 2048, 16, 128)
    p = parse(
        "aiter::fmha_v3_bwd",
        q,
        q,
        q,
        q,
        q,
        T(1, 16, 2048, dtype="float"),
        S("0.0"),
        S("0.088"),
        S("False"),
        S("-1"),
        S("-1"),
        S("False"),
        S("True"),
        S("1"),
        q,
        q,
        q,
        NA,
        NA,
        NA,
    )
    assert p.config.direction is Direction.BWD and p.config.mask == NONE


def test_aiter_varlen_forward_both_versions():
    # 2025+: mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, min_seqlen_q,
    #   dropout_p, softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left,
    #   window_size_right, sink_size, return_softmax_lse, return_dropout_randval, ...)
    # 2024: (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale,
    #   zero_tensors, is_causal, window_size_left, window_size_right, return_softmax_lse, ...)
    q, cu = T(4096, 8, 128), T(9, dtype="int")
    new = parse(
        "aiter::mha_varlen_fwd",
        q,
        q,
        q,
        cu,
        cu,
        S("1024"),
        S("1024"),
        S("0"),
        S("0.0"),
        S("0.088"),
        S("0.0"),
        S("False"),
        S("True"),
        S("-1"),
        S("-1"),
        S("0"),
        S("True"),
        S("False"),
    )
    old = parse(
        "aiter::mha_varlen_fwd",
        q,
        q,
        q,
        cu,
        cu,
        S("1024"),
        S("1024"),
        S("0.0"),
        S("0.088"),
        S("False"),
        S("True"),
        S("-1"),
        S("-1"),
        S("True"),
        S("False"),
    )
    varlen = VarlenInfo(total_q=4096, total_kv=4096, num_seqs=8, max_seqlen_q=1024, max_seqlen_kv=1024)
    assert new.config.varlen == varlen and old.config.varlen == varlen
    assert new.config.mask == CAUSAL_BR and old.config.mask == CAUSAL_BR


def test_aiter_varlen_backward():
    # mha_varlen_bwd(dout, q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
    #   max_seqlen_k, dropout_p, softmax_scale, zero_tensors, is_causal, window_size_left,
    #   window_size_right, deterministic, ...)
    q, cu = T(4096, 8, 128), T(9, dtype="int")
    p = parse(
        "aiter::mha_varlen_bwd",
        q,
        q,
        q,
        q,
        q,
        T(8, 4096, dtype="float"),
        cu,
        cu,
        S("1024"),
        S("1024"),
        S("0.0"),
        S("0.088"),
        S("False"),
        S("False"),
        S("-1"),
        S("-1"),
        S("False"),
    )
    assert p.config.varlen.num_seqs == 8 and p.config.direction is Direction.BWD and p.config.mask == NONE


# --- TransformerEngine ---------------------------------------------------------------------------------


def _te_slots(mask_type: str, layout: str) -> list:
    # FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv,
    #   cu_seqlens_q_padded, cu_seqlens_kv_padded, page_table_k, page_table_v, q, k, v, attn_bias,
    #   attn_scale, dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, attn_mask_type, window_size,
    #   rng_gen, fused_attention_backend, use_FAv2_bwd, fp8, fp8_meta, quantizers, deterministic, ...)
    #   (transformer_engine/pytorch/attention/dot_product_attention/backends.py)
    q = T(2048, 2, 32, 128)  # sbhd: (S, B, H, D)
    kv = T(2048, 2, 8, 128)
    return [
        S("True"),
        S("2048"),
        S("2048"),
        T(3, dtype="int"),
        T(3, dtype="int"),
        NA,
        NA,
        NA,
        NA,
        q,
        kv,
        kv,
        NA,
        S("0.088388347648318433"),
        S("0.0"),
        S("True"),
        S(layout, ""),
        S("no_bias", ""),
        S(mask_type, ""),
        S("[-1, 0]", "ScalarList"),
        NA,
        S("1", ""),
        S("False"),
        S("False"),
        NA,
        NA,
        S("False"),
        S("False"),
        S("1"),
    ]


def test_transformer_engine_sbhd_causal_top_left():
    p = parse("FusedAttnFunc", *_te_slots("causal", "sbhd_sbhd_sbhd"))
    # sbhd q (2048, 2, 32, 128): S=2048, B=2, H=32; TE 'causal' is top-left
    assert p.config == cfg(
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=2048,
        seq_kv=2048,
        head_dim_qk=128,
        head_dim_v=128,
        mask=CAUSAL_TL,
    )
    assert (p.layout, p.attention_type) == (Layout.SBHD, AttentionType.CUDNN)


def test_transformer_engine_bottom_right_and_missing_strings():
    p = parse("FusedAttnFunc", *_te_slots("padding_causal_bottom_right", "sbhd_sbhd_sbhd"))
    assert p.config.mask == CAUSAL_BR
    # a trace that does not record string arguments: no model, and the reason names the slot
    missing = parse("FusedAttnFunc", *_te_slots("", ""))
    assert missing.config is None and "qkv_layout (slot 16)" in missing.reason


# --- the registry itself --------------------------------------------------------------------------------


def test_registry_lookup_and_names():
    for name in (
        "aten::_scaled_dot_product_flash_attention",
        "flash_attn::_flash_attn_backward",
        "aiter::fmha_v3_bwd",
        "vllm::unified_attention",
        "ScaledDotProductEfficientAttentionBackward0",
        "FlashAttnFuncBackward",
        "FusedAttnFunc",
        "flash_attn_3::fwd",
    ):
        assert name in ATTENTION_OP_NAMES and is_attention_op(name)
    assert lookup("aten::_scaled_dot_product_flash_attention.default") is not None
    assert not is_attention_op("aten::mm") and not is_attention_op("attention")
    # the evaluate_function wrapper would count the backward twice next to its node
    assert not is_attention_op("autograd::engine::evaluate_function: FlashAttnFuncBackward")
    spec = lookup("flash_attn::_flash_attn_backward")
    assert (spec.slots.causal, spec.slots.scale, spec.slots.dropout, spec.slots.dout) == (11, 10, 9, 0)
    assert lookup("aten::_efficient_attention_forward").layout is Layout.BNHD


def test_unknown_op_has_reason():
    p = parse_op("my_lib::attention_v9", "((1, 2),)", "('float',)", "('',)")
    assert p.config is None and p.reason.startswith("unknown op 'my_lib::attention_v9'")


def test_missing_concrete_inputs_reason():
    dims = "((16, 16, 559, 64), (16, 16, 559, 64), (16, 16, 559, 64), (), (), (), ())"
    types = "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')"
    p = parse_op("aten::_scaled_dot_product_flash_attention", dims, types, float("nan"))
    assert p.config is None
    assert p.reason.startswith("missing Concrete Inputs for causal flag 'is_causal' (slot 4)")
    # the same row with perf_params is modeled from them, and says so
    pp = (
        "{'B': 16, 'N_Q': 559, 'H_Q': 16, 'N_KV': 559, 'H_KV': 16, 'd_h_qk': 64, 'd_h_v': 64, "
        "'dropout': 0.0, 'causal': True, 'flash_impl': True, 'dtype_A_B': ('c10::BFloat16', 'c10::BFloat16')}"
    )
    p2 = parse_op("aten::_scaled_dot_product_flash_attention", dims, types, float("nan"), pp)
    assert p2.source is Source.PERF_PARAMS and p2.config.mask == CAUSAL_BR
    assert p2.config == cfg(
        batch=16,
        heads_q=16,
        heads_kv=16,
        seq_q=559,
        seq_kv=559,
        head_dim_qk=64,
        head_dim_v=64,
        mask=CAUSAL_BR,
    )


@pytest.mark.parametrize(
    "dims",
    [
        "((16, 16, 559, 64), (16, 16",
        "__import__('os').system('touch /tmp/sdpa_pwned_dims')",
        "((16, 'a', 559, 64), (16, 16, 559, 64), (16, 16, 559, 64), (), (), (), ())",
        "'just a string'",
    ],
)
def test_unparseable_input_dims_reason(dims):
    p = parse_op(
        "aten::_scaled_dot_product_flash_attention", dims, None, "('', '', '', '0.', 'True', 'False', '')"
    )
    assert p.config is None and p.reason.startswith("unparseable Input Dims")


def test_eval_bait_in_concrete_inputs_and_perf_params():
    dims = "((1, 8, 141, 64), (1, 8, 141, 64), (1, 8, 141, 64), (), (), (), ())"
    types = "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')"
    bait = "__import__('os').system('touch /tmp/sdpa_pwned_ci')"
    p = parse_op("aten::_scaled_dot_product_flash_attention", dims, types, bait, bait)
    assert (
        p.config is None
        and "unparseable Concrete Inputs" in p.reason
        and "unparseable perf_params" in p.reason
    )


def test_wrong_kind_in_causal_slot_reason():
    dims = "((1, 8, 141, 64), (1, 8, 141, 64), (1, 8, 141, 64), (), (), (), ())"
    p = parse_op(
        "aten::_scaled_dot_product_flash_attention", dims, None, "('', '', '', '0.', '0.125', 'False', '')"
    )
    assert p.config is None and "slot 4 (is_causal) is '0.125'" in p.reason


def test_inconsistent_gqa_reason():
    # 12 query heads cannot share 5 KV heads
    p = parse(
        "aten::_scaled_dot_product_flash_attention",
        T(1, 12, 64, 64),
        T(1, 5, 64, 64),
        T(1, 5, 64, 64),
        S("0."),
        S("False"),
        S("False"),
        NA,
    )
    assert p.config is None and p.reason.startswith("inconsistent attention config: heads_kv=5")


def test_missing_input_type_reason():
    dims = "((1, 8, 141, 64), (1, 8, 141, 64), (1, 8, 141, 64), (), (), (), ())"
    p = parse_op(
        "aten::_scaled_dot_product_flash_attention", dims, None, "('', '', '', '0.', 'False', 'False', '')"
    )
    assert p.config is None and p.reason.startswith("missing Input type for q (slot 0)")


def test_autograd_nodes_take_perf_params():
    pp = {
        "B": 4,
        "N_Q": 1024,
        "H_Q": 16,
        "N_KV": 2048,
        "H_KV": 16,
        "d_h_qk": 64,
        "d_h_v": 64,
        "dropout": 0.0,
        "causal": True,
        "dtype_A_B": ("c10::Half", "c10::Half"),
    }
    eff = parse_op("ScaledDotProductEfficientAttentionBackward0", None, None, None, pp)
    flash = parse_op("ScaledDotProductFlashAttentionBackward0", None, None, None, pp)
    # causal with Nq=1024 < Nkv=2048: efficient is top-left, aten flash bottom-right
    assert eff.config.mask == CAUSAL_TL and flash.config.mask == CAUSAL_BR
    assert eff.config.direction is Direction.BWD and eff.source is Source.PERF_PARAMS
    assert eff.attention_type is AttentionType.MEMORY_EFFICIENT
    no_pp = parse_op("ScaledDotProductCudnnAttentionBackward0", None, None, None)
    assert no_pp.config is None and "perf_params" in no_pp.reason


def test_string_cells_are_cached_and_identical():
    dims = "((1, 8, 141, 64), (1, 8, 141, 64), (1, 8, 141, 64), (), (), (), ())"
    types = "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')"
    conc = "('', '', '', '0.', 'False', 'False', '0.125')"
    a = parse_op("aten::_scaled_dot_product_flash_attention", dims, types, conc)
    b = parse_op("aten::_scaled_dot_product_flash_attention", dims, types, conc)
    assert a is b and a.config.batch == 1


def test_perf_params_written_by_the_trace_reader():
    # The trace reader's perf_params (server/ingest/models.py perf_params_from_config) state the alignment,
    # window and varlen totals explicitly; they take precedence over the node's default rule.
    pp = {
        "B": 4,
        "N_Q": 1500,
        "H_Q": 16,
        "N_KV": 1500,
        "H_KV": 16,
        "d_h_qk": 64,
        "d_h_v": 64,
        "dropout": 0.0,
        "causal": True,
        "dtype_A_B": ("c10::BFloat16", "c10::BFloat16"),
        "causal_alignment": "top_left",
        "varlen": True,
        "num_seqs": 4,
        "max_seqlen_q": 1500,
        "max_seqlen_kv": 1500,
        "total_q": 3000,
        "total_kv": 3000,
    }
    p = parse_op("FlashAttnVarlenFuncBackward", None, None, None, pp)
    assert p.config.mask == CAUSAL_TL  # stated, although flash-attn's own rule is bottom-right
    assert p.config.varlen == VarlenInfo(3000, 3000, 4, 1500, 1500)
    no_totals = {k: v for k, v in pp.items() if not k.startswith("total")}
    p2 = parse_op("FlashAttnVarlenFuncBackward", None, None, None, no_totals)
    assert p2.config.varlen is None and any("padded batch" in w for w in p2.warnings)
    win = parse_op(
        "FlashAttnFuncBackward",
        None,
        None,
        None,
        {**pp, "varlen": False, "causal": False, "window_size": (128, 0)},
    )
    assert win.config.mask == Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, 128, 0)


def test_blank_concrete_inputs_reason_and_tensor_list_slot():
    # A trace that records '' for every scalar: the causal flag is missing, and the reason says which.
    q = T(1, 8, 128, 64)
    p = parse("aten::_scaled_dot_product_flash_attention", q, q, q, NA, NA, NA, NA)
    assert p.config is None
    assert p.reason.startswith("missing Concrete Inputs for causal flag 'is_causal' (slot 4 is empty)")
    # a Tensor[] argument somewhere in Input Dims (a list of shapes) does not break the row
    lst = ([[1, 2], [3, 4]], "TensorList", "")
    ok = parse("aten::_scaled_dot_product_flash_attention", q, q, q, S("0."), S("False"), S("False"), lst)
    assert ok.config is not None and ok.config.seq_q == 128
