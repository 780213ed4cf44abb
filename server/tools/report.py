"""render_report: one self-contained HTML page of an analysis folder (peaks, charts, findings, every op)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from sdpa_analyzer.server.errors import InputError, shorten_message
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.numbers import finite, rounded
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.fields import BY_NAME
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec, capped
from sdpa_analyzer.server.tools.common import ArchArg, BytesModelArg, OutputDir, resolve_output_dir
from sdpa_analyzer.server.vocab import COMPARATIVE, IMPACT_UNIT
from sdpa_analyzer.server.writers.atomic_stream import atomic_writer
from sdpa_analyzer.server.writers.owned import check_replaceable

if TYPE_CHECKING:
    from sdpa_analyzer.server.render.report import FindingRow
    from sdpa_analyzer.server.scoring.ranked import RankedMetrics

MAX_WARNINGS = 10
WRITE_PIECE_CHARS = 4 << 20  # the page is encoded and handed to the writer this much at a time
REPORT_FILE = re.compile(r"[^/\\\x00-\x1f.][^/\\\x00-\x1f]{0,249}\.html", re.IGNORECASE)  # a name, not a path
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
        str | None,
        Field(
            max_length=255,
            description="file name of the page, written under <output_dir>/reports/ (a name ending .html, no "
            "folders); default <output_dir>/report.html. A file there is replaced only if render_report wrote it",
        ),
    ] = None


class ReportResult(ResultModel):
    report_file: str
    categories: list[str] = Field(description="categories in the report (those with an ops CSV)")
    warnings: list[str] = Field(
        default_factory=list,
        description="per category: findings ranked with another GPU, bytes model or roofs than the roofline shown",
    )


def _finding_rows(ranked: RankedMetrics | None) -> list[FindingRow]:
    from sdpa_analyzer.server.render.report import FindingRow

    rows = []
    for f in ranked.findings if ranked is not None else []:
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
                    impact_to_band=float(f["impact_to_band"]) if f.get("impact_to_band") is not None else None,
                    members_within_band=int(f["members_within_band"])
                    if f.get("members_within_band") is not None
                    else None,
                    member_count=int(f["member_count"]) if f.get("member_count") is not None else None,
                    members=[str(x.get("operation")) for x in f.get("members", [])],
                    levers=_lever_texts(f),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError):  # a malformed entry: left out of the report
            continue
    return rows


def _lever_texts(finding: dict[str, Any]) -> list[str]:
    """Every lever of a finding, largest saving first, each with its saving as the template writes it."""
    from sdpa_analyzer.server.findings.levers import lever_id_of, ordered_levers, saving_words
    from sdpa_analyzer.server.findings.quantities import render

    advice = finding.get("advice") if isinstance(finding.get("advice"), dict) else {}
    return [f"{lever_id_of(x)}: {render('ms', x.get('saved_ms'))} ({render('pct_e2e', x.get('saved_pct_e2e'))}), "
            f"{saving_words(x)}" for x in ordered_levers(advice)]  # fmt: skip


def _prose(
    roots: DataRoots, out: Path, cat: str, ranked: RankedMetrics | None
) -> tuple[str | None, str | None, list[str]]:
    """The findings prose (text, path) and notes on it: a file older than the ranking may quote old numbers."""
    path = out / layout.findings_md(cat)
    try:
        st = roots.stat(path, what="findings file")
        if st is None:
            return None, None, []
        from sdpa_analyzer.server.render.markdown import MAX_CHARS

        with roots.open_read(path, what="findings file") as fh:  # the page shows MAX_CHARS: no more is read
            text = fh.read(4 * MAX_CHARS + 4).decode("utf-8", errors="replace")  # (UTF-8: up to 4 bytes a char)
        mtime = st.st_mtime_ns
    except FileNotFoundError:
        return None, None, []
    except InputError as exc:
        return None, None, [shorten_message(f"the findings prose was not read: {exc}", 200)]
    except OSError as exc:
        return None, None, [f"the findings prose {path} could not be read ({exc.strerror})"]
    notes = []
    if ranked is not None and ranked.mtime_ns and mtime < ranked.mtime_ns:
        notes.append(
            "this prose was written before the category was last ranked: its numbers may be out of date "
            "(render_findings_template, fill it again, validate_findings)"
        )
    if "{{" in text and "{{FILL" not in text:
        text, note = _written_out(roots, out, cat, text)
        notes.append(note)
    return text, str(path), notes


def _written_out(roots: DataRoots, out: Path, cat: str, text: str) -> tuple[str, str]:
    """Prose not validated yet, its references written out from the metrics JSON by validate_findings' own resolver
    (server.findings.references.written_out), and the note the page shows above it."""
    from sdpa_analyzer.server.findings.metrics_view import load_metrics
    from sdpa_analyzer.server.findings.references import written_out
    from sdpa_analyzer.server.folder.metrics_file import metrics_document

    mpath = out / layout.metrics_json(cat)
    try:
        with metrics_document(mpath, roots, "decimal", partial(load_metrics, mpath, roots)) as metrics:
            resolved, count, problems = written_out(text, metrics)
    except (InputError, OSError, ValueError) as exc:
        why = shorten_message(str(exc), 160)
        return text, (f"this prose has not passed validate_findings yet, and its references ({{{{P1.…}}}}) could not "
                      f"be written out: the metrics JSON was not read ({why})")
    if problems:
        names = ", ".join(sorted({p.old for p in problems})[:3])
        return resolved, (f"this prose has not passed validate_findings yet: {count} reference(s) written out from the "
                          f"metrics JSON, {len(problems)} not ({names}); run validate_findings on it")
    return resolved, (f"this prose has not passed validate_findings yet: its {count} reference(s) are written out from "
                      "the metrics JSON, as validate_findings would write them (run validate_findings on it)")


def report_target(roots: DataRoots, out: Path, name: str | None) -> Path:
    """Where the page goes: <out>/report.html, or a file name of the caller's under <out>/reports/ (a plain name:
    the tool writes its own files inside the analysis folder, nowhere else)."""
    if name is None:
        return roots.write_target(out / layout.report_html(), what="report file")
    if not REPORT_FILE.fullmatch(name):
        raise InputError(
            f"output={name!r} is invalid: pass a file name ending .html, without folders (it is written under "
            f"{out.name}/{layout.REPORTS}/)"
        )
    return roots.write_target(out / layout.named_report(name), what="report file")


def render_report(ctx: ToolContext, args: ReportInput) -> ReportResult:
    # Imported here: matplotlib costs ~40 MB and ~0.5 s, and only chart-drawing calls need it; the page and the
    # scoring (numpy, pandas) are imported when a tool runs, never to declare it.
    from sdpa_analyzer.server.folder.read import check_analysis_folder
    from sdpa_analyzer.server.render.plots import render_roofline_png
    from sdpa_analyzer.server.render.report import (
        REPORT_GENERATOR,
        CategorySection,
        PeakSource,
        ReportContext,
        report_pieces,
    )
    from sdpa_analyzer.server.scoring.category import scored_categories
    from sdpa_analyzer.server.scoring.chart import chart_ceilings, chart_points, report_op_rows
    from sdpa_analyzer.server.scoring.ranked import NOT_RANKED, ranking_mismatch

    out = resolve_output_dir(ctx.roots, args.output_dir)
    check_analysis_folder(out, ctx.roots)  # an empty folder or one of traces: refused, as load and template do
    target = report_target(ctx.roots, out, args.output)
    check_replaceable(target, ctx.roots, REPORT_GENERATOR.encode(), what="report file", tool="render_report")
    scored = scored_categories(ctx.roots, out, "all", args.arch, args.bytes_model)
    with_rows = [s for s in scored if s.has_rows]
    resolved = with_rows[0].arch if with_rows else None
    sections: list[CategorySection] = []
    peaks: list[PeakSource] = []
    warnings: list[str] = []
    e2e = None
    busy = idle = None
    if resolved is not None:
        ceil = chart_ceilings(resolved, [s.table for s in with_rows if s.table is not None])
        src = _SOURCE_WORDS.get(resolved.source, resolved.source)
        if resolved.source == "trace":
            src = f"GPU in the trace (deviceProperties: {resolved.trace_gpu_name})"
        peaks.append(
            PeakSource(
                gpu_name=resolved.gpu.name,
                compute_spec=ceil.compute_spec,
                peak_tflops=finite(ceil.peak_tflops, BY_NAME["peak_tflops"].digits) or 0.0,
                peak_tbs=finite(ceil.peak_tbs, BY_NAME["peak_tbs"].digits) or 0.0,
                ridge=finite(ceil.peak_tflops / ceil.peak_tbs, BY_NAME["ridge"].digits) if ceil.peak_tbs else None,
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
        ranked, mismatch = ranking_mismatch(ctx.roots, out, s, args.arch, "this report", "render_report")
        if mismatch:
            warnings.append(f"{cat}: {mismatch}")
        plot = render_roofline_png(
            chart_points(cat, table),
            chart_ceilings(s.arch, [table]),
            title=f"{cat} on {table.gpu.name}",
            bytes_model=args.bytes_model,
            warning=mismatch,
        )
        release_free_heap()  # the chart's points and figure (~250 MB at 10^5 ops) go back before the page is written
        total = float(table.records["time_ms"].sum())
        busy, idle = data.time_base()
        prose, prose_file, prose_notes = _prose(ctx.roots, out, cat, ranked)
        sections.append(
            CategorySection(
                category=cat,
                chart_png=plot.png,
                chart_alt=f"Roofline chart of {cat}",
                total_time_ms=rounded(total, "ms"),
                percent_of_e2e=rounded(100.0 * total / e2e, "pct"),
                percent_of_busy=rounded(100.0 * total / busy, "pct") if busy else None,
                notes=list(table.peak_notes),
                consistency_warnings=[mismatch] if mismatch else [],
                ranked_with=ranked.ranked_with() if ranked is not None and not ranked.error else None,
                findings=_finding_rows(ranked),
                no_findings_reason=ranked.no_findings_reason if ranked is not None else NOT_RANKED,
                impact_unit=ranked.impact_unit if ranked is not None else IMPACT_UNIT,
                findings_markdown=prose,
                findings_file=prose_file,
                findings_notes=prose_notes,
                comparative=data.comparison_scope == COMPARATIVE,
                ops=report_op_rows(table, e2e),
            )
        )
    if not sections:
        sections.append(CategorySection(category="sdpa_fwd"))
    report = ReportContext(
        title=f"Attention performance report — {out.name}",
        source=str(out),
        e2e_ms=rounded(e2e, "window_ms"),
        gpu_busy_ms=rounded(busy, "window_ms"),
        gpu_idle_ms=rounded(idle, "window_ms"),
        bytes_model=args.bytes_model,
        peaks=peaks,
        warnings=list(resolved.warnings) if resolved else [],
        sections=sections,
    )
    with atomic_writer(target, roots=ctx.roots) as fh:  # in pieces: a 10^5-op page is ~200 MB of text
        pending: list[str] = []
        size = 0
        for piece in report_pieces(report):
            pending.append(piece)
            size += len(piece)
            if size >= WRITE_PIECE_CHARS:
                fh.write("".join(pending).encode("utf-8"))
                pending, size = [], 0
        fh.write("".join(pending).encode("utf-8"))
    return ReportResult(
        report_file=str(target), categories=[s.data.category for s in scored], warnings=capped(warnings, MAX_WARNINGS)
    )


TOOL = ToolSpec(
    name="render_report",
    title="HTML report of an analysis folder",
    description=(
        "Write one self-contained HTML page (no scripts, nothing fetched) for an analysis folder: the peaks used and "
        "where they came from, and per category the roofline chart, the ranked findings and every op with its "
        "roofline numbers, and the findings prose when it exists. Returns the file's path and warnings when a "
        "category's findings were ranked with another GPU or bytes model than the roofline shown."
    ),
    input_model=ReportInput,
    result_model=ReportResult,
    run=render_report,
    cli=CliSpec("report", positional=("output_dir",), flags={"output": ("-o",)}),
    writes=True,
    # not for the subagent: the HTML page is for people and names nothing the findings need
)
