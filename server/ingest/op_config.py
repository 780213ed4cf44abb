"""An attention call's config: read by the perf_models registry, and written back as a `perf_params` cell.

`parse` never raises for a bad row: the reason says why there is no model (docs/perf-model.md pitfall 4: a failed
model is never silent). `perf_params_from_config` writes the config in the upstream tool's perf_params keys,
which our registry reads back for rows (autograd nodes) that have no shapes of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sdpa_analyzer.perf_models.config import AttentionConfig, MaskKind
from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.registry import parse_op

# canonical dtype -> the c10 spelling the upstream perf_params use
_C10 = {
    "bf16": "c10::BFloat16",
    "fp16": "c10::Half",
    "fp32": "float",
    "fp64": "double",
    "fp8_e4m3": "c10::Float8_e4m3fn",
    "fp8_e4m3fnuz": "c10::Float8_e4m3fnuz",
    "fp8_e5m2": "c10::Float8_e5m2",
    "fp8_e5m2fnuz": "c10::Float8_e5m2fnuz",
}


@dataclass
class Parsed:
    config: AttentionConfig | None
    reason: str | None
    attention_type: str | None
    direction: str | None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.config is not None


def parse(
    name: str,
    dims: tuple[Any, ...] | None,
    types: tuple[Any, ...] | None,
    concrete: tuple[Any, ...] | None,
    perf_params: dict[str, Any] | None = None,
) -> Parsed:
    """The registry's reading of one op row; never raises for bad rows (the reason says why)."""
    try:
        p = parse_op(name, dims, types, concrete, perf_params)
    except PerfModelError as exc:
        return Parsed(None, str(exc), None, None)
    atype = getattr(p, "attention_type", None)
    direction = getattr(p, "direction", None)
    return Parsed(
        getattr(p, "config", None),
        getattr(p, "reason", None),
        str(atype.value if hasattr(atype, "value") else atype) if atype is not None else None,
        str(direction.value if hasattr(direction, "value") else direction) if direction is not None else None,
        list(getattr(p, "warnings", None) or []),
    )


def perf_params_from_config(cfg: AttentionConfig, attention_type: str | None) -> dict[str, Any]:
    """The config as an upstream-style perf_params dict (keys the upstream tool and our registry read)."""
    out: dict[str, Any] = {
        "B": cfg.batch,
        "N_Q": cfg.seq_q,
        "H_Q": cfg.heads_q,
        "N_KV": cfg.seq_kv,
        "H_KV": cfg.heads_kv,
        "d_h_qk": cfg.head_dim_qk,
        "d_h_v": cfg.head_dim_v,
        "dropout": float(cfg.dropout_p),
        "causal": cfg.mask.kind is MaskKind.CAUSAL,
        "flash_impl": attention_type == "flash",
        "direction": cfg.direction.value,  # read back for an op the registry does not know (its row states it)
        "dtype_A_B": (_C10.get(cfg.dtype_q, cfg.dtype_q), _C10.get(cfg.kv_dtype, cfg.kv_dtype)),
    }
    if cfg.mask.kind is MaskKind.SLIDING_WINDOW:
        out["window_size"] = (cfg.mask.window_left, cfg.mask.window_right)
    if cfg.mask.kind is not MaskKind.NONE:
        out["causal_alignment"] = cfg.mask.alignment.value
    if cfg.dtype_kv_cache:
        out["dtype_KV"] = _C10.get(cfg.dtype_kv_cache, cfg.dtype_kv_cache)
    if cfg.varlen is not None:
        out["varlen"] = True
        out["max_seqlen_q"] = cfg.varlen.max_seqlen_q
        out["max_seqlen_kv"] = cfg.varlen.max_seqlen_kv
        out["num_seqs"] = cfg.varlen.num_seqs
    if attention_type:
        out["attention_type"] = attention_type
    return out
