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
  fused rows); a row shows that intensity as its own, and the fused kernel's beside it (`intensity_fused`), so its
  regime is always f(its intensity, the ridge of the same roofs), under either bytes model (`own_intensity`);
* three roofs (perf_models.exp_roof): the row's times on the datasheet tensor roof, on the exponential-unit roof
  (one exp per kept score element) and on HBM, and the binding one among them (`binding_roof`);
* band: the ceiling of the call on this part (perf_models.ceiling). On the part a published band family was measured
  on (perf_models.bands), inside its anchors, the band rests on the published point: the best published kernel
  interpolated at the row's shape, scaled by the row's wave factor over the one of the published sizing
  (perf_models.waves: a grid with a partial last wave, or fewer tiles than units, reaches only
  tiles / (waves × units) of a full kernel; no cliff). On another part of the same architecture the published best
  is carried over by the ceiling model's ratio between the two parts at the row's shape (derived). Where no family
  applies — a shape outside the anchors, an architecture without published points — the band is the ceiling model's
  own (derived). Every row says what its band rests on (`band_basis`, `band_rests_on`). A forward or backward
  row is judged on its compute utilization against the datasheet; a decode row on the roof that limits it —
  memory utilization when memory-bound, compute utilization when compute-bound. Each row carries the band's
  reference (the published kernel or the model's class), its efficiency at this shape, its source and the time this
  call would take at it;
* model checks: an efficiency above the roofline (rf.is_anomaly: the modeled work needs more time at the roofs than
  the call's kernels took) is physically impossible, so it is never a verdict: a row whose work is exact, a lower
  bound or neither gets `model_check` "model inconsistent: <reason>" and band_status "none" (the band's reference
  stays, as what the call would take at the best kernel; the reason from what the row is: a serving call modeled
  from its step's token sums, or any other call's shapes and kernel time), where a row whose work is an upper bound
  already reads "at most" (its bound's reason is `work_bound_reason`);
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

from sdpa_analyzer.perf_models.bands import (
    NO_BAND_NOTES,
    NOTE_BOUND,
    NOTE_INCONSISTENT,
    NOTE_MIXED,
    NOTE_NO_FAMILY,
    NOTE_NO_MODEL,
    BandArrays,
    band_edges,
    band_status,
    family_by_id,
    lookup_bands,
)
from sdpa_analyzer.perf_models.ceiling import ModelCeilings, model_ceilings
from sdpa_analyzer.perf_models.errors import ConfigError, PerfModelError
from sdpa_analyzer.perf_models.estimate import WorkEstimate
from sdpa_analyzer.perf_models.exp_roof import exponentials, part_exp_roof, three_roofs
from sdpa_analyzer.perf_models.hardware import GpuSpec, Roof, get_gpu
from sdpa_analyzer.perf_models.masks import MASK_NONE, MASK_WINDOW
from sdpa_analyzer.perf_models.objects import as_objects, filled
from sdpa_analyzer.perf_models.roofline import RooflineArrays, roofline
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.perf_models.terms import BYTES_MODELS, INCONSISTENT, INCONSISTENT_REASONS
from sdpa_analyzer.perf_models.traffic import decode_rows
from sdpa_analyzer.perf_models.waves import wave_factor

F64 = NDArray[np.float64]
OBJ = NDArray[np.object_]

BALANCED_RATIO = 1.3  # intensity within [ridge / 1.3, ridge × 1.3] is "balanced" (verdicts-evidence §4)
REGIMES = ("compute", "memory", "balanced", "unknown")
KINDS = ("fwd", "bwd", "decode", "mixed")
_FP32_3XTF32 = "matrix_fp32_3xtf32"
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
    band_borrowed_from: OBJ  # always None: a band off its measured part is derived (band_basis); kept for readers
    band_note: OBJ  # why there is no band ("" when there is one)
    regime_intensity: F64  # the FLOP/B the regime was judged from (unfused rows: with the score matrices)
    regime_bytes: F64  # the bytes behind regime_intensity
    # the three roofs on the datasheet (perf_models.exp_roof) and the ceiling (perf_models.ceiling)
    exponentials: F64  # exponentials of one call (one per kept score element)
    exp_roof_texps: F64  # the part's exponential roof, T exp/s
    tensor_time_us: F64  # useful FLOPs / datasheet tensor roof of the row's dtype
    exp_time_us: F64  # exponentials / exp roof
    hbm_time_us: F64  # bytes the row moves (regime_bytes: an unfused row's with its score matrices) / datasheet HBM
    binding_roof: OBJ  # tensor | exp | hbm: the roof with the largest time (None: a roof unknown)
    wave_factor: F64  # tiles / (waves × units): the share of a full kernel's throughput this grid can reach
    kernel_class: OBJ  # the ceiling model's class of the part's architecture (fa2, fa3, fa4, amd; None: unknown)
    ceiling_pct: F64  # the model's best efficiency for this call on this part, % of the datasheet roof of its metric
    ceiling_time_us: F64  # the model's best time for this call on this part
    band_basis: OBJ  # published (a published point on this part) | derived (the ceiling model) | none
    band_rests_on: OBJ  # what the band rests on, in words (None: no band)
    work_bound_reason: OBJ  # why the work is a bound, in words (None: exact)
    model_check: OBJ  # "model inconsistent: <reason>" where the efficiency is above the roofline (None: consistent)


# why a row's work is a bound (WorkEstimate.work_bound), first cause first; the last two by the bound's direction
BOUND_REASONS = (
    "the step's token sums cover more than this call: the step ran in more than one call per layer",
    "a sliding window of unknown size, modeled causal",
    "the call's mask flag is unknown, modeled without a mask",
    "a known window over the step's token sums",
    "only the step's token sums are known",
    "the sequence length is known only as a range (the launch grid's tiles × the kernel name's tile): modeled at its "
    "low end, with as many keys as queries",
)


def bound_reasons(table: ConfigTable, bound: OBJ) -> OBJ:
    """Why each row's work is a bound (BOUND_REASONS), None where it is exact."""
    code = np.where(table.step_split, 0, np.where(table.window_unknown, 1, np.where(table.mask_unknown, 2, np.where(
        table.seq_lower_bound, 5, np.where(bound == "upper", 3, 4)))))
    return np.where(bound == "exact", None, np.asarray(BOUND_REASONS, dtype=object)[code]).astype(object)


def model_checks(table: ConfigTable, rf: RooflineArrays, bound: OBJ) -> OBJ:
    """"model inconsistent: <reason>" for rows above the roofline whose work is not an upper bound; None elsewhere."""
    bad = rf.is_anomaly & (bound != "upper")
    reason = np.asarray([f"{INCONSISTENT}: {r}" for r in INCONSISTENT_REASONS], dtype=object)
    return np.where(bad, reason[table.is_paged.astype(np.intp)], None).astype(object)


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


@dataclass(frozen=True, eq=False)
class _Verdicts:
    """The band of every row (published on this part, else derived from the ceiling model) and the model's
    physics: see the module docstring."""

    bands: BandArrays  # low/high/reference_pct set from the ceiling (published × waves, or the model)
    basis: OBJ  # published | derived | none
    rests_on: OBJ  # what the band rests on, in words (None: no band)
    ceiling: ModelCeilings


def _bands(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, kinds: OBJ, rf: RooflineArrays,
           specs: OBJ) -> _Verdicts:
    """The band of every row (see the module docstring): decode rows are judged on the roof that limits them; a
    published band applies on the part it was measured on, scaled by the row's wave factor; elsewhere the band is
    derived from the ceiling model of the architecture's kernel class."""
    n = len(table)
    seq = np.maximum(table.seq_q, table.seq_kv)
    seq = np.where(table.is_varlen, np.maximum(table.max_q, table.max_kv), seq)
    hd = np.maximum(table.head_dim_qk, table.head_dim_v)
    on_memory = (kinds == "decode") & (rf.bound != "compute")
    bands = lookup_bands(getattr(gpu, "key", None), getattr(gpu, "arch", None), kinds, _mask_classes(table),
                         _dtype_names(table), table.heads_q > table.heads_kv, on_memory, hd, seq,
                         work.bytes_compulsory / MB)
    ceiling = model_ceilings(table, work, gpu, kinds, on_memory, _datasheet_specs(specs))
    found = np.isfinite(bands.low)
    published = found & _is_none(bands.borrowed_from)
    low_f, high_f = band_edges()
    waves = np.where(kinds == "decode", 1.0, ceiling.waves / _published_waves(table, work, gpu, bands, seq, hd))
    # scale: published rows by their waves; a sibling of the measured part by the model's ratio between the parts
    scale = np.where(published, np.minimum(waves, 1.0), np.nan)
    transfer = found & ~published & np.isfinite(ceiling.pct)
    sibling_words = filled(n, None)
    if transfer.any():
        ratio, sibling_words = _sibling_ratio(table, work, gpu, kinds, on_memory, specs, bands, seq, hd, ceiling,
                                              transfer)
        scale = np.where(transfer, ratio, scale)
        transfer &= np.isfinite(scale)
    scaled = published | transfer
    derived = ~published & np.isfinite(ceiling.pct)
    best = np.where(scaled, bands.reference_pct * scale, np.where(derived, ceiling.pct, np.nan))
    bands.reference_pct[:] = best
    # a published band keeps its own span (an anchor read two ways spans both), scaled
    bands.low[:] = np.where(scaled, bands.low * scale, low_f * best)
    bands.high[:] = np.where(scaled, np.minimum(100.0, bands.high * scale), np.minimum(100.0, high_f * best))
    bands.metric[:] = np.where(published, bands.metric, np.where(derived, ceiling.metric, None))
    cls = ceiling.kernel_class[0] if n else None  # one part: one class for every row
    model_id, model_kernel = filled(n, f"model:{cls}"), filled(n, f"{cls} ceiling model")
    bands.band_id[:] = np.where(scaled, bands.band_id, np.where(derived, model_id, None))
    bands.reference_kernel[:] = np.where(scaled, bands.reference_kernel, np.where(derived, model_kernel, None))
    bands.reference_source[:] = np.where(scaled, bands.reference_source, None)
    bands.borrowed_from[:] = None
    none = ~published & ~derived
    mixed = kinds == "mixed"
    note = np.where(published | derived, 0, np.where(mixed, NOTE_MIXED, np.where(
        _is_none(ceiling.kernel_class), NOTE_NO_MODEL, bands.note_code)))
    bands.note_code[:] = np.where(none & (note == 0), NOTE_NO_FAMILY, note)
    basis = as_objects(np.where(published, "published", np.where(derived | transfer, "derived", "none")))
    pub_words = _interned([None if k is None else f"published: {k}" for k in bands.reference_kernel.tolist()])
    rests = np.where(published, pub_words, np.where(transfer, sibling_words, np.where(derived, ceiling.rests_on,
                                                                                       None))).astype(object)
    return _Verdicts(bands, basis, rests, ceiling)


def _sibling_ratio(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, kinds: OBJ, on_memory: NDArray[np.bool_],
                   specs: OBJ, bands: BandArrays, seq: F64, hd: F64, ceiling: ModelCeilings,
                   rows: NDArray[np.bool_]) -> tuple[F64, OBJ]:
    """For rows whose band family was measured on another part of this architecture: the published best carries over
    scaled by the ceiling model's ratio between this part and the measured one at the row's shape (roofs, exp unit,
    waves), times the row's waves over the published sizing's on the measured part. NaN where the ratio is unknown.
    Also the words: what such a band rests on."""
    n = len(table)
    ratio = np.full(n, np.nan)
    words = filled(n, None)
    for band_id in {b for b in bands.band_id[rows].tolist() if b is not None}:
        fam = family_by_id(str(band_id))
        sel = rows & (bands.band_id == band_id)
        try:
            measured = get_gpu(fam.measured_on[0])
        except PerfModelError:
            continue
        there = model_ceilings(table, work, measured, kinds, on_memory, _datasheet_specs(specs))
        own_waves = np.where(kinds == "decode", 1.0,
                             there.waves / _published_waves(table, work, measured, bands, seq, hd))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio[sel] = (ceiling.pct / there.pct * np.minimum(own_waves, 1.0))[sel]
        cls = ceiling.kernel_class[0]
        for kernel in set(bands.reference_kernel[sel].tolist()):
            words[sel & (bands.reference_kernel == kernel)] = (
                f"derived: {kernel} as published on {fam.measured_on_name}, carried to this part by the {cls} "
                "ceiling model's ratio between the two parts (tensor, exponential-unit and HBM roofs, waves)")
    return ratio, words


def _published_waves(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, bands: BandArrays, seq: F64,
                     hd: F64) -> F64:
    """The wave factor the published measurement behind each row's band had (its source's sizing at the row's N and
    head dim, the row's tiles, this part's units): a row is scaled by its own wave factor over this one, so a
    published figure is not charged twice for its own last wave. 1 where there is no published band."""
    out = np.ones(len(table))
    units = getattr(gpu, "sm_count", None)
    for band_id in {b for b in bands.band_id.tolist() if b is not None}:
        sizing = family_by_id(str(band_id)).sizing
        sel = bands.band_id == band_id
        if not sizing or not units:
            continue
        n, d = np.maximum(seq[sel], 1), np.maximum(hd[sel], 1)
        if "tokens" in sizing:
            b, h = np.maximum(1, sizing["tokens"] // n), np.maximum(1, sizing["hidden"] // d)
        else:
            b, h = sizing["batch"], sizing["heads_q"]
        block = np.where(table.is_bwd[sel], work.block_kv[sel], work.block_q[sel])
        out[sel] = wave_factor(np.ceil(n / np.maximum(block, 1)) * b * h, units)
    return out


def _interned(values: list[str | None]) -> OBJ:
    """An object array holding one reference per distinct string (a formatted string is a new object per row)."""
    seen: dict[str | None, str | None] = {}
    return np.array([seen.setdefault(v, v) for v in values], dtype=object)


def _is_none(values: OBJ) -> NDArray[np.bool_]:
    return np.array([v is None for v in values.tolist()], dtype=bool)


def _datasheet_specs(specs: OBJ) -> OBJ:
    """The first GEMM spec of every row (a split spec `a+b` is modeled on its Q·Kᵀ spec)."""
    return np.array([s.split("+", 1)[0] if isinstance(s, str) else s for s in specs.tolist()], dtype=object)


def own_bytes(bytes_model_bytes: F64, work: WorkEstimate, unfused: NDArray[np.bool_]) -> F64:
    """The bytes a row itself moves under one bytes model: the model's bytes, plus the score matrices an unfused
    chain writes and reads (traffic.score_matrix_bytes)."""
    used = np.asarray(bytes_model_bytes, dtype=np.float64)
    return np.where(unfused, used + work.bytes_score_matrix, used)


def own_intensity(flops: F64, bytes_: F64) -> F64:
    """FLOP per byte; NaN where there are no bytes (the roofline's own convention is kept for fused rows)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return flops / np.where(bytes_ > 0, bytes_, np.nan)


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
    unfused = (np.asarray(attention_types, dtype=object) == "unfused" if attention_types is not None
               else np.zeros(n, dtype=bool))
    regime_bytes = own_bytes(used, work, unfused)
    regime_intensity = np.where(unfused, own_intensity(work.flops_useful, regime_bytes), rf.intensity)
    bytes_unfused = np.where(unfused, regime_bytes, np.nan)
    regime = regime_of(regime_intensity, rf.ridge, known)

    kinds = row_kinds(table)
    verdicts = _bands(table, work, gpu, kinds, rf, specs)
    bands, ceiling = verdicts.bands, verdicts.ceiling
    exps = exponentials(work.kept_pairs, table.heads_q)
    exp_roof = part_exp_roof(gpu)
    # the binding roof of the traffic the row moves itself (an unfused chain's HBM time counts its score matrices)
    roofs = three_roofs(work.flops_useful, exps, regime_bytes, peak_t_ds, exp_roof, peak_b_ds)
    value = np.where(bands.metric == "memory", memory_ds, compute_ds)
    bound = work.work_bound.astype(object)
    check = model_checks(table, rf, bound)
    consistent = _is_none(check)
    exact = bound == "exact"
    band_ok = exact & np.isfinite(bands.low)
    low, high = np.where(band_ok, bands.low, np.nan), np.where(band_ok, bands.high, np.nan)
    # "none" where no band applies (low is NaN there) or the row is no verdict (model inconsistent: the band's edges
    # and reference stay, as what the call would take at the best kernel, but nothing is judged against them)
    status = band_status(value, low, high)
    status[~consistent] = "none"
    note_code = np.where(~consistent, NOTE_INCONSISTENT, np.where(exact, bands.note_code, NOTE_BOUND))
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
        # a derived band's source is what it rests on (the class, its points and parts)
        band_reference_source=np.where(band_ok, np.where(verdicts.basis == "derived", verdicts.rests_on,
                                                         bands.reference_source_text), None).astype(object),
        band_reference_time_us=ref_time,
        band_borrowed_from=np.where(band_ok, bands.borrowed_from, None).astype(object),
        band_note=np.asarray(NO_BAND_NOTES, dtype=object)[note_code],
        regime_intensity=regime_intensity,
        regime_bytes=regime_bytes,
        exponentials=exps,
        exp_roof_texps=np.full(n, exp_roof),
        tensor_time_us=roofs.tensor_time_us,
        exp_time_us=roofs.exp_time_us,
        hbm_time_us=roofs.hbm_time_us,
        binding_roof=roofs.binding,
        wave_factor=ceiling.waves,
        kernel_class=ceiling.kernel_class,
        ceiling_pct=ceiling.pct,
        ceiling_time_us=ceiling.time_us,
        band_basis=np.where(band_ok, verdicts.basis, "none").astype(object),
        band_rests_on=np.where(band_ok, verdicts.rests_on, None).astype(object),
        work_bound_reason=bound_reasons(table, bound),
        model_check=check,
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


__all__ = ["BALANCED_RATIO", "BOUND_REASONS", "REGIMES", "Assessment", "assess", "own_bytes", "own_intensity",
           "regime_of", "row_kinds", "spec_roof"]
