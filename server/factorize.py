"""Codes and distinct values of an object column (pandas.factorize semantics, faster on text columns).

Missing values (None, NaN) get code -1. A column of plain strings (told by one C pass) of short texts goes to
pandas' hash table, long ones to a dict built and read by C-level calls (a str caches its hash; pandas hashes each
row's text again); columns of mixed types that compare equal (1, 1.0, True) are keyed by (type, value) in a dict.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

_SAMPLE = 1024
# mean characters of a text column's first rows up to which pandas' hash table beats a dict (10^5 rows of 1-3
# values: 2.2-2.9 ms against 5-10 ms at 3-15 characters; 6.7 against 6.3 ms at 41; 61 against 8 ms at 473)
_SHORT_TEXT = 16


def factorize(values: Any, *, exact: bool = True) -> tuple[np.ndarray, list[Any]]:
    """(codes, uniques): uniques in order of first appearance, codes[i] indexes them, -1 for missing.

    Values of different types that compare equal (1, 1.0, True) stay distinct. Unhashable values raise
    TypeError. With exact=False, a column whose first rows are mostly distinct (whole CSV cells, say) is
    not hashed at all: every row is its own code (uniques may then repeat; only for encoding output).
    """
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        arr = values
    else:
        listed = values.tolist() if isinstance(values, np.ndarray | pd.Series) else list(values)
        arr = np.fromiter(listed, dtype=object, count=len(listed))  # never unpacks list cells
    if not exact and len(arr) > 1:
        sample = arr[:_SAMPLE].tolist()
        if len(set(sample)) > len(sample) // 2:
            codes = np.arange(len(arr), dtype=np.int64)
            maybe = np.flatnonzero(pd.isna(arr)).tolist()  # a superset (pd.NA, NaT, np.float64 NaN): checked below
            codes[[i for i in maybe if arr[i] is None or (type(arr[i]) is float and arr[i] != arr[i])]] = -1
            return codes, arr.tolist()
    if pd.api.types.infer_dtype(arr, skipna=False) == "string":  # text only, told by one C pass
        sample = arr[:_SAMPLE].tolist()
        if sum(map(len, sample)) <= _SHORT_TEXT * len(sample):  # short texts: pandas' hash table
            codes, found = pd.factorize(arr, use_na_sentinel=True)
            return codes.astype(np.int64, copy=False), found.tolist()
        cells = arr.tolist()  # long texts: a dict, whose str keys hash once per object (pandas hashes every row)
        return _by_dict(cells, cells)
    cells = arr.tolist()
    types = set(map(type, cells))
    if len(types - {str, type(None), float}) > 1 or (float in types and types & {int, bool}):
        missing = pd.isna(arr)
        present = np.flatnonzero(~missing)
        sub, uniques = _by_dict([cells[i] for i in present.tolist()], [(type(cells[i]), cells[i]) for i in present])
        codes = np.full(len(cells), -1, dtype=np.int64)
        codes[present] = sub
        return codes, uniques
    codes, found = pd.factorize(arr, use_na_sentinel=True)
    return codes.astype(np.int64, copy=False), found.tolist()


def _by_dict(cells: list[Any], keys: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes of `keys` by first appearance (a dict filled and read by C-level calls), and their cells."""
    index: dict[Any, Any] = dict.fromkeys(keys)
    for k, key in enumerate(index):
        index[key] = k
    codes = np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))
    if keys is cells:
        return codes, list(index)
    first = np.unique(codes, return_index=True)[1] if len(codes) else np.zeros(0, dtype=np.int64)
    return codes, [cells[i] for i in first.tolist()]
