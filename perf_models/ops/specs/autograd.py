"""Autograd backward nodes (`ScaledDotProductFlashAttentionBackward0`, `FlashAttnFuncBackward`, ...).

The profiler records them under the Function's class name with no arguments of their own, so their
OpSpecs have no signatures: the config comes from the linked forward op's perf_params.
"""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.aten import SDPA_CUDNN, SDPA_EFFICIENT, SDPA_FLASH
from sdpa_analyzer.perf_models.ops.specs.base import BWD, OpSpec
from sdpa_analyzer.perf_models.ops.specs.flash_attn import FLASH_ATTN
from sdpa_analyzer.perf_models.ops.specs.te import TRANSFORMER_ENGINE
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

SPECS: list[OpSpec] = []

# --- autograd backward nodes: no Input Dims; the linked forward's perf_params give the config ---------
_AUTOGRAD_NODES: tuple[tuple[str, str, AttentionType, CausalRule, Layout], ...] = (
    (
        "ScaledDotProductFlashAttentionBackward0",
        SDPA_FLASH,
        AttentionType.FLASH,
        CausalRule.BOTTOM_RIGHT,
        Layout.BHND,
    ),
    (
        "ScaledDotProductFlashAttentionForCpuBackward0",
        SDPA_FLASH,
        AttentionType.FLASH,
        CausalRule.TOP_LEFT,
        Layout.BHND,
    ),
    (
        "ScaledDotProductEfficientAttentionBackward0",
        SDPA_EFFICIENT,
        AttentionType.MEMORY_EFFICIENT,
        CausalRule.TOP_LEFT,
        Layout.BHND,
    ),
    (
        "ScaledDotProductCudnnAttentionBackward0",
        SDPA_CUDNN,
        AttentionType.CUDNN,
        CausalRule.TOP_LEFT,
        Layout.BHND,
    ),
    ("FlashAttnFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.BNHD),
    ("FlashAttnVarlenFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.THD),
    ("FlashAttnQKVPackedFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.BNHD),
    ("FlashAttnKVPackedFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.BNHD),
    ("FusedAttnFuncBackward", TRANSFORMER_ENGINE, AttentionType.CUDNN, CausalRule.TOP_LEFT, Layout.SBHD),
)
for _name, _family, _atype, _rule, _layout in _AUTOGRAD_NODES:
    SPECS.append(
        OpSpec(
            name=_name,
            family=_family,
            direction=BWD,
            layout=_layout,
            attention_type=_atype,
            causal_rule=_rule,
            signatures=(),
            note="autograd backward node: shapes come from the linked forward's perf_params",
        )
    )

