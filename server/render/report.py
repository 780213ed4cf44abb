"""One self-contained HTML page: the peaks used, and per category a roofline chart, the ranked findings
and every op with its roofline numbers.

Pure rendering from a `ReportContext` the caller fills in. The page has inline CSS only: no scripts, no
fonts, stylesheets or images fetched from anywhere (the chart is a data: URI), and a Content-Security-
Policy that forbids any fetch, so it opens the same offline as online. Every string from the data is
escaped: op names carry C++ templates (`<`, `>`), and kernel names can carry anything.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Callable, Iterator
from itertools import islice

from pydantic import BaseModel, ConfigDict, Field

from sdpa_analyzer.server.render.markdown import render_markdown
from sdpa_analyzer.server.vocab import ANOMALY_PCT, BOUND_LEGEND, BOUND_MARKS

NO_OPS_MESSAGE = "No SDPA operations found in trace"
# in the page's <head>: how render_report recognizes a page it wrote (it replaces no other file: server.writers.owned)
REPORT_GENERATOR = "sdpa-analyzer render_report"
MISSING = "—"
_BR_RE = re.compile(r"<br\s*/?>", re.IGNORECASE)
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


class PeakSource(BaseModel):
    """One set of peaks used for the numbers, and where it came from."""

    model_config = ConfigDict(frozen=True)

    gpu_name: str
    compute_spec: str = Field(description="e.g. matrix_bf16")
    peak_tflops: float
    peak_tbs: float
    peak_kind: str = Field(description="achievable | datasheet | metadata")
    source: str = Field(description="e.g. 'GPU in the trace (deviceProperties: NVIDIA H100 80GB HBM3)'")


class FindingRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    rank: int
    bound: str = Field(description="compute | memory | unmodeled")
    library: str
    eff_bucket: str = Field(description="0-30 | 30-60 | 60-100 | unknown | all")
    estimate_method: str = "quantified"
    impact_low: float
    impact_mid: float
    impact_high: float
    impact_to_band: float | None = Field(default=None, description="% of E2E back at the top of the members' bands")
    members_within_band: int | None = None
    member_count: int | None = None
    members: list[str] = Field(default_factory=list, description="op names in the group")
    levers: list[str] = Field(
        default_factory=list,
        description="every lever, largest saving first: `id: saved ms (% of E2E), at most` (server.findings.levers)",
    )


class OpRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    shape: str | None = Field(default=None, description="B, H, N, d, mask (the op family for rows without a model)")
    verdict: str | None = Field(default=None, description="the verdict in words (server.scoring.verdicts)")
    work_bound: str | None = Field(
        default=None, description="exact | lower | upper | unknown: a bounded row's rates are bounds (≥ / ≤ / ~)"
    )
    args: str = Field(default="", description="metrics-JSON args string; '<br>' separates the inputs")
    count: int
    time_ms: float
    percent_e2e: float | None = None
    efficiency_pct: float | None = None
    compute_pct: float | None = Field(default=None, description="achieved TFLOP/s against the compute roof, %")
    memory_pct: float | None = Field(default=None, description="achieved TB/s against the bandwidth roof, %")
    regime: str | None = Field(default=None, description="compute | memory | balanced")
    bound: str | None = None
    flops: float | None = None
    bytes: float | None = None
    intensity: float | None = Field(default=None, description="FLOPs/byte")
    achieved_tflops: float | None = None
    expected_band: str | None = Field(default=None, description="e.g. '20–40 %'")
    band_status: str | None = Field(default=None, description="within | below | above | none")
    kernel_name: str | None = Field(default=None, description="the dominant kernel, in full")
    kernel_names: list[str] = Field(default_factory=list, description="every kernel of the op, in full")
    module_chain: list[str] = Field(default_factory=list, description="nn.Module path, outermost first")
    t2_time_ms: float | None = Field(default=None, description="comparative: trace-2 kernel time")
    t2_count: int | None = None
    difference_ms: float | None = Field(default=None, description="comparative: trace-2 time − trace-1 time")
    warnings: list[str] = Field(default_factory=list)
    no_model_reason: str | None = None


class OpRows:
    """A section's op rows, each made as the page is written (10^5 OpRow models held at once were ~450 MB):
    `make(k)` gives the k-th row."""

    def __init__(self, count: int, make: Callable[[int], OpRow]) -> None:
        self._count, self._make = count, make

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[OpRow]:
        return map(self._make, range(self._count))


class CategorySection(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    category: str = Field(description="e.g. sdpa_fwd")
    display_name: str | None = None
    chart_png: bytes | None = None
    chart_alt: str = "Roofline chart"
    total_time_ms: float | None = None
    percent_of_e2e: float | None = None
    percent_of_busy: float | None = None  # the same time against the GPU's busy time of the window
    notes: list[str] = Field(default_factory=list)
    consistency_warnings: list[str] = Field(
        default_factory=list, description="the findings and the roofline shown disagree (GPU, bytes model, roofs)"
    )
    error: str | None = Field(default=None, description="the category could not be analyzed: why")
    ranked_with: str | None = Field(
        default=None, description="GPU, bytes model and scope the findings were ranked with"
    )
    findings: list[FindingRow] = Field(default_factory=list)
    no_findings_reason: str | None = Field(default=None, description="why `findings` is empty")
    impact_unit: str = "% of E2E"
    findings_markdown: str | None = Field(default=None, description="the findings prose (category_findings/*.md)")
    findings_file: str | None = None
    findings_notes: list[str] = Field(default_factory=list, description="e.g. the prose is older than the ranking")
    comparative: bool = Field(default=False, description="the folder has trace-2 times: show the T2 columns")
    # OpRows first, left to right: pydantic's smart union would make every row (trying the list) before taking it
    ops: OpRows | list[OpRow] = Field(default_factory=list, union_mode="left_to_right")


class ReportContext(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    source: str | None = Field(default=None, description="analysis folder / trace the report is about")
    e2e_ms: float | None = Field(default=None, description="E2E baseline (gpu_utilization.total_time_ms)")
    gpu_busy_ms: float | None = Field(default=None, description="GPU busy time of the window (analyze_trace's)")
    gpu_idle_ms: float | None = Field(default=None, description="GPU idle time of the window")
    bytes_model: str = "compulsory"
    bytes_model_note: str | None = None
    peaks: list[PeakSource] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    sections: list[CategorySection] = Field(default_factory=list)


_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif;
       margin: 24px; color: #1a1a1a; background: #ffffff; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0 0 4px 0; }
h2 { font-size: 1.3em; margin: 28px 0 8px 0; border-bottom: 2px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 1.05em; margin: 18px 0 6px 0; }
.meta { color: #555; margin: 2px 0; }
.warn { background: #fff4e5; border-left: 4px solid #e69500; padding: 6px 10px; margin: 6px 0; }
.empty { background: #f3f3f3; border-left: 4px solid #999; padding: 10px; font-weight: 600; }
.error { background: #fdecea; border-left: 4px solid #c62828; padding: 10px; }
.chart { max-width: 100%; height: auto; border: 1px solid #ddd; display: block; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 4px 0 12px 0; }
th, td { border: 1px solid #d0d0d0; padding: 3px 6px; vertical-align: top; }
th { background: #f0f3f7; text-align: left; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name, td.args { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; }
td.name { max-width: 22em; overflow-wrap: anywhere; font-size: 0.95em; }
td.args { white-space: nowrap; font-size: 0.9em; }
td.anomaly { background: #fdecea; font-weight: 600; }
tr.nomodel td { color: #6b6b6b; }
ul.compact { margin: 0; padding-left: 1.1em; }
/* wide tables scroll sideways (div.scroll) rather than squeezing the text columns to a few letters */
td.name { min-width: 12em; }
/* the key columns (op, shape, time, efficiency, band, verdict) come first and fit 1,400 px; the rest scroll */
td.shape { white-space: nowrap; font-size: 0.95em; }
td.verdict { min-width: 16em; max-width: 24em; font-size: 0.95em; }
td.module { font-size: 0.85em; min-width: 12em; max-width: 18em; overflow-wrap: anywhere; color: #333; }
td.kernel { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.85em; min-width: 20em;
            max-width: 30em; overflow-wrap: anywhere; }
td.notes { min-width: 14em; }
td.kernel summary { cursor: pointer; }
ol.kernels { margin: 4px 0 0 0; padding-left: 1.6em; }
.band-below { color: #b3261e; font-weight: 600; }
.band-within { color: #1b5e20; }
.band-above { color: #0d47a1; }
.alert { background: #fdecea; border: 2px solid #c62828; border-left-width: 8px; padding: 8px 12px;
         margin: 8px 0; color: #5f1111; }
.alert ul { margin: 4px 0 0 0; padding-left: 1.2em; }
p.nofindings { font-weight: 600; }
.prose { border-left: 4px solid #c5cae9; padding: 2px 14px; margin: 6px 0 14px 0; max-width: 110em; }
.prose h3, .prose h4, .prose h5, .prose h6 { margin: 14px 0 6px 0; }
.prose h3 { font-size: 1.1em; } .prose h4 { font-size: 1.04em; } .prose h5, .prose h6 { font-size: 0.98em; }
details.prose-box > summary { cursor: pointer; font-weight: 600; font-size: 1.05em; margin: 18px 0 6px 0; }
.prose table { font-size: 0.8em; }
.prose code, .prose pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; background: #f5f5f5; }
.prose pre { padding: 6px; overflow-x: auto; }
.prose blockquote { color: #444; border-left: 3px solid #ddd; margin: 6px 0; padding-left: 10px; }
.fill { background: #fff3c4; color: #6d4c00; }
nav a { margin-right: 12px; }
"""


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _fmt(v: float | None, spec: str) -> str:
    return format(v, spec) if _finite(v) else MISSING


