"""`row_outputs`: every field `perf_models.outputs.MODEL_OUTPUTS` declares, computed for a whole table at once."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.advice import regimes_by_bytes_model, what_ifs
from sdpa_analyzer.perf_models.assess import Assessment
from sdpa_analyzer.perf_models.estimate import WorkEstimate
from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.perf_models.objects import filled
from sdpa_analyzer.perf_models.outputs import MODEL_OUTPUTS
from sdpa_analyzer.perf_models.table import ConfigTable


def row_outputs(table: ConfigTable, work: WorkEstimate, a: Assessment, gpu: GpuSpec,
                bytes_model: str) -> dict[str, NDArray[np.generic]]:
    """Every MODEL_OUTPUTS field for every row of `table` (scored by `assess` on `gpu` into `a`), as arrays."""
    rf = a.roofline
    n = len(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity_compulsory = work.flops_useful / work.bytes_compulsory
        intensity_tiled = work.flops_useful / work.bytes_tiled
    # the roof that limits: the roofline's, except for unfused rows, whose own score-matrix traffic decides
    binary = np.where(a.regime == "balanced", rf.bound, a.regime).astype(object)
    out: dict[str, NDArray[np.generic]] = {
        "batch": table.batch, "heads_q": table.heads_q, "heads_kv": table.heads_kv, "seq_q": table.seq_q,
        "seq_kv": table.seq_kv, "head_dim_qk": table.head_dim_qk, "head_dim_v": table.head_dim_v,
        "gqa_ratio": table.heads_q // table.heads_kv, "kind": a.kind,
        "kept_pairs": work.kept_pairs, "kept_pairs_upper": work.kept_pairs_upper, "tile_visits": work.tile_visits,
        "flops_useful": work.flops_useful, "flops_executed": work.flops_executed, "flops_upper": work.flops_upper,
        "bytes_compulsory": work.bytes_compulsory, "bytes_tiled": work.bytes_tiled,
        "bytes_fa_convention": work.bytes_fa_convention, "bytes_used": a.bytes_used, "bytes_unfused": a.bytes_unfused,
        "intensity": rf.intensity, "intensity_compulsory": intensity_compulsory, "intensity_tiled": intensity_tiled,
        "block_q": work.block_q, "block_kv": work.block_kv, "tile_family": work.families, "work_bound": a.work_bound,
        "compute_spec": a.compute_spec, "peak_tflops": a.peak_tflops, "peak_tflops_kind": a.peak_tflops_kind,
        "peak_tflops_datasheet": a.peak_tflops_datasheet, "peak_tbs": np.full(n, a.peak_tbs),
        "peak_tbs_kind": filled(n, a.peak_tbs_kind),
        "peak_tbs_datasheet": np.full(n, a.peak_tbs_datasheet),
        "compute_time_us": rf.compute_time_us, "memory_time_us": rf.memory_time_us, "ideal_us": rf.ideal_time_us,
        "ridge": rf.ridge, "bound": np.where(np.isin(binary, ("compute", "memory")), binary, None).astype(object),
        "regime": np.where(a.regime == "unknown", None, a.regime).astype(object),
        "measurement_status": rf.measurement_status, "achieved_tflops": rf.achieved_tflops,
        "achieved_tbs": rf.achieved_tbs, "efficiency_pct": rf.efficiency_pct,
        "efficiency_datasheet_pct": a.efficiency_datasheet_pct, "compute_pct": a.compute_pct,
        "memory_pct": a.memory_pct, "compute_datasheet_pct": a.compute_datasheet_pct,
        "memory_datasheet_pct": a.memory_datasheet_pct, "is_anomaly": rf.is_anomaly, "anomaly_flag": rf.anomaly_flag,
        "band_id": a.band_id, "band_metric": a.band_metric, "band_low": a.band_low, "band_high": a.band_high,
        "band_value": a.band_value, "band_status": a.band_status, "in_expected_band": a.band_status == "within",
        "band_reference_kernel": a.band_reference_kernel, "band_reference_pct": a.band_reference_pct,
        "band_reference_source": a.band_reference_source, "band_reference_time_us": a.band_reference_time_us,
        "band_borrowed_from": a.band_borrowed_from, "band_note": a.band_note,
        "regime_intensity": a.regime_intensity, "regime_bytes": a.regime_bytes,
        "exponentials": a.exponentials, "exp_roof_texps": a.exp_roof_texps, "tensor_time_us": a.tensor_time_us,
        "exp_time_us": a.exp_time_us, "hbm_time_us": a.hbm_time_us, "binding_roof": a.binding_roof,
        "wave_factor": a.wave_factor, "kernel_class": a.kernel_class, "ceiling_pct": a.ceiling_pct,
        "ceiling_time_us": a.ceiling_time_us, "band_basis": a.band_basis, "band_rests_on": a.band_rests_on,
    }  # fmt: skip
    out |= regimes_by_bytes_model(work, a)
    out |= what_ifs(table, work, a, gpu, bytes_model)
    missing = {o.name for o in MODEL_OUTPUTS} ^ set(out)
    assert not missing, f"row_outputs and MODEL_OUTPUTS disagree on {sorted(missing)}"
    return out


__all__ = ["row_outputs"]
