"""The verdicts of every row of a ConfigTable on one GPU: roofs, roofline, both utilizations, regime, band.

This is the one place a measured kernel time becomes a verdict (the server turns rows into a table and calls
`assess`; perf_models.model_attention calls it for one config):

* roofs: per row, the compute roof of the row's compute spec (fp32 memory-efficient attention on NVIDIA runs
  CUTLASS 3xTF32 on the tensor cores: `matrix_fp32_3xtf32`) and the bandwidth roof, each the datasheet dense
  peak (at the sustained clock for a part that runs above its rated boost: perf_models.hardware); one kind per
  ratio, a measured achievable figure never enters one;
* roofline: ideal time = max(FLOPs / compute roof, bytes / bandwidth roof); efficiency = ideal / measured;
  above 100 % an anomaly, above 110 % flagged (perf_models.roofline);
* both utilizations: compute % = achieved TFLOP/s of useful FLOPs / compute roof, memory % = achieved TB/s /
  bandwidth roof (so efficiency = max of the two), and both again against the datasheet;
* regime: compute- or memory-bound, or *balanced* when the arithmetic intensity is within ±30 % of the ridge
  (FA3 forward at N=512, d=128 runs at intensity ≈ 255 against a 295 ridge: ≈ 47 % of tensor peak and ≈ 54 % of
  HBM; neither roof alone limits it);
* unfused rows (matmul → softmax → matmul) are scored against the fused kernel's ideal time (the migration
  gap), but their regime comes from their own traffic, the score matrices included (traffic.score_matrix_bytes):
  an unfused chain is dominated by Nq × Nkv reads and writes, whatever the fused kernel's bound would be. The
  intensity and bytes the regime was judged from are `regime_intensity` / `regime_bytes` (the roofline's own for
  fused rows), so a verdict can show the numbers it was made from next to the fused intensity;
* band (perf_models.bands): the best published kernel for the row's shape, interpolated between published
  anchors (no cliff at a bin edge), and a band around it; a forward or backward row is judged on its compute
  utilization against the datasheet; a decode row on the roof that limits it — memory utilization (against a
  band that grows with the call's work size, MB of compulsory traffic) when memory-bound, compute utilization
  when compute-bound (FlashMLA's 660 TFLOPS decode is compute-bound and judged on tensor %); a call with fewer
  query tiles than compute units gets no band (the published measurements fill the GPU). Each row carries the
  band's reference — the kernel, its efficiency at this shape, its source and the time this call would take at
  it — and, when the band was measured on another part of the same architecture, which one (borrowed);
* bounds: a row whose work is a bound (`WorkEstimate.work_bound`: varlen / paged rows known only by their sums,
  a sliding window of unknown size) has an efficiency that is a bound too ("lower": at least this; "upper": at
  most this). Such a row gets no band verdict (band_status "none", band edges NaN): a bound is not a measurement
  to compare with published kernels. `work_bound` is carried in the Assessment for the wording;
* split compute specs: quantized attention runs Q·Kᵀ and P·V on different specs (SageAttention: int8 and fp8
  or fp16). The compute roof of such a row is the rate of the two GEMMs run one after the other,
  1 / (f_qk / roof_qk + f_pv / roof_pv) with f the GEMMs' shares of the FLOPs (d_qk and d_v over d_qk + d_v), and
  its kind is the two roofs' kind (they share one: perf_models.hardware); its compute_spec reads
  `matrix_int8+matrix_fp8`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perf_models.bands import (
    NO_BAND_NOTES,
    NOTE_BOUND,
    NOTE_UNDERFILLED,
    BandArrays,
    band_status,
    lookup_bands,
)
from perf_models.errors import ConfigError, PerfModelError
from perf_models.estimate import WorkEstimate
from perf_models.hardware import GpuSpec, Roof
from perf_models.masks import MASK_NONE, MASK_WINDOW
from perf_models.objects import as_objects, filled
from perf_models.roofline import RooflineArrays, roofline
from perf_models.table import ConfigTable
from perf_models.terms import BYTES_MODELS
from perf_models.traffic import decode_rows, token_counts

F64 = NDArray[np.float64]
OBJ = NDArray[np.object_]

BALANCED_RATIO = 1.3  # intensity within [ridge / 1.3, ridge × 1.3] is "balanced" (verdicts-evidence §4)
REGIMES = ("compute", "memory", "balanced", "unknown")
KINDS = ("fwd", "bwd", "decode", "mixed")
_FP32_3XTF32 = "matrix_fp32_3xtf32"
# Query rows per tile for the "fills the GPU" test of compute bands (FA2/FA3/CK forward tiles are 64-128 rows;
# 128 is the conservative end: fewer tiles than compute units means the call cannot fill the GPU).
FILL_TILE_ROWS = 128
MB = 1e6


@dataclass(frozen=True, eq=False)
class Assessment:
    """Per-row verdict arrays; see the module docstring. NaN / None where a row has no value."""

    compute_spec: OBJ
    peak_tflops: F64
    peak_tflops_kind: OBJ  # achievable | datasheet | missing
    peak_tflops_datasheet: F64
    peak_tbs: float
    peak_tbs_kind: str
    peak_tbs_datasheet: float
    bytes_used: F64
    roofline: RooflineArrays
    compute_pct: F64
    memory_pct: F64
    compute_datasheet_pct: F64
    memory_datasheet_pct: F64
    efficiency_datasheet_pct: F64
    regime: OBJ
    bytes_unfused: F64  # unfused rows: bytes_used + the score matrices; NaN elsewhere
    kind: OBJ  # fwd | bwd | decode | mixed
    band_low: F64
    band_high: F64
    band_metric: OBJ
    band_id: OBJ
    band_value: F64  # the utilization the band is compared with
    band_status: OBJ  # within | below | above | none
    work_bound: OBJ  # exact | lower | upper | unknown: what the efficiency is (see the module docstring)
    band_reference_kernel: OBJ  # the best published kernel for this shape (None: no band)
    band_reference_pct: F64  # its efficiency at this shape, % of the datasheet peak of band_metric
    band_reference_source: OBJ  # where it is published (the band table's citation)
    band_reference_time_us: F64  # this call's time at the reference efficiency (µs)
    band_borrowed_from: OBJ  # the part the band was measured on, when it is not this GPU (None: measured here)
    band_note: OBJ  # why there is no band ("" when there is one)
    regime_intensity: F64  # the FLOP/B the regime was judged from (unfused rows: with the score matrices)
    regime_bytes: F64  # the bytes behind regime_intensity


def row_kinds(table: ConfigTable) -> OBJ:
    """fwd | bwd | decode | mixed: a forward of few query tokens per sequence is a decode step
    (traffic.decode_rows); a paged row with more query tokens than requests mixes prefill and decode."""
    kind = as_objects(np.where(table.is_bwd, "bwd", "fwd"))
    kind[table.is_paged] = "mixed"
    kind[decode_rows(table)] = "decode"
    return kind


def _mask_classes(table: ConfigTable) -> OBJ:
    code = table.mask_code
    return as_objects(np.where(code == MASK_NONE, "none", np.where(code == MASK_WINDOW, "window", "causal")))


def _dtype_names(table: ConfigTable) -> OBJ:
    """The Q dtype class of each row for band matching (bf16/fp16 share 2 bytes: told apart by compute spec)."""
    spec = table.compute_spec.astype(object)
    names = {"matrix_bf16": "bf16", "matrix_fp16": "fp16", "matrix_fp8": "fp8_e4m3", "matrix_fp32": "fp32"}
    return np.array([names.get(s, s) for s in spec.tolist()], dtype=object)


def _row_specs(table: ConfigTable, gpu: GpuSpec, attention_types: ArrayLike | None) -> OBJ:
    specs = table.compute_spec.astype(object).copy()
    if attention_types is not None and gpu.vendor == "nvidia" and _FP32_3XTF32 in gpu.specs():
        att = np.asarray(attention_types, dtype=object)
        specs[(specs == "matrix_fp32") & (att == "memory_efficient")] = _FP32_3XTF32
    return specs


def _compute_roofs(specs: OBJ, gpu: GpuSpec) -> tuple[F64, OBJ, F64]:
    n = len(specs)
    value = np.full(n, np.nan)
    kind = filled(n, "missing")
    datasheet = np.full(n, np.nan)
    for spec in sorted(set(specs.tolist()), key=str):
        if not isinstance(spec, str):
            continue
        try:
            roof = gpu.compute_roof(spec)
        except PerfModelError:
            continue
        sel = specs == spec
        value[sel], kind[sel] = roof.value, roof.kind
        datasheet[sel] = roof.datasheet if roof.datasheet is not None else np.nan
    return value, kind, datasheet


def _split_roofs(table: ConfigTable, specs: OBJ, gpu: GpuSpec) -> tuple[F64, OBJ, F64, OBJ]:
    """Compute roofs with the P·V GEMM on its own spec where a row names one (see the module docstring)."""
    value, kind, datasheet = _compute_roofs(specs, gpu)
    pv = table.compute_spec_pv.astype(object)
    split = np.array([isinstance(p, str) for p in pv.tolist()], dtype=bool) & (pv != specs)
    if not split.any():
        return value, kind, datasheet, specs
    v2, k2, d2 = _compute_roofs(np.where(split, pv, specs).astype(object), gpu)
    dqk, dv = table.head_dim_qk.astype(np.float64), table.head_dim_v.astype(np.float64)
    f_qk = dqk / (dqk + dv)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(split, 1.0 / (f_qk / value + (1 - f_qk) / v2), value)
        datasheet = np.where(split, 1.0 / (f_qk / datasheet + (1 - f_qk) / d2), datasheet)
    both = as_objects(np.where((kind == "missing") | (k2 == "missing"), "missing",
                               np.where(kind == k2, kind, "mixed")))
    kind = np.where(split, both, kind)
    labels = specs.copy()
    for i in np.flatnonzero(split).tolist():
        labels[i] = f"{specs[i]}+{pv[i]}"
    return value, kind, datasheet, labels

def _bands(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, kinds: OBJ, rf: RooflineArrays) -> BandArrays:
    """The band of every row (see the module docstring): decode rows are judged on the roof that limits them, and
    compute bands need a call that can fill the GPU."""
    seq = np.maximum(table.seq_q, table.seq_kv)
    seq = np.where(table.is_varlen, np.maximum(table.max_q, table.max_kv), seq)
    hd = np.maximum(table.head_dim_qk, table.head_dim_v)
    on_memory = (kinds == "decode") & (rf.bound != "compute")
    bands = lookup_bands(getattr(gpu, "key", None), getattr(gpu, "arch", None), kinds, _mask_classes(table),
                         _dtype_names(table), table.heads_q > table.heads_kv, on_memory, hd, seq,
                         work.bytes_compulsory / MB)
    sm_count = getattr(gpu, "sm_count", None)
    if sm_count:
        tq, _ = token_counts(table)
        tiles = np.where(table.is_varlen, np.ceil(tq / FILL_TILE_ROWS) * table.heads_q,
                         table.batch * np.ceil(np.maximum(table.seq_q, table.seq_kv) / FILL_TILE_ROWS)
                         * table.heads_q)
        under = (kinds != "decode") & (tiles < sm_count) & np.isfinite(bands.low)
        if under.any():
            for name in ("low", "high", "reference_pct"):
                getattr(bands, name)[under] = np.nan
            for name in ("metric", "band_id", "reference_kernel", "reference_source", "borrowed_from"):
                getattr(bands, name)[under] = None
            bands.note_code[under] = NOTE_UNDERFILLED
    return bands


def regime_of(intensity: F64, ridge: F64, known: NDArray[np.bool_]) -> OBJ:
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = intensity / ridge
    code = np.where(ratio > BALANCED_RATIO, 0, np.where(ratio < 1.0 / BALANCED_RATIO, 1, 2))
    code = np.where(known & np.isfinite(ratio), code, 3)
    return np.asarray(REGIMES, dtype=object)[code]


def _pct(num: F64, den: F64) -> F64:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(num) & (den > 0), 100.0 * num / den, np.nan)


def ideal_time_us(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, *, bytes_model: str = "compulsory") -> F64:
    """The roofline time of every row, µs: `assess(...).roofline.ideal_time_us` without the verdicts (the fp8
    what-if needs only this)."""
    if bytes_model not in BYTES_MODELS:
        raise ConfigError("bytes_model", bytes_model, f"one of {', '.join(BYTES_MODELS)}")
    n = len(table)
    peak_t = _split_roofs(table, _row_specs(table, gpu, None), gpu)[0]
    used = work.bytes_tiled if bytes_model == "tiled" else work.bytes_compulsory
    return roofline(work.flops_useful, used, peak_t, np.full(n, float(gpu.bandwidth_roof().value))).ideal_time_us


def assess(
    table: ConfigTable,
    work: WorkEstimate,
    gpu: GpuSpec,
    measured_us: ArrayLike,
    *,
    bytes_model: str = "compulsory",
    attention_types: ArrayLike | None = None,
) -> Assessment:
    """Verdict arrays for every row (measured_us: one call's kernel time, µs; NaN = not measured)."""
    if bytes_model not in BYTES_MODELS:
        raise ConfigError("bytes_model", bytes_model, f"one of {', '.join(BYTES_MODELS)}")
    n = len(table)
    specs = _row_specs(table, gpu, attention_types)
    peak_t, kind_t, peak_t_ds, specs = _split_roofs(table, specs, gpu)
    bw = gpu.bandwidth_roof()
    peak_b, kind_b, peak_b_ds = float(bw.value), str(bw.kind), float(bw.datasheet or bw.value)
    used = work.bytes_tiled if bytes_model == "tiled" else work.bytes_compulsory
    rf = roofline(work.flops_useful, used, peak_t, np.full(n, peak_b), measured_us)
    compute_pct = _pct(rf.achieved_tflops, peak_t)
    memory_pct = _pct(rf.achieved_tbs, np.full(n, peak_b))
    compute_ds = _pct(rf.achieved_tflops, peak_t_ds)
    memory_ds = _pct(rf.achieved_tbs, np.full(n, peak_b_ds))
    with np.errstate(divide="ignore", invalid="ignore"):
        ideal_ds = np.maximum(work.flops_useful / (peak_t_ds * 1e6), used / (peak_b_ds * 1e6))
        measured = np.broadcast_to(np.asarray(measured_us, dtype=np.float64), (n,))
        eff_ds = np.where(rf.has_measurement & np.isfinite(ideal_ds), 100.0 * ideal_ds / measured, np.nan)

    known = ~rf.peak_missing
    regime_intensity = rf.intensity.astype(np.float64).copy()
    regime_bytes = np.asarray(used, dtype=np.float64).copy()
    bytes_unfused = np.full(n, np.nan)
    if attention_types is not None:
        unfused = np.asarray(attention_types, dtype=object) == "unfused"
        if unfused.any():
            bytes_unfused[unfused] = (used + work.bytes_score_matrix)[unfused]
            with np.errstate(divide="ignore", invalid="ignore"):
                own_intensity = work.flops_useful / np.where(bytes_unfused > 0, bytes_unfused, np.nan)
            regime_intensity[unfused] = own_intensity[unfused]
            regime_bytes[unfused] = bytes_unfused[unfused]
    regime = regime_of(regime_intensity, rf.ridge, known)

    kinds = row_kinds(table)
    bands = _bands(table, work, gpu, kinds, rf)
    value = np.where(bands.metric == "memory", memory_ds, compute_ds)
    bound = work.work_bound.astype(object)
    exact = bound == "exact"
    band_ok = exact & np.isfinite(bands.low)
    low, high = np.where(band_ok, bands.low, np.nan), np.where(band_ok, bands.high, np.nan)
    status = band_status(value, low, high)  # "none" where no band applies (low is NaN there)
    note_code = np.where(exact, bands.note_code, NOTE_BOUND)
    ref_pct = np.where(band_ok, bands.reference_pct, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref_time = np.where(bands.metric == "memory", used / (ref_pct / 100 * peak_b_ds * 1e6),
                            work.flops_useful / (ref_pct / 100 * peak_t_ds * 1e6))
    ref_time = np.where(np.isfinite(ref_time), ref_time, np.nan)
    return Assessment(
        compute_spec=specs,
        peak_tflops=peak_t,
        peak_tflops_kind=kind_t,
        peak_tflops_datasheet=peak_t_ds,
        peak_tbs=peak_b,
        peak_tbs_kind=kind_b,
        peak_tbs_datasheet=peak_b_ds,
        bytes_used=used,
        roofline=rf,
        compute_pct=compute_pct,
        memory_pct=memory_pct,
        compute_datasheet_pct=compute_ds,
        memory_datasheet_pct=memory_ds,
        efficiency_datasheet_pct=eff_ds,
        regime=regime,
        bytes_unfused=bytes_unfused,
        kind=kinds,
        band_low=low,
        band_high=high,
        band_metric=np.where(band_ok, bands.metric, None).astype(object),
        band_id=np.where(band_ok, bands.band_id, None).astype(object),
        band_value=np.where(np.isfinite(low), value, np.nan),
        band_status=status,
        work_bound=bound,
        band_reference_kernel=np.where(band_ok, bands.reference_kernel, None).astype(object),
        band_reference_pct=ref_pct,
        band_reference_source=np.where(band_ok, bands.reference_source_text, None).astype(object),
        band_reference_time_us=ref_time,
        band_borrowed_from=np.where(band_ok, bands.borrowed_from, None).astype(object),
        band_note=np.asarray(NO_BAND_NOTES, dtype=object)[note_code],
        regime_intensity=regime_intensity,
        regime_bytes=regime_bytes,
    )


def spec_roof(gpu: GpuSpec, spec: str) -> Roof | None:
    """The compute roof of a spec as results name it: one spec (`matrix_bf16`), or a quantized attention's two GEMM
    specs joined by + (`matrix_int8+matrix_fp8`, Q·Kᵀ then P·V) at equal FLOP shares (d_qk = d_v; each row's own
    roof uses its own shares, see `assess`). None when the GPU has no roof for it."""
    try:
        parts = [gpu.compute_roof(part) for part in spec.split("+", 1)]
    except PerfModelError:
        return None
    if len(parts) == 1:
        return parts[0]
    a, b = parts
    kind = a.kind if a.kind == b.kind else "mixed"
    datasheet = 2.0 / (1.0 / a.datasheet + 1.0 / b.datasheet) if a.datasheet and b.datasheet else None
    source = f"Q·Kᵀ at {a.value:g} ({a.kind}), P·V at {b.value:g} ({b.kind}), equal FLOP shares"
    return Roof(2.0 / (1.0 / a.value + 1.0 / b.value), kind, source, datasheet)


__all__ = ["BALANCED_RATIO", "REGIMES", "Assessment", "assess", "regime_of", "row_kinds", "spec_roof"]
