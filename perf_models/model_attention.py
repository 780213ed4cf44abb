"""model_attention: the work and the verdicts of one explicit attention config on one GPU (a what-if).

A thin wrapper over the vectorized code: one-row ConfigTable → estimate_work → assess, returned as plain
numbers and strings (None = not measured / no value).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from sdpa_analyzer.perf_models.assess import assess
from sdpa_analyzer.perf_models.bands import family_by_id
from sdpa_analyzer.perf_models.ceiling import ceiling_params
from sdpa_analyzer.perf_models.config import AttentionConfig, BwdConvention, Direction
from sdpa_analyzer.perf_models.estimate import TILED_BYTES_NOTE, estimate_work
from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.perf_models.outputs import MODEL_OUTPUTS
from sdpa_analyzer.perf_models.row_outputs import row_outputs
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.perf_models.terms import ANOMALY_FLAG_PCT, ANOMALY_PCT


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
    borrowed_from: str | None  # always None: a band off the part it was measured on is derived (basis)
    measured_on: str  # the part(s) the points it rests on were measured on
    basis: str  # published (a published point on this part) | derived (the ceiling model)
    rests_on: str  # the published kernel, or the model's class, points and parts


@dataclass(frozen=True)
class AttentionEstimate:
    """The roofline and verdicts of one attention call: every MODEL_OUTPUTS field (perf_models.outputs) in
    `values` (None = no value; also readable as attributes, `est.flops_useful`), the settings it was computed with,
    the band, where the roofs come from, and notes."""

    values: Mapping[str, Any]
    direction: str
    measured_us: float | None
    bytes_model: str
    bwd_convention: str
    skip_masked_tiles: bool
    tiled_bwd_model: str
    peak_tflops_source: str
    peak_tbs_source: str
    band: Band | None
    notes: tuple[str, ...]

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)


def _scalar(kind: str, x: Any) -> Any:
    if kind == "bool":
        return bool(x)
    if x is None or (isinstance(x, float | np.floating) and not np.isfinite(x)):
        return None
    if kind == "text":
        return str(x)
    return int(x) if kind == "int" else float(x)


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
    outputs = row_outputs(table, work, a, gpu, bytes_model)
    values = {o.name: _scalar(o.kind, outputs[o.name][0]) for o in MODEL_OUTPUTS}
    roof, bw = gpu.compute_roof(str(a.compute_spec[0])), gpu.bandwidth_roof()

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
        notes.append(f"efficiency above {ANOMALY_FLAG_PCT:g} % of the roofline: an anomaly (check shapes, peaks, "
                     "kernel time)")
    elif rf.is_anomaly[0]:
        notes.append(f"efficiency above {ANOMALY_PCT:g} % of the roofline: an anomaly, not an excellent kernel")
    band = None
    if a.band_id[0] is not None:
        kernel, ref = str(a.band_reference_kernel[0]), float(a.band_reference_pct[0])
        basis, rests_on = str(a.band_basis[0]), str(a.band_rests_on[0])
        if basis == "published":
            fam = family_by_id(str(a.band_id[0]))
            anchor = (f"{kernel}: {ref:.1f} % of the datasheet at this shape (interpolated between published "
                      f"anchors, × the grid's wave factor {float(a.wave_factor[0]):.2f})")
            source, measured_on = str(a.band_reference_source[0]), fam.measured_on_name
        else:
            cls = str(a.kernel_class[0])
            params = ceiling_params().classes[cls]
            anchor = f"{kernel}: {ref:.1f} % of the datasheet for this call on this part"
            source = rests_on
            measured_on = ", ".join(params.parts or ceiling_params().pooled.parts)
        band = Band(str(a.band_id[0]), float(a.band_low[0]), float(a.band_high[0]), str(a.band_metric[0]), anchor,
                    source, kernel, ref, float(a.band_reference_time_us[0]), None, measured_on, basis, rests_on)
    return AttentionEstimate(
        values=MappingProxyType(values),
        direction=Direction(cfg.direction).value,
        measured_us=None if status == "missing" else m,
        bytes_model=bytes_model,
        bwd_convention=work.bwd_convention,
        skip_masked_tiles=work.skip_masked_tiles,
        tiled_bwd_model=work.tiled_bwd_model,
        peak_tflops_source=roof.source,
        peak_tbs_source=bw.source,
        band=band,
        notes=tuple(notes),
    )
