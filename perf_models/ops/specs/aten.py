"""PyTorch aten ops: the SDPA dispatcher and its backends (flash, mem-efficient, cuDNN, math) with their
backwards, and the `_flash_attention_*` / `_efficient_attention_*` primitives below them."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import BWD, FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

# family names (ParsedOp.family)
SDPA = "aten_sdpa"  # the dispatcher: aten::scaled_dot_product_attention
SDPA_FLASH = "aten_sdpa_flash"
SDPA_EFFICIENT = "aten_sdpa_efficient"
SDPA_CUDNN = "aten_sdpa_cudnn"
SDPA_MATH = "aten_sdpa_math"
ATEN_FLASH = "aten_flash"  # aten::_flash_attention_{forward,backward}
ATEN_EFFICIENT = "aten_efficient"  # aten::_efficient_attention_{forward,backward}

_PT_YAML = "pytorch aten/src/ATen/native/native_functions.yaml (schemas as printed by torch._C op schemas)"

SPECS: list[OpSpec] = []

# --- aten SDPA (BHND) -------------------------------------------------------------------------------
# scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
#   float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False)
# Dispatcher: the backend op below it (flash / efficient / cudnn / math) decides the kernel.
# Real rows: traces h100/*, mi300/* ('', '', '', '', '0.', 'True', '0.125', 'False').
SPECS += op_specs(
    ("aten::scaled_dot_product_attention",),
    family=SDPA,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.UNKNOWN,
    causal_rule=CausalRule.TOP_LEFT,  # is_causal is documented as the top-left tril mask
    signatures=(
        Signature(
            "PyTorch >= 2.1 (enable_gqa from 2.5)",
            "scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0., "
            "is_causal=False, *, scale=None, enable_gqa=False)",
            _PT_YAML,
            (6, 8),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=4,
            causal=5,
            causal_name="is_causal",
            scale=6,
        ),
    ),
    note="dispatcher op; the attention type is that of the backend op/kernels below it",
)
# _scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0.,
#   bool is_causal=False, bool return_debug_mask=False, *, float? scale=None)
# Real rows: every h100/mi300 trace, ('', '', '', '0.', 'True', 'False', '0.125').
SPECS += op_specs(
    ("aten::_scaled_dot_product_flash_attention",),
    family=SDPA_FLASH,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    # PyTorch sends causal with Nq != Nkv to flash only as causal_lower_right (bottom-right); for
    # Nq == Nkv both alignments keep the same pairs.
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_flash_attention(query, key, value, dropout_p=0., is_causal=False, "
            "return_debug_mask=False, *, scale=None)",
            _PT_YAML,
            (6, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            causal=4,
            causal_name="is_causal",
            scale=6,
        ),
    ),
)
# _scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value,
#   Tensor out, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k,
#   float dropout_p, bool is_causal, Tensor philox_seed, Tensor philox_offset, *, float? scale=None)
SPECS += op_specs(
    ("aten::_scaled_dot_product_flash_attention_backward",),
    family=SDPA_FLASH,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, "
            "logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, "
            "philox_offset, *, scale=None)",
            _PT_YAML,
            (14, 15),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=10,
            causal=11,
            causal_name="is_causal",
            scale=14,
        ),
    ),
)
# _scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value,
#   float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None)
# _scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key,
#   Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *,
#   Tensor? attn_mask=None, float? scale=None)
SPECS += op_specs(
    ("aten::_scaled_dot_product_flash_attention_for_cpu",),
    family=SDPA_FLASH,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.2",
            "_scaled_dot_product_flash_attention_for_cpu(query, key, value, "
            "dropout_p=0., is_causal=False, *, attn_mask=None, scale=None)",
            _PT_YAML,
            (5, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            causal=4,
            causal_name="is_causal",
            attn_mask=5,
            scale=6,
        ),
    ),
)
SPECS += op_specs(
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward",),
    family=SDPA_FLASH,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.2",
            "_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, "
            "query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, "
            "scale=None)",
            _PT_YAML,
            (8, 10),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=6,
            causal=7,
            causal_name="is_causal",
            attn_mask=8,
            scale=9,
        ),
    ),
)
# _scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias,
#   bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None)
# 2.0: _scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value,
#   bool compute_log_sumexp, bool is_causal=False, *, float? scale=None)
SPECS += op_specs(
    ("aten::_scaled_dot_product_efficient_attention",),
    family=SDPA_EFFICIENT,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_efficient_attention(query, key, value, attn_bias, "
            "compute_log_sumexp, dropout_p=0., is_causal=False, *, scale=None)",
            _PT_YAML,
            (7, 8),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=5,
            causal=6,
            causal_name="is_causal",
            scale=7,
        ),
        Signature(
            "PyTorch 2.0",
            "_scaled_dot_product_efficient_attention(query, key, value, "
            "compute_log_sumexp, is_causal=False, *, scale=None)",
            "pytorch 2.0 JIT shape-analysis schema string",
            (5, 6),
            q=0,
            k=1,
            v=2,
            causal=4,
            causal_name="is_causal",
            scale=5,
            dropout_required=False,
        ),
    ),
)
# _scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key,
#   Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed,
#   Tensor philox_offset, float dropout_p, bool[4] grad_input_mask, bool is_causal=False, *,
#   float? scale=None)
SPECS += op_specs(
    ("aten::_scaled_dot_product_efficient_attention_backward",),
    family=SDPA_EFFICIENT,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_efficient_attention_backward(grad_out_, query, "
            "key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p, "
            "grad_input_mask, is_causal=False, *, scale=None)",
            _PT_YAML,
            (12, 13),
            dout=0,
            q=1,
            k=2,
            v=3,
            attn_mask=4,
            out=5,
            dropout=9,
            causal=11,
            causal_name="is_causal",
            scale=12,
        ),
    ),
)
# _scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias,
#   bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, bool return_debug_mask=False,
#   *, float? scale=None)            (PyTorch >= 2.5)
# 2.3/2.4: _scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value,
#   float dropout_p=0., bool is_causal=False, bool return_debug_mask=False, *, float? scale=None)
SPECS += op_specs(
    ("aten::_scaled_dot_product_cudnn_attention",),
    family=SDPA_CUDNN,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.CUDNN,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.5",
            "_scaled_dot_product_cudnn_attention(query, key, value, attn_bias, "
            "compute_log_sumexp, dropout_p=0., is_causal=False, return_debug_mask=False, *, "
            "scale=None)",
            _PT_YAML,
            (8, 9),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=5,
            causal=6,
            causal_name="is_causal",
            scale=8,
        ),
        Signature(
            "PyTorch 2.3-2.4",
            "_scaled_dot_product_cudnn_attention(query, key, value, dropout_p=0., "
            "is_causal=False, return_debug_mask=False, *, scale=None)",
            _PT_YAML,
            (6, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            causal=4,
            causal_name="is_causal",
            scale=6,
        ),
    ),
)
# _scaled_dot_product_cudnn_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value,
#   Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, Tensor attn_bias,
#   Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal,
#   *, float? scale=None)
SPECS += op_specs(
    ("aten::_scaled_dot_product_cudnn_attention_backward",),
    family=SDPA_CUDNN,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.CUDNN,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.5",
            "_scaled_dot_product_cudnn_attention_backward(grad_out, query, key, "
            "value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, "
            "max_q, max_k, dropout_p, is_causal, *, scale=None)",
            _PT_YAML,
            (15, 16),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            attn_mask=8,
            dropout=13,
            causal=14,
            causal_name="is_causal",
            scale=15,
        ),
    ),
)
# _scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
#   float dropout_p=0., bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None,
#   bool enable_gqa=False)
SPECS += op_specs(
    ("aten::_scaled_dot_product_attention_math",),
    family=SDPA_MATH,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.MATH,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.0",
            "_scaled_dot_product_attention_math(query, key, value, attn_mask=None, "
            "dropout_p=0., is_causal=False, dropout_mask=None, *, scale=None, enable_gqa=False)",
            _PT_YAML,
            (6, 9),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=4,
            causal=5,
            causal_name="is_causal",
            scale=7,
        ),
    ),
)

# --- aten flash / mem-efficient primitives (BNHD; THD when cu_seqlens are given) -------------------
# _flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, Tensor? cum_seq_k,
#   SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, bool return_debug_mask, *,
#   float? scale=None, SymInt? window_size_left=None, SymInt? window_size_right=None,
#   Tensor? seqused_k=None, Tensor? alibi_slopes=None)
# (2.1-2.4 end after `scale`: same slots.) Real rows: every h100/mi300 trace (15 args).
SPECS += op_specs(
    ("aten::_flash_attention_forward",),
    family=ATEN_FLASH,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, "
            "max_k, dropout_p, is_causal, return_debug_mask, *, scale=None, window_size_left=None, "
            "window_size_right=None, seqused_k=None, alibi_slopes=None)",
            _PT_YAML,
            (10, 15),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            causal=8,
            causal_name="is_causal",
            scale=10,
            window_left=11,
            window_right=12,
        ),
    ),
)
# _flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out,
#   Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p,
#   bool is_causal, Tensor rng_state, Tensor unused, *, float? scale=None,
#   SymInt? window_size_left=None, SymInt? window_size_right=None)
SPECS += op_specs(
    ("aten::_flash_attention_backward",),
    family=ATEN_FLASH,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_flash_attention_backward(grad_out, query, key, value, out, logsumexp, "
            "cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, rng_state, unused, *, "
            "scale=None, window_size_left=None, window_size_right=None)",
            _PT_YAML,
            (14, 17),
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
            causal=11,
            causal_name="is_causal",
            scale=14,
            window_left=15,
            window_right=16,
        ),
    ),
)
# _efficient_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? bias,
#   Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt? max_seqlen_q, SymInt? max_seqlen_k,
#   float dropout_p, int custom_mask_type, bool compute_log_sumexp=False, *, float? scale=None,
#   Tensor? seqlen_k=None, int? window_size=None)                         (PyTorch >= 2.2)
# 2.1: (query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, dropout_p, custom_mask_type,
#   compute_log_sumexp=False, *, scale=None, causal_diagonal=None, seqlen_k=None)
#   (torch/_meta_registrations.py meta__efficient_attention_forward)
# q is [B, M, H, K] (BNHD): the seed PR found heads and sequence swapped when read as BHND.
SPECS += op_specs(
    ("aten::_efficient_attention_forward",),
    family=ATEN_EFFICIENT,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.FROM_MASK_TYPE,
    signatures=(
        Signature(
            "PyTorch >= 2.2",
            "_efficient_attention_forward(query, key, value, bias, cu_seqlens_q, "
            "cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, "
            "compute_log_sumexp=False, *, scale=None, seqlen_k=None, window_size=None)",
            _PT_YAML,
            (10, 14),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            cu_seqlens_q=4,
            cu_seqlens_k=5,
            max_seqlen_q=6,
            max_seqlen_k=7,
            dropout=8,
            custom_mask_type=9,
            scale=11,
            efficient_window=13,
        ),
        Signature(
            "PyTorch 2.1",
            "_efficient_attention_forward(query, key, value, bias, cu_seqlens_q, "
            "cu_seqlens_k, max_seqlen_q, dropout_p, custom_mask_type, compute_log_sumexp=False, *, "
            "scale=None, causal_diagonal=None, seqlen_k=None)",
            "pytorch 2.1 torch/_meta_registrations.py",
            (9, 13),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            cu_seqlens_q=4,
            cu_seqlens_k=5,
            max_seqlen_q=6,
            dropout=7,
            custom_mask_type=8,
            scale=10,
        ),
    ),
)
# _efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor? bias,
#   Tensor out, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k,
#   Tensor logsumexp, float dropout_p, Tensor philox_seed, Tensor philox_offset, int custom_mask_type,
#   bool bias_requires_grad, *, float? scale=None, int? num_splits_key=None, int? window_size=None,
#   bool shared_storage_dqdkdv=False)
SPECS += op_specs(
    ("aten::_efficient_attention_backward",),
    family=ATEN_EFFICIENT,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.FROM_MASK_TYPE,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_efficient_attention_backward(grad_out_, query, key, value, bias, out, "
            "cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, "
            "philox_seed, philox_offset, custom_mask_type, bias_requires_grad, *, scale=None, "
            "num_splits_key=None, window_size=None, shared_storage_dqdkdv=False)",
            _PT_YAML,
            (16, 20),
            dout=0,
            q=1,
            k=2,
            v=3,
            attn_mask=4,
            out=5,
            cu_seqlens_q=6,
            cu_seqlens_k=7,
            max_seqlen_q=8,
            max_seqlen_k=9,
            dropout=11,
            custom_mask_type=14,
            scale=16,
            efficient_window=18,
        ),
    ),
)
