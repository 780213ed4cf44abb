"""server.writers.runs: renumbering a run's combinations, and the sample check that skips factorizing."""

from __future__ import annotations

import numpy as np

from sdpa_analyzer.server.writers.runs import _renumbered, maybe_few


def _by_hand(keys: list[int]) -> tuple[list[int], int]:
    order = sorted(set(keys))
    return [order.index(k) for k in keys], len(order)


def test_renumbered_numbers_keys_in_value_order() -> None:
    keys = [7, 3, 3, 9, 0, 7, 9, 9]
    codes, k = _renumbered(np.array(keys, dtype=np.int64), 10)
    assert (codes.tolist(), k) == _by_hand(keys)


def test_renumbered_with_a_bound_too_large_for_a_table_keeps_the_grouping() -> None:
    keys = [5 * 10**12, 3, 3, 5 * 10**12, 17]
    codes, k = _renumbered(np.array(keys, dtype=np.int64), 10**13)
    assert k == 3
    # rows share a code exactly when they share a key (the numbering itself is free)
    assert [[a == b for b in codes.tolist()] for a in codes.tolist()] == [[a == b for b in keys] for a in keys]


def test_renumbered_no_rows() -> None:
    codes, k = _renumbered(np.zeros(0, dtype=np.int64), 0)
    assert (codes.tolist(), k) == ([], 0)


def test_maybe_few_rejects_mostly_distinct_first_rows_whatever_the_length() -> None:
    distinct = np.arange(100_000, dtype=np.float64) * 0.37
    assert not maybe_few(distinct)  # 1,024 distinct values in the first 1,024 rows
    assert maybe_few(np.tile([1.5, 2.5, np.nan], 40_000))
