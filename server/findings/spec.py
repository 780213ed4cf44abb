"""The fixed vocabulary of the findings-file contract (prompts/findings_format.md).

The validator and the template both read these constants and formatters, so that a rendered skeleton
and the checks agree on every heading, label, column and number spelling.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from sdpa_analyzer.server.vocab import (
    ANOMALY_PCT,
    DECODE_HEAVY_RATIO,
    KV_WRITE_SHARE_PCT,
    LOW_FACTOR,
    MID_FACTOR,
    PREFILL_HEAVY_RATIO,
    STRAGGLER_RATIO,
)

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
        return repr(float(value))  # a numpy float is a float whose repr is `np.float64(1.5)` (numpy >= 2)
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


# ---- the prose (rules 13-18): what a sentence may say, in one place --------------------------------------------
# Rule 13 (numbers). Units a number may carry in prose, by how it is written after the number; a JSON number's own
# unit comes from its field name (findings.grounding.unit_of). The only conversion the contract defines: a time in
# ms may be written in µs (×1000, exactly) and back.
UNIT_WORDS: dict[str, str] = {
    "ms": "ms",
    "msec": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "µs": "us",
    "μs": "us",
    "us": "us",
    "usec": "us",
    "microsecond": "us",
    "microseconds": "us",
    "s": "s",
    "sec": "s",
    "seconds": "s",
    "ns": "ns",
    "%": "%",
    "percent": "%",
    "tflops": "TFLOPS",
    "tflop/s": "TFLOPS",
    "tb/s": "TB/s",
    "gb/s": "GB/s",
    "x": "x",
    "×": "x",
}
TIME_CONVERSIONS = {("ms", "us"): 1000, ("us", "ms"): 0.001}  # written = value × factor, in Decimal
# Numbers the contract itself states, which prose may quote in any P-item: the workload-profile thresholds, the
# KV-cache write rule (about 10 % of the op), the short-sequence launch threshold (N = 1024), the KV block sizes to
# try, the backward's 2.5× / 5 GEMMs, the anomaly line (100 %), the impact factors and the straggler ratio.
CONTRACT_NUMBERS: tuple[tuple[str, str | None], ...] = (
    *((f"{n:g}", None) for n in (PREFILL_HEAVY_RATIO, DECODE_HEAVY_RATIO, MID_FACTOR, LOW_FACTOR, STRAGGLER_RATIO)),
    *((n, None) for n in ("1024", "16", "32", "64", "2.5", "5", "128")),  # N = 1024, KV block sizes, 5 GEMMs, head dim
    (f"{KV_WRITE_SHARE_PCT:g}", "%"),
    (f"{ANOMALY_PCT:g}", "%"),
)

# Rule 15 (verdict words): the bound phrases are server.vocab.BOUND_PHRASES.
BAND_PHRASES: dict[str, tuple[str, ...]] = {  # band_status -> phrases stating it (regular expressions)
    "within": (
        r"within (?:the |its |their )?(?:expected |reference )?band",
        r"inside (?:the |its |their )?(?:expected |reference )?band",
        r"\bin[- ]band\b",
        r"as good as (?:the best )?published kernels",
    ),
    "below": (
        r"below (?:the |its |their )?(?:expected |reference )?band",
        r"below the best published kernels",
        r"under (?:the |its |their )?(?:expected |reference )?band",
        r"short of (?:the |its |their )?(?:expected |reference )?band",
    ),
    "above": (
        r"above (?:the |its |their )?(?:expected |reference )?band",
        r"above the best published kernels",
    ),
}
NOT_A_BOTTLENECK = r"\b(?:not|isn't|is no|no longer) (?:a |the )?bottleneck"
NEGATIONS = r"\b(?:not|n't|rather than|instead of|neither|nor|no longer|never|unlike)\b"
BOUND_QUALIFIERS = {"lower": ("at least", "≥", "lower bound"), "upper": ("at most", "≤", "upper bound")}

# Rule 16 (scope): phrases that compare two traces. A standalone file holds none; every P-item of a comparative
# file says how trace 2 compares with trace 1.
COMPARISON_PHRASES = (
    r"\btrace[ -]?[12]\b",
    r"\b[Tt][12]\b",
    r"\b(?:first|second|other|both|two|baseline|previous) (?:traces?|runs?)\b",
    r"\bspeed-?ups?\b",
    r"\bslow-?downs? (?:between|from|against|versus|vs\.?)\b",
    r"\bregress(?:ion|ions|ed|es)?\b",
    r"\bbetween (?:the )?(?:two )?(?:runs|traces)\b",
    r"\b(?:faster|slower) than (?:in |on )?(?:the )?(?:first|second|other|previous|baseline|earlier) (?:trace|run)\b",
)
COMPARISON_WORDS = (*COMPARISON_PHRASES, r"\b(?:faster|slower|difference|changed?|longer|shorter)\b")

# Rule 17 (language): the contract's forbidden advice, and vendor or product terms that the language guideline keeps
# out of the prose (a real name goes in backticks, copied from the data, or in a table cell). A term is allowed in a
# P-item whose finding, members or GPU the tools name with it (a `cuDNN` implementation, a GPU's vendor).
FUSE_SDPA = (  # "fuse the SDPA kernel", in any phrasing (`⟨code⟩` stands for a backticked name)
    r"\bfus(?:e|es|ing)\s+(?:the\s+|its\s+|this\s+|these\s+|their\s+|each\s+)?(?:sdpa|attention|attn|flash|⟨code⟩)"
    r"(?:\s+(?:op|ops|operation|operations|kernel|kernels|call|calls))?\b",
    r"\b(?:sdpa|attention|attn|⟨code⟩)\s+(?:op|ops|operation|operations|kernel|kernels)\s+(?:should|must|could|can|"
    r"needs? to|ought to)?\s*(?:be\s+)?fused\b",
    r"\b(?:kernel\s+)?fusion\s+(?:of|for|to|on)\s+(?:the\s+)?(?:sdpa|attention|attn|⟨code⟩)",
    r"\b(?:sdpa|attention)\s+(?:kernel\s+)?fusion\b",
)
FUSE_SDPA_FIX = (
    "Delete the advice to fuse the SDPA kernel: every SDPA backend but the unfused path already runs as one fused "
    "kernel (for unfused attention write 'send the attention through a fused kernel')."
)
# the vendor, product, library, tool and GPU-generation names are server.vocab.VENDOR_FAMILIES
