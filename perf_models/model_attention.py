"""model_attention: the work and the verdicts of one explicit attention config on one GPU (a what-if).

A thin wrapper over the vectorized code: one-row ConfigTable → estimate_work → assess, returned as plain
numbers and strings (None = not measured / no value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perf_models.assess import assess
from perf_models.bands import family_by_id
from perf_models.config import AttentionConfig, BwdConvention, Direction
from perf_models.estimate import TILED_BYTES_NOTE, estimate_work
from perf_models.hardware import GpuSpec
from perf_models.table import ConfigTable


@dataclass(frozen=True)
class Band:
    id: str
    low_pct: float
    high_pct: float
    metric: str  # compute | memory: which utilization (against the datasheet) the band is compared with
    anchor: str  # the reference in words: kernel and its efficiency at this shape
    source: str  # where the reference kernel's figure is published
    reference_kernel: str  # the best published kernel for this shape and GPU class
    reference_pct: float  # its efficiency at this shape (% of the datasheet peak of `metric`)
    reference_time_us: float  # this call's time at the reference efficiency
    borrowed_from: str | None  # the part the band was measured on, when it is not this GPU
    measured_on: str


@dataclass(frozen=True)
class AttentionEstimate:
    """The roofline and verdicts of one attention call, as plain numbers and strings. None = no value."""

    direction: str
    kind: str  # fwd | bwd | decode | mixed
    compute_spec: str
    kept_pairs: int
    kept_pairs_upper: int
    tile_visits: int
    block_q: int
    block_kv: int
    family: str
    flops: float  # useful FLOPs (the efficiency numerator)
    flops_executed: float
    flops_upper: float
    bytes_compulsory: float
    bytes_tiled: float
    bytes_fa_convention: float
    bytes_model: str
    bytes_used: float
    peak_tflops: float
    peak_tflops_kind: str
    peak_tflops_source: str
    peak_tflops_datasheet: float | None
    peak_tbs: float
    peak_tbs_kind: str
    peak_tbs_source: str
    peak_tbs_datasheet: float
    compute_time_us: float
    memory_time_us: float
    ideal_time_us: float
    intensity: float
    ridge: float
    bound: str  # compute | memory (which roof is the higher time)
    regime: str  # compute | memory | balanced
    measured_us: float | None
    measurement_status: str
    achieved_tflops: float | None
    achieved_tbs: float | None
    efficiency_pct: float | None
    efficiency_datasheet_pct: float | None
    compute_pct: float | None
    memory_pct: float | None
    compute_datasheet_pct: float | None
    memory_datasheet_pct: float | None
    is_anomaly: bool
    anomaly_flag: bool
    band: Band | None
    band_status: str  # within | below | above | none
    band_note: str  # why there is no band ("" when there is one)
    regime_intensity: float  # the FLOP/B the regime was judged from (= intensity except unfused rows)
    regime_bytes: float
    bwd_convention: str
    skip_masked_tiles: bool
    tiled_bwd_model: str
    notes: tuple[str, ...]


def _opt(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def default_family(gpu: GpuSpec) -> str:
    """The tile family an unknown kernel is modeled with: CK on AMD, FA2 (PyTorch's flash backend) elsewhere."""
    return "ck" if gpu.vendor == "amd" else "fa2"


def model_attention(
    cfg: AttentionConfig,
    gpu: GpuSpec,
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
    """Roofline and verdicts of one config on one GPU."""
    table = ConfigTable.from_configs([cfg])
    work = estimate_work(table, bwd_convention=bwd_convention, block_q=block_q, block_kv=block_kv,
                         skip_masked_tiles=skip_masked_tiles, tiled_bwd_model=tiled_bwd_model,
                         family=family or default_family(gpu), num_sms=getattr(gpu, "sm_count", None))
    m = np.nan if measured_us is None else float(measured_us)
    a = assess(table, work, gpu, np.array([m]), bytes_model=bytes_model)
    rf = a.roofline
    spec = str(a.compute_spec[0])
    roof, bw = gpu.compute_roof(spec), gpu.bandwidth_roof()

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
    band = None
    if a.band_id[0] is not None:
        fam = family_by_id(str(a.band_id[0]))
        kernel, ref = str(a.band_reference_kernel[0]), float(a.band_reference_pct[0])
        borrowed = a.band_borrowed_from[0]
        band = Band(fam.id, float(a.band_low[0]), float(a.band_high[0]), fam.metric,
                    f"{kernel}: {ref:.1f} % of the datasheet at this shape (interpolated between published anchors)",
                    str(a.band_reference_source[0]), kernel, ref, float(a.band_reference_time_us[0]),
                    None if borrowed is None else str(borrowed), fam.measured_on_name)
    return AttentionEstimate(
        direction=Direction(cfg.direction).value,
        kind=str(a.kind[0]),
        compute_spec=spec,
        kept_pairs=int(work.kept_pairs[0]),
        kept_pairs_upper=int(work.kept_pairs_upper[0]),
        tile_visits=int(work.tile_visits[0]),
        block_q=int(work.block_q[0]),
        block_kv=int(work.block_kv[0]),
        family=str(work.families[0]),
        flops=float(work.flops_useful[0]),
        flops_executed=float(work.flops_executed[0]),
        flops_upper=float(work.flops_upper[0]),
        bytes_compulsory=float(work.bytes_compulsory[0]),
        bytes_tiled=float(work.bytes_tiled[0]),
        bytes_fa_convention=float(work.bytes_fa_convention[0]),
        bytes_model=bytes_model,
        bytes_used=float(a.bytes_used[0]),
        peak_tflops=float(a.peak_tflops[0]),
        peak_tflops_kind=str(a.peak_tflops_kind[0]),
        peak_tflops_source=roof.source,
        peak_tflops_datasheet=_opt(a.peak_tflops_datasheet[0]),
        peak_tbs=a.peak_tbs,
        peak_tbs_kind=a.peak_tbs_kind,
        peak_tbs_source=bw.source,
        peak_tbs_datasheet=a.peak_tbs_datasheet,
        compute_time_us=float(rf.compute_time_us[0]),
        memory_time_us=float(rf.memory_time_us[0]),
        ideal_time_us=float(rf.ideal_time_us[0]),
        intensity=float(rf.intensity[0]),
        ridge=float(rf.ridge[0]),
        bound=str(rf.bound[0]),
        regime=str(a.regime[0]),
        measured_us=None if status == "missing" else m,
        measurement_status=status,
        achieved_tflops=_opt(rf.achieved_tflops[0]),
        achieved_tbs=_opt(rf.achieved_tbs[0]),
        efficiency_pct=_opt(rf.efficiency_pct[0]),
        efficiency_datasheet_pct=_opt(a.efficiency_datasheet_pct[0]),
        compute_pct=_opt(a.compute_pct[0]),
        memory_pct=_opt(a.memory_pct[0]),
        compute_datasheet_pct=_opt(a.compute_datasheet_pct[0]),
        memory_datasheet_pct=_opt(a.memory_datasheet_pct[0]),
        is_anomaly=bool(rf.is_anomaly[0]),
        anomaly_flag=bool(rf.anomaly_flag[0]),
        band=band,
        band_status=str(a.band_status[0]),
        band_note=str(a.band_note[0]),
        regime_intensity=float(a.regime_intensity[0]),
        regime_bytes=float(a.regime_bytes[0]),
        bwd_convention=work.bwd_convention,
        skip_masked_tiles=work.skip_masked_tiles,
        tiled_bwd_model=work.tiled_bwd_model,
        notes=tuple(notes),
    )
