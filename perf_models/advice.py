"""What-ifs of the kernel advisor: what a call would take if one thing about it changed, computed by the same models.

Per row (one call), vectorized over the table:

* the call's time at the best published kernel's efficiency for its shape is the assessment's
  `band_reference_time_us` (perf_models.assess); the head-dim what-if is compared with it.
* fp8 (`fp8_time_us`): Q, K, V in fp8 e4m3 (O stays in the input dtype, as FA3's fp8 forward writes it) on a GPU with
  fp8 tensor cores, for bf16/fp16 forward calls (published fp8 attention kernels are forward-only) whose regime is
  compute or balanced (a memory-bound call gains only bytes): the call's measured time × the fp8 roofline time /
  today's roofline time, i.e. at the same % of its roofline. NaN where it does not apply.
* head dim (`head_dim_alt`, `head_dim_alt_time_us`): the same hidden size with head dim 128 (heads × d kept, so the
  FLOPs and bytes barely move) for calls with d < 128: the published kernels reach a higher share of the peak at
  d = 128 than at d = 64 (verdicts-evidence §3), so the call's time at the best published d = 128 kernel's
  efficiency, against `band_reference_time_us` at today's shape. 0 / NaN where it does not apply (no band for either
  shape, heads × d not a multiple of 128, d_qk ≠ d_v).
* `regime_compulsory`, `regime_tiled`: the regime under each bytes model (on MI300-class parts the two can differ:
  the verdict then says which it used).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.assess import Assessment, assess, ideal_time_us, regime_of
from sdpa_analyzer.perf_models.estimate import WorkEstimate, estimate_work
from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.perf_models.table import ConfigTable

F64 = NDArray[np.float64]
ALT_HEAD_DIM = 128
_FP8 = "matrix_fp8"
_HALF_SPECS = ("matrix_bf16", "matrix_fp16")


def _work(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec) -> WorkEstimate:
    return estimate_work(table, bwd_convention=work.bwd_convention, skip_masked_tiles=work.skip_masked_tiles,
                         tiled_bwd_model=work.tiled_bwd_model, family=work.families,
                         num_sms=getattr(gpu, "sm_count", None))


def _rerun(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, bytes_model: str) -> Assessment:
    return assess(table, _work(table, work, gpu), gpu, np.full(len(table), np.nan), bytes_model=bytes_model)


def what_ifs(table: ConfigTable, work: WorkEstimate, a: Assessment, gpu: GpuSpec, bytes_model: str) -> dict[str, F64]:
    """The what-if columns of every row (see the module docstring)."""
    n = len(table)
    rf = a.roofline
    with np.errstate(divide="ignore", invalid="ignore"):
        measured = np.where(rf.efficiency_pct > 0, rf.ideal_time_us * 100.0 / rf.efficiency_pct, np.nan)
    band_time = a.band_reference_time_us  # the call at the best published kernel's efficiency for its shape
    out: dict[str, F64] = {}

    fp8 = np.full(n, np.nan)
    fused = ~np.isfinite(a.bytes_unfused)  # an unfused chain's lever is a fused kernel, not a dtype or a head dim
    eligible = (np.isin(table.compute_spec.astype(object), _HALF_SPECS) & np.isin(a.regime, ("compute", "balanced"))
                & np.isfinite(measured) & fused & ~table.is_bwd & (_FP8 in gpu.specs()))  # fmt: skip
    rows = np.flatnonzero(eligible)
    if len(rows):
        t = table.take(rows)
        one = np.ones(len(rows))
        t8 = replace(t, elem_q=one, elem_k=one, elem_v=one, compute_spec=np.full(len(rows), _FP8, dtype=object),
                     compute_spec_pv=np.full(len(rows), None, dtype=object))
        w = _subset(work, rows)
        ideal8 = ideal_time_us(t8, _work(t8, w, gpu), gpu, bytes_model=bytes_model)  # no verdicts: only the time
        with np.errstate(divide="ignore", invalid="ignore"):
            fp8[rows] = measured[rows] * ideal8 / rf.ideal_time_us[rows]
    out["fp8_time_us"] = fp8

    alt = np.zeros(n)
    alt_time = np.full(n, np.nan)
    d = table.head_dim_qk
    ok = ((d < ALT_HEAD_DIM) & (table.head_dim_v == d) & (table.heads_q * d % ALT_HEAD_DIM == 0)
          & (table.heads_kv * d % ALT_HEAD_DIM == 0) & np.isfinite(band_time) & fused)  # fmt: skip
    rows = np.flatnonzero(ok)
    if len(rows):
        t = table.take(rows)
        dd = t.head_dim_qk
        th = replace(t, heads_q=t.heads_q * dd // ALT_HEAD_DIM, heads_kv=t.heads_kv * dd // ALT_HEAD_DIM,
                     head_dim_qk=np.full(len(rows), ALT_HEAD_DIM), head_dim_v=np.full(len(rows), ALT_HEAD_DIM))
        ah = _rerun(th, _subset(work, rows), gpu, bytes_model)
        # the band is in % of the datasheet peak of its metric: the time at the reference kernel's efficiency is that
        # roof's datasheet time / (reference % / 100) — FLOPs at the tensor datasheet peak for a compute band, bytes
        # at the HBM one
        with np.errstate(divide="ignore", invalid="ignore"):
            at_peak = np.where(
                ah.band_metric == "memory",
                ah.roofline.memory_time_us * ah.peak_tbs / ah.peak_tbs_datasheet,
                ah.roofline.compute_time_us * ah.peak_tflops / ah.peak_tflops_datasheet,
            )
            at_edge = at_peak * 100.0 / ah.band_reference_pct
        good = np.isfinite(at_edge)
        alt[rows[good]] = ALT_HEAD_DIM
        alt_time[rows[good]] = at_edge[good]
    out["head_dim_alt"] = alt
    out["head_dim_alt_time_us"] = alt_time
    return out


def _subset(work: WorkEstimate, rows: NDArray[np.intp]) -> WorkEstimate:
    """The work estimate's settings for a subset of rows (the what-if tables are recomputed, not sliced)."""
    return replace(work, families=work.families[rows])


def regimes_by_bytes_model(work: WorkEstimate, a: Assessment) -> dict[str, NDArray[np.object_]]:
    """The regime under each bytes model (see the module docstring)."""
    known = ~a.roofline.peak_missing
    with np.errstate(divide="ignore", invalid="ignore"):
        compulsory = regime_of(work.flops_useful / work.bytes_compulsory, a.roofline.ridge, known)
        tiled = regime_of(work.flops_useful / work.bytes_tiled, a.roofline.ridge, known)
    none = np.asarray(None, dtype=object)
    return {
        "regime_compulsory": np.where(compulsory == "unknown", none, compulsory).astype(object),
        "regime_tiled": np.where(tiled == "unknown", none, tiled).astype(object),
    }


__all__ = ["ALT_HEAD_DIM", "regimes_by_bytes_model", "what_ifs"]
