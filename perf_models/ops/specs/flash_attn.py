"""Dao-AILab flash-attn 2.x torch custom ops (dense and varlen), and the `FlashAttnFunc` /
`FlashAttnVarlenFunc` autograd wrappers that flash-attn 2, aiter and FlashAttention-3 all record."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.aiter import AITER_MHA
from sdpa_analyzer.perf_models.ops.specs.base import BWD, FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.specs.fa3 import FLASH_ATTN_3, FLASH_ATTN_4
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

# family name (ParsedOp.family)
FLASH_ATTN = "flash_attn"  # Dao-AILab flash-attn 2.x (and aiter's look-alike autograd wrapper)

_FA_IFACE = "Dao-AILab/flash-attention flash_attn/flash_attn_interface.py"
_FA3_IFACE = "Dao-AILab/flash-attention hopper/flash_attn_interface.py"
_FA4_IFACE = "Dao-AILab/flash-attention flash_attn/cute/interface.py @004b1a2e (FlashAttention-4, CuTe DSL)"

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
# Autograd wrappers (recorded by the profiler under the Function's class name; ctx not recorded). Every version
# seen, newest first within each library (a row takes the first whose slots hold their roles, ops.choice):
# flash-attn >= 2.3 FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size,
#   [softcap,] alibi_slopes, deterministic, return_softmax[, is_grad_enabled])    (flash_attn_interface.py @0053002)
# aiter FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size, alibi_slopes,
#   deterministic, return_lse, return_softmax, is_grad_enabled)  -> same slots
#     (ROCm/aiter aiter/ops/mha.py @00472f7d)
# flash-attn 2.0-2.2 FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, return_softmax)
#   (no window: slot 6 is the return_softmax bool)                                 (flash_attn_interface.py, v2.0-v2.2)
# flash-attn 1.x FlashAttnFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
#   dropout_p, softmax_scale, causal, return_softmax): the 1.x "FlashAttnFunc" is varlen (packed tokens)
#                                                                                   (flash_attn_interface.py @88c4e5db)
# FA3 FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, qv=None, q_descale=None, k_descale=None,
#   v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, num_splits=1, pack_gqa=None,
#   deterministic=False, sm_margin=0, return_attn_probs=False)
#     (hopper/flash_attn_interface.py @c082294e)
# FA3 late 2024 FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, q_descale=None, k_descale=None,
#   v_descale=None, window_size=(-1, -1), sink_token_length=0, softcap=0.0, num_splits=1, pack_gqa=None,
#   deterministic=False)
#     (no qv: the window is slot 8)                            (hopper/flash_attn_interface.py, 2024)
# FA4 FlashAttnFunc.apply(q, k, v, softmax_scale, causal, window_size=(None, None), learnable_sink, softcap,
#   num_splits, pack_gqa, deterministic, mask_mod, full_block_cnt, full_block_idx, mask_block_cnt, mask_block_idx,
#   block_size, return_lse)  (window in slot 5, where FA3 has its qv tensor; None edges are "no limit")
#     (flash_attn/cute/interface.py @004b1a2e)
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
            "flash-attn 2.0-2.2",
            "FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, return_softmax)",
            f"{_FA_IFACE} (v2.0-v2.2)",
            (6, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            scale=4,
            causal=5,
        ),
        Signature(
            "flash-attn 1.x (varlen)",
            "FlashAttnFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, "
            "dropout_p, softmax_scale, causal, return_softmax)",
            f"{_FA_IFACE} @88c4e5db (flash-attn 1.x)",
            (10, 11),
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
        ),
        Signature(
            "FlashAttention-3 (hopper)",
            "FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, "
            "qv=None, q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), ...)",
            f"{_FA3_IFACE} @c082294e",
            (5, 20),
            q=0,
            k=1,
            v=2,
            scale=3,
            causal=4,
            window=9,
            tensor_slots=(5, 6, 7, 8),
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
        Signature(
            "FlashAttention-3 (hopper, late 2024)",
            "FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, q_descale=None, k_descale=None, "
            "v_descale=None, window_size=(-1, -1), sink_token_length=0, softcap=0.0, num_splits=1, pack_gqa=None, "
            "deterministic=False)",
            f"{_FA3_IFACE} (late-2024 version, before qv)",
            (5, 16),
            q=0,
            k=1,
            v=2,
            scale=3,
            causal=4,
            window=8,
            tensor_slots=(5, 6, 7),
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
        Signature(
            "FlashAttention-4 (cute)",
            "FlashAttnFunc.apply(q, k, v, softmax_scale, causal, window_size=(None, None), learnable_sink, softcap, "
            "num_splits, pack_gqa, deterministic, mask_mod, ...)",
            _FA4_IFACE,
            (5, 24),
            q=0,
            k=1,
            v=2,
            scale=3,
            causal=4,
            window=5,
            tensor_slots=(6,),
            family=FLASH_ATTN_4,
            dropout_required=False,
        ),
    ),
)
# flash-attn >= 2.3 FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
#   max_seqlen_k, dropout_p, softmax_scale, causal, window_size, [softcap,] alibi_slopes, deterministic,
#   return_softmax, block_table[, is_grad_enabled])                               (flash_attn_interface.py @0053002)
# flash-attn 2.0-2.2 FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
#   max_seqlen_k, dropout_p, softmax_scale, causal, return_softmax)              (flash_attn_interface.py, v2.0-v2.2)
# FA3 FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k,
#   max_seqlen_q, max_seqlen_k, softmax_scale, causal, qv=None, q_descale=None, k_descale=None,
#   v_descale=None, window_size=(-1, -1), ...)
#     (hopper/flash_attn_interface.py @c082294e)
# FA4 FlashAttnVarlenFunc.apply(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
#   max_seqlen_k, page_table, softmax_scale, causal, window_size, learnable_sink, softcap, ...)
#     (flash_attn/cute/interface.py @004b1a2e)
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
            "flash-attn 2.0-2.2",
            "FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, "
            "dropout_p, softmax_scale, causal, return_softmax)",
            f"{_FA_IFACE} (v2.0-v2.2)",
            (10, 11),
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
        ),
        Signature(
            "FlashAttention-3 (hopper)",
            "FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, "
            "cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal, "
            "qv=None, q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), ...)",
            f"{_FA3_IFACE} @c082294e",
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
            tensor_slots=(11, 12, 13, 14),
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
        Signature(
            "FlashAttention-4 (cute)",
            "FlashAttnVarlenFunc.apply(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, "
            "max_seqlen_k, page_table, softmax_scale, causal, window_size=(None, None), learnable_sink, softcap, ...)",
            _FA4_IFACE,
            (12, 30),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=7,
            max_seqlen_k=8,
            block_table=9,
            scale=10,
            causal=11,
            window=12,
            tensor_slots=(13,),
            family=FLASH_ATTN_4,
            dropout_required=False,
        ),
    ),
)
