"""The template's advisor parts, every number copied as the metrics JSON writes it (server.scoring.advice made them):

* before `## Recommendations`: the ops within their expected band (not findings) and the category's facts
  (attention kernels outside every op, layout copies, KV-cache writes, backward vs forward);
* in each candidate's **Data:** section, after the mandatory table: what each change buys (the levers) with the
  band's published reference and its source, and the facts around the finding's calls.

Names and sources of kernels sit in table cells; the prose the LLM writes around them stays vendor-neutral.
"""

from __future__ import annotations

import re
from typing import Any

from sdpa_analyzer.server.findings.spec import MISSING, as_float, cell_text, number_text

IN_BAND_HEADING = "## Within the expected band"
FACTS_HEADING = "## Category facts"
IN_BAND_SENTENCE = (
    "These ops run within (or above) the expected band for their shape: as good as the best published kernels, so "
    "they are not findings."
)
LEVER_COLUMNS = ("Lever", "Change", "Time (ms)", "Time after (ms)", "Saved (ms)", "Saved (% of E2E)", "Saving is")
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
    tail = ["The other ops within their band are in the metrics JSON's `sdpa_analyzer.in_band`.",
            ""] if more > 0 else []  # fmt: skip
    return [IN_BAND_HEADING, "", IN_BAND_SENTENCE, "", *_table(columns, rows), "", *tail]


FACT_COLUMNS = ("Fact", "Time", "Share", "% of E2E", "Reference")


def facts_section(ours: dict[str, Any]) -> list[str]:
    """The category's facts as a table (numbers in tables, not prose), each row naming its reference."""
    facts = _dict(ours.get("facts"))
    rows: list[list[Any]] = []
    outside = _dict(facts.get("attention_outside_rows"))
    for trace, x in outside.items():
        x = _dict(x)
        if not as_float(x.get("kernels")):
            continue
        longest = ", ".join(f"`{k.get('name')}`" for k in _list(x.get("longest"))[:2] if isinstance(k, dict))
        where = str(trace).replace("trace", "trace ") if len(outside) > 1 else "the trace"
        rows.append([f"{number_text(x.get('kernels'))} attention kernels outside every op ({where}), in no finding; "
                     f"longest: {longest or MISSING}", f"{number_text(x.get('time_us'))} µs", MISSING,
                     x.get("percent_of_e2e"), f"cat.outside.{trace}.*"])  # fmt: skip
    copies = _dict(facts.get("copy_overhead"))
    if copies:
        rows.append(["layout copies around the calls", f"{number_text(copies.get('time_ms'))} ms",
                     f"{number_text(copies.get('percent_of_attention'))} % of the attention time",
                     copies.get("percent_of_e2e"), "cat.copies.*"])  # fmt: skip
    kv = _dict(facts.get("kv_cache_write"))
    if kv:
        over = "above" if kv.get("over_threshold") else "below"
        rows.append([f"KV-cache writes beside the calls ({over} the {number_text(kv.get('threshold_pct'))} % rule "
                     "for tuning the KV-cache block size)", f"{number_text(kv.get('time_ms'))} ms",
                     f"{number_text(kv.get('percent_of_op'))} % of the op", kv.get("percent_of_e2e"),
                     "cat.kv_write.*"])  # fmt: skip
    for k, x in enumerate(_list(facts.get("backward_vs_forward"))[:5], start=1):
        x = _dict(x)
        rows.append([f"backward vs forward, `{x.get('shape')}`: {number_text(x.get('time_ratio'))} × the time per "
                     f"call for {number_text(x.get('flops_ratio'))} × the FLOPs (efficiency "
                     f"{number_text(x.get('backward_efficiency_pct'))} % vs "
                     f"{number_text(x.get('forward_efficiency_pct'))} %)",
                     f"{number_text(x.get('backward_us_per_call'))} µs per call", MISSING, MISSING,
                     f"cat.bwd{k}.*"])  # fmt: skip
    return [FACTS_HEADING, "", *_table(FACT_COLUMNS, rows), ""] if rows else []


def advice_tables(raw: dict[str, Any]) -> list[str]:
    """The levers, the band's reference and the facts around the finding's calls (empty when none)."""
    advice = _dict(raw.get("advice"))
    out: list[str] = []
    levers = [
        [lever_id(x), x.get("change"), x.get("time_ms"), x.get("time_after_ms"), x.get("saved_ms"),
         x.get("saved_pct_e2e"), saving_words(x)]
        for x in ordered_levers(advice)
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


def ordered_levers(advice: dict[str, Any]) -> list[dict[str, Any]]:
    """Every lever, largest saving first (a metrics JSON of an older run may hold them in another order)."""
    levers = [x for x in _list(advice.get("levers")) if isinstance(x, dict)]
    return sorted(levers, key=lambda x: -(as_float(x.get("saved_ms")) or 0.0))


def lever_id_of(lever: dict[str, Any]) -> str:
    """A lever's id (server.scoring.advice.LEVERS); a metrics JSON written before levers had ids: one from its label."""
    if isinstance(lever.get("id"), str) and re.fullmatch(r"[\w-]+", lever["id"]):
        return str(lever["id"])
    return re.sub(r"\W+", "_", str(lever.get("change")).lower()).strip("_")[:24] or "lever"


lever_id = lever_id_of


def saving_words(lever: dict[str, Any]) -> str:
    """`at most` (a bounded work), `an upper bound` (the most the change can give), or `as computed`."""
    if lever.get("saving_bound"):
        return str(lever["saving_bound"])
    return "an upper bound" if lever.get("upper_bound") else "as computed"


def action_hint(raw: dict[str, Any], rank: int) -> str:
    """What the Action slot must cite: every lever by id, largest saving first, with the reference of its saving."""
    said = [f"lever {lever_id(x)} ({x.get('change')}; {saving_words(x)}): P{rank}.lever.{lever_id(x)}.saved_ms"
            for x in ordered_levers(_dict(raw.get("advice")))]  # fmt: skip
    if not said:
        return ""
    return ("; cite the levers it follows by id and what each buys by reference, wrapped in double braces "
            "(largest first): " + "; ".join(said))


__all__ = [
    "FACTS_HEADING",
    "IN_BAND_HEADING",
    "action_hint",
    "advice_tables",
    "band_comparison",
    "facts_section",
    "in_band_section",
    "lever_id",
    "lever_id_of",
    "ordered_levers",
    "saving_words",
]
