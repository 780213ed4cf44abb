"""Mask model: closed-form kept pairs and tile counts against hand-worked values and brute force."""

from __future__ import annotations

import numpy as np
import pytest

from sdpa_analyzer.perf_models.config import CAUSAL_BOTTOM_RIGHT, CAUSAL_TOP_LEFT, NO_MASK, Mask, MaskKind
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.masks import (
    MASK_CAUSAL_BR,
    MASK_CAUSAL_TL,
    MASK_NONE,
    MASK_WINDOW,
    dense_tile_sums,
    kept_and_tiles,
    kept_pairs,
    mask_code,
    tile_sums,
    tile_visits,
)


def brute_mask(nq: int, nk: int, code: int, wl: int = -1, wr: int = -1) -> np.ndarray:
    """The kept (query, key) matrix, written straight from perf-model.md §1."""
    r = np.arange(nq)[:, None]
    c = np.arange(nk)[None, :]
    s = nk - nq
    if code == MASK_NONE:
        return np.ones((nq, nk), dtype=bool)
    if code == MASK_CAUSAL_TL:
        return np.broadcast_to(c <= r, (nq, nk))
    if code == MASK_CAUSAL_BR:
        return np.broadcast_to(c <= r + s, (nq, nk))
    keep = np.ones((nq, nk), dtype=bool)
    if wl >= 0:
        keep &= c >= r + s - wl
    if wr >= 0:
        keep &= c <= r + s + wr
    return keep


def brute_tiles(keep: np.ndarray, br: int, bc: int) -> tuple[int, int, int, int]:
    """(visits, q_rows, kv_cols, pairs) by walking every tile."""
    visits = q_rows = kv_cols = pairs = 0
    nq, nk = keep.shape
    for i in range(0, nq, br):
        for j in range(0, nk, bc):
            tile = keep[i : i + br, j : j + bc]
            if tile.any():
                visits += 1
                q_rows += tile.shape[0]
                kv_cols += tile.shape[1]
                pairs += tile.size
    return visits, q_rows, kv_cols, pairs


def test_mask_codes() -> None:
    assert mask_code(NO_MASK) == MASK_NONE == 0
    assert mask_code(CAUSAL_TOP_LEFT) == MASK_CAUSAL_TL == 1
    assert mask_code(CAUSAL_BOTTOM_RIGHT) == MASK_CAUSAL_BR == 2
    assert mask_code(Mask(MaskKind.SLIDING_WINDOW, window_left=3, window_right=0)) == MASK_WINDOW == 3


@pytest.mark.parametrize(
    ("nq", "nk", "code", "expected"),
    [
        # perf-model.md §6: Nq=512, Nkv=2048. TL: 512·513/2 = 131,328.
        (512, 2048, MASK_CAUSAL_TL, 131_328),
        # BR: 512·2048 − 512·511/2 = 1,048,576 − 130,816 = 917,760.
        (512, 2048, MASK_CAUSAL_BR, 917_760),
        # Nq > Nkv, TL: Nkv(Nkv+1)/2 + (Nq−Nkv)·Nkv = 131,328 + 1536·512 = 917,760.
        (2048, 512, MASK_CAUSAL_TL, 917_760),
        # Nq > Nkv, BR: the first 1536 rows are empty, then a 512 triangle: 131,328.
        (2048, 512, MASK_CAUSAL_BR, 131_328),
        # square: N(N+1)/2 for both alignments (not the N²/2 = 524,288 others use).
        (1024, 1024, MASK_CAUSAL_TL, 524_800),
        (1024, 1024, MASK_CAUSAL_BR, 524_800),
        (1, 1, MASK_CAUSAL_TL, 1),
        # decode: TL sees one key, BR the whole cache.
        (1, 4096, MASK_CAUSAL_TL, 1),
        (1, 4096, MASK_CAUSAL_BR, 4096),
        # flash-attn README: seqlen_q=2, seqlen_k=5 → rows 11110 / 11111 = 9.
        (2, 5, MASK_CAUSAL_BR, 9),
        (300, 700, MASK_NONE, 210_000),
    ],
)
def test_kept_pairs_causal_hand_values(nq: int, nk: int, code: int, expected: int) -> None:
    assert int(kept_pairs(nq, nk, code)) == expected
    assert int(brute_mask(nq, nk, code).sum()) == expected


