"""The ceiling of an attention call on a part: the best time a kernel of the architecture's class can reach, from the
part's datasheet properties and a small model per kernel class calibrated on published results.

The physics of one call (vectorized over rows, `CallPhysics`):

* T: tensor time = (executed FLOPs + k0 key columns of overhead per query row) / datasheet dense tensor roof of
  the row's dtype. Executed FLOPs count the masked pairs inside visited tiles (perf_models.masks); k0 is the
  per-query-tile prologue/epilogue (load Q, rescale and write O) expressed as extra key columns, so short and
  causal calls, whose rows see few keys, pay more of it.
* E: exponential time = one exp per kept score element / the exp roof (perf_models.exp_roof).
* M: HBM time = compulsory bytes / datasheet bandwidth.
* W: the wave factor of the grid (perf_models.waves): a grid that fills the units with a last partial wave or
  with fewer tiles than units reaches only tiles / (waves × units) of a full kernel's throughput.

The model of one kernel class (parameters `ClassParams`):

    forward/backward:  t = max(T / η + σ · E, T, E, M) / W
    decode:            t = max(T / η + σ · E, M / η_mem) + t0

η (per direction) is the class's efficiency ceiling of the tensor pipe; σ the softmax time left exposed per unit
of exp time — 0 for perfect overlap of softmax with the GEMMs (FA3's ping-pong), ≥ 1 for a class that runs them
in sequence and also spends other vector work per element (FA2); η_mem and t0 (a fixed latency per call) shape
decode, whose small calls reach less of HBM. The ceiling in % of the datasheet roof of the metric is the ideal
time on that roof over t.

The published results of perf_models/data/bands.json are the calibration data (`calibration_points`): each anchor
is placed at its source's sizing on the part it was measured on. The fit (perf_models.ceiling_fit) is a
deterministic grid search in log space; its result is checked in (perf_models/data/ceiling_params.json) and a test
refits it. A class with enough points (two head dims, six forward points) fits all its parameters; one with fewer
fits only its η and takes σ and k0 from the fit over every class (pooled); a class with no point takes all of them
from the pool. So any part of a known architecture gets a ceiling, and the verdict says what it rests on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.config import AttentionConfig, Direction, Mask, MaskKind
from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.estimate import WorkEstimate, estimate_work
from sdpa_analyzer.perf_models.exp_roof import arch_units, exponentials, part_exp_roof
from sdpa_analyzer.perf_models.hardware import GpuSpec, get_gpu
from sdpa_analyzer.perf_models.objects import filled
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.perf_models.waves import wave_factor

F64 = NDArray[np.float64]
KERNEL_CLASSES = {
    "fa2": "FlashAttention-2 class (Ampere, Ada, consumer Blackwell): softmax and GEMMs in sequence in each warp",
    "fa3": "FlashAttention-3 class (Hopper): warp specialization, ping-pong of softmax and GEMMs between warpgroups",
    "fa4": "FlashAttention-4 class (datacenter Blackwell): tcgen05 GEMMs, software-emulated exponentials beside the "
           "special-function units",
    "amd": "CK / AITER assembly class (CDNA3, CDNA4): MFMA GEMMs with ping-pong of softmax between waves",
}
# the tile shape whose query rows set the grid of a class (perf_models.tiles families)
CLASS_TILES = {"fa2": "fa2", "fa3": "fa3", "fa4": "fa2", "amd": "ck"}
_SPEC = {"bf16": "matrix_bf16", "fp16": "matrix_fp16", "fp8_e4m3": "matrix_fp8", "fp8_e5m2": "matrix_fp8"}


@dataclass(frozen=True)
class ClassParams:
    eta_fwd: float
    eta_bwd: float
    sigma: float
    k0: float
    points: int  # published points of this class the fit used
    parts: tuple[str, ...]  # the parts they were measured on
    pooled: tuple[str, ...]  # parameters taken from the fit over every class (too few points of this class)


@dataclass(frozen=True)
class DecodeParams:
    eta_mem: float
    t0_us: float
    points: int
    parts: tuple[str, ...]


@dataclass(frozen=True)
class CeilingParams:
    classes: dict[str, ClassParams]
    pooled: ClassParams
    decode: DecodeParams


@dataclass(frozen=True)
class CalPoint:
    """One published result used for calibration: the family's anchor at its source's sizing."""

    part: str
    arch: str
    kernel_class: str
    family: str
    kind: str  # fwd | bwd | decode
    mask: str
    dtype: str
    head_dim: int
    at: float  # N, or MB per call for decode
    pct: float  # the published best, % of the datasheet roof of the family's metric
    kernel: str
    source: str
    published: str
    config: AttentionConfig | None  # None for decode points (judged by work size)


@dataclass(frozen=True, eq=False)
class CallPhysics:
    """Per row: tensor-pipe time (µs) of the useful and executed FLOPs, the FLOPs-per-key-column overhead unit,
    exponential and HBM times, the wave factor, and what kind of call it is."""

    useful_us: F64  # useful FLOPs / tensor roof: the ideal tensor time (the efficiency numerator)
    executed_us: F64
    per_k0_us: F64  # tensor time of one extra key column for every query row
    exp_us: F64
    hbm_us: F64
    waves: F64
    is_bwd: NDArray[np.bool_]
    is_decode: NDArray[np.bool_]


def class_of(arch: str | None) -> str | None:
    """The kernel class of an architecture (None: not in perf_models/data/arch_units.json)."""
    u = arch_units(arch)
    return None if u is None else u.kernel_class


def call_physics(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, is_decode: NDArray[np.bool_],
                 specs: NDArray[np.object_] | None = None) -> CallPhysics:
    """The physics of every row on the part's datasheet roofs (NaN where the part lacks a roof)."""
    n = len(table)
    spec = table.compute_spec.astype(object) if specs is None else specs
    r_tc = np.full(n, np.nan)
    for s in set(spec.tolist()):
        if not isinstance(s, str):
            continue
        try:
            datasheet = gpu.compute_roof(s).datasheet
        except PerfModelError:
            continue
        if datasheet:
            r_tc[spec == s] = float(datasheet)
    r_exp = part_exp_roof(gpu)
    bw = gpu.bandwidth_roof()
    bw_ds = float(bw.datasheet if bw.datasheet is not None else bw.value)
    exps = exponentials(work.kept_pairs, table.heads_q)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_pair = np.where(exps > 0, work.flops_useful / exps, 0.0)  # FLOPs per kept element
        rows = table.batch.astype(np.float64) * table.heads_q * table.seq_q
        rows = np.where(table.is_varlen, table.total_q.astype(np.float64) * table.heads_q, rows)
        useful = work.flops_useful / (r_tc * 1e6)
        executed = work.flops_executed / (r_tc * 1e6)
        per_k0 = per_pair * rows / (r_tc * 1e6)
        exp_us = exps / (r_exp * 1e6)
        hbm_us = work.bytes_compulsory / (bw_ds * 1e6)
    # the grid: forward kernels launch one CTA per query tile, backward kernels (FA2, FA3, CK) one per key tile
    bwd = table.is_bwd.astype(bool)
    seq = np.where(bwd, table.seq_kv, table.seq_q)
    total = np.where(bwd, table.total_kv, table.total_q)
    block = np.maximum(np.where(bwd, work.block_kv, work.block_q), 1)
    tiles = np.ceil(np.maximum(seq, 1) / block) * table.batch * table.heads_q
    tiles = np.where(table.is_varlen, np.ceil(total / block) * table.heads_q, tiles)
    waves = np.where(is_decode, 1.0, wave_factor(tiles, getattr(gpu, "sm_count", None)))
    return CallPhysics(useful, executed, per_k0, exp_us, hbm_us, waves, table.is_bwd.astype(bool),
                       np.asarray(is_decode, dtype=bool))


