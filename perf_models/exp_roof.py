"""The third roof of attention: the exponential (special-function) unit, and the binding roof among three.

Attention is bounded by the tensor cores (the GEMM FLOPs), by the units that compute the softmax exponentials and by
HBM. FlashAttention-3 (arXiv 2407.08608, §3.2) gives the H100 SXM5 figures: 989 TFLOPS of FP16 matmul against
3.9 T special-function ops/s (16 per SM per clock); at head dim 128 there are 512 matmul FLOPs per exponential, so
without overlap the exponentials take about half the matmul time — more with fp8, smaller head dims and parts whose
tensor rate grew faster than their SM clock.

* The rate is per architecture (`perf_models/data/arch_units.json`, each with a source): exp results per clock per
  SM/CU and FP32 vector FLOP per clock per SM/CU. Both units run at the SM/CU clock, so a part's exp roof is its
  datasheet FP32 vector peak × (exp per clock ÷ FP32 FLOP per clock): no per-part number is needed. (Scaling the
  tensor roof instead would tie the exp rate to the tensor rate, which some parts cut without cutting the SM clock:
  the H20's 148 TFLOPS over 78 SMs would imply a 0.46 GHz clock and a 0.58 T exp/s roof where its SMs give 2.75.)
  H100 SXM: 66.9 TFLOPS × 16 / 256 = 4.18 T exp/s at the 1.98 GHz boost clock of the datasheet; FA3's 3.9 uses the
  1.83 GHz its benchmarks fixed.
* The count: one exponential per score element the mask keeps (`kept pairs × query heads`), forward and backward
  alike (the backward recomputes P = exp(S − LSE) once per kept element); sliding windows and causal masks through
  the exact mask counts of perf_models.masks; decode and paged calls the same, per kept (query, key) pair.
* Times on the three roofs and the binding one (the largest time): tensor = FLOPs / tensor roof, exp = exponentials
  / exp roof, hbm = bytes / bandwidth roof, vectorized over rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.errors import PerfModelError

ROOFS = ("tensor", "exp", "hbm")
F64 = NDArray[np.float64]


@dataclass(frozen=True)
class ArchUnits:
    arch: str
    exp_per_clk: float  # exponentials per clock per SM/CU
    fp32_flop_per_clk: float  # FP32 vector FLOP per clock per SM/CU (FMA = 2)
    tensor16_flop_per_clk: float  # dense 16-bit tensor FLOP per clock per SM/CU (a check, not used for the roof)
    kernel_class: str  # the best published kernel design of the architecture (perf_models.ceiling)
    source: str  # the citations, joined


@cache
def _units() -> dict[str, ArchUnits]:
    where = "perf_models/data/arch_units.json"
    raw = json.loads(resources.files("perf_models").joinpath("data", "arch_units.json").read_text(encoding="utf-8"))
    sources = {str(k): str(v) for k, v in raw["sources"].items()}
    out = {}
    for arch, a in raw["archs"].items():
        try:
            cites = [sources[s] for s in a["sources"]]
            u = ArchUnits(str(arch), float(a["exp_per_clk"]), float(a["fp32_flop_per_clk"]),
                          float(a["tensor16_flop_per_clk"]), str(a["kernel_class"]), " | ".join(cites))
        except (KeyError, TypeError, ValueError) as exc:
            raise PerfModelError(f"{where}: arch {arch!r} is malformed ({exc!r})") from None
        if min(u.exp_per_clk, u.fp32_flop_per_clk, u.tensor16_flop_per_clk) <= 0:
            raise PerfModelError(f"{where}: arch {arch!r}: rates must be positive")
        out[str(arch)] = u
    return out


def arch_units(arch: str | None) -> ArchUnits | None:
    """The unit rates of an architecture (None when the architecture is not in the table)."""
    return None if arch is None else _units().get(arch)


def known_archs() -> tuple[str, ...]:
    return tuple(sorted(_units()))


def exp_roof_texps(arch: str | None, vector_fp32_tflops: float | None) -> float:
    """A part's exponential roof in T exp/s from its architecture and datasheet FP32 vector peak (NaN: unknown)."""
    u = arch_units(arch)
    if u is None or vector_fp32_tflops is None or not np.isfinite(vector_fp32_tflops) or vector_fp32_tflops <= 0:
        return float("nan")
    return float(vector_fp32_tflops) * u.exp_per_clk / u.fp32_flop_per_clk


def part_exp_roof(gpu: Any) -> float:
    """A part's exponential roof (T exp/s) from its architecture and its datasheet FP32 vector peak (NaN: unknown).
    `gpu` is a perf_models.hardware.GpuSpec or anything with `arch` and `compute_roof`."""
    if arch_units(getattr(gpu, "arch", None)) is None:
        return float("nan")
    try:
        roof = gpu.compute_roof("vector_fp32")
    except (PerfModelError, AttributeError):
        return float("nan")
    return exp_roof_texps(getattr(gpu, "arch", None), roof.datasheet if roof.datasheet is not None else None)


def exponentials(kept_pairs: ArrayLike, heads_q: ArrayLike) -> F64:
    """Exponentials of one call: one per kept score element (kept pairs per query head × query heads); the backward
    recomputes P once per kept element, so the same count."""
    return np.asarray(kept_pairs, dtype=np.float64) * np.asarray(heads_q, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ThreeRoofs:
    tensor_time_us: F64
    exp_time_us: F64
    hbm_time_us: F64
    binding: NDArray[np.object_]  # tensor | exp | hbm | None (a roof unknown)

    @property
    def bound_time_us(self) -> F64:
        """The time on the binding roof: the largest of the three."""
        return np.maximum(np.maximum(self.tensor_time_us, self.exp_time_us), self.hbm_time_us)


def three_roofs(flops: ArrayLike, exps: ArrayLike, bytes_: ArrayLike, tensor_tflops: ArrayLike,
                exp_texps: ArrayLike, hbm_tbs: ArrayLike) -> ThreeRoofs:
    """Times (µs) of every row on the three roofs and the binding one; a row with an unknown roof (NaN) has no
    binding roof."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.asarray(flops, dtype=np.float64) / (np.asarray(tensor_tflops, dtype=np.float64) * 1e6)
        e = np.asarray(exps, dtype=np.float64) / (np.asarray(exp_texps, dtype=np.float64) * 1e6)
        m = np.asarray(bytes_, dtype=np.float64) / (np.asarray(hbm_tbs, dtype=np.float64) * 1e6)
    t, e, m = np.broadcast_arrays(t, e, m)
    stacked = np.stack([t, e, m])
    known = np.isfinite(stacked).all(axis=0)
    code = np.where(known, np.nan_to_num(stacked, nan=-1.0).argmax(axis=0), 3)
    names = np.asarray((*ROOFS, None), dtype=object)
    return ThreeRoofs(t.astype(np.float64), e.astype(np.float64), m.astype(np.float64), names[code])


__all__ = ["ROOFS", "ArchUnits", "ThreeRoofs", "arch_units", "exp_roof_texps", "exponentials", "known_archs",
           "part_exp_roof", "three_roofs"]
