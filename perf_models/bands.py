"""Expected efficiency bands, as data with a source per band (`perf_models/data/bands.json`).

A band says where the best published kernels for a shape land, in % of the GPU's datasheet peak: a compute
band compares the achieved TFLOP/s of useful FLOPs, a memory band (decode) the achieved HBM bandwidth. Bands are
keyed by what the published measurements distinguish: GPU architecture, kind (forward, backward, decode), mask
(none or causal), dtype, head dim and sequence length. Where nothing is published for a shape there is no band,
and results say "no reference band" instead of inventing one. A result below its band is "below the best
published kernels for this shape", not a bottleneck by itself; one inside it is as good as published kernels get.

Lookup is vectorized: every band is a conjunction of range and membership tests over the rows' columns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perf_models.errors import PerfModelError

KINDS = ("fwd", "bwd", "decode")
MASKS = ("none", "causal", "window")
METRICS = ("compute", "memory")
BAND_STATUSES = ("within", "below", "above", "none")
BELOW_WORDS = "below the best published kernels for this shape"
NO_BAND_WORDS = "no reference band: nothing is published for this shape"


@dataclass(frozen=True)
class Band:
    id: str
    arch: str
    kind: str
    mask: str  # none | causal | any
    dtypes: tuple[str, ...]
    head_dim: tuple[int, int]  # inclusive
    seq: tuple[int, int | None]  # [lo, hi) tokens; None = unbounded
    metric: str  # compute | memory
    low: float
    high: float
    anchor: str  # the published figures the band rests on
    source: str  # where they are published


@dataclass(frozen=True, eq=False)
class BandArrays:
    """Per row: the band's edges (NaN when none), its metric and id (None when none)."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    metric: NDArray[np.object_]
    band_id: NDArray[np.object_]


def _check(where: str, b: dict[str, object]) -> Band:
    try:
        band = Band(
            id=str(b["id"]),
            arch=str(b["arch"]),
            kind=str(b["kind"]),
            mask=str(b["mask"]),
            dtypes=tuple(str(d) for d in b["dtypes"]),  # type: ignore[attr-defined]
            head_dim=(int(b["head_dim"][0]), int(b["head_dim"][1])),  # type: ignore[index]
            seq=(int(b["seq"][0]), None if b["seq"][1] is None else int(b["seq"][1])),  # type: ignore[index]
            metric=str(b["metric"]),
            low=float(b["low"]),  # type: ignore[arg-type]
            high=float(b["high"]),  # type: ignore[arg-type]
            anchor=str(b["anchor"]),
            source=str(b["source"]),
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise PerfModelError(f"{where}: a band is malformed ({exc!r}): {b!r}") from None
    if band.kind not in KINDS or band.metric not in METRICS or band.mask not in (*MASKS, "any"):
        raise PerfModelError(f"{where}: band {band.id}: kind/metric/mask out of {KINDS}/{METRICS}/{MASKS}")
    if not 0 < band.low < band.high <= 100 or len(band.source) < 20 or not band.anchor:
        raise PerfModelError(f"{where}: band {band.id}: needs 0 < low < high <= 100, an anchor and a source")
    return band


@cache
def all_bands() -> tuple[Band, ...]:
    """Every band of the packaged table (loaded and checked once)."""
    where = "perf_models/data/bands.json"
    raw = json.loads(resources.files("perf_models").joinpath("data", "bands.json").read_text(encoding="utf-8"))
    if raw.get("defined_against") != "datasheet":
        raise PerfModelError(f"{where}: bands must be defined against the datasheet peak")
    bands = tuple(_check(where, b) for b in raw["bands"])
    ids = [b.id for b in bands]
    if len(set(ids)) != len(ids):
        raise PerfModelError(f"{where}: duplicate band ids")
    return bands


def band_by_id(band_id: str) -> Band:
    for b in all_bands():
        if b.id == band_id:
            return b
    raise PerfModelError(f"no band {band_id!r}")


def lookup_bands(
    arch: str | None,
    kind: ArrayLike,
    mask: ArrayLike,
    dtype: ArrayLike,
    head_dim: ArrayLike,
    seq: ArrayLike,
) -> BandArrays:
    """The band of every row (first match in the table's order); rows of a GPU without bands get none."""
    kinds = np.asarray(kind, dtype=object)
    n = len(kinds)
    masks = np.asarray(mask, dtype=object)
    dtypes = np.asarray(dtype, dtype=object)
    hd = np.asarray(head_dim, dtype=np.int64)
    sq = np.asarray(seq, dtype=np.int64)
    low = np.full(n, np.nan)
    high = np.full(n, np.nan)
    metric = np.full(n, None, dtype=object)
    band_id = np.full(n, None, dtype=object)
    if arch is None:
        return BandArrays(low, high, metric, band_id)
    free = np.ones(n, dtype=bool)
    # the text columns as codes once: comparing object arrays per band was most of the lookup's time
    kind_codes, kind_names = _codes(kinds)
    mask_codes, mask_names = _codes(masks)
    dtype_codes, dtype_names = _codes(dtypes)
    for b in all_bands():
        if b.arch != arch:
            continue
        sel = free & (kind_codes == kind_names.get(b.kind, -1))
        sel &= np.isin(dtype_codes, [dtype_names[d] for d in b.dtypes if d in dtype_names])
        sel &= (hd >= b.head_dim[0]) & (hd <= b.head_dim[1]) & (sq >= b.seq[0])
        if b.seq[1] is not None:
            sel &= sq < b.seq[1]
        if b.mask != "any":
            sel &= mask_codes == mask_names.get(b.mask, -1)
        if sel.any():
            low[sel], high[sel], metric[sel], band_id[sel] = b.low, b.high, b.metric, b.id
            free &= ~sel
    return BandArrays(low, high, metric, band_id)


def band_status(value: ArrayLike, low: ArrayLike, high: ArrayLike) -> NDArray[np.object_]:
    """within | below | above | none (no band, or no measured value) for each row."""
    v = np.asarray(value, dtype=np.float64)
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    ok = np.isfinite(v) & np.isfinite(lo)
    with np.errstate(invalid="ignore"):
        code = np.where(~ok, 3, np.where(v < lo, 1, np.where(v > hi, 2, 0)))
    return np.asarray(BAND_STATUSES, dtype=object)[code]


def _codes(values: np.ndarray) -> tuple[np.ndarray, dict[object, int]]:
    """Each value's index among the distinct values, and those values' indices by value."""
    cells = values.tolist()
    index = {v: i for i, v in enumerate(dict.fromkeys(cells))}
    return np.fromiter(map(index.__getitem__, cells), dtype=np.int64, count=len(cells)), index