def model_time_us(ph: CallPhysics, eta: F64, sigma: F64, k0: F64, eta_mem: float, t0_us: float) -> F64:
    """The model's best time of every row (see the module docstring); eta is each row's direction's η."""
    tensor = ph.executed_us + np.where(ph.is_decode, 0.0, k0) * ph.per_k0_us
    core = np.maximum(np.maximum(tensor / eta + sigma * ph.exp_us, tensor), ph.exp_us)
    full = np.maximum(core, ph.hbm_us) / ph.waves
    decode = np.maximum(core, ph.hbm_us / eta_mem) + t0_us
    return np.where(ph.is_decode, decode, full)


def _num(where: str, d: dict[str, object], key: str) -> float:
    try:
        v = float(d[key])  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):
        raise PerfModelError(f"{where}: {key!r} missing or not a number") from None
    if not np.isfinite(v) or v < 0:
        raise PerfModelError(f"{where}: {key!r} must be a finite number >= 0")
    return v


def _class_params(where: str, d: dict[str, object]) -> ClassParams:
    return ClassParams(_num(where, d, "eta_fwd"), _num(where, d, "eta_bwd"), _num(where, d, "sigma"),
                       _num(where, d, "k0"), int(_num(where, d, "points")),
                       tuple(str(p) for p in d.get("parts", ())),  # type: ignore[attr-defined]
                       tuple(str(p) for p in d.get("pooled", ())))  # type: ignore[attr-defined]


