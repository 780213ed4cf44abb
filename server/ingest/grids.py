"""Kernel launch grids as the trace records them (`args.grid = [x, y, z]`), held in one int64 column."""

from __future__ import annotations

from typing import Any

import numpy as np

# A kernel's launch grid (args.grid = [x, y, z]) packed in one int64: x in bits 32-62, y in 16-31, z in 0-15 (CUDA
# caps y and z at 65535, x at 2**31 - 1); -1 when the trace has none or it is not three such integers
_GRID_LIMITS = (2**31 - 1, 65535, 65535)


def pack_grid(raw: Any) -> int:
    if not isinstance(raw, list | tuple) or len(raw) != 3:
        return -1
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= hi
               for v, hi in zip(raw, _GRID_LIMITS, strict=True)):  # fmt: skip
        return -1
    return (raw[0] << 32) | (raw[1] << 16) | raw[2]


_NO_GRID = (0, 0, 0)


def pack_grids(grids: list[tuple[int, int, int] | None]) -> np.ndarray:
    """pack_grid over the typed decoder's (x, y, z) tuples at once (None: no grid)."""
    try:
        arr = np.array([_NO_GRID if g is None else g for g in grids], dtype=np.int64).reshape(-1, 3)
    except OverflowError:  # a value beyond int64 (the typed decoder takes uint64): one at a time
        return np.array([pack_grid(g) for g in grids], dtype=np.int64)
    ok = (arr >= 1).all(axis=1) & (arr <= np.array(_GRID_LIMITS, dtype=np.int64)).all(axis=1)
    return np.where(ok, (arr[:, 0] << 32) | (arr[:, 1] << 16) | arr[:, 2], -1)


def unpack_grid(packed: int) -> tuple[int, int, int] | None:
    """The (x, y, z) launch grid of a packed `grid` cell, None for -1."""
    if packed < 0:
        return None
    return (packed >> 32) & 0x7FFFFFFF, (packed >> 16) & 0xFFFF, packed & 0xFFFF
