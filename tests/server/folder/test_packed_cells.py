"""server.folder.cells.PackedTexts: a column kept compressed gives back exactly its cells."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdpa_analyzer.server.folder.cells import BLOCK_CELLS, CELL_SEP, PackedTexts
from sdpa_analyzer.server.folder.kernel_details import parse_kernel_details, read_kernel_details


def _same(a: object, b: object) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


def _cells(n: int, seed: int) -> list[object]:
    rng = np.random.default_rng(seed)
    pool = ["", "plain", "é ünïcode ✓", "a,b\n\"quoted\"", "x" * 5000, None, float("nan"), "\ud800 lone surrogate"]
    return [pool[i] if i < len(pool) else f"cell {i}" for i in rng.integers(0, len(pool) + 3, n)]


@pytest.mark.parametrize("n", [0, 1, BLOCK_CELLS - 1, BLOCK_CELLS, 2 * BLOCK_CELLS + 5])
def test_every_cell_comes_back(n: int) -> None:
    cells = _cells(n, n)
    packed = PackedTexts(cells)
    assert len(packed) == n
    assert all(_same(a, b) for a, b in zip(packed.tolist(), cells, strict=True))
    if n:
        assert _same(packed[n - 1], cells[n - 1]) and _same(packed[-1], cells[-1])
        lo, hi = n // 3, n - n // 4
        assert all(_same(a, b) for a, b in zip(packed[lo:hi], cells[lo:hi], strict=True))
        picks = [n - 1, 0, n // 2, 0]
        assert all(_same(a, cells[i]) for a, i in zip(packed.rows(picks), picks, strict=True))
        assert all(_same(a, b) for a, b in zip(packed[::7], cells[::7], strict=True))
    with pytest.raises(IndexError):
        packed[n]


def test_a_block_with_the_separator_inside_a_cell_is_kept_as_it_is() -> None:
    cells = ["a", f"b{CELL_SEP}c", None, "d"]
    assert PackedTexts(cells).tolist() == cells


def test_repeated_kernel_summaries_pack_small() -> None:
    cell = "[{'name': 'void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >(Params)', 'stream': 7, "
    cells = [cell + f"'count': {i % 50}, 'total_duration_us': np.float64({i * 1.5:.3f})}}]" for i in range(20_000)]
    packed = PackedTexts(cells)
    assert packed.tolist() == cells
    assert packed.packed_bytes < sum(map(len, cells)) / 10


def test_many_distinct_skeletons_read_like_the_per_row_parser() -> None:
    # every row its own kernel names: one group per row (grouped by sorting, never one scan per group)
    cells = [
        f"[{{'name': 'fill_{i}', 'total_duration_us': np.float64({i % 7})}}, "
        f"{{'name': 'attn_{i % 13}', 'total_duration_us': np.float64({(i * 5) % 11})}}]"
        for i in range(3 * 8192 + 11)
    ]
    kd = read_kernel_details(cells)
    for i in range(0, len(cells), 97):
        ks = parse_kernel_details(cells[i])
        assert kd.names(i) == tuple(k["name"] for k in ks)
        assert kd.dominant[i] == int(np.argmax([k["total_duration_us"] for k in ks]))
        assert kd[i] == ks
    assert kd.rows([5, 1]) == [parse_kernel_details(cells[5]), parse_kernel_details(cells[1])]
