"""What every benchmark script shares: the machine's load beside its figures, and a spread as min / median / max.

The scripts run as `python bench/<name>.py`, so this directory is first on their path: `from common import ...`.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

_LOADAVG = Path("/proc/loadavg")


def load() -> str:
    """The 1, 5 and 15-minute load averages ('?' off Linux): how busy the machine was while a figure was taken."""
    return " ".join(_LOADAVG.read_text().split()[:3]) if _LOADAVG.exists() else "?"


def mmm(values: list[float], fmt: str = ".2f") -> str:
    """min / median / max of `values`, each formatted with `fmt`."""
    return " / ".join(f"{v:{fmt}}" for v in (min(values), statistics.median(values), max(values)))


def over_margin(what: str, value: float, margin: float) -> int:
    """A bench's loud check: 0 when `value` <= `margin`, else 1 after one line on stderr saying by how much."""
    if value <= margin:
        return 0
    print(f"FAIL: {what} is {value:.3g}, above its margin {margin:g}", file=sys.stderr)
    return 1
