"""ROCm aiter attention ops (CK tile / asm v3 kernels): dense and varlen forwards and backwards."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import BWD, FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

# family name (ParsedOp.family)
AITER = "aiter"

# where the signatures below were checked (flash_attn.py quotes it for aiter's FlashAttnFunc too)
AITER_MHA = "ROCm/aiter aiter/ops/mha.py"

SPECS: list[OpSpec] = []

# --- aiter (ROCm, CK tile / asm v3 kernels; BNHD / THD) -----------------------------------------------
# _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
#   [sink_size,] bias, alibi_slopes, [q/k/v_descale,] return_lse, return_softmax, ...)
# mha_fwd / fmha_v3_fwd(q, k, v, dropout_p, softmax_scale, is_causal, window_size_left,
#   window_size_right, [sink_size,] return_softmax_lse, return_dropout_randval, ...)
# The first eight slots are the same in every aiter version inspected (2024 .. 2026).
_AITER_FWD = Signature(
    "aiter 2024-2026",
    "(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right, ...)",
    AITER_MHA,
    (8, 40),
    q=0,
    k=1,
    v=2,
    dropout=3,
    scale=4,
    causal=5,
    window_left=6,
    window_right=7,
)
SPECS += op_specs(
    ("aiter::_flash_attn_forward", "aiter::mha_fwd", "aiter::fmha_v3_fwd"),
    family=AITER,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(_AITER_FWD,),
)
# _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dbias, dropout_p, softmax_scale,
#   causal, window_size_left, window_size_right, bias, alibi_slopes, deterministic, rng_state, ...)
#   (2025+; the 2024 version has no dbias: dropout_p is slot 9, causal slot 11)
SPECS += op_specs(
    ("aiter::_flash_attn_backward",),
    family=AITER,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2025+",
            "_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dbias, "
            "dropout_p, softmax_scale, causal, window_size_left, window_size_right, bias, "
            "alibi_slopes, deterministic, rng_state=None, ...)",
            AITER_MHA,
            (15, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=10,
            scale=11,
            causal=12,
            window_left=13,
            window_right=14,
        ),
        Signature(
            "aiter 2024",
            "_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, "
            "dropout_p, softmax_scale, causal, window_size_left, window_size_right, alibi_slopes, "
            "deterministic, rng_state=None)",
            AITER_MHA,
            (14, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=9,
            scale=10,
            causal=11,
            window_left=12,
            window_right=13,
        ),
    ),
)
# mha_bwd / fmha_v3_bwd(dout, q, k, v, out, softmax_lse, dropout_p, softmax_scale, is_causal,
#   window_size_left, window_size_right, deterministic, ...)
SPECS += op_specs(
    ("aiter::mha_bwd", "aiter::fmha_v3_bwd"),
    family=AITER,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2024-2026",
            "mha_bwd(dout, q, k, v, out, softmax_lse, dropout_p, softmax_scale, "
            "is_causal, window_size_left, window_size_right, deterministic, ...)",
            AITER_MHA,
            (11, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=6,
            scale=7,
            causal=8,
            causal_name="is_causal",
            window_left=9,
            window_right=10,
        ),
    ),
)
# mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, min_seqlen_q,
#   dropout_p, softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left,
#   window_size_right, ...)                                     (2025+, fmha_v3_varlen_fwd the same)
# 2024: mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
#   softmax_scale, zero_tensors, is_causal, window_size_left, window_size_right, ...)
SPECS += op_specs(
    ("aiter::mha_varlen_fwd", "aiter::fmha_v3_varlen_fwd"),
    family=AITER,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2025+",
            "mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
            "max_seqlen_k, min_seqlen_q, dropout_p, softmax_scale, logits_soft_cap, zero_tensors, "
            "is_causal, window_size_left, window_size_right, ...)",
            AITER_MHA,
            (15, 40),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=8,
            scale=9,
            causal=12,
            causal_name="is_causal",
            window_left=13,
            window_right=14,
        ),
        Signature(
            "aiter 2024",
            "mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
            "max_seqlen_k, dropout_p, softmax_scale, zero_tensors, is_causal, window_size_left, "
            "window_size_right, ...)",
            AITER_MHA,
            (13, 40),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            scale=8,
            causal=10,
            causal_name="is_causal",
            window_left=11,
            window_right=12,
        ),
    ),
)
# mha_varlen_bwd / fmha_v3_varlen_bwd(dout, q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k,
#   max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, zero_tensors, is_causal, window_size_left,
#   window_size_right, deterministic, ...)
SPECS += op_specs(
    ("aiter::mha_varlen_bwd", "aiter::fmha_v3_varlen_bwd"),
    family=AITER,
    direction=BWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2024-2026",
            "mha_varlen_bwd(dout, q, k, v, out, softmax_lse, cu_seqlens_q, "
            "cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, zero_tensors, "
            "is_causal, window_size_left, window_size_right, deterministic, ...)",
            AITER_MHA,
            (16, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=6,
            cu_seqlens_k=7,
            max_seqlen_q=8,
            max_seqlen_k=9,
            dropout=10,
            scale=11,
            causal=13,
            causal_name="is_causal",
            window_left=14,
            window_right=15,
        ),
    ),
)
# _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, cu_seqlens_q_padded,
#   cu_seqlens_k_padded, max_seqlen_q, max_seqlen_k, min_seqlen_q, dropout_p, softmax_scale, causal,
#   logits_soft_cap=0.0, window_size_left=-1, window_size_right=-1, ...)        (aiter 2026)
SPECS += op_specs(
    ("aiter::_flash_attn_varlen_forward",),
    family=AITER,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2026",
            "_flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, "
            "cu_seqlens_q_padded, cu_seqlens_k_padded, max_seqlen_q, max_seqlen_k, min_seqlen_q, "
            "dropout_p, softmax_scale, causal, logits_soft_cap=0.0, window_size_left=-1, "
            "window_size_right=-1, ...)",
            AITER_MHA,
            (13, 40),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=7,
            max_seqlen_k=8,
            dropout=10,
            scale=11,
            causal=12,
            window_left=14,
            window_right=15,
        ),
    ),
)
# _fmha_fwd_bf16_opus_fwd(q, k, v, out, causal, softmax_scale, lse=None, seqstart_q=None, seqstart_k=None,
#   seqstart_q_pad=None, seqstart_k_pad=None, max_seqlen_q=0, max_seqlen_k=0)   (aiter 2026, gfx950 OPUS;
#   compile_ops fc_name "fmha_fwd_bf16_opus_fwd"): dense bshd [B, S, H, D], or packed [total, H, D] with
#   seqstart_q / seqstart_k (the varlen entry point) — cu_seqlens given makes the row varlen.
SPECS += op_specs(
    ("aiter::fmha_fwd_bf16_opus_fwd",),
    family=AITER,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2026 (OPUS)",
            "_fmha_fwd_bf16_opus_fwd(q, k, v, out, causal, softmax_scale, lse=None, seqstart_q=None, "
            "seqstart_k=None, seqstart_q_pad=None, seqstart_k_pad=None, max_seqlen_q=0, max_seqlen_k=0)",
            AITER_MHA,
            (6, 13),
            q=0,
            k=1,
            v=2,
            out=3,
            causal=4,
            scale=5,
            cu_seqlens_q=7,
            cu_seqlens_k=8,
            max_seqlen_q=11,
            max_seqlen_k=12,
        ),
    ),
)
# mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, max_seqlen_q, max_seqlen_k, dropout_p,
#   softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left, window_size_right,
#   [sink_size,] return_softmax_lse, return_dropout_randval, out=None, alibi_slopes=None, gen=None)
#   (aiter/ops/mha.py `@compile_ops("module_mha_batch_prefill", fc_name="mha_batch_prefill")`, and
#   csrc/py_itfs_ck/mha_batch_prefill_kernels.cu; sink_size appears in 2026 builds, after the window: the slots
#   read here are the same in both). q is packed (total_q, Hq, d); k / v are the paged cache: (total_k, Hkv, d),
#   (page_num, page_size, Hkv, d) or the vectorized (num_blocks, Hkv, d/8, block_size, 8) /
#   (num_blocks, Hkv, block_size/8, d, 8). The cache's slot count is not the step's key count: the keys of the
#   step come from the step annotation (SGLang's execute_..._context_...), or from max_seqlen_k as a bound.
SPECS += op_specs(
    ("aiter::mha_batch_prefill",),
    family=AITER,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2025-2026",
            "mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, max_seqlen_q, max_seqlen_k, "
            "dropout_p, softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left, "
            "window_size_right, [sink_size,] return_softmax_lse, return_dropout_randval, out=None, "
            "alibi_slopes=None, gen=None)",
            AITER_MHA + " (mha_batch_prefill)",
            (15, 24),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            kv_indptr=4,
            max_seqlen_q=6,
            max_seqlen_k=7,
            dropout=8,
            scale=9,
            causal=12,
            causal_name="is_causal",
            window_left=13,
            window_right=14,
            paged_cache=True,
        ),
    ),
)
