"""Human-readable renderings of tool results for the terminal (`--json` prints the structured result instead).

Every number is printed as the result holds it (`fmt`): a fact is rounded once, where it is computed, to the digits
of its kind (server.numbers, the field catalogue), and the terminal shows those digits as the metrics JSON, the CSVs,
the findings template and the report do — never with a format spec of its own (`2.723`, not `2.72`; `7.8`, not
`7.80`). Only the constants of the rules (factors, thresholds) are written with `:g`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from sdpa_analyzer.server.findings.spec import number_text
from sdpa_analyzer.server.scoring.fields import BY_NAME
from sdpa_analyzer.server.vocab import (
    ANOMALY_FLAG_PCT,
    BOUND_LEGEND,
    BOUND_MARKS,
    COMPARATIVE,
    HEURISTIC_HIGH,
    HEURISTIC_LOW,
    HEURISTIC_MID,
    IMPACT_UNIT,
    LOW_FACTOR,
    MID_FACTOR,
)


def fmt(v: Any) -> str:
    """A cell or a number in a sentence: a number with the digits its result holds (the metrics JSON's text,
    server.findings.spec.number_text), `—` for a missing or non-finite one, yes/no for a flag."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and not math.isfinite(v):
        return "—"
    if isinstance(v, float):
        return number_text(float(v))  # float(): a numpy scalar's repr would name its type
    return str(v)


def plural(n: int | None, word: str, words: str | None = None) -> str:
    """`1 row`, `2 rows`, `— rows` (unknown count)."""
    if n is None:
        return f"— {words or word + 's'}"
    return f"{n} {word if n == 1 else (words or word + 's')}"


_BREAKS = " ,;+(/"  # a cell is cut after one of these when one is near the end: never inside a word if avoidable


