"""Object arrays of text that hold each distinct string once.

NumPy copies a str into every element when it fills an object array or casts a unicode array to one
(`np.full(n, "matrix_bf16", dtype=object)`, `np.where(bwd, "bwd", "fwd").astype(object)`): 10^5 rows of one
spec name become 10^5 equal strings, ~6 MB a column that the records and every copy of them carry. These build the
same arrays with one reference per distinct value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


def filled(n: int, value: Any) -> NDArray[np.object_]:
    """An object array of n references to `value` (np.full with dtype=object holds n copies of a str)."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out


def as_objects(values: ArrayLike) -> NDArray[np.object_]:
    """`values` as an object array; a unicode array's equal strings become one object (astype(object) makes one
    per element)."""
    arr = np.asarray(values)
    if arr.dtype.kind != "U" or arr.size == 0:
        return arr.astype(object)
    distinct, inverse = np.unique(arr, return_inverse=True)
    return distinct.astype(object)[inverse.reshape(arr.shape)]
