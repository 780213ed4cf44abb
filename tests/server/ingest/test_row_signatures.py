"""RowSignatures (cpu row -> signature id, two sorted arrays) answers as the dict it replaced, renumbering too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdpa_analyzer.server.ingest.events import RowSignatures


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 300), st.integers(0, 50), max_size=60),
    st.lists(st.booleans(), min_size=301, max_size=301),
)
def test_answers_and_renumbers_as_a_dict(mapping: dict[int, int], usable_list: list[bool]) -> None:
    rows = np.array(list(mapping), dtype=np.int64)
    sigs = RowSignatures(rows, np.array(list(mapping.values()), dtype=np.int32))  # any order in
    assert len(sigs) == len(mapping)
    for row in range(-2, 303):
        assert sigs.get(row) == mapping.get(row)
        assert (row in sigs) == (row in mapping)
    # dropping rows: the dict renumbered by hand, the kept rows counted in order
    usable = np.array(usable_list)
    new_row = {old: sum(usable_list[:old]) for old in range(301) if usable_list[old]}
    expected = {new_row[r]: s for r, s in mapping.items() if usable_list[r]}
    kept = sigs.kept(usable)
    assert {int(r): int(s) for r, s in zip(kept.rows, kept.ids, strict=True)} == expected
    assert kept == RowSignatures(np.array(list(expected), dtype=np.int64), np.array(list(expected.values())))


def test_lookup_errors_and_equality() -> None:
    sigs = RowSignatures(np.array([5, 2]), np.array([1, 0]))
    assert sigs[2] == 0 and sigs[5] == 1 and sigs.get(3) is None and sigs.get(3, -1) == -1
    with pytest.raises(KeyError):
        sigs[3]
    assert sigs == RowSignatures(np.array([2, 5]), np.array([0, 1]))
    assert sigs != RowSignatures(np.array([2, 5]), np.array([0, 2]))
    assert len(RowSignatures.empty()) == 0 and RowSignatures.empty().get(0) is None
