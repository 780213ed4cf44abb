"""The template's advisor parts, every number copied as the metrics JSON writes it (server.scoring.advice made them):

* before `## Recommendations`: the ops within their expected band (not findings) and the category's facts
  (attention kernels outside every op, layout copies, KV-cache writes, backward vs forward);
* in each candidate's **Data:** section, after the mandatory table: what each change buys (the levers) with the
  band's published reference and its source, and the facts around the finding's calls.

Names and sources of kernels sit in table cells; the prose the LLM writes around them stays vendor-neutral.
"""

from __future__ import annotations

from typing import Any

from server.findings.spec import MISSING, as_float, cell_text, number_text

IN_BAND_HEADING = "## Within the expected band"
FACTS_HEADING = "## Category facts"
IN_BAND_SENTENCE = (
    "These ops run within (or above) the expected band for their shape: as good as the best published kernels, so "
    "they are not findings."
)
LEVER_COLUMNS = ("Change", "Time (ms)", "Time after (ms)", "Saved (ms)", "Saved (% of E2E)")
REFERENCE_COLUMNS = ("Band", "Compared with the band", "Best published kernel at this shape", "Its efficiency (%)",
                     "Source")
AROUND_COLUMNS = ("Around the calls", "Time (ms)", "Share", "% of E2E")
METRIC_WORDS = {"compute": "tensor", "memory": "HBM"}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(c if isinstance(c, str) and c == MISSING else cell_text(c) for c in cells) + " |"


def _table(columns: tuple[str, ...], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *(_row(r) for r in rows)]


def band_comparison(metric: Any, value: Any, low: Any, high: Any, status: Any) -> str:
    """`tensor 26.47 % vs band 40.0–55.0 % (below)`: the number the band is compared with, named."""
    if as_float(low) is None or as_float(high) is None:
        return "no reference band"
    word = METRIC_WORDS.get(str(metric), str(metric))
    shown = number_text(value) if as_float(value) is not None else MISSING
    return f"{word} {shown} % vs band {number_text(low)}–{number_text(high)} % ({status})"


IN_BAND_SHOWN = 20  # rows of the in-band table (a long training run can have thousands; all are in the JSON)


def in_band_section(ours: dict[str, Any]) -> list[str]:
    listed = [x for x in _list(ours.get("in_band")) if isinstance(x, dict)]
    rows = [
        [x.get("operation"), x.get("shape"), x.get("time_ms"), x.get("percent_of_total"), x.get("efficiency_pct"),
         band_comparison(x.get("band_metric"), x.get("band_value"), x.get("band_low"), x.get("band_high"),
                         x.get("band_status"))]
        for x in listed[:IN_BAND_SHOWN]
    ]  # fmt: skip
    if not rows:
        return []
    columns = ("Operation", "Shape", "Time (ms)", "%E2E", "Efficiency (% of roofline)", "Compared with the band")
    more = len(listed) - len(rows)
    tail = [f"And {more} more ops within their band (every one is in the metrics JSON's sdpa_analyzer.in_band).",
            ""] if more > 0 else []  # fmt: skip
    return [IN_BAND_HEADING, "", IN_BAND_SENTENCE, "", *_table(columns, rows), "", *tail]


def _outside_line(name: str, x: dict[str, Any]) -> str | None:
    if not as_float(x.get("kernels")):
        return None
    longest = [f"`{k.get('name')}` ({number_text(k.get('time_us'))} µs)" for k in _list(x.get("longest"))[:2]
               if isinstance(k, dict)]  # fmt: skip
    return (
        f"- Attention kernels outside every op ({name}): {number_text(x.get('kernels'))} kernels, "
        f"{number_text(x.get('time_us'))} µs ({number_text(x.get('percent_of_e2e'))} % of E2E), in no finding; "
        f"longest: {', '.join(longest) or MISSING}."
    )