@cache
def ceiling_params() -> CeilingParams:
    """The fitted parameters, as checked in (perf_models/data/ceiling_params.json; refit by perf_models.ceiling_fit)."""
    where = "perf_models/data/ceiling_params.json"
    raw = json.loads(resources.files("perf_models").joinpath("data", "ceiling_params.json")
                     .read_text(encoding="utf-8"))
    classes = {str(k): _class_params(f"{where}: class {k}", v) for k, v in raw["classes"].items()}
    d = raw["decode"]
    decode = DecodeParams(_num(where, d, "eta_mem"), _num(where, d, "t0_us"), int(_num(where, d, "points")),
                          tuple(str(p) for p in d.get("parts", ())))
    return CeilingParams(classes, _class_params(f"{where}: pooled", raw["pooled"]), decode)


def class_arrays(kernel_class: NDArray[np.object_], is_bwd: NDArray[np.bool_],
                 params: CeilingParams) -> tuple[F64, F64, F64]:
    """(η, σ, k0) per row from each row's class (NaN where the class has no parameters)."""
    n = len(kernel_class)
    eta, sigma, k0 = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    for name, p in params.classes.items():
        sel = kernel_class == name
        eta[sel] = np.where(is_bwd[sel], p.eta_bwd, p.eta_fwd)
        sigma[sel], k0[sel] = p.sigma, p.k0
    return eta, sigma, k0


# --- calibration data: the published anchors of bands.json, placed at their sources' sizings -------------------