def clip(text: str, width: int) -> str:
    """`text` in at most `width` characters: whole, or cut at the last break before the width (if that keeps
    most of it), else at the width, with an ellipsis."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    cut = max(head.rfind(c) for c in _BREAKS)
    if cut >= width * 0.6:
        head = head[: cut + 1].rstrip(" ,;")
    return head + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int = 48) -> str:
    cells = [[fmt(c) for c in r] for r in rows]
    cells = [[clip(c, max_width) for c in r] for r in cells]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join([line, sep, *body])


def _peaks_line(p: Any) -> str:
    if p is None:
        return ""
    where = p.source + (f": {p.source_detail}" if p.source_detail else "")
    head = f"GPU: {p.gpu_name} [{p.gpu_key}, from {where}] — roofs "
    bw = f"{fmt(p.peak_tbs)} TB/s ({p.peak_tbs_kind})"
    if p.peak_tflops:
        return f"{head}{fmt(p.peak_tflops)} TFLOPS {p.compute_spec} ({p.peak_tflops_kind}), {bw}"
    return f"{head}{bw}; no compute roof" + (f": {p.compute_note}" if p.compute_note else "")


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{fmt(v)}%"


def _warnings(items: Sequence[str]) -> list[str]:
    return [f"warning: {w}" for w in items]


def human_load(r: Any) -> str:
    if r.status != "OK":
        return f"{r.category}: {r.status} — {r.message}"
    head = (
        f"{r.category}: {plural(r.rows, 'row')}, {plural(r.instances, 'instance')}, kernel time "
        f"{fmt(r.total_kernel_time_ms)} ms "
        f"= {fmt(r.percent_of_e2e)}% of E2E ({fmt(r.e2e_baseline_ms)} ms); platform {r.platform or '—'}"
    )
    rows = [[o.name, o.args.replace("<br>", " "), o.count, o.time_ms, o.percent_of_total] for o in r.top_ops]
    return "\n".join([head, table(["op", "args", "count", "time ms", "%E2E"], rows), *_warnings(r.warnings)])


def short_op(name: str) -> str:
    """`aten::_scaled_dot_product_flash_attention` -> `_scaled_dot_product_flash_attention`; unfused rows keep
    their first word (their names hold `::` inside the parenthesised op list)."""
    if name.startswith("unfused_attention"):
        return name.split(" ")[0]
    return name.split("::")[-1]




def _bounded(v: Any, work_bound: str | None) -> str:
    text = fmt(v)
    return BOUND_MARKS[work_bound] + text if work_bound in BOUND_MARKS and text != "—" else text


def _band_cell(low: float | None, high: float | None, status: str) -> str:
    return f"{fmt(low)}-{fmt(high)} {status}" if low is not None and high is not None else "no band"


def _left_out(parts: list[Any]) -> str:
    """What the time-weighted efficiency leaves out (bound, inconsistent or unmodeled rows), so no time is hidden."""
    if not parts:
        return ""
    said = ", ".join(f"{p.why} {plural(p.rows, 'row')} {fmt(p.time_ms)} ms ({fmt(p.share_pct)} %)" for p in parts)
    return f"; left out of it: {said}"


def human_roofline(r: Any) -> str:
    if r.status != "OK":
        return f"{r.category}: NO_DATA"
    lines = [
        _peaks_line(r.peaks),
        f"{r.category}: {plural(r.total_rows, 'row')} ({r.modeled_rows} modeled), {fmt(r.total_time_ms)} ms, "
        f"time-weighted efficiency {_pct(r.weighted_efficiency_pct)} ({r.bytes_model} bytes)"
        + _left_out(getattr(r, "efficiency_left_out", None) or []),
    ]
    rated = ("achieved_tflops", "efficiency_pct", "compute_pct", "memory_pct")
    rows = [
        [
            short_op(x.name), x.shape, x.attention_type, x.library, x.count, x.time_ms,
            *(_bounded(getattr(x, name), x.work_bound) for name in rated),
            x.regime,
            _band_cell(x.band_low, x.band_high, x.band_status),
        ]
        for x in r.rows
    ]  # fmt: skip
    labels = [BY_NAME[n].label for n in ("name", "shape", "attention_type", "library", "count", "time_ms", *rated)]
    headers = [*labels, BY_NAME["regime"].label, "band % (datasheet)"]
    lines.append(table(headers, rows))
    if any(x.work_bound in BOUND_MARKS for x in r.rows):
        lines.append(BOUND_LEGEND)
    lines += [f"note: {n}" for n in r.notes] + _warnings(r.warnings)
    if r.roofline_file:
        lines.append(f"full table: {r.roofline_file}")
    return "\n".join(lines)


RANK_COLUMNS = [
    "rank", "bound", "library", "eff", "method", "impact low", "mid", "high", "to band", "saved ms", "members"
]  # fmt: skip
def rank_legend(scope: str, methods: set[str]) -> str:
    """How the impact columns of the findings shown were computed (docs/formats.md "Impact rules"): the formula
    of their scope and estimate method, nothing about the ones not shown."""
    parts = []
    if "quantified" in methods:
        if scope == COMPARATIVE:
            parts.append(
                "high = what the members would give back at trace 2's speed: (1 - t2/t1) x their time (t2/t1 at "
                "least their trace-1 roofline fraction)"
            )
        else:
            parts.append("high = what the members would give back at 100 % of their roofline")
        parts.append(f"mid {MID_FACTOR:g} x high, low {LOW_FACTOR:g} x high")
    if "heuristic" in methods:
        parts.append(
            f"heuristic rows (no efficiency to project from, or above {ANOMALY_FLAG_PCT:g} %): mid / low / high = "
            f"{HEURISTIC_MID:g} / {HEURISTIC_LOW:g} / {HEURISTIC_HIGH:g} x their share of E2E"
        )
    if scope != COMPARATIVE:
        parts.append("to band: matching the best published kernel for their shape")
    parts.append(
        "saved ms: the finding's first lever (every lever, with what it changes, is in the metrics JSON and the "
        "findings template)"
    )
    return f"impact in {IMPACT_UNIT}: " + "; ".join(parts)


def _first_lever(f: Any) -> str:
    if not f.levers:
        return "—"
    return fmt(f.levers[0].saved_ms)


def human_rank(r: Any) -> str:
    if r.status != "OK":
        return f"{r.category}: {r.status}" + (f" ({r.no_findings_reason})" if r.no_findings_reason else "")
    rows = [
        [
            f"P{f.rank}",
            f.bound_type,
            f.library,
            f.eff_bucket,
            f.estimate_method,
            f.impact_score_low,
            f.impact_score,
            f.impact_score_high,
            f.impact_to_band,
            _first_lever(f),
            ", ".join(short_op(m) for m in f.members),
        ]
        for f in r.findings
    ]
    out = [
        _peaks_line(r.peaks),
        f"{r.category} ({r.comparison_scope}): {plural(r.operation_count, 'instance')}, "
        f"{fmt(r.total_time_ms)} ms, {fmt(r.percent_of_compute)}% of E2E; {plural(r.findings_total, 'finding')}",
        table(RANK_COLUMNS, rows) + "\n" + rank_legend(r.comparison_scope, {f.estimate_method for f in r.findings})
        if rows
        else f"(no findings: {r.no_findings_reason})" if r.no_findings_reason else "(no findings)",
        *(f"within the expected band (not a finding): {x}" for x in r.in_band),
        *_fact_lines(r.facts),
        f"metrics: {r.metrics_file}",
    ]
    return "\n".join(out + _warnings(r.warnings))


def _fact_lines(facts: dict[str, Any]) -> list[str]:
    out = []
    outside = facts.get("attention_outside_rows") or {}
    for trace, x in outside.items():
        if x.get("kernels"):
            where = f" ({trace.replace('trace', 'trace ')})" if len(outside) > 1 else ""  # one trace: no label
            out.append(f"fact: {x['kernels']} attention kernels outside every op{where}: {x['time_us']} µs, "
                       f"{x['percent_of_e2e']} % of E2E")
    if c := facts.get("copy_overhead"):
        out.append(f"fact: layout copies around the calls {c['time_ms']} ms = {c['percent_of_attention']} % of the "
                   f"attention time ({c['percent_of_e2e']} % of E2E)")
    if kv := facts.get("kv_cache_write"):
        rule = "over" if kv["over_threshold"] else "under"
        out.append(f"fact: KV-cache writes {kv['time_ms']} ms = {kv['percent_of_op']} % of the op ({rule} the "
                   f"{fmt(kv['threshold_pct'])} % rule)")
    for x in (facts.get("backward_vs_forward") or [])[:3]:
        out.append(f"fact: backward {x['shape']}: {x['time_ratio']} x its forward's time for {x['flops_ratio']} x "
                   "the FLOPs")
    return out


def human_validate(r: Any) -> str:
    if r.passed:
        return "PASS: findings file is valid"
    out = ["FAIL:"]
    for e in r.errors:
        out.append(f"  line {e.line or '—'} [{e.rule}] {e.message}\n      fix: {e.fix}")
    return "\n".join(out)


def human_model(r: Any) -> str:
    rows = [
        ["mask", r.mask.label],
        ["FLOPs (useful)", r.flops_useful],
        ["FLOPs (executed)", r.flops_executed],
        ["bytes (compulsory)", r.bytes_compulsory],
        ["bytes (tiled)", r.bytes_tiled],
        ["intensity (FLOP/B)", r.intensity],
        ["ridge (FLOP/B)", r.ridge],
        ["ideal time (µs)", r.ideal_us],
        ["bound / regime", f"{r.bound} / {r.regime}"],
        ["measured (µs)", r.measured_us],
        ["TFLOPS achieved", r.achieved_tflops],
        ["efficiency % (roofline)", r.efficiency_pct],
        ["efficiency % (datasheet)", r.efficiency_datasheet_pct],
        ["tensor % / HBM %", f"{fmt(r.compute_pct)} / {fmt(r.memory_pct)}"],
        ["expected band", f"{fmt(r.band_low)}-{fmt(r.band_high)} % {r.band.metric} ({r.band_status})" if r.band
         else "no reference band"],
    ]
    lines = [_peaks_line(r.peaks), table(["quantity", "value"], rows), f"verdict: {r.verdict}"]
    return "\n".join(lines + [f"note: {n}" for n in r.notes])


def human_archs(r: Any) -> str:
    if r.details is not None:
        d = r.details
        rows = [[spec, v, d.tflops_kind.get(spec), d.tflops_datasheet.get(spec)] for spec, v in d.tflops.items()]
        lines = [f"{d.name} [{d.key}] — {d.vendor}, {d.sm_count} SMs/CUs, {fmt(d.memory_gb)} GB, "
                 f"HBM roof {fmt(d.hbm_tbs)} TB/s ({d.hbm_tbs_kind})",
                 table(["spec", "roof TFLOPS", "kind", "datasheet"], rows)]
        if d.unverified:
            lines.append("unverified (never a roof): " + ", ".join(f"{k} {fmt(v)}" for k, v in d.unverified.items()))
        return "\n".join(lines)
    rows = [[a.key, a.name, a.vendor, a.bf16_tflops, a.bf16_kind, a.fp8_tflops, a.hbm_tbs, a.sm_count]
            for a in r.architectures]
    return table(["key", "name", "vendor", "bf16 TFLOPS", "kind", "fp8 TFLOPS", "HBM TB/s", "SMs/CUs"], rows)


def human_analyze(r: Any) -> str:
    lines = [f"{r.status}: {r.trace_path} -> {r.output_dir}"]
    if r.categories:
        rows = [[c.name, c.rows, c.instances, c.kernel_time_ms] for c in r.categories]
        lines.append(table(["category", "rows", "instances", "kernel ms"], rows))
    return "\n".join(lines + _warnings(r.warnings))


RENDERERS: dict[str, Callable[[Any], str]] = {
    "load_category_data": human_load,
    "compute_roofline": human_roofline,
    "rank_findings": human_rank,
    "validate_findings": human_validate,
    "model_attention": human_model,
    "list_architectures": human_archs,
    "analyze_trace": human_analyze,
    "render_findings_template": lambda r: "\n".join([
        *([] if r.wrote_main_file else [f"kept {r.kept_file} unchanged (it exists; a findings file is never "
                                        "overwritten): the new skeleton is beside it"]),
        f"wrote {r.findings_file}: {plural(r.p_items, 'P-item')}, {plural(r.slots, 'prose slot')} to fill",
    ]),
    "plot_roofline": lambda r: "\n".join([*(f"wrote {f}" for f in r.files), *_warnings(r.warnings)]),
    "render_report": lambda r: "\n".join([f"wrote {r.report_file}", *_warnings(r.warnings)]),
}


def render(tool_name: str, result: BaseModel) -> str:
    fn = RENDERERS.get(tool_name)
    return fn(result) if fn is not None else result.model_dump_json(indent=2)
