"""render_findings_template: the whole findings file from the metrics JSON, prose left as slots.

Every heading, marker, number, warning line and Data table cell is written here from the metrics JSON,
so the LLM writes only prose. A prose slot is `{{FILL: <hint>}}` on one line; the hint says what to
write and never contains `}}`. The validator reports any `{{FILL:` left in a file as R0-unfilled-slot.
"""

from __future__ import annotations

from typing import Any

from sdpa_analyzer.server.findings.levers import action_hint, advice_tables, facts_section, in_band_section
from sdpa_analyzer.server.findings.metrics_view import (
    FindingView,
    MetricsFormatError,
    MetricsView,
    expected_bound_cell,
    expected_efficiency_cell,
    expected_verdict_cells,
    finding_operation_indices,
    flops_per_byte,
    view_metrics,
)
from sdpa_analyzer.server.findings.references import reference_list, reference_table
from sdpa_analyzer.server.findings.spec import (
    MISSING,
    NO_DATA_SENTENCE,
    NOT_QUANTIFIABLE,
    RUN_LINE,
    SLOT_CLOSE,
    SLOT_OPEN,
    VERDICT_COLUMNS,
    as_float,
    cell_text,
    columns_for,
    heuristic_warning_line,
    library_suffix,
    metrics_run_id,
    number_text,
)
from sdpa_analyzer.server.vocab import SCOPES, TIERS

PAGED_COLUMNS = ("Dominant Kernel Component", "Workload Type", "Attention Pattern")
IMPACT_TEXT = "(% of E2E)"  # the unit of every impact score (server.vocab.IMPACT_UNIT)


def slot(hint: str) -> str:
    """A prose slot; the hint is flattened to one line and cannot close the slot early."""
    text = " ".join(hint.split()).replace(SLOT_CLOSE, "} }")
    return f"{SLOT_OPEN} {text}{SLOT_CLOSE}"


def render_no_data_file(category: str) -> str:
    return f"# SDPA findings: {category}\n\n{NO_DATA_SENTENCE}\n"


def render_error_file(category: str, error: str) -> str:
    cause = " ".join(str(error).split()) or "unknown error"
    return (
        f"# SDPA findings: {category}\n\n"
        "Status: ERROR\n\n"
        f"Error: {cause}\n\n"
        "The analysis tool failed, so this file reports no findings. Fix the cause above and re-run the "
        "tools; do not analyze the raw CSV by hand.\n"
    )


def render_findings_template(metrics: dict[str, Any], category: str, tier: str = "compute") -> str:
    """The findings skeleton for `category` from its parsed `<cat>_metrics.json`."""
    if tier not in TIERS:
        raise ValueError(f"tier={tier!r} is invalid: expected one of {', '.join(TIERS)}")
    view = view_metrics(metrics)
    if view.category is not None and view.category != category:
        raise ValueError(f"metrics JSON is for category {view.category!r}, not {category!r}: pass the matching file")
    if view.status == "ERROR":
        return render_error_file(category, view.error or "unknown error")
    if not view.findings and not view.operations:
        return render_no_data_file(category)
    scope = view.scope if view.scope in SCOPES else "standalone"
    ours = metrics.get("sdpa_analyzer") if isinstance(metrics.get("sdpa_analyzer"), dict) else {}
    run_id = metrics_run_id(metrics)
    parts = [f"# SDPA findings: {category}", *([RUN_LINE.format(run_id=run_id)] if run_id else []), "",
             _overview(view, category, scope), ""]  # fmt: skip
    parts += [*reference_list(reference_table(metrics, view)), ""]
    facts = facts_section(ours)
    if facts:  # the category's facts get their own slot, findings or not (a KV-write share over the rule, copies)
        facts += [slot("Category facts — one or two sentences on what these facts mean for the category, each "
                       "number by reference (cat.…); say nothing they do not show"), ""]  # fmt: skip
    parts += [*in_band_section(ours), *facts, "## Recommendations", ""]
    for finding in view.findings:
        parts.extend(_p_item(finding))
    parts.extend(["## Detailed Analysis", ""])
    for finding in view.findings:
        parts.extend(_candidate(finding, view, category, scope, tier))
    return "\n".join(parts).rstrip("\n") + "\n"


def _overview(view: MetricsView, category: str, scope: str) -> str:
    if not view.findings:
        return (
            f"Comparison scope: {scope}. `{category}_metrics.json` has no category_findings[] entry "
            "above the impact threshold, so both sections below are empty."
        )
    return (
        f"Comparison scope: {scope}. The findings of `{category}_metrics.json` → `category_findings[]`, in rank "
        "order; every number below is the tools' own, and prose writes each as a reference."
    )


