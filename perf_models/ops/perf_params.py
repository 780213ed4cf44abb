"""Reading the upstream tool's `perf_params` cell: the fallback when a row has no usable arguments.

Autograd backward nodes (`FlashAttnFuncBackward`, `ScaledDotProductFlashAttentionBackward0`) have no
Input Dims; their rows carry the linked forward's perf_params. The upstream parser has known defects
(it reads flash_attn backward's softmax_scale as `causal`), so every value is checked: `causal` must
be a real boolean, shapes positive integers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sdpa_analyzer.perf_models.config import Alignment, Direction, Mask, MaskKind
from sdpa_analyzer.perf_models.dtypes import try_normalize_dtype
from sdpa_analyzer.perf_models.literals import LiteralParseError, parse_literal
from sdpa_analyzer.perf_models.ops.types import AttentionType, RowError

SHAPE_KEYS = ("B", "N_Q", "H_Q", "N_KV", "H_KV", "d_h_qk", "d_h_v")


def as_mapping(perf_params: Any) -> Mapping[str, Any] | None:
    """perf_params as a dict (from a dict or its repr string); None when the cell is empty."""
    if perf_params is None:
        return None
    if isinstance(perf_params, Mapping):
        return perf_params
    if isinstance(perf_params, float) and math.isnan(perf_params):
        return None
    try:
        parsed = parse_literal(perf_params, "perf_params")
    except LiteralParseError as exc:
        raise RowError(f"unparseable perf_params: {exc}") from None
    if parsed is None:
        return None
    if not isinstance(parsed, Mapping):
        raise RowError(f"unparseable perf_params: expected a dict, got {type(parsed).__name__}")
    return parsed


def positive_int(params: Mapping[str, Any], key: str) -> int:
    if key not in params or params[key] is None:
        raise RowError(f"perf_params has no {key}")
    value = params[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise RowError(f"perf_params {key}={value!r:.40} is not a positive integer")
    return value


def optional_int(params: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = params.get(key)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise RowError(f"perf_params {key}={value!r:.40} is not a non-negative integer")
        return value
    return None


def causal_flag(params: Mapping[str, Any]) -> bool:
    if "causal" not in params:
        raise RowError("perf_params has no causal flag")
    value = params["causal"]
    if not isinstance(value, bool):
        raise RowError(
            f"perf_params causal={value!r:.40} is not True/False (the upstream parser read the wrong "
            "argument slot; a softmax_scale of 1/sqrt(d) looks like this)"
        )
    return value


def dropout(params: Mapping[str, Any], warnings: list[str]) -> float:
    value = params.get("dropout", params.get("dropout_p"))
    if value is None:
        warnings.append("perf_params has no dropout: assumed 0")
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowError(f"perf_params dropout={value!r:.40} is not a number")
    return float(value)


def dtypes(params: Mapping[str, Any]) -> tuple[str, str | None]:
    """(dtype of q, dtype of k or None) from dtype_A_B / dtype_Q / dtype_KV."""
    ab = params.get("dtype_A_B")
    if isinstance(ab, list | tuple) and ab:
        q = try_normalize_dtype(str(ab[0]))
        k = try_normalize_dtype(str(ab[1])) if len(ab) > 1 else None
        if q is None:
            raise RowError(f"perf_params dtype_A_B={ab!r:.40} does not name a tensor dtype")
        return q, k
    if params.get("dtype_Q"):
        q = try_normalize_dtype(str(params["dtype_Q"]))
        if q is None:
            raise RowError(f"perf_params dtype_Q={params['dtype_Q']!r:.40} is not a tensor dtype")
        return q, None
    raise RowError("perf_params has no dtype (dtype_A_B or dtype_Q)")


def optional_dtype(params: Mapping[str, Any], key: str) -> str | None:
    """A tensor dtype perf_params may state (dtype_V, dtype_O: a quantized call's V and output), None when absent."""
    value = params.get(key)
    if value is None:
        return None
    canon = try_normalize_dtype(str(value))
    if canon is None:
        raise RowError(f"perf_params {key}={value!r:.40} is not a tensor dtype")
    return canon


def compute_specs(params: Mapping[str, Any]) -> tuple[str, str] | None:
    """The GEMM specs perf_params state (`compute_specs`: (Q·Kᵀ's, P·V's or 'v': V's dtype's)), None when absent."""
    value = params.get("compute_specs")
    if value is None:
        return None
    if not (isinstance(value, list | tuple) and len(value) == 2 and str(value[0]).startswith("matrix_")
            and (value[1] == "v" or str(value[1]).startswith("matrix_"))):  # fmt: skip
        raise RowError(f"perf_params compute_specs={value!r:.60} is not (matrix_<qk>, matrix_<pv> or 'v')")
    return str(value[0]), str(value[1])


def kv_cache_dtype(params: Mapping[str, Any]) -> str | None:
    for key in ("dtype_KV", "kv_cache_dtype", "k_cache_dtype"):
        if params.get(key):
            canon = try_normalize_dtype(str(params[key]))
            if canon is None and str(params[key]).lower().startswith("fp8"):
                canon = "fp8_e4m3"  # vLLM's kv_cache_dtype "fp8" means e4m3 on NVIDIA and ROCm
            if canon is None:
                raise RowError(f"perf_params {key}={params[key]!r:.40} is not a tensor dtype")
            return canon
    return None


def window(params: Mapping[str, Any]) -> tuple[int, int]:
    ws = params.get("window_size")
    if isinstance(ws, list | tuple) and len(ws) >= 2:
        left, right = ws[0], ws[1]
    else:
        left = params.get("window_size_left", params.get("window_left", -1))
        right = params.get("window_size_right", params.get("window_right", -1))
    edges = [-1 if v is None else int(v) if isinstance(v, float) and v.is_integer() else v for v in (left, right)]
    if any(isinstance(v, bool) or not isinstance(v, int) or v < -1 for v in edges):
        raise RowError(f"perf_params window ({left!r:.20}, {right!r:.20}) is not a pair of integers >= -1")
    return edges[0], edges[1]


def direction(params: Mapping[str, Any]) -> Direction:
    """The direction a row states in its perf_params (the ingest writes the row's own: its kernels' family)."""
    value = params.get("direction")
    if value is None:
        raise RowError("perf_params has no direction ('fwd' or 'bwd')")
    if not isinstance(value, str) or value not in {d.value for d in Direction}:
        raise RowError(f"perf_params direction={value!r:.40} is not 'fwd' or 'bwd'")
    return Direction(value)


def attention_type(params: Mapping[str, Any]) -> AttentionType:
    value = params.get("attention_type")
    if value is None:
        raise RowError("perf_params has no attention_type")
    if not isinstance(value, str) or value not in {t.value for t in AttentionType}:
        allowed = ", ".join(t.value for t in AttentionType)
        raise RowError(f"perf_params attention_type={value!r:.40} is not one of {allowed}")
    return AttentionType(value)


def mask_from(causal: bool, alignment: Alignment | None, left: int, right: int, seq_kv: int) -> Mask:
    """flash-attn window semantics: -1 unbounded; causal forces right = 0; (-1, 0) is causal."""
    left = -1 if left >= seq_kv else left
    right = -1 if right >= seq_kv else right
    align = alignment or Alignment.BOTTOM_RIGHT
    if left < 0 and right < 0:
        return Mask(MaskKind.CAUSAL, align) if causal else Mask()
    if causal:
        right = 0
        if left < 0:
            return Mask(MaskKind.CAUSAL, align)
    elif left < 0 and right == 0:
        return Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)
    return Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, left, right)
