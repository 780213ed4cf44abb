"""server.factorize: codes and distinct values by first appearance, checked against a brute-force reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdpa_analyzer.server.factorize import factorize


def _reference(cells: list[object]) -> tuple[list[int], list[object]]:
    """By hand: a value is missing when None or a float NaN; two values are the same when type and value are."""
    uniques: list[object] = []
    keys: list[tuple[type, object]] = []
    codes = []
    for v in cells:
        if v is None or (type(v) is float and math.isnan(v)):
            codes.append(-1)
            continue
        key = (type(v), v)
        if key not in keys:
            keys.append(key)
            uniques.append(v)
        codes.append(keys.index(key))
    return codes, uniques


_CASES = {
    "text": ["b", "a", "b", "c", "a", "a"],
    "text with missing": ["b", None, "a", float("nan"), "b", "é", None],
    "long text with missing": ["k" * 40, None, "é" * 50, "k" * 40, float("nan"), "".join(["k"] * 40)],
    "numbers that compare equal": [1, 1.0, True, None, "1", 1, True, 1.0, float("nan")],
    "ints": [3, 1, 3, 2, 1],
    "floats and missing": [0.5, float("nan"), 0.5, None, 2.0],
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("container", ["list", "object array", "series"])
def test_codes_and_uniques_by_first_appearance(name: str, container: str) -> None:
    cells = _CASES[name]
    values: object = cells
    if container == "object array":
        values = np.fromiter(cells, dtype=object, count=len(cells))
    elif container == "series":
        values = pd.Series(np.fromiter(cells, dtype=object, count=len(cells)), dtype=object)
    codes, uniques = factorize(values)
    want_codes, want_uniques = _reference(cells)
    assert codes.tolist() == want_codes
    assert [(type(u), u) for u in uniques] == [(type(u), u) for u in want_uniques]


def test_a_text_column_of_pandas_str_dtype() -> None:
    cells = ["x", "y", None, "x", "z", "y"]
    codes, uniques = factorize(pd.Series(cells, dtype="str").to_numpy(dtype=object))
    assert codes.tolist() == [0, 1, -1, 0, 2, 1]
    assert uniques == ["x", "y", "z"]


def test_mostly_distinct_cells_are_not_hashed_when_inexact() -> None:
    cells: list[object] = [f"cell {i}" for i in range(3000)]
    cells[5], cells[17], cells[40] = None, float("nan"), pd.NA
    codes, uniques = factorize(np.fromiter(cells, dtype=object, count=len(cells)), exact=False)
    expected = list(range(3000))
    expected[5] = expected[17] = -1  # pd.NA is neither None nor a float NaN: a cell of its own
    assert codes.tolist() == expected
    assert uniques[:3] == cells[:3] and len(uniques) == 3000
