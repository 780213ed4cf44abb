"""plot_roofline: the roofline chart (PNG) of one category, or of all, written under `<output_dir>/plots/`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PrivateAttr

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import ArchArg, BytesModelArg, OutputDir, resolve_output_dir
from sdpa_analyzer.server.vocab import Category
from sdpa_analyzer.server.writers.atomic import write_bytes_atomic
from sdpa_analyzer.server.writers.owned import check_replaceable

MAX_UNPLOTTED_LISTED = 10


class PlotInput(ToolInput):
    output_dir: OutputDir
    category: Annotated[
        Category | Literal["all"],
        Field(description="the category to draw, or all (every category of the folder on one chart)"),
    ] = "all"
    arch: ArchArg = None
    bytes_model: BytesModelArg = "compulsory"


class PlotResult(ResultModel):
    categories: list[str]
    files: list[str] = Field(description="PNG files written under <output_dir>/plots/")
    gpu: str
    peak_tflops: float
    peak_tbs: float
    compute_spec: str
    bytes_model: str
    plotted: int
    unplotted_count: int = Field(0, description="op rows without a model or a measurement: not plotted")
    unplotted: list[str] = Field(default_factory=list, description=f"the first {MAX_UNPLOTTED_LISTED} of them, why")
    width_px: int
    height_px: int
    warnings: list[str] = Field(
        default_factory=list,
        description="the categories' findings were ranked with another GPU, bytes model or roofs than this chart",
    )
    _png: bytes = PrivateAttr(default=b"")

    @property
    def png(self) -> bytes:
        return self._png


def plot_roofline(ctx: ToolContext, args: PlotInput) -> PlotResult:
    # Imported here: matplotlib costs ~40 MB and ~0.5 s, and only chart-drawing calls need it; the scoring (numpy,
    # pandas) is imported when a tool runs, never to declare it.
    from sdpa_analyzer.server.render.plots import PNG_SOFTWARE, render_roofline_png
    from sdpa_analyzer.server.scoring.category import scored_categories
    from sdpa_analyzer.server.scoring.chart import chart_ceilings, chart_points
    from sdpa_analyzer.server.scoring.ranked import ranking_mismatch

    out = resolve_output_dir(ctx.roots, args.output_dir)
    target = out / layout.plot_png(args.category, args.bytes_model)
    check_replaceable(target, ctx.roots, PNG_SOFTWARE.encode(), what="chart file", tool="plot_roofline")
    scored = scored_categories(ctx.roots, out, args.category, args.arch, args.bytes_model)
    with_rows = [s for s in scored if s.has_rows]
    cats = [s.data.category for s in scored]
    if not with_rows:
        raise InputError(f"{out}: no attention ops to plot in {', '.join(cats) or 'any category'} (NO_DATA)")
    resolved = with_rows[0].arch
    assert resolved is not None
    tables = [s.table for s in with_rows if s.table is not None]
    points = [p for s in with_rows for p in chart_points(s.data.category, s.table)]  # type: ignore[arg-type]
    ceilings = chart_ceilings(resolved, tables)
    label = args.category if args.category != "all" else "+".join(s.data.category for s in with_rows)
    warnings = []
    for s in with_rows:
        _, w = ranking_mismatch(ctx.roots, out, s, args.arch, "this chart", "plot_roofline")
        if w:
            warnings.append(f"{s.data.category}: {w}")
    chart_warning = None
    if warnings:
        chart_warning = warnings[0] + (
            f" (+{len(warnings) - 1} more: see the tool result)" if len(warnings) > 1 else ""
        )
    plot = render_roofline_png(
        points,
        ceilings,
        title=f"{label} on {resolved.gpu.name} ({args.bytes_model} bytes)",
        bytes_model=args.bytes_model,
        warning=chart_warning,
    )
    path = write_bytes_atomic(target, plot.png, roots=ctx.roots)
    result = PlotResult(
        categories=cats,
        files=[str(path)],
        gpu=resolved.gpu.name,
        peak_tflops=ceilings.peak_tflops,
        peak_tbs=ceilings.peak_tbs,
        compute_spec=ceilings.compute_spec,
        bytes_model=args.bytes_model,
        plotted=len(plot.points),
        unplotted_count=len(plot.unplotted),
        unplotted=[f"{u.name} ({u.label}): {u.reason}" for u in plot.unplotted[:MAX_UNPLOTTED_LISTED]],
        width_px=plot.width_px,
        height_px=plot.height_px,
        warnings=warnings,
    )
    result._png = plot.png
    return result


TOOL = ToolSpec(
    name="plot_roofline",
    title="Roofline chart (PNG)",
    description=(
        "Roofline chart of a category's ops (one marker per op row, area proportional to its time share; forward "
        "and backward distinct; compute and bandwidth roofs and the ridge point), returned as an image and "
        "written under <output_dir>/plots/."
    ),
    input_model=PlotInput,
    result_model=PlotResult,
    run=plot_roofline,
    cli=CliSpec("plot", positional=("output_dir", "category")),
    writes=True,
    image=True,
    agent="optional roofline chart; name the PNG path in your reply if you make one",
)