def _anchor_config(sizing: dict[str, int], kind: str, mask: str, dtype: str, d: int, n: int) -> AttentionConfig:
    if "tokens" in sizing:
        b, hq = max(1, sizing["tokens"] // n), max(1, sizing["hidden"] // d)
        hkv = hq
    else:
        b, hq, hkv = sizing["batch"], sizing["heads_q"], sizing["heads_kv"]
    m = Mask(MaskKind.CAUSAL) if mask == "causal" else Mask()
    return AttentionConfig(b, hq, hkv, n, n, d, d, dtype_q=dtype,
                           direction=Direction.BWD if kind == "bwd" else Direction.FWD, mask=m)


@cache
def calibration_points() -> tuple[CalPoint, ...]:
    """Every published anchor of perf_models/data/bands.json as a calibration point (decode compute-bound anchors
    are left out: one point, FlashMLA's 660 TFLOPS, with no size axis of its own)."""
    where = "perf_models/data/bands.json"
    raw = json.loads(resources.files("perf_models").joinpath("data", "bands.json").read_text(encoding="utf-8"))
    out = []
    for f in raw["families"]:
        cls = class_of(f["arch"])
        if cls is None:
            raise PerfModelError(f"{where}: family {f['id']}: arch {f['arch']!r} not in arch_units.json")
        part = str(f["measured_on"][0])
        if f["kind"] == "decode" and f["metric"] != "memory":
            continue
        for c in f["curves"]:
            for a in c["points"]:
                pct = float(a["pct"])
                if "pct_high" in a:  # two readings of one figure: their geometric mean
                    pct = float(np.sqrt(pct * float(a["pct_high"])))
                cfg = None
                if f["kind"] != "decode":
                    mask = "none" if f["mask"] == "any" else str(f["mask"])
                    cfg = _anchor_config(f["sizing"], f["kind"], mask, str(f["dtypes"][0]), int(c["head_dim"]),
                                         int(a["at"]))
                out.append(CalPoint(part, str(f["arch"]), cls, str(f["id"]), str(f["kind"]), str(f["mask"]),
                                    str(f["dtypes"][0]), int(c["head_dim"]), float(a["at"]), pct, str(a["kernel"]),
                                    str(a["source"]), str(a["published"]), cfg))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class CalibrationData:
    points: tuple[CalPoint, ...]
    physics: CallPhysics  # rows = points (decode rows: hbm_us from the anchor's MB)
    pct: F64
    kernel_class: NDArray[np.object_]
    part: NDArray[np.object_]


@cache
def calibration_data() -> CalibrationData:
    """The calibration points with their physics on the parts they were measured on."""
    pts = calibration_points()
    n = len(pts)
    fields = {k: np.full(n, np.nan) for k in ("useful_us", "executed_us", "per_k0_us", "exp_us", "hbm_us", "waves")}
    for i, p in enumerate(pts):
        gpu = get_gpu(p.part)
        if p.config is None:
            fields["hbm_us"][i] = p.at * 1e6 / (gpu.hbm_tbs_datasheet * 1e6)
            for k in ("useful_us", "executed_us", "per_k0_us", "exp_us"):
                fields[k][i] = 0.0
            fields["waves"][i] = 1.0
            continue
        table = ConfigTable.from_configs([p.config])
        work = estimate_work(table, family=CLASS_TILES[p.kernel_class])
        spec = np.array([_SPEC[p.dtype]], dtype=object)
        ph = call_physics(table, work, gpu, np.zeros(1, dtype=bool), spec)
        for k in fields:
            fields[k][i] = float(getattr(ph, k)[0])
    kinds = np.array([p.kind for p in pts], dtype=object)
    physics = CallPhysics(**fields, is_bwd=kinds == "bwd", is_decode=kinds == "decode")
    return CalibrationData(pts, physics, np.array([p.pct for p in pts]),
                           np.array([p.kernel_class for p in pts], dtype=object),
                           np.array([p.part for p in pts], dtype=object))


def predicted_pct(ph: CallPhysics, eta: F64, sigma: F64, k0: F64, eta_mem: float, t0_us: float) -> F64:
    """The model's best efficiency, % of the datasheet roof: tensor for forward/backward, HBM for decode."""
    t = model_time_us(ph, eta, sigma, k0, eta_mem, t0_us)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * np.where(ph.is_decode, ph.hbm_us, ph.useful_us) / t


@dataclass(frozen=True, eq=False)
class ModelCeilings:
    """Per row: the model's best efficiency (% of the datasheet roof of `metric`), that time (µs), the wave factor,
    the kernel class and what the ceiling rests on (NaN / None where the model does not apply)."""

    pct: F64
    metric: NDArray[np.object_]  # compute | memory | None
    time_us: F64
    waves: F64
    kernel_class: NDArray[np.object_]
    rests_on: NDArray[np.object_]
    physics: CallPhysics


def rests_on_words(kernel_class: str, params: CeilingParams) -> str:
    """What a derived ceiling rests on, in words: the class, its points and parts, what came from the pool."""
    p = params.classes[kernel_class]
    words = f"derived from the {kernel_class} ceiling model"
    if p.points:
        words += f", fitted on {p.points} published points measured on {', '.join(p.parts)}"
    if p.pooled:
        words += (f"; {', '.join(p.pooled)} from the fit over all classes ({params.pooled.points} points on "
                  f"{', '.join(params.pooled.parts)})")
    return words


def model_ceilings(table: ConfigTable, work: WorkEstimate, gpu: GpuSpec, kinds: NDArray[np.object_],
                   on_memory: NDArray[np.bool_], specs: NDArray[np.object_] | None = None) -> ModelCeilings:
    """The model's ceiling of every fwd / bwd / decode row on this part (see the module docstring): compute rows
    on the tensor roof, memory-bound decode rows on HBM, compute-bound decode rows on the tensor roof."""
    n = len(table)
    params = ceiling_params()
    cls = class_of(getattr(gpu, "arch", None))
    is_decode = kinds == "decode"
    ph = call_physics(table, work, gpu, is_decode, specs)
    klass = filled(n, cls)
    if cls is None:
        return ModelCeilings(np.full(n, np.nan), filled(n, None), np.full(n, np.nan), ph.waves, klass, filled(n, None),
                             ph)
    eta, sigma, k0 = class_arrays(klass, ph.is_bwd, params)
    t = model_time_us(ph, eta, sigma, k0, params.decode.eta_mem, params.decode.t0_us)
    memory = is_decode & on_memory
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = 100.0 * np.where(memory, ph.hbm_us, ph.useful_us) / t
    ok = np.isin(kinds, ("fwd", "bwd", "decode")) & np.isfinite(pct) & (pct > 0)
    pct = np.where(ok, np.minimum(pct, 100.0), np.nan)
    metric = np.array(["compute", "memory", None], dtype=object)[np.where(ok, memory.astype(np.intp), 2)]
    rests = np.array([rests_on_words(cls, params), None], dtype=object)[(~ok).astype(np.intp)]
    return ModelCeilings(pct, metric, np.where(ok, t, np.nan), ph.waves, klass, rests, ph)


__all__ = ["CLASS_TILES", "KERNEL_CLASSES", "CalPoint", "CalibrationData", "CallPhysics", "CeilingParams",
           "ClassParams", "DecodeParams", "ModelCeilings", "calibration_data", "calibration_points", "call_physics",
           "ceiling_params", "class_arrays", "class_of", "model_ceilings", "model_time_us", "predicted_pct",
           "rests_on_words"]
