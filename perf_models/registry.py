"""The attention op registry, public name: which ops are attention, and how to read a config out of one op row
(`parse_op`, `lookup`, `is_attention_op`). The implementation is `perf_models.ops.registry`, inside the op package so
the batch parser below it never imports upward."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops import registry as _implementation
from sdpa_analyzer.perf_models.ops.registry import *  # noqa: F403 - the public names, listed once in its __all__

__all__ = _implementation.__all__
