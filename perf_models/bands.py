"""Expected efficiency bands: where the best published kernels land, as data with a source per anchor.

`perf_models/data/bands.json` holds band *families*: one per GPU architecture (optionally restricted to some
parts), kind (fwd, bwd, decode), mask (none, causal, any), dtype class, head grouping (MHA, GQA, any) and metric
(compute: tensor utilization; memory: HBM utilization), each a set of curves by head dim whose anchors are the best
published kernel at a sequence length N — or, for decode, at a work size (MB of compulsory traffic per call). Each
anchor names its kernel, its published figure and its source, so every row gets a *reference*: the best published
kernel for its shape, its efficiency there and where it was published.

At a row's shape the best published efficiency is interpolated linearly in log2(N) (log2(MB)) between the anchors
of a curve and in log2(d) between the curves of neighbouring head dims — no cliff at a bin edge; above the last
anchor the value is held (attention throughput saturates with size); below the first anchor (a curve's `min_at`)
or outside the published head dims there is no band. Where readings of one figure disagree an anchor carries a
`pct_high` and the band spans both. The band is [low × best, min(100, high × best)] with the file's `edges`
(low 0.75: a kernel a published one beats by ≥ 1.35× lies below it).

The lookup still finds a family for another part of the same architecture and names the part it was measured on
(`borrowed_from`); perf_models.assess uses a published band only on that part and derives the band everywhere else
from the ceiling model (perf_models.ceiling), whose calibration points are these anchors (each family's `sizing`
says at which batch and heads its source measured). Families whose published numbers differ by part are restricted
to their parts (`parts`).

Lookup is vectorized: each family selects its rows with range and membership tests, each curve is one np.interp.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.errors import PerfModelError

KINDS = ("fwd", "bwd", "decode")
MASKS = ("none", "causal", "any")
HEADS = ("mha", "gqa", "any")
METRICS = ("compute", "memory")
AXES = ("seq", "bytes")
BAND_STATUSES = ("within", "below", "above", "none")
BELOW_WORDS = "below the best published kernels for this shape"
NO_BAND_WORDS = "no reference band: nothing is published for this shape"
# why a row has no band, by code (BandArrays.note_code); 0 = it has one
NO_BAND_NOTES = (
    "",
    NO_BAND_WORDS,
    "no reference band: nothing is published for this GPU architecture",
    "no reference band: shorter than the shortest published sequence for this shape",
    "no reference band: the call moves less data than the smallest published decode",
    "no reference band: head dim outside the published range for this shape",
    "no reference band: prefill and decode mixed in one call (no ceiling model for the mix)",
    "no band verdict: the work is a bound, not a measurement",
    "no reference band: the GPU's architecture is unknown or has no ceiling model (perf_models/data/arch_units.json)",
)
NOTE_NO_FAMILY, NOTE_NO_ARCH, NOTE_SHORT, NOTE_SMALL, NOTE_HEAD_DIM, NOTE_MIXED, NOTE_BOUND, NOTE_NO_MODEL = range(1, 9)


@dataclass(frozen=True)
class Anchor:
    at: float  # N tokens, or MB of compulsory traffic (decode)
    pct: float  # best published, % of the datasheet peak of the family's metric
    pct_high: float  # = pct unless readings of the source disagree
    kernel: str
    source: str  # a key of the file's sources
    published: str  # the figure as published


@dataclass(frozen=True)
class Curve:
    head_dim: int  # 0 = any head dim
    anchors: tuple[Anchor, ...]  # sorted by `at`
    min_at: float  # no band below this


@dataclass(frozen=True)
class BandFamily:
    id: str
    arch: str
    parts: tuple[str, ...] | None  # GPU keys this family is limited to (None: every part of the arch)
    measured_on: tuple[str, ...]  # GPU keys the anchors were measured on; elsewhere the band is borrowed
    measured_on_name: str
    kind: str
    mask: str
    dtypes: tuple[str, ...]
    heads: str
    metric: str
    axis: str
    curves: tuple[Curve, ...]  # sorted by head dim
    note: str
    # the source's sizing: {"tokens", "hidden"} (B = tokens / N, H = hidden / d) or {"batch", "heads_q", "heads_kv"}
    sizing: dict[str, int] | None = None


@dataclass(frozen=True)
class _Table:
    families: tuple[BandFamily, ...]
    sources: dict[str, str]
    low: float
    high: float


@dataclass(frozen=True, eq=False)
class BandArrays:
    """Per row: the band's edges (NaN when none), the best published efficiency at the row's shape and the kernel
    and source behind it, the family id and metric, whether the band is borrowed, and why there is none."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    metric: NDArray[np.object_]
    band_id: NDArray[np.object_]
    reference_pct: NDArray[np.float64]
    reference_kernel: NDArray[np.object_]
    reference_source: NDArray[np.object_]
    borrowed_from: NDArray[np.object_]  # the part the band was measured on, where it is not this one
    note_code: NDArray[np.int64]  # index into NO_BAND_NOTES (0: a band)

    @property
    def note(self) -> NDArray[np.object_]:
        return np.asarray(NO_BAND_NOTES, dtype=object)[self.note_code]

    @property
    def reference_source_text(self) -> NDArray[np.object_]:
        """The citation behind each row's reference (None: no band)."""
        sources = _table().sources
        codes, index = _codes(self.reference_source)
        texts = np.array([None if k is None else sources[str(k)] for k in index], dtype=object)
        return texts[codes] if len(codes) else np.full(0, None, dtype=object)


