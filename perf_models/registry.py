"""The attention op registry, public name: which ops are attention, and how to read a config out of one op row
(`parse_op`, `lookup`, `is_attention_op`). The implementation is `perf_models.ops.registry`, inside the op package so
the batch parser below it never imports upward."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.registry import (
    ATTENTION_OP_NAMES,
    GRAPH_PREFIX,
    GRAPH_REPLAY_REASON,
    AttentionType,
    CausalRule,
    Layout,
    OpSpec,
    ParsedOp,
    Signature,
    Source,
    is_attention_op,
    is_wrapper_op,
    lookup,
    parse_op,
)

__all__ = [
    "ATTENTION_OP_NAMES",
    "GRAPH_PREFIX",
    "GRAPH_REPLAY_REASON",
    "AttentionType",
    "CausalRule",
    "Layout",
    "OpSpec",
    "ParsedOp",
    "Signature",
    "Source",
    "is_attention_op",
    "is_wrapper_op",
    "lookup",
    "parse_op",
]
