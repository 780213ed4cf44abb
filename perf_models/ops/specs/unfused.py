"""Our own unfused-attention rows: matmul -> softmax -> matmul that server.ingest finds in one scope.

They are not in SPEC_BY_NAME: a row's name lists the ops found, so `registry.lookup` matches them by
name prefix.
"""

from __future__ import annotations

from dataclasses import replace

from sdpa_analyzer.perf_models.ops.specs.aten import SPECS as ATEN_SPECS
from sdpa_analyzer.perf_models.ops.specs.base import BWD, OpSpec
from sdpa_analyzer.perf_models.ops.types import AttentionType

# family name (ParsedOp.family)
UNFUSED = "unfused"

# Unfused attention rows that server.ingest writes (matmul -> softmax -> matmul found in one scope):
# `unfused_attention (aten::bmm+aten::softmax+aten::bmm)` carries the argument layout of
# aten::scaled_dot_product_attention; `unfused_attention_backward (...)` has no arguments of its own and
# takes its config from the forward's perf_params, like an autograd node.
UNFUSED_PREFIX = "unfused_attention"
UNFUSED_BWD_PREFIX = "unfused_attention_backward"
UNFUSED_FWD = replace(
    next(spec for spec in ATEN_SPECS if spec.name == "aten::scaled_dot_product_attention"),
    name=UNFUSED_PREFIX,
    family=UNFUSED,
    attention_type=AttentionType.MATH,
    note="unfused attention detected in a trace: GEMM + softmax + GEMM, modeled like the fused op",
)
UNFUSED_BWD = OpSpec(
    name=UNFUSED_BWD_PREFIX,
    family=UNFUSED,
    direction=BWD,
    layout=UNFUSED_FWD.layout,
    attention_type=AttentionType.MATH,
    causal_rule=UNFUSED_FWD.causal_rule,
    signatures=(),
    note="backward of unfused attention: shapes come from the forward's perf_params",
)
