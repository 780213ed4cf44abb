"""FlashMLA's paged MLA decode (DeepSeek): q (B, s_q, Hq, d_qk), ONE latent cache (blocks, page, 1, d_qk) whose first
head_dim_v columns are V (perf_models.ops.mla). The context lengths (cache_seqlens) are a tensor whose values the
trace does not record: the step's token counts come from the serving engine's step annotation."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

FLASH_MLA = "flashmla"

_SGL = "sgl-project/sglang sgl-kernel/csrc/common_extension.cc (TORCH_LIBRARY_FRAGMENT sgl_kernel: From FlashMLA)"
_VLLM = "vllm-project/vllm vllm/attention/ops/flashmla.py (torch.ops._flashmla_C.fwd_kvcache_mla)"

SPECS: list[OpSpec] = []

# sgl_kernel::fwd_kvcache_mla(Tensor q, Tensor kv_cache, int head_size_v, Tensor seqlens_k, Tensor block_table,
#   float softmax_scale, bool is_causal, Tensor tile_scheduler_metadata, Tensor num_splits, bool is_fp8,
#   Tensor? indices[, Tensor? attn_sink, Tensor? extra_k_cache, Tensor? extra_indices_in_kvcache,
#   Tensor? topk_length, Tensor? extra_topk_length]) -> Tensor[]                       (11 or 16 arguments)
# _flashmla_C::fwd_kvcache_mla(q, k_cache, head_dim_v, cache_seqlens, block_table, softmax_scale, causal,
#   tile_scheduler_metadata, num_splits, descale_q | is_fp8_kvcache, descale_k | indices)   (vLLM, 11 arguments)
# older: _flashmla_C::fwd_kvcache_mla(q, k_cache, None, head_dim_v, cache_seqlens, block_table, softmax_scale,
#   causal, tile_scheduler_metadata, num_splits)                         (10 arguments: an unused V cache slot)
_NEW = dict(q=0, k=1, v=1, head_dim_v=2, block_table=4, scale=5, causal=6, causal_name="is_causal",
            paged_cache=True, dropout_required=False)
_OLD = dict(q=0, k=1, v=1, head_dim_v=3, block_table=5, scale=6, causal=7, causal_name="causal", paged_cache=True,
            dropout_required=False)
SPECS += op_specs(
    ("sgl_kernel::fwd_kvcache_mla", "_flashmla_C::fwd_kvcache_mla"),
    family=FLASH_MLA,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "FlashMLA (sgl-kernel, vLLM _flashmla_C)",
            "fwd_kvcache_mla(q, kv_cache, head_size_v, seqlens_k, block_table, softmax_scale, is_causal, "
            "tile_scheduler_metadata, num_splits, is_fp8 | descale_q, indices | descale_k, ...)",
            f"{_SGL}; {_VLLM}",
            (11, 16),
            **_NEW,  # type: ignore[arg-type]
        ),
        Signature(
            "FlashMLA (vLLM, with a V cache slot)",
            "fwd_kvcache_mla(q, k_cache, vcache=None, head_dim_v, cache_seqlens, block_table, softmax_scale, causal, "
            "tile_scheduler_metadata, num_splits)",
            _VLLM,
            (10, 10),
            **_OLD,  # type: ignore[arg-type]
        ),
    ),
)
