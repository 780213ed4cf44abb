"""The perf_models calls analyze_trace makes, in one place: op registry, kernel classes, GPU tables.

The registry and the kernel classifier are written beside this package; until a piece is importable
the trace analysis still runs and says so: rows get `has_perf_model=False` with the reason, and kernel
roles come from the name patterns in `names.py`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from perf_models.config import AttentionConfig, MaskKind
from perf_models.errors import PerfModelError

_AUX_KERNEL_RE = re.compile(
    r"FillFunctor|fill_kernel|zero_|memset|Memset|elementwise_kernel|vectorized_elementwise|"
    r"unrolled_elementwise|copy_kernel|CatArrayBatchedCopy|reduce_kernel|index_elementwise|"
    r"convert_dq|dot_do_o|_bwd_preprocess|bwd_preprocess|cast_kernel",
    re.I,
)
_AUX_EXCLUDE_RE = re.compile(r"flash_bwd_dq_dk_dv|attn_bwd|fmha_bwd", re.I)

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


@cache
def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def registry() -> Any:
    return _module("perf_models.registry")


def kernels_module() -> Any:
    return _module("perf_models.kernels")


def _spec_names() -> frozenset[str]:
    specs = _module("perf_models.ops.specs")
    return frozenset(getattr(specs, "SPEC_BY_NAME", {})) if specs is not None else frozenset()


def is_attention_op(name: str) -> bool:
    reg = registry()
    if reg is not None and hasattr(reg, "is_attention_op"):
        try:
            return bool(reg.is_attention_op(name))
        except PerfModelError:
            return False
    return name in _spec_names()


def is_auxiliary_kernel(name: str) -> bool:
    mod = kernels_module()
    if mod is not None and hasattr(mod, "is_auxiliary_kernel"):
        try:
            return bool(mod.is_auxiliary_kernel(name))
        except PerfModelError:
            pass
    return bool(_AUX_KERNEL_RE.search(name)) and not _AUX_EXCLUDE_RE.search(name)


def kernel_role(name: str) -> str | None:
    """perf_models.kernels' role of a kernel ('attention', 'auxiliary', 'reshape_and_cache', 'gemm', ...),
    or None when the classifier is not available."""
    mod = kernels_module()
    if mod is None or not hasattr(mod, "classify_kernel"):
        return None
    role = mod.classify_kernel(name)[0]
    return str(getattr(role, "value", role))


def classify_kernels(names: list[str], durations: list[float]) -> Any:
    mod = kernels_module()
    if mod is None or not hasattr(mod, "classify_kernels"):
        return None
    return mod.classify_kernels(names, durations)


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
    reg = registry()
    if reg is None or not hasattr(reg, "parse_op"):
        return Parsed(None, "perf_models.registry is not available in this build", None, None)
    try:
        p = reg.parse_op(name, dims, types, concrete, perf_params)
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


# ---- GPUs ------------------------------------------------------------------------------------------


def match_device_name(device_name: str) -> Any:
    from perf_models.hardware import match_device_name as match

    return match(device_name)


def get_gpu(name: str) -> Any:
    from perf_models.hardware import get_gpu as get

    return get(name)


def gpu_metadata(gpu: Any) -> dict[str, Any]:
    """platform + peaks in the metadata layout of formats.md (achievable numbers where known)."""
    tflops: dict[str, float] = {}
    for spec in gpu.specs():
        value, _ = gpu.peak_tflops(spec)
        tflops[spec] = value
    bw, bw_kind = gpu.peak_tbs()
    return {
        "platform": gpu.key,
        "platform_name": gpu.name,
        "peak_hbm_bw_tbs": bw,
        "peak_hbm_bw_kind": bw_kind,
        "max_achievable_tflops": tflops,
        "memory_gb": gpu.memory_gb,
    }
