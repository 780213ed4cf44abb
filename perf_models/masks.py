"""Mask model: exact kept-pair counts and tile-granular work, in closed form, vectorized over rows.

Every supported mask keeps, in the Nq×Nkv score matrix of one (batch, head), the pairs (r, c) whose
diagonal index t = c − r lies in a band [lo, hi] (docs/perf-model.md §1):

| code | mask | band |
|---|---|---|
| 0 `MASK_NONE` | none | unbounded |
| 1 `MASK_CAUSAL_TL` | causal, top-left | t ≤ 0 |
| 2 `MASK_CAUSAL_BR` | causal, bottom-right | t ≤ s, s = Nkv − Nq |
| 3 `MASK_WINDOW` | sliding window (wl, wr), bottom-right | s − wl ≤ t ≤ s + wr, −1 = unbounded side |

So one band formula serves all of them:

* kept pairs: P = G(hi) − G(lo − 1) with G(t) = #{(r, c) : c − r ≤ t}, and G is a difference of two
  prefix sums of the clipped arithmetic series Σ clip(k, 0, Nkv) (no loop over query index);
* tiles: a Br×Bc tile holds the contiguous diagonal range [c0 − r1, c1 − r0], so for query-block i the
  visited key blocks are the contiguous range [max(0, ⌊(lo + i·Br)/Bc⌋), min(nkv − 1, ⌊(hi + r1_i)/Bc⌋)].
  Summing those bounds over i is a "floor sum" Σ⌊(a·i + b)/m⌋, evaluated with the Euclid-like
  recursion (a handful of vectorized steps, since a and m are block sizes); the clamps split the i
  range at thresholds found arithmetically, and the ragged last query block is one extra term.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.config import Alignment, Mask, MaskKind
from sdpa_analyzer.perf_models.errors import ConfigError

MASK_NONE = 0
MASK_CAUSAL_TL = 1
MASK_CAUSAL_BR = 2
MASK_WINDOW = 3
MASK_CODES = (MASK_NONE, MASK_CAUSAL_TL, MASK_CAUSAL_BR, MASK_WINDOW)

I64 = NDArray[np.int64]


def mask_code(mask: Mask) -> int:
    """The integer code a ConfigTable stores for a Mask."""
    if mask.kind is MaskKind.NONE:
        return MASK_NONE
    if mask.kind is MaskKind.CAUSAL:
        return MASK_CAUSAL_TL if mask.alignment is Alignment.TOP_LEFT else MASK_CAUSAL_BR
    return MASK_WINDOW


class TileSums(NamedTuple):
    """Tile-granular work of one (batch, head), summed over the Br×Bc tiles a kernel visits.

    visits:  tiles containing at least one kept pair
    q_rows:  Σ over visited tiles of the tile's query rows (rows of Q/dO a dK/dV loop loads)
    kv_cols: Σ over visited tiles of the tile's key columns (rows of K/V a Q-block loop loads)
    pairs:   Σ over visited tiles of rows × columns: the (query, key) pairs computed, masked or not.
    Partial edge tiles count only their in-matrix part, so P ≤ pairs ≤ Nq·Nkv.
    """

    visits: I64
    q_rows: I64
    kv_cols: I64
    pairs: I64


def _i64(*arrays: ArrayLike) -> list[I64]:
    return [np.asarray(a, dtype=np.int64) for a in np.broadcast_arrays(*arrays)]


def _check(code: I64, wl: I64, wr: I64) -> None:
    if code.size == 0:
        return
    if code.min() < MASK_NONE or code.max() > MASK_WINDOW:
        bad = (code < MASK_NONE) | (code > MASK_WINDOW)
        raise ConfigError("mask_code", int(code[bad][0]), f"one of {MASK_CODES} (none, causal TL/BR, window)")
    for name, w in (("window_left", wl), ("window_right", wr)):
        if w.min() < -1:
            raise ConfigError(name, int(w[w < -1][0]), "an integer >= 0, or -1 for unbounded")


def _band(nq: I64, nk: I64, code: I64, wl: I64, wr: I64) -> tuple[I64, I64, NDArray[np.bool_]]:
    """Kept diagonals [lo, hi] clamped to [-Nq, Nkv] (the matrix spans 1-Nq..Nkv-1), and `empty`.

    Written with bool multiplications instead of np.where/np.select: on random row mixes those
    branch per element and cost ~4× an arithmetic pass.
    """
    _check(code, wl, wr)
    s = nk - nq
    big = nq + nk  # an offset this large clamps to the matrix edge: unbounded
    is_win = code == MASK_WINDOW
    use_wl = is_win & (wl >= 0)
    lo = np.minimum(np.maximum(s - wl * use_wl - big * ~use_wl, -nq), nk)
    is_tl = code == MASK_CAUSAL_TL
    use_wr = is_win & (wr >= 0)
    unbounded_hi = ~(is_tl | (code == MASK_CAUSAL_BR) | use_wr)
    # TL: hi = 0 = s − s; BR: hi = s; window: s + wr; otherwise s + big, clamped to Nkv
    hi = np.minimum(np.maximum(s + wr * use_wr + big * unbounded_hi - s * is_tl, -nq), nk)
    empty = (lo > hi) | (hi == -nq) | (lo == nk) | (nq <= 0) | (nk <= 0)
    return lo, hi, empty


def _clipped_prefix(m: I64, nk1: I64, nk: I64) -> I64:
    """C(m) = Σ_{k=0}^{m-1} clip(k, 0, Nkv): an arithmetic series up to Nkv, then flat (nk1 = Nkv + 1)."""
    m = np.maximum(m, 0)
    mm = np.minimum(m, nk1)
    return ((mm * (mm - 1)) >> 1) + (m - mm) * nk


def _kept_from_band(nq: I64, nk: I64, lo: I64, hi: I64, empty: NDArray[np.bool_]) -> I64:
    nk1 = nk + 1
    p = (_clipped_prefix(hi + 1 + nq, nk1, nk) - _clipped_prefix(hi + 1, nk1, nk)
         - _clipped_prefix(lo + nq, nk1, nk) + _clipped_prefix(lo, nk1, nk))
    return p * ~empty


def kept_pairs(seq_q: ArrayLike, seq_kv: ArrayLike, code: ArrayLike, window_left: ArrayLike = -1,
               window_right: ArrayLike = -1) -> I64:
    """Exact number of (query, key) pairs the mask keeps for one (batch, head); int64, broadcast.

    P = G(hi) − G(lo − 1), G(t) = #{(r, c) : c − r ≤ t} = Σ_r clip(r + t + 1, 0, Nkv) = C(t+1+Nq) − C(t+1).
    """
    nq, nk, c, wl, wr = _i64(seq_q, seq_kv, code, window_left, window_right)
    return _kept_from_band(nq, nk, *_band(nq, nk, c, wl, wr))


def _floor_sum(n: I64, m: I64, a: I64, b: I64) -> I64:
    """Σ_{i=0}^{n-1} ⌊(a·i + b)/m⌋ per element (n ≥ 0, m > 0, a ≥ 0), by the Euclid-like recursion.

    Each step replaces (a, m) by (m, a mod m), so the depth is logarithmic in the block sizes. A row
    whose next n is 0 contributes nothing more, so rows need not leave the working set; it is only
    compacted when most rows are done.
    """
    out = np.zeros(n.shape, dtype=np.int64)
    idx: NDArray[np.intp] | None = None
    while True:
        q = a // m
        a = a - q * m
        qb = b // m
        b = b - qb * m
        part = ((n * (n - 1)) >> 1) * q + n * qb
        if idx is None:
            out += part
        else:
            out[idx] += part
        y = a * n + b
        n = y // m
        b = y - n * m
        m, a = np.maximum(a, 1), m  # a = 0 ends the row (n becomes 0); keep the divisor non-zero
        active = n > 0
        left = int(np.count_nonzero(active))
        if left == 0:
            return out
        if left * 2 < n.size:
            idx = np.flatnonzero(active) if idx is None else idx[active]
            n, m, a, b = n[active], m[active], a[active], b[active]


def tile_sums(seq_q: ArrayLike, seq_kv: ArrayLike, block_q: ArrayLike, block_kv: ArrayLike,
              code: ArrayLike, window_left: ArrayLike = -1, window_right: ArrayLike = -1) -> TileSums:
    """Tile-granular work for Br×Bc tiles under the mask (see TileSums), in closed form per row."""
    return kept_and_tiles(seq_q, seq_kv, block_q, block_kv, code, window_left, window_right)[1]


def kept_and_tiles(seq_q: ArrayLike, seq_kv: ArrayLike, block_q: ArrayLike, block_kv: ArrayLike,
                   code: ArrayLike, window_left: ArrayLike = -1, window_right: ArrayLike = -1,
                   *, skip_masked_tiles: bool = True) -> tuple[I64, TileSums]:
    """(kept_pairs, tile work) sharing one band computation; dense tile work if not skipping tiles."""
    nq, nk, br, bc, c, wl, wr = _i64(seq_q, seq_kv, block_q, block_kv, code, window_left, window_right)
    for name, blk in (("block_q", br), ("block_kv", bc)):
        if blk.size and blk.min() <= 0:
            raise ConfigError(name, int(blk[blk <= 0][0]), "a positive tile size")
    shape = nq.shape
    nq, nk, br, bc, c, wl, wr = (x.ravel() for x in (nq, nk, br, bc, c, wl, wr))
    lo, hi, empty = _band(nq, nk, c, wl, wr)
    kept = _kept_from_band(nq, nk, lo, hi, empty)
    if skip_masked_tiles:
        tiles = _tiles_from_band(nq, nk, br, bc, lo, hi, empty)
    else:
        tiles = dense_tile_sums(nq, nk, br, bc)
    return kept.reshape(shape), TileSums(*(x.reshape(shape) for x in tiles))


def _tiles_from_band(nq: I64, nk: I64, br: I64, bc: I64, lo: I64, hi: I64,
                     empty: NDArray[np.bool_]) -> TileSums:
    nonempty = ~empty
    nqb = (nq + br - 1) // br
    nkb = (nk + bc - 1) // bc
    # query blocks holding at least one kept pair form the contiguous range [i_first, i_last]
    i_first = np.maximum((-hi) // br, 0)
    i_last = np.minimum((nk - 1 - lo) // br, nqb - 1)

    # full query blocks (rows i·Br .. i·Br+Br-1): i in [i_first, i_end)
    n_full = np.maximum(np.minimum(i_last, nqb - 2) - i_first + 1, 0) * nonempty
    i_end = i_first + n_full
    # Σ jlo_i, jlo_i = max(0, ⌊(lo + i·Br)/Bc⌋): zero below t = ⌈−lo/Br⌉, a floor sum from t on
    t = np.minimum(np.maximum(-(lo // br), i_first), i_end)
    sum_jlo = _floor_sum(i_end - t, bc, br, lo + t * br)
    # Σ jhi_i, jhi_i = min(nkb − 1, ⌊(top + i·Br)/Bc⌋): a floor sum below u, clamped from u on
    top = hi + br - 1
    u = np.minimum(np.maximum(-((top - (nkb - 1) * bc) // br), i_first), i_end)
    n_clamped = i_end - u
    sum_jhi = _floor_sum(u - i_first, bc, br, top + i_first * br) + (nkb - 1) * n_clamped
    visits_full = sum_jhi - sum_jlo + n_full
    # a clamped block range ends at the ragged last key block, short by nkb·Bc − Nkv columns
    span_full = bc * (sum_jhi + n_full - sum_jlo) - (nkb * bc - nk) * n_clamped

    # the last query block (rows (nqb−1)·Br .. Nq−1), possibly ragged
    il = nqb - 1
    last_ok = nonempty & (i_last == il)
    jlo_l = np.maximum((lo + il * br) // bc, 0)
    jhi_l = np.minimum((hi + nq - 1) // bc, nkb - 1)
    cnt_l = (jhi_l - jlo_l + 1) * last_ok
    span_l = (np.minimum(nk, (jhi_l + 1) * bc) - jlo_l * bc) * last_ok
    rows_l = nq - il * br

    out = TileSums(
        visits=visits_full + cnt_l,
        q_rows=br * visits_full + rows_l * cnt_l,
        kv_cols=span_full + span_l,
        pairs=br * span_full + rows_l * span_l,
    )
    return out


def dense_tile_sums(seq_q: ArrayLike, seq_kv: ArrayLike, block_q: ArrayLike, block_kv: ArrayLike) -> TileSums:
    """Tile work when no tile is skipped (every tile of the ⌈Nq/Br⌉×⌈Nkv/Bc⌉ grid is visited)."""
    nq, nk, br, bc = _i64(seq_q, seq_kv, block_q, block_kv)
    nqb, nkb = (nq + br - 1) // br, (nk + bc - 1) // bc
    return TileSums(visits=nqb * nkb, q_rows=nkb * nq, kv_cols=nqb * nk, pairs=nq * nk)


def tile_visits(seq_q: ArrayLike, seq_kv: ArrayLike, block_q: ArrayLike, block_kv: ArrayLike,
                code: ArrayLike, window_left: ArrayLike = -1, window_right: ArrayLike = -1) -> I64:
    """Number of Br×Bc tiles that contain at least one kept pair, per (batch, head); int64."""
    return tile_sums(seq_q, seq_kv, block_q, block_kv, code, window_left, window_right).visits