def _si(v: float | None, unit: str) -> str:
    """12.3 GFLOP, 45.6 MB: decimal prefixes, three significant digits."""
    if not _finite(v):
        return MISSING
    assert v is not None
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def _args_html(args: str) -> str:
    # the metrics JSON separates inputs with a literal <br>: keep that as a line break, escape the rest
    return "<br>".join(_esc(part) for part in _BR_RE.split(args) if part != "") or MISSING


def _list_html(items: list[str]) -> str:
    if not items:
        return ""
    return '<ul class="compact">' + "".join(f"<li>{_esc(i)}</li>" for i in items) + "</ul>"


def _td(content: str, cls: str | None = None) -> str:
    return f'<td class="{cls}">{content}</td>' if cls else f"<td>{content}</td>"


def _peaks_html(ctx: ReportContext) -> str:
    if not ctx.peaks:
        return '<p class="warn">No peaks were resolved: efficiencies are not available.</p>'
    head = "".join(
        f"<th>{h}</th>"
        for h in ("GPU", "compute spec", "peak TFLOPS", "peak TB/s", "ridge FLOPs/byte", "kind", "source")
    )
    rows = []
    for p in ctx.peaks:
        ridge = p.peak_tflops / p.peak_tbs if p.peak_tbs > 0 else None
        rows.append(
            "<tr>"
            + _td(_esc(p.gpu_name))
            + _td(_esc(p.compute_spec))
            + _td(_fmt(p.peak_tflops, ".4g"), "num")
            + _td(_fmt(p.peak_tbs, ".4g"), "num")
            + _td(_fmt(ridge, ".4g"), "num")
            + _td(_esc(p.peak_kind))
            + _td(_esc(p.source))
            + "</tr>"
        )
    return f'<table id="peaks"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _findings_html(sec: CategorySection) -> str:
    if not sec.findings:
        reason = sec.no_findings_reason or "the report was not told why"
        return f'<p class="empty nofindings">No findings: {_esc(reason)}.</p>'
    unit = _esc(sec.impact_unit)
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "rank",
            "bound",
            "library",
            "eff bucket",
            "method",
            f"impact low ({unit})",
            f"impact mid ({unit})",
            f"impact high ({unit})",
            f"to band ({unit})",
            "members within band",
            "members",
            "levers (ms saved, largest first)",
        )
    )
    rows = [
        "<tr>"
        + _td(str(f.rank), "num")
        + _td(_esc(f.bound))
        + _td(_esc(f.library))
        + _td(_esc(f.eff_bucket))
        + _td(_esc(f.estimate_method))
        + _td(_as_written(f.impact_low), "num")
        + _td(_as_written(f.impact_mid), "num")
        + _td(_as_written(f.impact_high), "num")
        + _td(_as_written(f.impact_to_band), "num")
        + _td(_within_html(f), "num")
        + _td(_list_html(f.members), "name")
        + _td(_list_html(f.levers), "name")
        + "</tr>"
        for f in sec.findings
    ]
    return (
        f'<p class="meta">Impact figures are in {unit}: the share of the profiled window the ops would give back '
        "(low / mid / high; to band: reaching the top of their expected bands).</p>"
        f'<div class="scroll"><table id="findings-{_esc(sec.category)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _as_written(v: float | None) -> str:
    """A metrics JSON number with the digits the JSON writes (one rounding per fact: the tools'), `—` if none."""
    from sdpa_analyzer.server.findings.spec import number_text

    return MISSING if v is None else _esc(number_text(v))


def _within_html(f: FindingRow) -> str:
    if f.members_within_band is None:
        return MISSING
    total = f.member_count if f.member_count is not None else len(f.members)
    return f"{f.members_within_band} of {total}"


def _prose_html(sec: CategorySection) -> str:
    notes = "".join(f'<p class="warn">{_esc(n)}</p>' for n in sec.findings_notes)
    if sec.findings_markdown is None:
        return (
            f"<h3>Findings prose</h3>{notes}"
            '<p class="meta">No findings prose yet (render_findings_template writes the skeleton the agent fills).</p>'
        )
    source = f'<p class="meta">From {_esc(sec.findings_file)}</p>' if sec.findings_file else ""
    # open by default (it is what the numbers mean), collapsible so the ops table is one click away
    return (
        f'<details class="prose-box" open><summary>Findings prose</summary>{notes}{source}'
        f'<div class="prose" id="prose-{_esc(sec.category)}">{render_markdown(sec.findings_markdown)}</div></details>'
    )


# (class, header): what a reader looks for first comes first, so it shows without scrolling sideways at 1,400 px
_OP_COLUMNS = (
    ("c-op", "op"), ("c-shape", "shape"), ("c-count", "count"), ("c-time", "time ms"), ("c-e2e", "%E2E"),
    ("c-eff", "efficiency %"), ("c-band", "expected band"), ("c-verdict", "verdict"), ("c-compute", "compute %"),
    ("c-memory", "memory %"), ("c-regime", "regime"), ("c-bound", "bound"), ("c-module", "module"),
    ("c-args", "args"), ("c-flops", "FLOPs"), ("c-bytes", "bytes"), ("c-intensity", "FLOPs/byte"),
    ("c-tflops", "achieved TFLOPS"), ("c-kernel", "kernel"), ("c-notes", "warnings / no-model reason"),
)  # fmt: skip
_T2_COLUMNS = (("c-t2-time", "T2 time ms"), ("c-t2-count", "T2 count"), ("c-t2-delta", "Δ ms (T2 − T1)"))
_T2_AFTER = "c-verdict"  # the trace-2 columns follow the key columns
KEY_COLUMNS = ("c-op", "c-shape", "c-time", "c-eff", "c-band", "c-verdict")
KERNEL_SHOWN = 60


def op_columns(comparative: bool) -> list[tuple[str, str]]:
    """The ops table's (class, header) columns (the trace-2 ones only for a comparative folder)."""
    cols = list(_OP_COLUMNS)
    if comparative:
        at = [c for c, _ in cols].index(_T2_AFTER) + 1
        cols[at:at] = _T2_COLUMNS
    return cols


def op_headers(comparative: bool) -> list[str]:
    """The ops table's column headers."""
    return [h for _, h in op_columns(comparative)]


def _bounded(op: OpRow, text: str) -> str:
    """A rate of a bounded row with its mark (≥ at least, ≤ at most, ~ unknown), as the CLI shows it."""
    mark = BOUND_MARKS.get(op.work_bound or "")
    return f"{mark}{text}" if mark and text != MISSING else text


def _kernel_html(op: OpRow) -> str:
    names = op.kernel_names or ([op.kernel_name] if op.kernel_name else [])
    main = op.kernel_name or (names[0] if names else None)
    if main is None:
        return MISSING
    short = main if len(main) <= KERNEL_SHOWN else main[: KERNEL_SHOWN - 1] + "…"
    if len(names) <= 1 and short == main:
        return f'<span title="{_esc(main)}">{_esc(main)}</span>'
    # the full names on demand: a <details> needs no script
    more = f" +{len(names) - 1}" if len(names) > 1 else ""
    items = "".join(f"<li>{_esc(n)}</li>" for n in names)
    return (
        f'<details><summary title="{_esc(main)}">{_esc(short)}{more}</summary>'
        f'<ol class="kernels">{items}</ol></details>'
    )


def _band_html(op: OpRow) -> str:
    if not op.expected_band:
        return MISSING if op.band_status in (None, "none") else _esc(op.band_status)
    status = f" ({_esc(op.band_status)})" if op.band_status and op.band_status != "none" else ""
    cls = f' class="band-{_esc(op.band_status)}"' if op.band_status else ""
    return f"<span{cls}>{_esc(op.expected_band)}{status}</span>"


def _op_row_html(op: OpRow, comparative: bool) -> str:
    eff = op.efficiency_pct
    eff_cls = "num anomaly" if _finite(eff) and eff is not None and eff > ANOMALY_PCT else "num"
    notes = list(op.warnings)
    if op.no_model_reason:  # a warning that repeats the reason is said once, as the reason
        notes = [f"no model: {op.no_model_reason}", *(w for w in notes if op.no_model_reason not in w)]
    row_cls = ' class="nomodel"' if op.no_model_reason else ""
    t2 = ""
    if comparative:
        t2 = (
            _td(_fmt(op.t2_time_ms, ".3f"), "num")
            + _td(str(op.t2_count) if op.t2_count is not None else MISSING, "num")
            + _td(_fmt(op.difference_ms, "+.3f"), "num")
        )
    return (
        f"<tr{row_cls}>"
        + _td(_esc(op.name), "name")
        + _td(_esc(op.shape) if op.shape else MISSING, "shape")
        + _td(str(op.count), "num")
        + _td(_fmt(op.time_ms, ".3f"), "num")
        + _td(_fmt(op.percent_e2e, ".2f"), "num")
        + _td(_esc(_bounded(op, _fmt(eff, ".1f"))), eff_cls)
        + _td(_band_html(op))
        + _td(_esc(op.verdict) if op.verdict else MISSING, "verdict")
        + t2
        + _td(_esc(_bounded(op, _fmt(op.compute_pct, ".1f"))), "num")
        + _td(_esc(_bounded(op, _fmt(op.memory_pct, ".1f"))), "num")
        + _td(_esc(op.regime) if op.regime else MISSING)
        + _td(_esc(op.bound) if op.bound else MISSING)
        + _td(_esc(" > ".join(op.module_chain)) if op.module_chain else MISSING, "module")
        + _td(_args_html(op.args), "args")
        + _td(_si(op.flops, "FLOP"), "num")
        + _td(_si(op.bytes, "B"), "num")
        + _td(_fmt(op.intensity, ".1f"), "num")
        + _td(_esc(_bounded(op, _fmt(op.achieved_tflops, ".2f"))), "num")
        + _td(_kernel_html(op), "kernel")
        + _td(_list_html(notes), "notes")
        + "</tr>"
    )


OPS_ROWS_PER_PIECE = 512  # op rows rendered per piece of the page (a 10^5-row page is ~200 MB: written in pieces)


def _ops_pieces(sec: CategorySection) -> Iterator[str]:
    head = "".join(f'<th class="{c}">{_esc(h)}</th>' for c, h in op_columns(sec.comparative))
    yield f'<div class="scroll"><table id="ops-{_esc(sec.category)}"><thead><tr>{head}</tr></thead><tbody>'
    rows = iter(sec.ops)
    bounded = False
    while chunk := list(islice(rows, OPS_ROWS_PER_PIECE)):
        bounded = bounded or any(op.work_bound in BOUND_MARKS for op in chunk)
        yield "".join(_op_row_html(op, sec.comparative) for op in chunk)
    legend = f'<p class="meta">{_esc(BOUND_LEGEND)}</p>' if bounded else ""
    yield f"</tbody></table></div>{legend}"


def _chart_html(sec: CategorySection) -> str:
    if sec.chart_png is None:
        return '<p class="meta">No chart for this category.</p>'
    data = base64.b64encode(sec.chart_png).decode("ascii")
    return (
        f'<img class="chart" id="chart-{_esc(sec.category)}" alt="{_esc(sec.chart_alt)}" '
        f'src="data:image/png;base64,{data}">'
    )


def _alert_html(sec: CategorySection) -> str:
    if not sec.consistency_warnings:
        return ""
    items = "".join(f"<li>{_esc(w)}</li>" for w in sec.consistency_warnings)
    return (
        f'<div class="alert" role="alert" id="mismatch-{_esc(sec.category)}">'
        "<strong>The findings below do not match this roofline.</strong>"
        f"<ul>{items}</ul></div>"
    )


def _section_pieces(sec: CategorySection) -> Iterator[str]:
    title = sec.display_name or sec.category
    parts = [f'<section id="cat-{_esc(sec.category)}"><h2>{_esc(title)}</h2>']  # the pieces before the op rows
    if sec.total_time_ms is not None or sec.percent_of_e2e is not None:
        parts.append(
            f'<p class="meta">GPU kernel time {_fmt(sec.total_time_ms, ".3f")} ms · '
            f"{_fmt(sec.percent_of_e2e, '.2f')} % of E2E"
            + (f" · {_fmt(sec.percent_of_busy, '.2f')} % of GPU busy time" if sec.percent_of_busy is not None else "")
            + "</p>"
        )
    parts.append(_alert_html(sec))
    parts.extend(f'<p class="warn">{_esc(n)}</p>' for n in sec.notes)
    if sec.error:
        parts.append(f'<p class="error">Analysis failed: {_esc(sec.error)}</p>')
    elif not sec.ops:
        parts.append(f'<p class="empty">{NO_OPS_MESSAGE}</p>')
    else:
        parts.append(_chart_html(sec))
        parts.append("<h3>Ranked findings</h3>")
        if sec.ranked_with:
            parts.append(f'<p class="meta">Ranked with {_esc(sec.ranked_with)}.</p>')
        parts.append(_findings_html(sec))
        parts.append(_prose_html(sec))
        parts.append(f"<h3>All ops ({len(sec.ops)} {'row' if len(sec.ops) == 1 else 'rows'})</h3>")
        yield "".join(parts)
        yield from _ops_pieces(sec)
        yield "</section>"
        return
    parts.append("</section>")
    yield "".join(parts)


def render_report_html(ctx: ReportContext) -> str:
    """The whole page as a string (UTF-8 text, no external references)."""
    return "".join(report_pieces(ctx))


def report_pieces(ctx: ReportContext) -> Iterator[str]:
    """The page in pieces (their concatenation is render_report_html's text), so it is written without being held."""
    meta = []
    if ctx.source:
        meta.append(f'<p class="meta">Source: {_esc(ctx.source)}</p>')
    if ctx.e2e_ms is not None:
        base = f"E2E baseline: {_fmt(ctx.e2e_ms, '.3f')} ms"
        if ctx.gpu_busy_ms is not None:
            base += f" · GPU busy {_fmt(ctx.gpu_busy_ms, '.3f')} ms · idle {_fmt(ctx.gpu_idle_ms, '.3f')} ms"
        meta.append(f'<p class="meta">{base}</p>')
    bytes_line = f"Bytes model: {_esc(ctx.bytes_model)}"
    if ctx.bytes_model_note:
        bytes_line += f" ({_esc(ctx.bytes_model_note)})"
    meta.append(f'<p class="meta">{bytes_line}</p>')
    nav = "".join(f'<a href="#cat-{_esc(s.category)}">{_esc(s.display_name or s.category)}</a>' for s in ctx.sections)
    body = [
        f"<h1>{_esc(ctx.title)}</h1>",
        *meta,
        *(f'<p class="warn">{_esc(w)}</p>' for w in ctx.warnings),
        f"<nav>{nav}</nav>" if nav else "",
        "<h2>Peaks used</h2>",
        _peaks_html(ctx),
        '<p class="meta">Efficiency = ideal roofline time / measured kernel time. Values inside the expected '
        f"band are not bottlenecks; above {ANOMALY_PCT:g} % is an anomaly (highlighted), not excellence.</p>",
    ]
    if not ctx.sections:
        body.append(f'<p class="empty">{NO_OPS_MESSAGE}</p>')
    yield (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{REPORT_GENERATOR}">'
        f'<meta http-equiv="Content-Security-Policy" content="{_esc(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(ctx.title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{''.join(body)}"
    )
    for sec in ctx.sections:
        yield from _section_pieces(sec)
    yield "</body></html>\n"