def facts_section(ours: dict[str, Any]) -> list[str]:
    facts = _dict(ours.get("facts"))
    lines: list[str] = []
    outside = _dict(facts.get("attention_outside_rows"))
    for trace, x in outside.items():
        # A standalone file never names "trace 1": the validator reads that as a comparison (R16).
        name = str(trace).replace("trace", "trace ") if len(outside) > 1 else "in the trace"
        line = _outside_line(name, _dict(x))
        if line:
            lines.append(line)
    copies = _dict(facts.get("copy_overhead"))
    if copies:
        lines.append(
            f"- Layout copies around the calls: {number_text(copies.get('time_ms'))} ms, "
            f"{number_text(copies.get('percent_of_attention'))} % of the attention time "
            f"({number_text(copies.get('percent_of_e2e'))} % of E2E)."
        )
    kv = _dict(facts.get("kv_cache_write"))
    if kv:
        over = "above" if kv.get("over_threshold") else "below"
        lines.append(
            f"- KV-cache writes beside the calls: {number_text(kv.get('time_ms'))} ms, "
            f"{number_text(kv.get('percent_of_op'))} % of the op ({over} the {number_text(kv.get('threshold_pct'))} "
            f"% rule for tuning the KV-cache block size)."
        )
    for x in _list(facts.get("backward_vs_forward"))[:5]:
        x = _dict(x)
        lines.append(
            f"- Backward vs forward, `{x.get('shape')}`: {number_text(x.get('backward_us_per_call'))} µs per "
            f"backward call = {number_text(x.get('time_ratio'))} × the forward's "
            f"{number_text(x.get('forward_us_per_call'))} µs, for {number_text(x.get('flops_ratio'))} × its FLOPs "
            f"(efficiency {number_text(x.get('backward_efficiency_pct'))} % vs "
            f"{number_text(x.get('forward_efficiency_pct'))} %)."
        )
    return [FACTS_HEADING, "", *lines, ""] if lines else []


def advice_tables(raw: dict[str, Any]) -> list[str]:
    """The levers, the band's reference and the facts around the finding's calls (empty when none)."""
    advice = _dict(raw.get("advice"))
    out: list[str] = []
    levers = [
        [x.get("change"), x.get("time_ms"), x.get("time_after_ms"), x.get("saved_ms"), x.get("saved_pct_e2e")]
        for x in _list(advice.get("levers")) if isinstance(x, dict)
    ]  # fmt: skip
    if levers:
        out += ["What each change buys (from the models):", "", *_table(LEVER_COLUMNS, levers), ""]
    ref = _dict(advice.get("reference"))
    if ref:
        compared = band_comparison(ref.get("band_metric"), ref.get("band_value"), ref.get("band_low"),
                                   ref.get("band_high"), ref.get("band_status"))
        kernel = ref.get("kernel")
        if ref.get("borrowed_from"):
            kernel = f"{kernel} (measured on {ref.get('borrowed_from')})"
        row = [ref.get("band_id"), compared, kernel, ref.get("kernel_pct"), ref.get("source")]
        out += [*_table(REFERENCE_COLUMNS, [row]), ""]
    facts = _dict(raw.get("facts"))
    around = []
    copies = _dict(facts.get("copy_overhead"))
    if copies:
        around.append(["layout copies of Q/K/V/output", copies.get("time_ms"),
                       f"{number_text(copies.get('percent_of_attention'))} % of the attention time",
                       copies.get("percent_of_e2e")])
    kv = _dict(facts.get("kv_cache_write"))
    if kv:
        rule = "over" if kv.get("over_threshold") else "under"
        around.append(["KV-cache writes", kv.get("time_ms"),
                       f"{number_text(kv.get('percent_of_op'))} % of the op ({rule} the "
                       f"{number_text(kv.get('threshold_pct'))} % rule)", kv.get("percent_of_e2e")])
    if around:
        out += [*_table(AROUND_COLUMNS, around), ""]
    return out


def action_hint(raw: dict[str, Any]) -> str:
    """What the Action slot must say it buys: the levers' numbers, quoted for the LLM to copy."""
    levers = [x for x in _list(_dict(raw.get("advice")).get("levers")) if isinstance(x, dict)]
    said = [f"{x.get('change')}: {number_text(x.get('saved_ms'))} ms, {number_text(x.get('saved_pct_e2e'))} % of "
            "E2E" for x in levers[:3]]  # fmt: skip
    if not said:
        return ""
    return "; say what it buys with the numbers of the table under Data (" + "; ".join(said) + ")"


__all__ = [
    "FACTS_HEADING",
    "IN_BAND_HEADING",
    "action_hint",
    "advice_tables",
    "band_comparison",
    "facts_section",
    "in_band_section",
]
