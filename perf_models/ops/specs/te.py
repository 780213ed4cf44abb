"""NVIDIA TransformerEngine fused attention (`FusedAttnFunc`)."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

# family name (ParsedOp.family)
TRANSFORMER_ENGINE = "transformer_engine"

_TE = "NVIDIA/TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/backends.py"

SPECS: list[OpSpec] = []

# --- TransformerEngine fused attention (SBHD by default; qkv_layout string decides) ----------------
# FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv,
#   cu_seqlens_q_padded, cu_seqlens_kv_padded, page_table_k, page_table_v, q, k, v, attn_bias,
#   attn_scale, dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, attn_mask_type,
#   [softmax_type,] window_size, rng_gen, fused_attention_backend, use_FAv2_bwd, fp8, fp8_meta,
#   quantizers, deterministic, ...)
SPECS += op_specs(
    ("FusedAttnFunc",),
    family=TRANSFORMER_ENGINE,
    direction=FWD,
    layout=Layout.SBHD,
    attention_type=AttentionType.CUDNN,
    causal_rule=CausalRule.FROM_MASK_TYPE,
    signatures=(
        Signature(
            "TransformerEngine 2.x",
            "FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, "
            "max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv, cu_seqlens_q_padded, cu_seqlens_kv_padded, "
            "page_table_k, page_table_v, q, k, v, attn_bias, attn_scale, dropout_p, fast_zero_fill, "
            "qkv_layout, attn_bias_type, attn_mask_type, [softmax_type,] window_size, ...)",
            _TE,
            (20, 40),
            q=9,
            k=10,
            v=11,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=1,
            max_seqlen_k=2,
            attn_mask=12,
            scale=13,
            dropout=14,
            qkv_layout_str=16,
            mask_type_str=18,
        ),
        # TransformerEngine 1.x (before the padded cu_seqlens and page tables): FusedAttnFunc.forward(ctx,
        #   is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv, q, k, v, qkv_dtype, attn_bias,
        #   attn_scale, dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, attn_mask_type, [window_size,]
        #   rng_gen, fused_attention_backend, use_FAv2_bwd)   (transformer_engine/pytorch/attention.py, TE 1.x)
        Signature(
            "TransformerEngine 1.x",
            "FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv, "
            "q, k, v, qkv_dtype, attn_bias, attn_scale, dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, "
            "attn_mask_type, [window_size,] rng_gen, fused_attention_backend, use_FAv2_bwd)",
            "NVIDIA/TransformerEngine transformer_engine/pytorch/attention.py (TE 1.x)",
            (16, 24),
            q=5,
            k=6,
            v=7,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=1,
            max_seqlen_k=2,
            attn_mask=9,
            scale=10,
            dropout=11,
            qkv_layout_str=13,
            mask_type_str=15,
        ),
    ),
    note="FusedAttention (cuDNN on NVIDIA, CK/AOTriton on ROCm); the window slot moves between versions",
)
