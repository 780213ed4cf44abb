"""One rendering per quantity kind: the digits the tools wrote, then the kind's unit, spelled one way.

Every number the findings show in prose (a resolved reference), in the template's facts and in the report's lever
list goes through `render`: a fact has one spelling wherever it appears. The digits are the metrics JSON's own (the
tools round each value once, where they compute it: server.scoring.advice, the roofline); `render` never rounds
again, so the validator compares text with text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sdpa_analyzer.server.findings.spec import as_float, number_text

QuantityKind = Literal["ms", "us", "pct", "pct_e2e", "count", "ratio", "tflops", "tbs", "flops_per_byte", "number"]


@dataclass(frozen=True)
class Unit:
    """How a kind is written after its digits, and the unit the prose number reader gives that spelling
    (server.findings.grounding: `%` with `e2e` for a share of E2E)."""

    text: str
    reads_as: str | None
    e2e: bool = False


UNITS: dict[str, Unit] = {
    "ms": Unit("ms", "ms"),
    "us": Unit("µs", "us"),
    "pct": Unit("%", "%"),
    "pct_e2e": Unit("% of E2E", "%", e2e=True),
    "count": Unit("", None),
    "ratio": Unit("×", "x"),
    "tflops": Unit("TFLOPS", "TFLOPS"),
    "tbs": Unit("TB/s", "TB/s"),
    "flops_per_byte": Unit("FLOPs/byte", None),
    "number": Unit("", None),
}


def render(kind: str, value: Any) -> str:
    """`2.723 ms`, `4.39 % of E2E`, `24`: the value's JSON digits and the kind's unit."""
    digits = number_text(value)
    unit = UNITS[kind].text
    return f"{digits} {unit}" if unit else digits


def is_number(value: Any) -> bool:
    return as_float(value) is not None


__all__ = ["UNITS", "QuantityKind", "Unit", "is_number", "render"]