def _anchor(where: str, a: dict[str, object], sources: dict[str, str]) -> Anchor:
    pct = float(a["pct"])  # type: ignore[arg-type]
    anchor = Anchor(float(a["at"]), pct, float(a.get("pct_high", pct)), str(a["kernel"]),  # type: ignore[arg-type]
                    str(a["source"]), str(a["published"]))
    if not (0 < anchor.pct <= anchor.pct_high <= 100 and anchor.at > 0):
        raise PerfModelError(f"{where}: an anchor needs 0 < pct <= pct_high <= 100 and at > 0: {a!r}")
    if anchor.source not in sources:
        raise PerfModelError(f"{where}: anchor source {anchor.source!r} is not in the file's sources")
    return anchor


def _family(where: str, f: dict[str, object], sources: dict[str, str]) -> BandFamily:
    try:
        curves = []
        for c in f["curves"]:  # type: ignore[attr-defined]
            anchors = tuple(sorted((_anchor(where, a, sources) for a in c["points"]), key=lambda x: x.at))
            if not anchors:
                raise PerfModelError(f"{where}: family {f.get('id')}: a curve without anchors")
            curves.append(Curve(int(c["head_dim"]), anchors, float(c.get("min_at", anchors[0].at))))
        parts = f.get("parts")
        fam = BandFamily(
            id=str(f["id"]), arch=str(f["arch"]),
            parts=None if parts is None else tuple(str(p) for p in parts),  # type: ignore[attr-defined]
            measured_on=tuple(str(p) for p in f["measured_on"]),  # type: ignore[attr-defined]
            measured_on_name=str(f["measured_on_name"]), kind=str(f["kind"]), mask=str(f["mask"]),
            dtypes=tuple(str(d) for d in f["dtypes"]),  # type: ignore[attr-defined]
            heads=str(f["heads"]), metric=str(f["metric"]), axis=str(f["axis"]),
            curves=tuple(sorted(curves, key=lambda c: c.head_dim)), note=str(f.get("note", "")),
            sizing=None if f.get("sizing") is None else {str(k): int(v) for k, v in f["sizing"].items()},  # type: ignore[attr-defined]
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise PerfModelError(f"{where}: a band family is malformed ({exc!r}): {f.get('id')!r}") from None
    if (fam.kind, fam.mask, fam.heads, fam.metric, fam.axis) not in {
        (k, m, h, me, a) for k in KINDS for m in MASKS for h in HEADS for me in METRICS for a in AXES
    }:
        raise PerfModelError(f"{where}: family {fam.id}: kind/mask/heads/metric/axis out of {KINDS}/{MASKS}/"
                             f"{HEADS}/{METRICS}/{AXES}")
    dims = [c.head_dim for c in fam.curves]
    if len(set(dims)) != len(dims) or (0 in dims and len(dims) > 1):
        raise PerfModelError(f"{where}: family {fam.id}: head dims must be distinct (0 = any, alone)")
    return fam


@cache
def _table() -> _Table:
    where = "perf_models/data/bands.json"
    raw = json.loads(resources.files("perf_models").joinpath("data", "bands.json").read_text(encoding="utf-8"))
    if raw.get("defined_against") != "datasheet":
        raise PerfModelError(f"{where}: bands must be defined against the datasheet peak")
    sources = {str(k): str(v) for k, v in raw["sources"].items()}
    if any(len(v) < 20 for v in sources.values()):
        raise PerfModelError(f"{where}: every source needs a citation")
    fams = tuple(_family(where, f, sources) for f in raw["families"])
    ids = [f.id for f in fams]
    if len(set(ids)) != len(ids):
        raise PerfModelError(f"{where}: duplicate band ids")
    low, high = float(raw["edges"]["low"]), float(raw["edges"]["high"])
    if not 0 < low < 1 <= high:
        raise PerfModelError(f"{where}: edges need 0 < low < 1 <= high")
    return _Table(fams, sources, low, high)


def all_families() -> tuple[BandFamily, ...]:
    """Every band family of the packaged table (loaded and checked once)."""
    return _table().families


def band_edges() -> tuple[float, float]:
    """(low, high): the band is [low × best published, min(100, high × best published)]."""
    t = _table()
    return t.low, t.high


def family_by_id(band_id: str) -> BandFamily:
    for f in all_families():
        if f.id == band_id:
            return f
    raise PerfModelError(f"no band {band_id!r}")


def source_text(key: str) -> str:
    """The citation behind a source key of the band table."""
    return _table().sources[key]


def _curve_values(curve: Curve, x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                                   NDArray[np.int64]]:
    """(best, best_high, index of the nearest anchor) at x (log2 interpolation, held above; NaN below min_at)."""
    at = np.log2([a.at for a in curve.anchors])
    lx = np.log2(np.maximum(x, 1e-30))
    best = np.interp(lx, at, [a.pct for a in curve.anchors])
    high = np.interp(lx, at, [a.pct_high for a in curve.anchors])
    below = x < curve.min_at
    best[below] = np.nan
    high[below] = np.nan
    nearest = np.abs(lx[:, None] - at[None, :]).argmin(axis=1) if len(at) > 1 else np.zeros(len(x), dtype=np.int64)
    return best, high, nearest


def _interpolate(fam: BandFamily, x: NDArray[np.float64], d: NDArray[np.float64]) -> tuple[
        NDArray[np.float64], NDArray[np.float64], NDArray[np.object_], NDArray[np.object_], NDArray[np.int64]]:
    """Best published (and its high reading) at (x, d) for one family's rows, the reference kernel and source, and
    a note code where there is none."""
    n = len(x)
    best, high = np.full(n, np.nan), np.full(n, np.nan)
    kernel, source = np.full(n, None, dtype=object), np.full(n, None, dtype=object)
    note = np.zeros(n, dtype=np.int64)
    curves = fam.curves
    if curves[0].head_dim == 0:  # one curve for every head dim
        lo_i = hi_i = np.zeros(n, dtype=np.int64)
        t = np.zeros(n)
    else:
        dims = np.array([c.head_dim for c in curves], dtype=np.float64)
        outside = (d < dims[0]) | (d > dims[-1])
        note[outside] = NOTE_HEAD_DIM
        dc = np.clip(d, dims[0], dims[-1])
        hi_i = np.searchsorted(dims, dc, side="left")  # first curve with head_dim >= d
        lo_i = np.where(dims[np.minimum(hi_i, len(dims) - 1)] == dc, hi_i, hi_i - 1)
        lo_i, hi_i = np.clip(lo_i, 0, len(dims) - 1), np.clip(hi_i, 0, len(dims) - 1)
        span = np.log2(dims[hi_i]) - np.log2(dims[lo_i])
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(span > 0, (np.log2(dc) - np.log2(dims[lo_i])) / span, 0.0)
    values = [_curve_values(c, x) for c in curves]
    v_best = np.stack([v[0] for v in values])
    v_high = np.stack([v[1] for v in values])
    v_near = np.stack([v[2] for v in values])
    rows = np.arange(n)
    best = (1 - t) * v_best[lo_i, rows] + t * v_best[hi_i, rows]
    high = (1 - t) * v_high[lo_i, rows] + t * v_high[hi_i, rows]
    near_curve = np.where(t < 0.5, lo_i, hi_i)
    near_anchor = v_near[near_curve, rows]
    missing = ~np.isfinite(best)
    note[missing & (note == 0)] = NOTE_SMALL if fam.axis == "bytes" else NOTE_SHORT
    best[note != 0] = np.nan
    high[note != 0] = np.nan
    ok = np.flatnonzero(note == 0)
    for ci, curve in enumerate(curves):
        sel = ok[near_curve[ok] == ci]
        if not len(sel):
            continue
        names = np.array([a.kernel for a in curve.anchors], dtype=object)
        srcs = np.array([a.source for a in curve.anchors], dtype=object)
        kernel[sel], source[sel] = names[near_anchor[sel]], srcs[near_anchor[sel]]
    return best, high, kernel, source, note


def lookup_bands(
    gpu_key: str | None,
    arch: str | None,
    kind: ArrayLike,
    mask: ArrayLike,
    dtype: ArrayLike,
    is_gqa: ArrayLike,
    on_memory: ArrayLike,
    head_dim: ArrayLike,
    seq: ArrayLike,
    work_mb: ArrayLike,
) -> BandArrays:
    """The band of every row: kind fwd|bwd|decode, mask none|causal|window, dtype class, whether it is GQA (Hq > Hkv),
    whether it is judged on memory (else compute), head dim, N and work size (MB of compulsory traffic)."""
    kinds = np.asarray(kind, dtype=object)
    n = len(kinds)
    hd = np.asarray(head_dim, dtype=np.float64)
    xs = {"seq": np.asarray(seq, dtype=np.float64), "bytes": np.asarray(work_mb, dtype=np.float64)}
    out = BandArrays(
        low=np.full(n, np.nan), high=np.full(n, np.nan), metric=np.full(n, None, dtype=object),
        band_id=np.full(n, None, dtype=object), reference_pct=np.full(n, np.nan),
        reference_kernel=np.full(n, None, dtype=object), reference_source=np.full(n, None, dtype=object),
        borrowed_from=np.full(n, None, dtype=object), note_code=np.full(n, NOTE_NO_FAMILY, dtype=np.int64),
    )
    fams = [f for f in all_families() if f.arch == arch and (f.parts is None or gpu_key in f.parts)]
    if not fams:
        out.note_code[:] = NOTE_NO_ARCH
        return out
    # the text columns as codes once: comparing object arrays per family was most of the lookup's time
    codes = {name: _codes(np.asarray(col, dtype=object))
             for name, col in (("kind", kinds), ("mask", mask), ("dtype", dtype))}
    gqa = np.asarray(is_gqa, dtype=bool)
    memory = np.asarray(on_memory, dtype=bool)
    free = np.ones(n, dtype=bool)
    low_f, high_f = band_edges()
    for f in fams:
        sel = free & _is(codes["kind"], f.kind) & (memory if f.metric == "memory" else ~memory)
        sel &= np.isin(codes["dtype"][0], [codes["dtype"][1][d] for d in f.dtypes if d in codes["dtype"][1]])
        if f.mask != "any":
            sel &= _is(codes["mask"], f.mask)
        if f.heads != "any":
            sel &= gqa if f.heads == "gqa" else ~gqa
        idx = np.flatnonzero(sel)
        if not len(idx):
            continue
        free[idx] = False
        best, high, kernel, source, note = _interpolate(f, xs[f.axis][idx], hd[idx])
        out.note_code[idx] = note
        good = note == 0
        gi = idx[good]
        out.low[gi] = low_f * best[good]
        out.high[gi] = np.minimum(100.0, high_f * high[good])
        out.reference_pct[gi] = best[good]
        out.reference_kernel[gi] = kernel[good]
        out.reference_source[gi] = source[good]
        out.metric[gi] = f.metric
        out.band_id[gi] = f.id
        if gpu_key not in f.measured_on:
            out.borrowed_from[gi] = f.measured_on_name
    return out


def band_status(value: ArrayLike, low: ArrayLike, high: ArrayLike) -> NDArray[np.object_]:
    """within | below | above | none (no band, or no measured value) for each row."""
    v = np.asarray(value, dtype=np.float64)
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    ok = np.isfinite(v) & np.isfinite(lo)
    with np.errstate(invalid="ignore"):
        code = np.where(~ok, 3, np.where(v < lo, 1, np.where(v > hi, 2, 0)))
    return np.asarray(BAND_STATUSES, dtype=object)[code]


def _is(coded: tuple[np.ndarray, dict[object, int]], value: str) -> NDArray[np.bool_]:
    return coded[0] == coded[1].get(value, -1)


def _codes(values: np.ndarray) -> tuple[np.ndarray, dict[object, int]]:
    """Each value's index among the distinct values, and those values' indices by value."""
    cells = values.tolist()
    index = {v: i for i, v in enumerate(dict.fromkeys(cells))}
    return np.fromiter(map(index.__getitem__, cells), dtype=np.int64, count=len(cells)), index


__all__ = [
    "BAND_STATUSES", "BELOW_WORDS", "NO_BAND_NOTES", "NO_BAND_WORDS", "Anchor", "BandArrays", "BandFamily",
    "Curve", "all_families", "band_edges", "band_status", "family_by_id", "lookup_bands", "source_text",
]
