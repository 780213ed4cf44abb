"""plot_roofline: the roofline chart (PNG) of one category, or of all, written under `<output_dir>/plots/`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, PrivateAttr

from server.errors import InputError
from server.roots import DataRoots
from server.scoring.category import ScoredCategory, score_category
from server.scoring.chart import chart_ceilings, chart_points
from server.scoring.ranked import RankedMetrics, consistency_warning, load_ranked
from server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from server.tools.common import ArchArg, BytesModelArg, OutputDir, resolve_output_dir
from server.tools.roofline import peaks_used
from server.vocab import CATEGORIES, Category
from server.writers.atomic import write_bytes_atomic
from server.writers.owned import check_replaceable

MAX_UNPLOTTED_LISTED = 10


class PlotInput(ToolInput):
    output_dir: OutputDir
    category: Annotated[
        Category | Literal["all"],
        Field(description="the category to draw, or all (every category of the folder on one chart)"),
    ] = "all"
    arch: ArchArg = None
    bytes_model: BytesModelArg = "compulsory"


class PlotResult(BaseModel):
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


def scored_categories(
    roots: DataRoots, out: Path, category: str, arch: str | None, bytes_model: str
) -> list[ScoredCategory]:
    """The folder's categories (all that have an ops CSV, or the one named), each loaded and scored."""
    if not roots.is_dir(out, what="output_dir"):
        raise InputError(f"output_dir not found: {out}")
    cats = (
        [c for c in CATEGORIES if roots.exists(out / "category_data" / f"{c}_ops.csv", what="ops CSV")]
        if category == "all"
        else [category]
    )
    return [score_category(roots, out, c, arch, bytes_model) for c in cats]


def ranking_mismatch(
    roots: DataRoots, out: Path, s: ScoredCategory, arch_arg: str | None, shown_in: str, tool: str
) -> tuple[RankedMetrics | None, str | None]:
    """The category's metrics JSON (None: not ranked yet) and a warning when its findings were ranked with another
    GPU, bytes model or roofs than the roofline `s` shows."""
    ranked = load_ranked(out, s.data.category, roots)
    if ranked is None or s.arch is None or s.table is None:
        return ranked, None
    peaks = peaks_used(s.arch, s.table)
    warning = consistency_warning(
        ranked,
        gpu_key=s.table.gpu.key,
        gpu_name=s.table.gpu.name,
        bytes_model=s.table.bytes_model,
        peak_tflops=peaks.peak_tflops,
        peak_tbs=peaks.peak_tbs,
        shown_in=shown_in,
        tool=tool,
        arch_hint=arch_arg,
    )
    return ranked, warning


def plot_roofline(ctx: ToolContext, args: PlotInput) -> PlotResult:
    # Imported here: matplotlib costs ~40 MB and ~0.5 s, and only chart-drawing calls need it.
    from server.render.plots import PNG_SOFTWARE, render_roofline_png

    out = resolve_output_dir(ctx.roots, args.output_dir)
    target = out / "plots" / f"roofline_{args.category}_{args.bytes_model}.png"
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
)
