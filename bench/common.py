"""What every benchmark script shares: the machine's load beside its figures, and a spread as min / median / max.

The scripts run as `python bench/<name>.py`, so this directory is first on their path: `from common import ...`.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

_LOADAVG = Path("/proc/loadavg")
REPO = Path(__file__).resolve().parents[1]
# the measured processes' bytecode cache (PYTHONPYCACHEPREFIX), as an installed package has one: without it each
# start would also compile the project (bench_start.py says why)
PYCACHE = REPO / "bench" / "out" / "pycache"


def bench_env() -> dict[str, str]:
    """The environment of a measured process: this one's, with the bench's bytecode cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def cli() -> list[str]:
    """The console script a user runs (beside this interpreter), else the module."""
    script = Path(sys.executable).parent / "sdpa-analyzer"
    return [str(script)] if script.exists() else [sys.executable, "-m", "sdpa_analyzer.server.cli.main"]


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


def rotated_rounds(runs: dict[str, Callable[[], float]], rounds: int) -> tuple[dict[str, list[float]], str, str]:
    """Each run once as a warm-up (bytecode and page caches, not counted), then `rounds` rounds whose order rotates
    (no run always first); the times by run name, and the load average before and after."""
    names = list(runs)
    for name in names:
        runs[name]()
    before = load()
    times: dict[str, list[float]] = {n: [] for n in names}
    for rnd in range(rounds):
        for name in names[rnd % len(names) :] + names[: rnd % len(names)]:
            times[name].append(runs[name]())
    return times, before, load()
