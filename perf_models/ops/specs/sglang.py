"""SGLang's profiler wrappers (`sglang_profiler::<module>_<function>_<n>`): kernel entry points SGLang re-registers as
torch custom ops while it profiles, so that they appear as `cpu_op` events with shapes.

How the wrapper records (sgl-project/sglang python/sglang/srt/utils/kernel_shape_profiler.py): the op is named
`<last module segment>_<function name>_<counter>` (`attention_paged_attention_ragged_100` is
`aiter.ops.attention.paged_attention_ragged`; `mha__mha_batch_prefill_12` is `aiter.ops.mha._mha_batch_prefill`);
its schema holds only the function's tensor(-annotated) parameters, in signature order, and every non-tensor
argument (scale, block_size, is_causal, kv_cache_layout, ...) is stashed outside the op, so the trace never shows
it. A wrapper around an op that is itself recorded (aiter's `mha_batch_prefill`, with its Concrete Inputs) is a
dispatcher: the inner op is the row. Registered here by the name without the counter (`numbered`).
"""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

SGLANG = "sglang"
_PROFILER = "sgl-project/sglang python/sglang/srt/utils/kernel_shape_profiler.py (tensor arguments only)"
_TENSORS_ONLY = (
    "the sglang_profiler wrapper records tensor arguments only: is_causal, the scale and the window are not "
    "in the trace"
)

SPECS: list[OpSpec] = []

# aiter.ops.mha._mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, max_seqlen_q, max_seqlen_k,
#   dropout_p, softmax_scale, causal, logits_soft_cap=0.0, window_size_left=-1, window_size_right=-1,
#   alibi_slopes: Optional[Tensor]=None, return_lse=False, return_softmax=False, zero_tensors=False,
#   out: Tensor=None)                                                         (ROCm/aiter aiter/ops/mha.py)
# recorded tensors: q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, alibi_slopes, out. It calls
# aiter::mha_batch_prefill, whose Concrete Inputs hold is_causal: that inner op is the row.
SPECS += op_specs(
    ("sglang_profiler::mha__mha_batch_prefill",),
    family=SGLANG,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    wrapper=True,
    numbered=True,
    signatures=(
        Signature(
            "sglang profiler wrapper",
            "mha__mha_batch_prefill(q, k, v, cu_seqlens_q, kv_indptr, kv_page_indices, alibi_slopes, out)",
            _PROFILER,
            (6, 8),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            kv_indptr=4,
            out=7,
            paged_cache=True,
            tensors_only=_TENSORS_ONLY,
        ),
    ),
)
# aiter.ops.attention.paged_attention_ragged(out, workspace_buffer, query, key_cache, value_cache, scale,
#   kv_indptr, kv_page_indices, kv_last_page_lens, block_size, max_num_partitions, alibi_slopes, kv_cache_dtype,
#   kv_cache_layout, logits_soft_cap, k_scale, v_scale, fp8_out_scale=None, partition_size=256, mtp=1)
#                                                                           (ROCm/aiter aiter/ops/attention.py)
# recorded tensors: out, workspace_buffer, query, key_cache, value_cache, kv_indptr, kv_page_indices,
# kv_last_page_lens, alibi_slopes, k_scale, v_scale, fp8_out_scale (12, as the real capture trace shows:
# [[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128], [33], [20971520],
# [4096], [], [1], [1], []]). SGLang's aiter backend passes the caches as k_cache.view(-1, 1, Hkv, d) with
# kv_cache_layout "NHD" and block_size 1 (srt/layers/attention/aiter_backend.py): Hkv is dims[2]. A decode
# request has one query token (mtp = 1), for which the causal mask changes nothing.
SPECS += op_specs(
    ("sglang_profiler::attention_paged_attention_ragged",),
    family=SGLANG,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    numbered=True,
    signatures=(
        Signature(
            "sglang profiler wrapper",
            "attention_paged_attention_ragged(out, workspace_buffer, query, key_cache, value_cache, kv_indptr, "
            "kv_page_indices, kv_last_page_lens, alibi_slopes, k_scale, v_scale, fp8_out_scale)",
            _PROFILER,
            (8, 12),
            q=2,
            k=3,
            v=4,
            out=0,
            kv_indptr=5,
            paged_cache=True,
            dropout_required=False,
        ),
    ),
)