@pytest.mark.parametrize(
    ("nq", "nk", "wl", "wr", "expected"),
    [
        # attention-research §1.4: N=4096, W=1024 (wl=1023, wr=0): W·N − W(W−1)/2 = 4,194,304 − 523,776.
        (4096, 4096, 1023, 0, 3_670_528),
        # one-sided, left only: N=5, wl=2: rows see 3,3,3,... keys ≤ i → 1,2,3,3,3 = 12.
        (5, 5, 2, 0, 12),
        # right unbounded: N=5, key ≥ i−2: 5,5,5,4,3 = 22.
        (5, 5, 2, -1, 22),
        # wl=-1, wr=0 is bottom-right causal: 2·5 − 1 = 9 (see above).
        (2, 5, -1, 0, 9),
        # Nq=2, Nkv=5, s=3, wl=1, wr=0: row 0 keys [2,3], row 1 keys [3,4] → 4.
        (2, 5, 1, 0, 4),
        # Nq=5, Nkv=2, s=−3, wl=wr=1: row i sees [i−4, i−2] ∩ [0,1] → 0,0,1,2,2 = 5.
        (5, 2, 1, 1, 5),
        # both unbounded = no mask.
        (7, 9, -1, -1, 63),
        # a window wider than the matrix = no mask.
        (7, 9, 100, 100, 63),
    ],
)
def test_kept_pairs_window_hand_values(nq: int, nk: int, wl: int, wr: int, expected: int) -> None:
    assert int(kept_pairs(nq, nk, MASK_WINDOW, wl, wr)) == expected
    assert int(brute_mask(nq, nk, MASK_WINDOW, wl, wr).sum()) == expected


def test_kept_pairs_brute_force_sweep() -> None:
    rng = np.random.default_rng(7)
    n = 2000
    nq = rng.integers(1, 60, n)
    nk = rng.integers(1, 60, n)
    code = rng.integers(0, 4, n)
    wl = np.where(code == MASK_WINDOW, rng.choice([-1, 0, 1, 5, 30, 200], n), -1)
    wr = np.where(code == MASK_WINDOW, rng.choice([-1, 0, 2, 17, 200], n), -1)
    got = kept_pairs(nq, nk, code, wl, wr)
    want = [int(brute_mask(*map(int, args)).sum()) for args in zip(nq, nk, code, wl, wr, strict=True)]
    np.testing.assert_array_equal(got, want)


def test_kept_pairs_broadcasts_and_returns_int64() -> None:
    out = kept_pairs(np.array([4, 8]), 8, MASK_CAUSAL_BR)
    assert out.dtype == np.int64
    # Nq=4, Nkv=8 BR: 4·8 − 4·3/2 = 26; square 8: 36.
    assert out.tolist() == [26, 36]


@pytest.mark.parametrize(
    ("n", "block", "expected_tiles"),
    [
        # square causal, n = N/B tiles per side: n(n+1)/2 of n² (attention-research §1.3).
        (1024, 128, 36),  # n=8: 36/64 = 0.5625
        (4096, 128, 528),  # n=32: 528/1024 = 0.515625
        (128, 128, 1),  # one tile: a causal 128-token head costs the same as dense
        (1024, 64, 136),  # n=16 (the seed PR's blocks)
    ],
)
def test_tile_visits_square_causal(n: int, block: int, expected_tiles: int) -> None:
    for code in (MASK_CAUSAL_TL, MASK_CAUSAL_BR):
        assert int(tile_visits(n, n, block, block, code)) == expected_tiles


def test_tile_sums_hand_worked_ragged_and_rectangular() -> None:
    # Nq=Nkv=256, Br=128, Bc=64, causal: q-block 0 (rows 0–127) meets key blocks 0,1; q-block 1
    # (rows 128–255) meets 0..3 → 6 tiles; executed pairs 128·128 + 128·256 = 49,152.
    ts = tile_sums(256, 256, 128, 64, MASK_CAUSAL_TL)
    assert (int(ts.visits), int(ts.pairs)) == (6, 49_152)
    # Nq=Nkv=100, 64² tiles, causal: q-block 0 → 1 tile (64×64), ragged q-block 1 (36 rows) → key blocks
    # 0 and 1 (100 columns): 3 tiles, pairs 4096 + 3600 = 7696; q_rows 64 + 2·36 = 136; kv_cols 64 + 100.
    ts = tile_sums(100, 100, 64, 64, MASK_CAUSAL_BR)
    assert tuple(int(x) for x in ts) == (3, 136, 164, 7696)


