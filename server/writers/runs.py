"""Pre-rendered runs of few-valued columns, shared by the column-wise CSV and JSON writers.

A row of a wide table is joined from one text per column. Adjacent columns that each have few distinct values
(flags, units, labels) have few distinct combinations too: each combination is rendered once and every row
takes its combination's text, so a row is joined from a few pieces instead of dozens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd

FEW = 1 / 16  # a column with at most this share of distinct values joins a pre-rendered run
RUN_LIMIT = 1 / 4  # a run stops growing before its distinct combinations pass this share of the rows
# A column whose texts are this long on average (call chains, kernel names) stands alone: joining it into a
# run saves one piece per row but copies its long texts into every combination (tens of MB at 10^5 rows).
LONG_TEXT = 256

Coded = tuple[np.ndarray, Sequence[bytes]]  # every row's code (>= 0) and the text of each code


def few(distinct: int, n: int) -> bool:
    """Whether `distinct` values over `n` rows are few enough to pre-render."""
    return distinct <= max(1.0, n * FEW)


SAMPLE_ROWS = 1024


def maybe_few(values: np.ndarray, rows: int | None = None) -> bool:
    """False when the first rows alone have too many distinct values, or are mostly distinct (skips factorizing
    the column: a column of measured times or ratios is distinct in almost every row).

    `values` may be just those first rows of a column of `rows` rows. A column judged so may still have had few
    values over all its rows: it is then formatted row by row, into the same text."""
    sample = values[:SAMPLE_ROWS]
    n = len(values) if rows is None else rows
    if len(sample) < 64:
        return True
    distinct = len(np.unique(sample))
    return distinct <= max(1.0, n * FEW) and 2 * distinct <= len(sample)


def coded_numbers(values: np.ndarray, fmt: Callable[[np.ndarray], list[bytes]]) -> Coded | None:
    """Codes and texts of a numeric column with few distinct values (NaN included as a value), else None."""
    if not maybe_few(values):
        return None
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    if not few(len(uniques), len(values)):
        return None
    return codes.astype(np.int64, copy=False), fmt(np.asarray(uniques))


class Combined:
    """Rows' texts as a table lookup: codes[i] indexes the pre-rendered texts."""

    def __init__(self, codes: np.ndarray, texts: Sequence[bytes]) -> None:
        self.codes = codes
        self.table = np.array(texts, dtype=object)

    def texts(self, start: int, stop: int) -> list[bytes]:
        return self.table[self.codes[start:stop]].tolist()


T = TypeVar("T")


def combine_runs(
    items: list[T],
    n: int,
    *,
    coded: Callable[[T], Coded | None],
    constant: Callable[[T], bytes | None],
    wrap: Callable[[Combined], T],
    sep: bytes = b"",
) -> list[T]:
    """Replace each run of constants and coded columns holding two columns or more by one pre-rendered column.

    `coded(item)` gives a column's codes and texts (None: not few-valued, the run ends), `constant(item)` the
    bytes of a constant piece (None: a column), `wrap` turns a Combined into an item, `sep` joins the pieces of
    a combination. A lone coded column becomes a Combined of its own codes (a lookup is cheaper than formatting).
    """
    out: list[T] = []
    run: list[tuple[T, Coded | None]] = []  # (item, its codes; None for a constant), in order
    joint = np.zeros(n, dtype=np.int64)  # each row's combination of the run so far, numbered 0..combos-1
    combos = 1

    def flush() -> None:
        nonlocal joint, combos
        if sum(c is not None for _, c in run) >= 2:
            firsts = np.unique(joint, return_index=True)[1].tolist()
            pieces = [(constant(item), c) for item, c in run]
            texts = [sep.join(b if c is None else c[1][c[0][i]] for b, c in pieces) for i in firsts]  # type: ignore[misc]
            out.append(wrap(Combined(joint, texts)))
        else:
            out.extend(item if c is None else wrap(Combined(*c)) for item, c in run)
        run.clear()
        joint, combos = np.zeros(n, dtype=np.int64), 1

    for item in items:
        if constant(item) is not None:
            run.append((item, None))
            continue
        c = coded(item)
        if c is None:
            flush()
            out.append(item)
            continue
        codes, texts = c
        if texts and sum(map(len, texts)) > LONG_TEXT * len(texts):
            flush()
            out.append(wrap(Combined(codes, texts)))
            continue
        trial, found = _renumbered(joint * len(texts) + codes, combos * len(texts))
        if found > max(1.0, n * RUN_LIMIT):
            flush()
            trial, found = _renumbered(codes, len(texts))
        joint, combos = trial, found
        run.append((item, c))
    flush()
    return out


def _renumbered(keys: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """`keys` (each in 0..bound-1) numbered 0..k-1 in the order of their values, and k: a table of the values seen
    when `bound` is small (no hashing: ~5x faster than pandas.factorize on 10^5 rows), else pandas.factorize."""
    if bound <= max(len(keys), 1 << 16):
        seen = np.zeros(bound, dtype=bool)
        seen[keys] = True
        number = np.cumsum(seen, dtype=np.int64) - 1
        return number[keys], int(number[-1]) + 1 if bound else 0
    codes, uniques = pd.factorize(keys)
    return codes.astype(np.int64, copy=False), len(uniques)
