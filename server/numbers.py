"""Numbers for JSON results: a finite float (optionally rounded) or None — never NaN or inf in the output."""

from __future__ import annotations

import math
from typing import Any


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
    return round(v, nd) if nd is not None else v
