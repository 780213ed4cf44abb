"""Wave quantization: the share of a full kernel's throughput a grid of tiles can reach on a part's units.

A flash-style kernel gives each (query tile, head, batch) one CTA / workgroup; the units (SMs, CUs) run them in
waves. With `tiles` tiles on `units` units the work takes ⌈tiles / units⌉ waves, each as long as a full one, so the
grid reaches tiles / (waves × units) of the throughput of a grid that fills every wave: 1 for an exact multiple,
0.25 for 33 tiles on 132 SMs, 2048 / 2112 = 0.97 for the FA3 benchmarks' 2048 tiles on an H100. This replaces a
cliff ("fewer tiles than units: no band") by a continuous factor. Unknown unit counts give 1 (no correction). The
FA3 paper sizes its FP8 benchmarks to multiples of 132 "to avoid wave quantization" (arXiv 2407.08608, App. C.2).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def wave_factor(tiles: ArrayLike, units: int | None) -> NDArray[np.float64]:
    """tiles / (⌈tiles / units⌉ × units) per row; 1 where units is unknown or there are no tiles."""
    t = np.asarray(tiles, dtype=np.float64)
    if not units or units <= 0:
        return np.ones_like(t)
    waves = np.ceil(t / units)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = t / (waves * units)
    return np.where(t > 0, f, 1.0)


__all__ = ["wave_factor"]
