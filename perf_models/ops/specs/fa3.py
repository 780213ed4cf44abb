"""FlashAttention-3 (hopper) torch ops `flash_attn_3::fwd` / `bwd`, and sglang's build of the same kernels."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import BWD, FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

# family name (ParsedOp.family)
FLASH_ATTN_3 = "flash_attn_3"
FLASH_ATTN_4 = "flash_attn_4"  # FlashAttention-4 (flash_attn.cute): autograd wrappers only, see flash_attn.py

_FA3_API = (
    "Dao-AILab/flash-attention hopper/flash_api.cpp TORCH_LIBRARY(flash_attn_3); hopper/flash_attn_interface"
)

SPECS: list[OpSpec] = []

# --- FlashAttention-3 (hopper) torch ops -------------------------------------------------------------
# flash_attn_3::fwd(Tensor q, Tensor k, Tensor v, Tensor? k_new, Tensor? v_new, Tensor? q_v, Tensor? out,
#   Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, Tensor? cu_seqlens_k_new, Tensor? seqused_q,
#   Tensor? seqused_k, int? max_seqlen_q, int? max_seqlen_k, Tensor? page_table, Tensor? kv_batch_idx,
#   Tensor? leftpad_k, Tensor? rotary_cos, Tensor? rotary_sin, Tensor? seqlens_rotary,
#   Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, float? softmax_scale, bool is_causal,
#   int window_size_left=-1, int window_size_right=-1, int attention_chunk=0, float softcap=0.0, ...)
# sgl_kernel::fwd is sglang's build of the same hopper/flash_api.cpp (sgl-attn fork): same schema.
SPECS += op_specs(
    ("flash_attn_3::fwd", "sgl_kernel::fwd"),
    family=FLASH_ATTN_3,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "FlashAttention-3",
            "fwd(q, k, v, k_new, v_new, q_v, out, cu_seqlens_q, cu_seqlens_k, "
            "cu_seqlens_k_new, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, page_table, "
            "kv_batch_idx, leftpad_k, rotary_cos, rotary_sin, seqlens_rotary, q_descale, k_descale, "
            "v_descale, softmax_scale, is_causal, window_size_left=-1, window_size_right=-1, "
            "attention_chunk=0, softcap=0.0, ...)",
            _FA3_API,
            (25, 40),
            q=0,
            k=1,
            v=2,
            out=6,
            cu_seqlens_q=7,
            cu_seqlens_k=8,
            max_seqlen_q=12,
            max_seqlen_k=13,
            block_table=14,
            scale=23,
            causal=24,
            causal_name="is_causal",
            window_left=25,
            window_right=26,
            dropout_required=False,
        ),
    ),
)
# flash_attn_3::bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor softmax_lse,
#   Tensor? dq, Tensor? dk, Tensor? dv, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, Tensor? seqused_q,
#   Tensor? seqused_k, int? max_seqlen_q, int? max_seqlen_k, float softmax_scale, bool is_causal,
#   int window_size_left=-1, int window_size_right=-1, float softcap=0.0, bool deterministic=False,
#   int sm_margin=0)
SPECS += op_specs(
    ("flash_attn_3::bwd",),
    family=FLASH_ATTN_3,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "FlashAttention-3",
            "bwd(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, "
            "cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, is_causal, "
            "window_size_left=-1, window_size_right=-1, softcap=0.0, deterministic=False, "
            "sm_margin=0)",
            _FA3_API,
            (17, 22),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=9,
            cu_seqlens_k=10,
            max_seqlen_q=13,
            max_seqlen_k=14,
            scale=15,
            causal=16,
            causal_name="is_causal",
            window_left=17,
            window_right=18,
            dropout_required=False,
        ),
    ),
)
