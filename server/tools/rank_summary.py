"""load_rank_summary: the cross-rank findings of an analyze_ranks folder (stragglers with their numbers)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from sdpa_analyzer.server.ranks.result import MAX_LISTED, CategorySpread, RankError, Straggler, spreads, stragglers
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import OutputDir, resolve_output_dir
from sdpa_analyzer.server.vocab import CATEGORY_HELP, STRAGGLER_RATIO, Category

PARTIAL_LISTED = 5


class RankSummaryInput(ToolInput):
    output_dir: OutputDir
    category: Annotated[Category | None, Field(description=CATEGORY_HELP + "; default: every category")] = None
    limit: Annotated[int, Field(ge=0, le=100, description="findings to return, largest share of E2E first")] = 10
    offset: Annotated[int, Field(ge=0, description="findings to skip before the page (paging)")] = 0


class PartialShape(ResultModel):
    """An attention shape that only some ranks run (uneven packing or sharding)."""

    category: str
    operation: str
    args: str
    shape: str
    ranks: int = Field(description="ranks that run it")
    time_ms_max: float | None = None
    present_ranks: list[int] | None = Field(None, description=f"where it runs (at most {MAX_LISTED})")
    absent_ranks: list[int] | None = Field(None, description=f"where it does not (at most {MAX_LISTED})")


class RankSummaryResult(ResultModel):
    summary_file: str
    output_dir: str
    folder_rank: int | None = Field(None, description="the rank of output_dir when it is one of the rank folders")
    world_size: int | None = None
    traces: int = 0
    ranks_ok: int = 0
    ranks_failed: int = 0
    missing_ranks: list[int] = Field(default_factory=list, description=f"at most {MAX_LISTED * 5}")
    errors: list[RankError] = Field(default_factory=list, description=f"at most {MAX_LISTED}")
    categories: list[CategorySpread] = Field(default_factory=list)
    findings: list[Straggler] = Field(
        default_factory=list,
        description="cross-rank stragglers, largest share of the straggler's E2E first (paged by limit/offset)",
    )
    findings_total: int = 0
    offset: int = 0
    limit: int = 0
    partial_shapes: list[PartialShape] = Field(default_factory=list, description="the longest ones")
    partial_shapes_total: int = 0


def _partial(shapes: list[dict[str, Any]], category: str | None) -> list[dict[str, Any]]:
    return [s for s in shapes if not s.get("on_all_ranks", True) and category in (None, s["category"])]


def load_rank_summary(ctx: ToolContext, args: RankSummaryInput) -> RankSummaryResult:
    from sdpa_analyzer.server.ranks.read import (
        load_summary,  # the summary's reader (pandas): imported when the tool runs
    )

    folder = resolve_output_dir(ctx.roots, args.output_dir)
    path, summary = load_summary(folder, ctx.roots)
    folder_rank = next(
        (r["rank"] for r in summary.get("ranks", []) if r.get("folder") and path.parent / r["folder"] == folder),
        None,
    )
    found = stragglers(summary, args.category)
    partial = _partial(summary.get("shapes", []), args.category)
    return RankSummaryResult(
        summary_file=str(path),
        output_dir=str(path.parent),
        folder_rank=folder_rank,
        world_size=summary.get("world_size"),
        traces=summary.get("traces", 0),
        ranks_ok=summary.get("ranks_ok", 0),
        ranks_failed=summary.get("ranks_failed", 0),
        missing_ranks=summary.get("missing_ranks", [])[: MAX_LISTED * 5],
        errors=[RankError(**e) for e in summary.get("errors", [])[:MAX_LISTED]],
        categories=spreads(summary, args.category),
        findings=[Straggler(**s) for s in found[args.offset : args.offset + args.limit]],
        findings_total=len(found),
        offset=args.offset,
        limit=args.limit,
        partial_shapes=[
            PartialShape(
                category=s["category"],
                operation=s["operation"],
                args=s["args"],
                shape=s["shape"],
                ranks=s["ranks"],
                time_ms_max=s["time_ms"].get("max"),
                present_ranks=s["present_ranks"][:MAX_LISTED] if s.get("present_ranks") is not None else None,
                absent_ranks=s["absent_ranks"][:MAX_LISTED] if s.get("absent_ranks") is not None else None,
            )
            for s in partial[:PARTIAL_LISTED]
        ],
        partial_shapes_total=len(partial),
    )


TOOL = ToolSpec(
    name="load_rank_summary",
    title="Cross-rank findings of a distributed job",
    description=(
        "Read ranks_summary.json of an analyze_ranks folder (or of the folder above a rank folder): per category "
        "the kernel time across ranks (min/median/max, slowest rank), and the findings: ranks whose attention time "
        f"for a category or a shape is over {STRAGGLER_RATIO:g} × the median, with time, median, ratio, excess ms, "
        "that excess as "
        "% of the rank's E2E, calls and efficiency against the median rank, and the rank's folder. Read-only."
    ),
    input_model=RankSummaryInput,
    result_model=RankSummaryResult,
    run=load_rank_summary,
    cli=CliSpec("rank-summary", positional=("output_dir", "category")),
    agent="only when `output_dir` is one rank of a distributed job (`rank_<r>/`): the cross-rank stragglers",
)