def _marker_numbers(finding: FindingView, kind: str) -> str:
    if kind == "p_item":
        return f"low={finding.low} mid={finding.mid} high={finding.high}"
    return f"low={finding.low} high={finding.high}"


def _p_item(finding: FindingView) -> list[str]:
    suffix = library_suffix(finding.library)
    title = slot("P-item title — 3 to 8 words naming the problem") + (f" {suffix}" if suffix else "")
    members = ", ".join(sorted({str(m.get("operation")) for m in finding.members})) or "the finding's ops"
    lines = [
        f"### P{finding.rank}: {title}",
        "**Insight**: " + slot(f"Insight — one sentence: what is wrong with {members}"),
        "**Action**: "
        + slot(
            "Action — one or two sentences: what to do, chosen by bound type and "
            "implementation; never 'fuse the SDPA kernel'" + action_hint(finding.raw, finding.rank)
        ),
        f"<!-- impact-begin kind=p_item {_marker_numbers(finding, 'p_item')} -->",
        f"**Impact**: impact_score: {finding.mid} {IMPACT_TEXT}"
        if finding.quantifiable
        else f"**Impact**: impact {NOT_QUANTIFIABLE}",
        "<!-- impact-end -->",
    ]
    if finding.heuristic:
        lines.append(heuristic_warning_line(finding.percent_text or MISSING))
    lines.append("")
    return lines


def _operations_of(finding: FindingView, view: MetricsView) -> list[dict[str, Any]]:
    indices = finding_operation_indices(finding, view.operations)
    if not indices:
        names = ", ".join(str(m.get("operation")) for m in finding.members) or "(no members)"
        raise MetricsFormatError(
            f"category_findings rank {finding.rank}: members {names} match no operations[] entry by name; "
            "re-run rank_findings to rewrite the metrics JSON"
        )
    return [view.operations[i] for i in indices]


def _candidate(finding: FindingView, view: MetricsView, category: str, scope: str, tier: str) -> list[str]:
    ops = _operations_of(finding, view)
    source = (
        "`impact_estimates[].percent_of_total`"
        if finding.heuristic
        else "`operations[].difference_ms`"
        if scope == "comparative"
        else "`operations[].efficiency.efficiency_percent`"
    )
    lines = [
        f"<!-- reasoning-candidate tier={tier} rank={finding.rank} -->",
        "#### " + slot(f"title — the same short title as P{finding.rank}, without the library"),
        "**Identification:** "
        + slot(_identification_hint(finding, ops))
        + f" (source: `{category}_metrics.json` → {source})",
        "",
        "**Data:**",
        "",
        *_data_table(finding, ops, scope),
        "",
        *advice_tables(finding.raw),
        "**Reasoning for Slowdown:** "
        + slot(
            "Reasoning for Slowdown — why it is slow, only from what a trace shows; for tile sizes, cache hit "
            "rates, occupancy or bank conflicts say they are not visible in trace data"
        ),
        "",
        "**Resolution:** " + slot("Resolution — why the action helps: the mechanism, not a restated roofline"),
        "",
        "**Impact estimate:**",
    ]
    if finding.quantifiable:
        lines += [
            f"<!-- impact-begin kind=detail_estimate {_marker_numbers(finding, 'detail_estimate')} -->",
            f"- Low end impact_score: {finding.low} {IMPACT_TEXT}",
            f"- High end impact_score: {finding.high} {IMPACT_TEXT}",
            "<!-- impact-end -->",
        ]
    else:
        lines.append(f"Impact {NOT_QUANTIFIABLE}.")
    lines.append("")
    return lines


