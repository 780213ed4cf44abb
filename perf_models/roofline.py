"""The roofline, vectorized (docs/perf-model.md, "Roofline"). Verdicts built on it live in perf_models.assess.

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

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.terms import ANOMALY_FLAG_PCT, ANOMALY_PCT

F64 = NDArray[np.float64]


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
