"""Data types: canonical names, element sizes and the compute spec a dtype runs on.

Bytes are always computed from each tensor's own dtype (never an assumed 2 bytes per element), so
fp32 attention is not under-counted and fp8 KV caches are not over-counted.
"""

from __future__ import annotations

from sdpa_analyzer.perf_models.errors import ConfigError

# canonical name -> bytes per element
ELEMENT_SIZE: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "uint8": 1,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}

# every spelling seen in traces (aten `Input type`, torch repr, short names) -> canonical name
_ALIASES: dict[str, str] = {
    "c10::bfloat16": "bf16",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
    "bf16": "bf16",
    "c10::half": "fp16",
    "half": "fp16",
    "float16": "fp16",
    "torch.float16": "fp16",
    "fp16": "fp16",
    "float": "fp32",
    "float32": "fp32",
    "torch.float32": "fp32",
    "fp32": "fp32",
    "double": "fp64",
    "float64": "fp64",
    "fp64": "fp64",
    "tf32": "tf32",
    "c10::float8_e4m3fn": "fp8_e4m3",
    "c10::float8_e4m3fnuz": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3fnuz": "fp8_e4m3",
    "torch.float8_e4m3fn": "fp8_e4m3",
    "fp8_e4m3": "fp8_e4m3",
    "fp8": "fp8_e4m3",
    "e4m3": "fp8_e4m3",
    "c10::float8_e5m2": "fp8_e5m2",
    "c10::float8_e5m2fnuz": "fp8_e5m2",
    "float8_e5m2": "fp8_e5m2",
    "float8_e5m2fnuz": "fp8_e5m2",
    "fp8_e5m2": "fp8_e5m2",
    "e5m2": "fp8_e5m2",
    "signed char": "int8",
    "int8": "int8",
    "unsigned char": "uint8",
    "uint8": "uint8",
    "int": "int32",
    "int32": "int32",
    "long int": "int64",
    "long": "int64",
    "int64": "int64",
    "bool": "bool",
}

# canonical dtype -> the tensor-core ("matrix") spec its GEMMs run on
_MATRIX_SPEC: dict[str, str] = {
    "bf16": "matrix_bf16",
    "fp16": "matrix_fp16",
    "fp32": "matrix_fp32",
    "tf32": "matrix_tf32",
    "fp64": "matrix_fp64",
    "fp8_e4m3": "matrix_fp8",
    "fp8_e5m2": "matrix_fp8",
    "int8": "matrix_int8",
}

# short labels used in `args` cells ("(16,16,559,64) bf16")
SHORT_LABEL: dict[str, str] = {
    "bf16": "bf16",
    "fp16": "fp16",
    "fp32": "fp32",
    "tf32": "tf32",
    "fp64": "fp64",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}

KNOWN_DTYPES = tuple(sorted(ELEMENT_SIZE))


def normalize_dtype(name: str, field: str = "dtype") -> str:
    """Return the canonical dtype for any spelling a trace uses; raise ConfigError otherwise."""
    key = str(name).strip().strip("'\"").lower()
    if key in _ALIASES:
        return _ALIASES[key]
    raise ConfigError(field, name, f"one of {', '.join(KNOWN_DTYPES)} (or an aten spelling such as c10::BFloat16)")


def try_normalize_dtype(name: str) -> str | None:
    """Canonical dtype, or None when the string is not a tensor dtype (e.g. 'Scalar', '')."""
    return _ALIASES.get(str(name).strip().strip("'\"").lower())


def element_size(dtype: str) -> float:
    """Bytes per element of a canonical (or aliased) dtype."""
    return ELEMENT_SIZE[normalize_dtype(dtype)]


def matrix_compute_spec(dtype: str) -> str:
    """The peak-table key (e.g. `matrix_bf16`) that GEMMs on this dtype are scored against."""
    canon = normalize_dtype(dtype)
    if canon not in _MATRIX_SPEC:
        raise ConfigError("dtype", dtype, f"a floating-point compute dtype ({', '.join(sorted(_MATRIX_SPEC))})")
    return _MATRIX_SPEC[canon]