def _identification_hint(finding: FindingView, ops: list[dict[str, Any]]) -> str:
    """Facts the Identification must name, taken from the member ops' classification."""
    kinds = sorted({str(_classification(op).get("attention_type") or "unknown") for op in ops})
    chains = sorted({" > ".join(map(str, _as_list(op.get("module_chain")))) for op in ops} - {""})
    facts = [f"implementation: {', '.join(kinds)}", f"library: {finding.library or 'Unknown'}"]
    if chains:
        facts.append(f"model layer: {chains[0]}")
    r = finding.rank
    if any(_profile(op).get("n_q") is not None for op in ops):
        facts.append(f"sequence lengths: P{r}.op1.n_q and P{r}.op1.n_kv (references, in double braces)")
    if _paged(ops):
        facts.append(
            "paged: name the dominant kernel component and the workload profile by reference "
            f"(P{finding.rank}.op1.workload, P{finding.rank}.op1.ctx_ratio)"
        )
    statuses = [str(_roofline_of(op).get("band_status") or "none") for op in ops]
    within, below = statuses.count("within"), statuses.count("below")
    if within or below:
        facts.append(
            f"expected band: write P{r}.op1.band (the band verdict, by reference); an op within its band is not a "
            "bottleneck"
        )
    else:
        facts.append("expected band: none for these ops (no band verdict)")
    regimes = sorted({str(_roofline_of(op).get("regime")) for op in ops} - {"None"})
    if regimes:
        # Only the regimes present, each glossed on its own, so no reader takes one word for another's meaning.
        glossary = {"compute": "the compute roof limits it", "memory": "the bandwidth roof limits it",
                    "balanced": "neither roof alone limits it"}  # fmt: skip
        facts.append("regime: " + "; ".join(f"{r} = {glossary[r]}" if r in glossary else r for r in regimes))
    if any(_roofline_of(op).get("binding_roof") for op in ops):
        facts.append(f"binding roof among tensor cores, exponential units and HBM: P{finding.rank}.op1.binding_roof "
                     f"(by reference; the ceiling model's best efficiency: P{finding.rank}.op1.ceiling_pct)")
    split = [r for r in map(_roofline_of, ops) if r.get("regime_compulsory") and r.get("regime_tiled")
             and r.get("regime_compulsory") != r.get("regime_tiled")]  # fmt: skip
    if split:
        r = split[0]
        facts.append(
            f"the bytes model decides the regime: {r.get('regime_compulsory')} with compulsory bytes, "
            f"{r.get('regime_tiled')} with tiled bytes; these numbers use {r.get('bytes_model')} bytes — say so"
        )
    return (
        "Identification — why these ops were flagged, in plain language; name the implementation, library "
        "and model layer; say where the efficiency sits against the expected band. Facts: " + "; ".join(facts)
    )


def _roofline_of(op: dict[str, Any]) -> dict[str, Any]:
    value = op.get("roofline")
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _classification(op: dict[str, Any]) -> dict[str, Any]:
    value = op.get("classification")
    return value if isinstance(value, dict) else {}


def _profile(op: dict[str, Any]) -> dict[str, Any]:
    value = _classification(op).get("workload_profile")
    return value if isinstance(value, dict) else {}


def _paged(ops: list[dict[str, Any]]) -> bool:
    return any(_classification(op).get("is_paged_attention") for op in ops)


def _dominant_component(op: dict[str, Any]) -> str:
    breakdown = _classification(op).get("kernel_breakdown")
    if not isinstance(breakdown, dict):
        return MISSING
    shares = {key: value for key, value in breakdown.items() if as_float(value) is not None}
    if not shares:
        return MISSING
    name = max(shares, key=lambda key: as_float(shares[key]) or 0.0)
    return cell_text(f"{name} ({number_text(shares[name])}%)")


def _paged_cells(op: dict[str, Any]) -> list[str]:
    profile = _profile(op)
    return [
        _dominant_component(op),
        cell_text(profile.get("workload_type")),
        cell_text(profile.get("attention_pattern")),
    ]


def _data_table(finding: FindingView, ops: list[dict[str, Any]], scope: str) -> list[str]:
    columns = [*columns_for(scope), *VERDICT_COLUMNS]
    paged = _paged(ops)
    if paged:
        columns += PAGED_COLUMNS
    rows = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for op in ops:
        cells = _row_cells(op, finding.heuristic, scope) + expected_verdict_cells(op, finding.heuristic)
        cells += _paged_cells(op) if paged else []
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _row_cells(op: dict[str, Any], heuristic: bool, scope: str) -> list[str]:
    head = [
        cell_text(op.get("name")),
        cell_text(op.get("args")),
        cell_text(op.get("launcher_path")),
        cell_text(op.get("kernel_name_trunc")),
    ]
    bound = expected_bound_cell(op, heuristic, scope)
    if scope == "comparative":
        counts = f"{cell_text(op.get('count'))}/{cell_text(op.get('count_trace2'))}"
        return [
            *head,
            cell_text(op.get("time_ms")),
            cell_text(op.get("t2_time_ms")),
            counts,
            cell_text(op.get("difference_ms")),
            cell_text(flops_per_byte(op)),
            bound,
        ]
    return [
        *head,
        cell_text(op.get("time_ms")),
        cell_text(op.get("percent_of_total")),
        cell_text(op.get("count")),
        cell_text(flops_per_byte(op)),
        expected_efficiency_cell(op, heuristic),
        bound,
    ]
