"""Dao-AILab flash-attn 2.x torch custom ops (dense and varlen), and the `FlashAttnFunc` /
`FlashAttnVarlenFunc` autograd wrappers that flash-attn 2, aiter and FlashAttention-3 all record."""

from __future__ import annotations

from perf_models.ops.specs.aiter import AITER_MHA
from perf_models.ops.specs.base import BWD, FWD, OpSpec, Signature, op_specs
from perf_models.ops.specs.fa3 import FLASH_ATTN_3
from perf_models.ops.types import AttentionType, CausalRule, Layout

# family name (ParsedOp.family)
FLASH_ATTN = "flash_attn"  # Dao-AILab flash-attn 2.x (and aiter's look-alike autograd wrapper)

_FA_IFACE = "Dao-AILab/flash-attention flash_attn/flash_attn_interface.py"

SPECS: list[OpSpec] = []

# --- Dao-AILab flash-attn 2.x torch custom ops (BNHD / THD) ---------------------------------------
# _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
#   softcap, alibi_slopes, return_softmax)
# Real row: traces/synthetic ('', '', '', '0.0', '0.088…', 'False', '-1', '-1', '0.0', '', 'False').
# Registered as flash_attn:: (>= 2.7) and flashattn:: (2.6.x).
SPECS += op_specs(
    ("flash_attn::_flash_attn_forward", "flashattn::_flash_attn_forward"),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, "
            "window_size_left, window_size_right, softcap, alibi_slopes, return_softmax)",
            _FA_IFACE,
            (8, 11),
            q=0,
            k=1,
            v=2,
            dropout=3,
            scale=4,
            causal=5,
            window_left=6,
            window_right=7,
        ),
    ),
)
# _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
#   window_size_left, window_size_right, softcap, alibi_slopes, deterministic, rng_state=None)
# Slot 10 is softmax_scale (0.088…), slot 11 causal: the reference tool read slot 10 as causal.
SPECS += op_specs(
    ("flash_attn::_flash_attn_backward", "flashattn::_flash_attn_backward"),
    family=FLASH_ATTN,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, "
            "dropout_p, softmax_scale, causal, window_size_left, window_size_right, softcap, "
            "alibi_slopes, deterministic, rng_state=None)",
            _FA_IFACE,
            (14, 18),
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
# _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
#   dropout_p, softmax_scale, causal, window_size_left=-1, window_size_right=-1, softcap=0.0,
#   alibi_slopes=None, return_softmax=False, block_table=None, leftpad_k=None, seqused_k=None,
#   zero_tensors=False)
SPECS += op_specs(
    ("flash_attn::_flash_attn_varlen_forward", "flashattn::_flash_attn_varlen_forward"),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, "
            "max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size_left=-1, "
            "window_size_right=-1, softcap=0.0, alibi_slopes=None, return_softmax=False, "
            "block_table=None, leftpad_k=None, seqused_k=None, zero_tensors=False)",
            _FA_IFACE,
            (10, 19),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            scale=8,
            causal=9,
            window_left=10,
            window_right=11,
            block_table=15,
        ),
    ),
)
# _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
#   max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
#   softcap, alibi_slopes, deterministic, rng_state=None, zero_tensors=False)
SPECS += op_specs(
    ("flash_attn::_flash_attn_varlen_backward", "flashattn::_flash_attn_varlen_backward"),
    family=FLASH_ATTN,
    direction=BWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, "
            "dv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, "
            "causal, window_size_left, window_size_right, softcap, alibi_slopes, deterministic, "
            "rng_state=None, zero_tensors=False)",
            _FA_IFACE,
            (18, 23),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=9,
            cu_seqlens_k=10,
            max_seqlen_q=11,
            max_seqlen_k=12,
            dropout=13,
            scale=14,
            causal=15,
            window_left=16,
            window_right=17,
        ),
    ),
)
# Autograd wrappers (recorded by the profiler under the Function's class name; ctx not recorded).
# flash-attn 2.x FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size,
#   softcap, alibi_slopes, deterministic, return_softmax[, is_grad_enabled])
# aiter FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size, bias,
#   alibi_slopes, deterministic, return_lse, return_softmax, is_grad_enabled, ...)  -> same slots
# FA3 FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, qv=None, q_descale=None,
#   k_descale=None, v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, ...)
# Real row: traces/synthetic FlashAttnFunc ('', '', '', '0.0', '0.088…', 'False', '[-1, -1]', ...).
SPECS += op_specs(
    ("FlashAttnFunc",),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn 2.x / aiter",
            "FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, "
            "causal, window_size, softcap, alibi_slopes, deterministic, return_softmax, "
            "is_grad_enabled)",
            f"{_FA_IFACE}; {AITER_MHA}",
            (6, 20),
            q=0,
            k=1,
            v=2,
            dropout=3,
            scale=4,
            causal=5,
            window=6,
        ),
        Signature(
            "FlashAttention-3 (hopper)",
            "FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, "
            "qv=None, q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), ...)",
            "Dao-AILab/flash-attention hopper/flash_attn_interface.py",
            (5, 20),
            q=0,
            k=1,
            v=2,
            scale=3,
            causal=4,
            window=9,
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
    ),
)
# flash-attn 2.x FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
#   max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
#   return_softmax, block_table[, is_grad_enabled])
# FA3 FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k,
#   max_seqlen_q, max_seqlen_k, softmax_scale, causal, qv=None, q_descale=None, k_descale=None,
#   v_descale=None, window_size=(-1, -1), ...)
SPECS += op_specs(
    ("FlashAttnVarlenFunc",),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn 2.x",
            "FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, "
            "max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap, "
            "alibi_slopes, deterministic, return_softmax, block_table)",
            _FA_IFACE,
            (10, 20),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            scale=8,
            causal=9,
            window=10,
            block_table=15,
        ),
        Signature(
            "FlashAttention-3 (hopper)",
            "FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, "
            "cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal, "
            "qv=None, q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), ...)",
            "Dao-AILab/flash-attention hopper/flash_attn_interface.py",
            (11, 24),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=7,
            max_seqlen_k=8,
            scale=9,
            causal=10,
            window=15,
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
    ),
)
