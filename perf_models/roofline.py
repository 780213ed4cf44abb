"""Roofline, efficiency and expected-efficiency bands (docs/perf-model.md §4), vectorized; plus a scalar wrapper.

* ideal time = max(FLOPs / peak FLOP/s, bytes / peak B/s); bound = compute when the compute time is
  at least the memory time; intensity = FLOPs / byte; ridge = peak FLOP/s / peak B/s.
* efficiency = ideal / measured. Above 100 % is an anomaly (`is_anomaly`), above 110 % it is flagged
  (`anomaly_flag`): a sign of wrong shapes, peaks or a measured time that misses kernels, never
  "excellent".
* Missing data never turns silently into NaN: rows without a usable measured time carry
  `measurement_status` "missing" (None/NaN) or "zero" (0 µs) and `has_measurement` False; rows without a
  peak (NaN, e.g. a GPU table lacking that dtype) carry `peak_missing` True and bound "unknown". Their
  derived numbers are NaN and their anomaly flags False. Negative inputs are errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perf_models.config import AttentionConfig, BwdConvention, Direction
from perf_models.errors import ConfigError, PerfModelError
from perf_models.estimate import TILED_BYTES_NOTE, estimate_work
from perf_models.table import ConfigTable

F64 = NDArray[np.float64]
BYTES_MODELS = ("compulsory", "tiled")
ANOMALY_PCT = 100.0
ANOMALY_FLAG_PCT = 110.0

# Expected efficiency of flash-style kernels by sequence length (docs/perf-model.md §4). The doc gives
# points (<512, ≈1024, ≈2048, >4096); a length belongs to the nearest point: [0, 512) → 5–15 %,
# [512, 1536) → 20–40 %, [1536, 3072) → 40–60 %, [3072, ∞) → 50–70 % (1536 and 3072 are the
# midpoints between the listed lengths; 512 is the doc's own boundary).
BAND_EDGES = (512, 1536, 3072)
BAND_LOW = (5.0, 20.0, 40.0, 50.0)
BAND_HIGH = (15.0, 40.0, 60.0, 70.0)


@dataclass(frozen=True, eq=False)
class RooflineArrays:
    compute_time_us: F64
    memory_time_us: F64
    ideal_time_us: F64
    intensity: F64  # FLOP / byte
    ridge: F64  # FLOP / byte where compute and memory time are equal
    bound: NDArray[np.object_]  # 'compute' | 'memory' | 'unknown' (no peak)
    peak_missing: NDArray[np.bool_]
    has_measurement: NDArray[np.bool_]
    measurement_status: NDArray[np.object_]  # 'measured' | 'missing' | 'zero'
    achieved_tflops: F64
    achieved_tbs: F64
    efficiency_pct: F64
    is_anomaly: NDArray[np.bool_]  # efficiency > 100 %
    anomaly_flag: NDArray[np.bool_]  # efficiency > 110 %


def _nonneg(name: str, values: ArrayLike, n: int | None = None) -> F64:
    arr = np.asarray(values, dtype=np.float64)
    if n is not None:
        arr = np.broadcast_to(arr, (n,))
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise PerfModelError(f"{name}[{i}]={arr.ravel()[i]!r} is invalid: expected a finite number >= 0")
    return arr


def _peak(name: str, values: ArrayLike, n: int) -> tuple[F64, NDArray[np.bool_]]:
    arr = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
    missing = np.isnan(arr)
    bad = ~missing & ~(np.isfinite(arr) & (arr > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PerfModelError(f"{name}[{i}]={arr[i]!r} is invalid: expected a positive peak (NaN = unknown)")
    return arr, missing


_BOUND_NAMES = np.array(["compute", "memory", "unknown"], dtype=object)
_STATUS_NAMES = np.array(["measured", "missing", "zero"], dtype=object)
_CHUNK_ROWS = 65536  # cache-sized temporaries (see estimate.CHUNK_ROWS)


def roofline(flops: ArrayLike, bytes_: ArrayLike, peak_tflops: ArrayLike, peak_tbs: ArrayLike,
             measured_us: ArrayLike | None = None) -> RooflineArrays:
    """Vectorized roofline. Peaks in TFLOP/s and TB/s (scalars or per row); times in µs.

    `bound` and `measurement_status` are object arrays of str.
    """
    f = _nonneg("flops", flops).ravel()
    n = f.shape[0]
    b = _nonneg("bytes", bytes_, n)
    pt, pt_missing = _peak("peak_tflops", peak_tflops, n)
    pb, pb_missing = _peak("peak_tbs", peak_tbs, n)
    if measured_us is None:
        m = np.full(n, np.nan)
    else:
        m = np.broadcast_to(np.asarray(measured_us, dtype=np.float64), (n,))
    bad = (m < 0) | np.isinf(m)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PerfModelError(f"measured_us[{i}]={m[i]!r} is invalid: expected a time >= 0 µs (NaN = missing)")
    out = {name: np.empty(n, dtype=dt) for name, dt in _FIELDS.items()}
    for start in range(0, n, _CHUNK_ROWS):
        r = slice(start, min(start + _CHUNK_ROWS, n))
        missing = pt_missing[r] | pb_missing[r]
        for name, arr in _roofline_chunk(f[r], b[r], pt[r], pb[r], missing, m[r]).items():
            out[name][r] = arr
    return RooflineArrays(**out)


_FIELDS: dict[str, type] = {
    "compute_time_us": np.float64, "memory_time_us": np.float64, "ideal_time_us": np.float64,
    "intensity": np.float64, "ridge": np.float64, "bound": np.object_, "peak_missing": np.bool_,
    "has_measurement": np.bool_, "measurement_status": np.object_, "achieved_tflops": np.float64,
    "achieved_tbs": np.float64, "efficiency_pct": np.float64, "is_anomaly": np.bool_,
    "anomaly_flag": np.bool_,
}


def _roofline_chunk(f: F64, b: F64, pt: F64, pb: F64, peak_missing: NDArray[np.bool_],
                    m: F64) -> dict[str, NDArray[np.generic]]:
    with np.errstate(divide="ignore", invalid="ignore"):
        compute_us = f / (pt * 1e6)  # FLOP / (TFLOP/s · 1e12) · 1e6 µs/s
        memory_us = b / (pb * 1e6)
        ideal = np.maximum(compute_us, memory_us)
        intensity = np.where(b > 0, f / np.where(b > 0, b, 1.0), np.where(f > 0, np.inf, 0.0))
        ridge = pt / pb
    bound = _BOUND_NAMES[np.where(peak_missing, 2, (compute_us < memory_us).astype(np.intp))]
    has = np.isfinite(m) & (m > 0)
    status = _STATUS_NAMES[np.where(has, 0, np.where(m == 0, 2, 1))]
    safe_m = np.where(has, m, 1.0)
    usable = has & ~peak_missing
    eff = np.where(usable, 100.0 * np.where(usable, ideal, 0.0) / safe_m, np.nan)
    eff_or_0 = np.where(usable, eff, 0.0)
    return {
        "compute_time_us": compute_us,
        "memory_time_us": memory_us,
        "ideal_time_us": ideal,
        "intensity": intensity,
        "ridge": ridge,
        "bound": bound,
        "peak_missing": peak_missing,
        "has_measurement": has,
        "measurement_status": status,
        "achieved_tflops": np.where(has, f / (safe_m * 1e6), np.nan),
        "achieved_tbs": np.where(has, b / (safe_m * 1e6), np.nan),
        "efficiency_pct": eff,
        "is_anomaly": usable & (eff_or_0 > ANOMALY_PCT),
        "anomaly_flag": usable & (eff_or_0 > ANOMALY_FLAG_PCT),
    }


def expected_band(seq_len: ArrayLike) -> tuple[F64, F64]:
    """(low %, high %) expected efficiency of a flash-style kernel at a sequence length (BAND_EDGES)."""
    s = _nonneg("seq_len", seq_len)
    idx = np.searchsorted(np.asarray(BAND_EDGES, dtype=np.float64), s, side="right")
    return np.asarray(BAND_LOW)[idx], np.asarray(BAND_HIGH)[idx]


class PeakSource(Protocol):
    """What model_attention needs from a GPU (perf_models.hardware.GpuSpec provides it)."""

    def peak_tflops(self, spec: str) -> tuple[float, str]: ...

    def peak_tbs(self) -> tuple[float, str]: ...


@dataclass(frozen=True)
class AttentionEstimate:
    """The roofline of one attention call, as plain numbers and strings. None = not measured."""

    direction: str
    compute_spec: str
    kept_pairs: int
    kept_pairs_upper: int
    tile_visits: int
    block_q: int
    block_kv: int
    flops: float  # useful FLOPs (the efficiency numerator)
    flops_executed: float
    flops_upper: float
    bytes_compulsory: float
    bytes_tiled: float
    bytes_model: str
    bytes_used: float
    peak_tflops: float
    peak_tflops_kind: str  # 'achievable' | 'datasheet'
    peak_tbs: float
    peak_tbs_kind: str
    compute_time_us: float
    memory_time_us: float
    ideal_time_us: float
    intensity: float
    ridge: float
    bound: str
    measured_us: float | None
    measurement_status: str
    achieved_tflops: float | None
    achieved_tbs: float | None
    efficiency_pct: float | None
    is_anomaly: bool
    anomaly_flag: bool
    expected_low_pct: float
    expected_high_pct: float
    bwd_convention: str
    skip_masked_tiles: bool
    tiled_bwd_model: str
    family: str
    notes: tuple[str, ...]


def band_seq_len(cfg: AttentionConfig) -> int:
    """The length an expected band is looked up at: max(Nq, Nkv); varlen max lengths; paged mean context."""
    if cfg.paged is not None:
        return max(1, cfg.paged.sum_context_tokens // cfg.paged.num_requests)
    if cfg.varlen is not None:
        return max(cfg.varlen.max_seqlen_q, cfg.varlen.max_seqlen_kv)
    return max(cfg.seq_q, cfg.seq_kv)


def _opt(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def model_attention(
    cfg: AttentionConfig,
    gpu: PeakSource,
    *,
    measured_us: float | None = None,
    bytes_model: str = "compulsory",
    bwd_convention: BwdConvention | str = BwdConvention.FIVE_GEMM,
    block_q: int | None = None,
    block_kv: int | None = None,
    skip_masked_tiles: bool = True,
    tiled_bwd_model: str = "two_pass",
    family: str | None = None,
) -> AttentionEstimate:
    """Roofline of one config on one GPU (peaks from `gpu`), a thin wrapper over the vectorized code."""
    if bytes_model not in BYTES_MODELS:
        raise ConfigError("bytes_model", bytes_model, f"one of {', '.join(BYTES_MODELS)}")
    table = ConfigTable.from_configs([cfg])
    work = estimate_work(table, bwd_convention=bwd_convention, block_q=block_q, block_kv=block_kv,
                         skip_masked_tiles=skip_masked_tiles, tiled_bwd_model=tiled_bwd_model, family=family)
    spec = str(table.compute_spec[0])
    peak_t, kind_t = gpu.peak_tflops(spec)
    peak_b, kind_b = gpu.peak_tbs()
    bytes_arr = work.bytes_tiled if bytes_model == "tiled" else work.bytes_compulsory
    m = np.nan if measured_us is None else float(measured_us)
    rf = roofline(work.flops_useful, bytes_arr, peak_t, peak_b, m)
    low, high = expected_band([band_seq_len(cfg)])

    notes: list[str] = []
    if bytes_model == "tiled":
        notes.append(TILED_BYTES_NOTE)
    if cfg.varlen is not None:
        notes.append("varlen: FLOPs use the lower bound over sequence lengths; flops_upper is the upper one")
    if cfg.paged is not None and work.kept_pairs_upper[0] != work.kept_pairs[0]:
        notes.append("paged with several query tokens per request: FLOPs are a lower bound (see flops_upper)")
    status = str(rf.measurement_status[0])
    if status != "measured":
        notes.append(f"measured time {status}: efficiency not computed")
    if rf.anomaly_flag[0]:
        notes.append("efficiency above 110 % of the roofline: an anomaly (check shapes, peaks, kernel time)")
    elif rf.is_anomaly[0]:
        notes.append("efficiency above 100 % of the roofline: an anomaly, not an excellent kernel")

    return AttentionEstimate(
        direction=Direction(cfg.direction).value,
        compute_spec=spec,
        kept_pairs=int(work.kept_pairs[0]),
        kept_pairs_upper=int(work.kept_pairs_upper[0]),
        tile_visits=int(work.tile_visits[0]),
        block_q=int(work.block_q[0]),
        block_kv=int(work.block_kv[0]),
        flops=float(work.flops_useful[0]),
        flops_executed=float(work.flops_executed[0]),
        flops_upper=float(work.flops_upper[0]),
        bytes_compulsory=float(work.bytes_compulsory[0]),
        bytes_tiled=float(work.bytes_tiled[0]),
        bytes_model=bytes_model,
        bytes_used=float(bytes_arr[0]),
        peak_tflops=float(peak_t),
        peak_tflops_kind=str(kind_t),
        peak_tbs=float(peak_b),
        peak_tbs_kind=str(kind_b),
        compute_time_us=float(rf.compute_time_us[0]),
        memory_time_us=float(rf.memory_time_us[0]),
        ideal_time_us=float(rf.ideal_time_us[0]),
        intensity=float(rf.intensity[0]),
        ridge=float(rf.ridge[0]),
        bound=str(rf.bound[0]),
        measured_us=None if status == "missing" else m,
        measurement_status=status,
        achieved_tflops=_opt(rf.achieved_tflops[0]),
        achieved_tbs=_opt(rf.achieved_tbs[0]),
        efficiency_pct=_opt(rf.efficiency_pct[0]),
        is_anomaly=bool(rf.is_anomaly[0]),
        anomaly_flag=bool(rf.anomaly_flag[0]),
        expected_low_pct=float(low[0]),
        expected_high_pct=float(high[0]),
        bwd_convention=work.bwd_convention,
        skip_masked_tiles=work.skip_masked_tiles,
        tiled_bwd_model=work.tiled_bwd_model,
        family=work.family,
        notes=tuple(notes),
    )
