"""The fixed vocabulary of the findings-file contract (prompts/findings_format.md).

The validator and the template both read these constants and formatters, so that a rendered skeleton
and the checks agree on every heading, label, column and number spelling.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

# The analysis run a skeleton was rendered from (the metrics JSON's sdpa_analyzer.run_id), on the line after the
# title: validate_findings refuses a file of another run than the metrics JSON beside it.
RUN_LINE = "<!-- sdpa_analyzer_run_id: {run_id} -->"
RUN_ID_TEXT = re.compile(r"[0-9A-Za-z_-]{1,64}")  # what an id may be to be written there (ours: 32 hex digits)
RUN_LINE_FOUND = re.compile(r"^<!-- sdpa_analyzer_run_id: ([0-9A-Za-z_-]{1,64}) -->[ \t]*$", re.MULTILINE)

RECOMMENDATIONS = "Recommendations"
DETAILED_ANALYSIS = "Detailed Analysis"

P_LABELS = ("Insight", "Action", "Impact")
SUBSECTIONS = ("Identification", "Data", "Reasoning for Slowdown", "Resolution", "Impact estimate")

STANDALONE_COLUMNS = (
    "Operation",
    "Args",
    "Kernel Path",
    "Kernel Name",
    "Time (ms)",
    "%E2E",
    "Count",
    "FLOPS/Byte",
    "Efficiency",
    "Bound",
)
COMPARATIVE_COLUMNS = (
    "Operation",
    "Args (T1)",
    "Kernel Path",
    "Kernel Name",
    "Trace 1 Time (ms)",
    "Trace 2 Time (ms)",
    "Count (T1/T2)",
    "Difference (ms)",
    "FLOPS/Byte (T1)",
    "Bound (T1)",
)
# Columns the template adds after the mandatory ones (rule 5 allows extra columns): both utilizations against the
# roofs, the regime and the expected band, from operations[].roofline.
VERDICT_COLUMNS = ("Compute %", "Memory %", "Regime", "Expected Band (% of datasheet)")

# Table column -> operations[] field copied verbatim (rule 6).
VERBATIM_COLUMNS = {
    "Args": "args",
    "Args (T1)": "args",
    "Kernel Path": "launcher_path",
    "Kernel Name": "kernel_name_trunc",
}

# kind -> attributes it must carry (rule 8).
MARKER_KINDS: dict[str, tuple[str, ...]] = {
    "p_item": ("low", "mid", "high"),
    "detail_estimate": ("low", "high"),
    "top_ops": (),
}

MISSING = "—"
NOT_QUANTIFIABLE = "not quantifiable from trace data"
NO_DATA_SENTENCE = "No SDPA operations found in trace"
UNKNOWN_LIBRARIES = frozenset({"", "unknown", "none", "null"})

# Prose slot of the template. The validator reports any `{{FILL:` left in a file (rule R0).
SLOT_OPEN = "{{FILL:"
SLOT_CLOSE = "}}"


def columns_for(scope: str) -> tuple[str, ...]:
    return COMPARATIVE_COLUMNS if scope == "comparative" else STANDALONE_COLUMNS


def number_text(value: Any) -> str:
    """A JSON number spelled as the metrics JSON writes it.

    Python's json/orjson write a float with its shortest round-trip repr, so repr() gives back the
    written text; a Decimal (metrics loaded by `load_metrics`) keeps trailing zeros such as `5.960`.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def as_float(value: Any) -> float | None:
    """A numeric metrics value as float; None for null, booleans and non-numbers."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        return float(value)
    return None


def cell_text(value: Any) -> str:
    """A table cell for a metrics value: `—` for missing, the JSON spelling for numbers, `|` escaped."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return MISSING
    if isinstance(value, str):
        return value.replace("|", "\\|")
    return number_text(value)


def library_suffix(library: Any) -> str | None:
    """The `(<library>)` title suffix, or None when the library is unknown (rule 2)."""
    if library is None:
        return None
    text = str(library).strip()
    if text.lower() in UNKNOWN_LIBRARIES:
        return None
    return f"({text})"


def heuristic_warning_line(percent_text: str) -> str:
    """The exact warning line that follows a heuristic finding's p_item marker (rule 10)."""
    return (
        "> **Warning — estimated:** No performance model for this op; impact is derived from its "
        f"E2E GPU-time share ({percent_text}%), not a gap projection."
    )


def bound_cell(bound_type: Any) -> str:
    if bound_type in ("compute", "memory"):
        return f"{bound_type}-bound"
    return MISSING


def efficiency_cell(efficiency: dict[str, Any] | None) -> str:
    """`X.XX% of Y TFLOPS` (compute-bound) / `X.XX% of Y TB/s` (memory-bound), else `—` (rule 7)."""
    if not isinstance(efficiency, dict):
        return MISSING
    percent = as_float(efficiency.get("efficiency_percent"))
    bound = efficiency.get("bound_type")
    if percent is None or efficiency.get("is_anomaly") is True:
        return MISSING
    if bound == "compute":
        peak, unit = efficiency.get("resolved_peak_maf"), "TFLOPS"
    elif bound == "memory":
        peak, unit = efficiency.get("resolved_peak_hbm_bw"), "TB/s"
    else:
        return MISSING
    if as_float(peak) is None:
        return MISSING
    return f"{percent:.2f}% of {number_text(peak)} {unit}"


def has_efficiency(efficiency: dict[str, Any] | None) -> bool:
    return efficiency_cell(efficiency) != MISSING


def metrics_run_id(metrics: Any) -> str | None:
    """The run a metrics JSON records (`sdpa_analyzer.run_id`), when it is one a findings file can carry."""
    block = metrics.get("sdpa_analyzer") if isinstance(metrics, dict) else None
    run = block.get("run_id") if isinstance(block, dict) else None
    return run if isinstance(run, str) and RUN_ID_TEXT.fullmatch(run) else None


def findings_run_id(text: str) -> str | None:
    """The run a findings file says it was rendered from (its RUN_LINE), or None."""
    m = RUN_LINE_FOUND.search(text)
    return m.group(1) if m else None
