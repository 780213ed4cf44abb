"""Numbers for results and files: one rounding, the digits of each quantity kind, and finite floats or None.

One value, one rounding per fact. A number is rounded once, where it is computed, to the digits of its kind, and
every surface that shows it (the tool results, the roofline CSV, the metrics JSON, the findings template, the HTML
report) writes those digits as they are (`server.findings.spec.number_text`), never with a format spec of its own.
The per-op fields of the output catalogue (`perf_models.outputs`, `server.scoring.fields`) declare their digits
there, with their names; the facts outside it (a category's time, its shares, the profiled window) are rounded to
`DIGITS` of their kind here. `round_to` is the one rounding function: the same digits as `np.round` (scale by 10^nd,
round half to even, scale back), so a column rounded with numpy and a scalar rounded here never differ
(round(60.949999999999996, 1) is 60.9 but np.round gives 61.0: mixing the two split one band edge in two).
"""

from __future__ import annotations

import math
from typing import Any, Literal

QuantityDigits = Literal["ms", "us", "window_ms", "pct", "ratio"]

# Decimals a quantity kind keeps on every surface.
DIGITS: dict[QuantityDigits, int] = {
    "ms": 3,  # a kernel, category, copy or lever time: a microsecond, the profiler's resolution
    "us": 3,  # a time per call: a nanosecond
    "window_ms": 4,  # the profiled window (E2E, GPU busy and idle), the base every share is taken against
    "pct": 2,  # a share of E2E, of the category or of the busy time
    "ratio": 4,  # a token or time ratio (ctx_ratio)
}


def round_to(v: float, nd: int) -> float:
    """`v` to `nd` decimals exactly as np.round does it (v·10^nd, half to even, ÷10^nd): the one rounding."""
    if nd < 0:
        raise ValueError("round_to keeps decimals: nd >= 0")
    scale = 10.0**nd
    return round(v * scale) / scale


def finite(x: Any, nd: int | None = None) -> float | None:
    """float(x) rounded to nd decimals (when given), or None for missing, non-numeric or non-finite values."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v):
        return None
    return round_to(v, nd) if nd is not None else v


def rounded(x: Any, kind: QuantityDigits) -> float | None:
    """A fact outside the output catalogue, rounded to its kind's `DIGITS` (None when it has no finite value)."""
    return finite(x, DIGITS[kind])
