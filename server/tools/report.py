"""render_report: one self-contained HTML page of an analysis folder (peaks, charts, findings, every op)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
from pydantic import BaseModel, Field

from server.render.plots import render_roofline_png
from server.render.report import CategorySection, FindingRow, PeakSource, ReportContext, render_report_html
from server.roots import DataRoots
from server.scoring.chart import chart_ceilings, chart_points, report_op_rows
from server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from server.tools.common import ArchArg, BytesModelArg, OutputDir, resolve_output_dir
from server.tools.plot import scored_categories
from server.writers.atomic import write_text_atomic

_SOURCE_WORDS = {
    "argument": "named by the caller",
    "arch_json": "arch JSON file",
    "metadata": "analysis-folder metadata",
}


class ReportInput(ToolInput):
    output_dir: OutputDir
    arch: ArchArg = None
    bytes_model: BytesModelArg = "compulsory"
    output: Annotated[
        str | None, Field(max_length=4096, description="HTML file to write; default <output_dir>/report.html")
    ] = None


class ReportResult(BaseModel):
    report_file: str
    categories: list[str] = Field(description="categories in the report (those with an ops CSV)")


def _metrics_findings(out: Path, cat: str, roots: DataRoots) -> list[FindingRow]:
    p = out / "category_data" / f"{cat}_metrics.json"
    if not roots.is_file(p, what="metrics JSON"):
        return []
    try:
        m = orjson.loads(roots.read_bytes(p, what="metrics JSON"))
    except orjson.JSONDecodeError:
        return []
    rows = []
    for f in m.get("category_findings", []) if isinstance(m, dict) else []:
        try:
            rows.append(
                FindingRow(
                    rank=int(f["rank"]),
                    bound=str(f.get("bound_type")),
                    library=str(f.get("library")),
                    eff_bucket=str(f.get("eff_bucket")),
                    estimate_method=str(f.get("estimate_method")),
                    impact_low=float(f["impact_score_low"]),
                    impact_mid=float(f["impact_score"]),
                    impact_high=float(f["impact_score_high"]),
                    members=[str(x.get("operation")) for x in f.get("members", [])],
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError):  # a malformed entry: left out of the report
            continue
    return rows


def render_report(ctx: ToolContext, args: ReportInput) -> ReportResult:
    out = resolve_output_dir(ctx.roots, args.output_dir)
    scored = scored_categories(ctx.roots, out, "all", args.arch, args.bytes_model)
    with_rows = [s for s in scored if s.has_rows]
    resolved = with_rows[0].arch if with_rows else None
    sections: list[CategorySection] = []
    peaks: list[PeakSource] = []
    e2e = None
    if resolved is not None:
        ceil = chart_ceilings(resolved, [s.table for s in with_rows if s.table is not None])
        src = _SOURCE_WORDS.get(resolved.source, resolved.source)
        if resolved.source == "trace":
            src = f"GPU in the trace (deviceProperties: {resolved.trace_gpu_name})"
        peaks.append(
            PeakSource(
                gpu_name=resolved.gpu.name,
                compute_spec=ceil.compute_spec,
                peak_tflops=ceil.peak_tflops,
                peak_tbs=ceil.peak_tbs,
                peak_kind=ceil.peak_kind,
                source=src,
            )
        )
    for s in scored:
        cat, table, data = s.data.category, s.table, s.data
        if table is None or s.arch is None:
            sections.append(CategorySection(category=cat))
            continue
        e2e = data.e2e_ms
        assert e2e is not None
        plot = render_roofline_png(
            chart_points(cat, table),
            chart_ceilings(s.arch, [table]),
            title=f"{cat} on {table.gpu.name}",
            bytes_model=args.bytes_model,
        )
        total = float(table.records["time_ms"].sum())
        sections.append(
            CategorySection(
                category=cat,
                chart_png=plot.png,
                chart_alt=f"Roofline chart of {cat}",
                total_time_ms=total,
                percent_of_e2e=100.0 * total / e2e,
                notes=list(table.peak_notes),
                findings=_metrics_findings(out, cat, ctx.roots),
                ops=report_op_rows(table, e2e),
            )
        )
    if not sections:
        sections.append(CategorySection(category="sdpa_fwd"))
    report = ReportContext(
        title=f"Attention performance report — {out.name}",
        source=str(out),
        e2e_ms=e2e,
        bytes_model=args.bytes_model,
        peaks=peaks,
        warnings=list(resolved.warnings) if resolved else [],
        sections=sections,
    )
    target = ctx.roots.write_target(args.output if args.output else out / "report.html", what="report path")
    write_text_atomic(target, render_report_html(report), roots=ctx.roots)
    return ReportResult(report_file=str(target), categories=[s.data.category for s in scored])


TOOL = ToolSpec(
    name="render_report",
    title="HTML report of an analysis folder",
    description=(
        "Write one self-contained HTML page (no scripts, nothing fetched) for an analysis folder: the peaks used and "
        "where they came from, and per category the roofline chart, the ranked findings and every op with its "
        "roofline numbers. Returns the file's path."
    ),
    input_model=ReportInput,
    result_model=ReportResult,
    run=render_report,
    cli=CliSpec("report", positional=("output_dir",), flags={"output": ("-o",)}),
    writes=True,
)
