"""vLLM unified attention ops (paged KV cache; the step's context lengths come from perf_params)."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

# family name (ParsedOp.family)
VLLM = "vllm"

_VLLM = "vllm-project/vllm vllm/attention/layer.py (direct_register_custom_op)"

SPECS: list[OpSpec] = []

# --- vLLM (THD; context lengths are not arguments: they come from perf_params / the step annotation) --
# unified_attention(query, key, value, layer_name) -> Tensor
# unified_attention_with_output(query, key, value, output, layer_name, output_scale=None,
#   output_block_scale=None[, kv_cache_dummy_dep=None]) -> None
# Real row: traces/b200 ([888, 8, 64] fp8, [888, 1, 64], [888, 1, 64], [888, 8, 64], [], [], []).
SPECS += op_specs(
    ("vllm::unified_attention",),
    family=VLLM,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "vLLM v1",
            "unified_attention(query, key, value, layer_name)",
            _VLLM,
            (4, 6),
            q=0,
            k=1,
            v=2,
            dropout_required=False,
        ),
    ),
)
SPECS += op_specs(
    ("vllm::unified_attention_with_output",),
    family=VLLM,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "vLLM v1",
            "unified_attention_with_output(query, key, value, output, layer_name, "
            "output_scale=None, output_block_scale=None, kv_cache_dummy_dep=None)",
            _VLLM,
            (5, 8),
            q=0,
            k=1,
            v=2,
            out=3,
            dropout_required=False,
        ),
    ),
)