def test_tile_sums_brute_force_sweep() -> None:
    rng = np.random.default_rng(11)
    n = 1500
    nq = rng.integers(1, 70, n)
    nk = rng.integers(1, 70, n)
    code = rng.integers(0, 4, n)
    wl = np.where(code == MASK_WINDOW, rng.choice([-1, 0, 1, 3, 10, 40, 100], n), -1)
    wr = np.where(code == MASK_WINDOW, rng.choice([-1, 0, 1, 5, 30, 100], n), -1)
    # non-power-of-two and mismatched tiles exercise the floor-sum recursion
    br = rng.choice([1, 2, 3, 5, 8, 16, 32, 64, 80], n)
    bc = rng.choice([1, 2, 4, 6, 13, 16, 64, 128, 176], n)
    kept, ts = kept_and_tiles(nq, nk, br, bc, code, wl, wr)
    for i in range(n):
        keep = brute_mask(int(nq[i]), int(nk[i]), int(code[i]), int(wl[i]), int(wr[i]))
        want = (int(keep.sum()), *brute_tiles(keep, int(br[i]), int(bc[i])))
        got = (int(kept[i]), int(ts.visits[i]), int(ts.q_rows[i]), int(ts.kv_cols[i]), int(ts.pairs[i]))
        assert got == want, (nq[i], nk[i], code[i], wl[i], wr[i], br[i], bc[i])


def test_executed_pairs_bracket_kept_pairs() -> None:
    rng = np.random.default_rng(3)
    n = 5000
    nq, nk = rng.integers(1, 5000, n), rng.integers(1, 5000, n)
    code = rng.integers(0, 3, n)
    kept, ts = kept_and_tiles(nq, nk, 128, 64, code)
    assert (kept <= ts.pairs).all() and (ts.pairs <= nq * nk).all()


def test_dense_tile_sums_and_no_skip() -> None:
    # 1000×1000 with 128×64 tiles: 8 q-blocks × 16 kv-blocks; each kv block re-reads all 1000 query
    # rows (16·1000), each q block all 1000 keys (8·1000).
    ts = dense_tile_sums(1000, 1000, 128, 64)
    assert tuple(int(x) for x in ts) == (128, 16_000, 8_000, 1_000_000)
    _, no_skip = kept_and_tiles(1000, 1000, 128, 64, MASK_CAUSAL_TL, skip_masked_tiles=False)
    assert tuple(int(x) for x in no_skip) == (128, 16_000, 8_000, 1_000_000)


def test_zero_length_rows_are_empty() -> None:
    kept, ts = kept_and_tiles(np.array([0, 5]), np.array([5, 0]), 4, 4, MASK_NONE)
    assert kept.tolist() == [0, 0] and ts.visits.tolist() == [0, 0] and ts.pairs.tolist() == [0, 0]


def test_bad_codes_and_tiles_raise() -> None:
    with pytest.raises(ConfigError, match="mask_code"):
        kept_pairs(4, 4, 7)
    with pytest.raises(ConfigError, match="window_left"):
        kept_pairs(4, 4, MASK_WINDOW, -2, 0)
    with pytest.raises(ConfigError, match="block_q"):
        tile_visits(4, 4, 0, 4, MASK_NONE)


def test_large_sizes_stay_exact() -> None:
    # 1M-token causal square: N(N+1)/2 = 500,000,500,000; tiles with n = 8192 per side: n(n+1)/2.
    n = 1 << 20
    assert int(kept_pairs(n, n, MASK_CAUSAL_BR)) == n * (n + 1) // 2
    assert int(tile_visits(n, n, 128, 128, MASK_CAUSAL_BR)) == 8192 * 8193 // 2
