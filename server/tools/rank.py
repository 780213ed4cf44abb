"""rank_findings: impact estimates and ranked category findings; writes `<cat>_metrics.json`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from server.errors import InputError
from server.scoring.category import score_category
from server.scoring.outputs import write_metrics, write_roofline_table
from server.scoring.ranked import metrics_no_findings_reason
from server.scoring.ranking import build_metrics
from server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec, capped
from server.tools.common import (
    ArchArg,
    BytesModelArg,
    CategoryArg,
    OutputDir,
    PeaksUsed,
    ScopeArg,
    peaks_used,
    resolve_output_dir,
)
from server.vocab import COMPARATIVE, IMPACT_UNIT_HELP

MAX_MEMBERS_SHOWN = 20
MAX_FINDINGS_SHOWN = 25  # the template renders every finding; the result lists the first ones
MAX_WARNINGS = 15


class RankInput(ToolInput):
    output_dir: OutputDir
    category: CategoryArg
    comparison_scope: ScopeArg = "standalone"
    arch: ArchArg = None
    bytes_model: BytesModelArg = "compulsory"


class FindingSummary(BaseModel):
    rank: int
    bound_type: str | None
    library: str
    eff_bucket: str
    estimate_method: str
    impact_score: float = Field(description=IMPACT_UNIT_HELP)
    impact_score_low: float
    impact_score_high: float
    percent_of_total: float | None = None
    impact_to_band: float | None = Field(
        None, description="what reaching the upper edge of the members' expected bands would give back, % of E2E"
    )
    members_within_band: int | None = Field(None, description="members inside their expected band (not bottlenecks)")
    member_count: int
    members: list[str] = Field(
        description=f"distinct member op names (at most {MAX_MEMBERS_SHOWN}; member_count has the total)"
    )


class RankResult(BaseModel):
    category: str
    status: Literal["OK", "NO_DATA"]
    comparison_scope: str
    metrics_file: str | None = None
    total_time_ms: float | None = None
    percent_of_compute: float | None = None
    operation_count: int | None = None
    findings_total: int = Field(0, description="category_findings in the metrics JSON (one P-item each)")
    findings: list[FindingSummary] = Field(
        default_factory=list, description=f"the findings in rank order (the first {MAX_FINDINGS_SHOWN})"
    )
    impact_estimates: int = 0
    no_findings_reason: str | None = Field(
        None, description="why there are no findings (None when there are): the threshold, or trace 2 not faster"
    )
    peaks: PeaksUsed | None = None
    warnings: list[str] = Field(default_factory=list)


def rank_findings(ctx: ToolContext, args: RankInput) -> RankResult:
    out = resolve_output_dir(ctx.roots, args.output_dir)
    scored = score_category(ctx.roots, out, args.category, args.arch, args.bytes_model)
    if not scored.has_rows:
        return RankResult(
            category=args.category,
            status="NO_DATA",
            comparison_scope=args.comparison_scope,
            no_findings_reason="no attention ops of this category",
            warnings=["no attention ops of this category; write 'No SDPA operations found in trace'"],
        )
    data, table, resolved = scored.data, scored.table, scored.arch
    assert table is not None and resolved is not None
    if args.comparison_scope == COMPARATIVE and data.comparison_scope != COMPARATIVE:
        raise InputError(
            f"comparison_scope=comparative needs trace-2 times, and {out.name} was analyzed from one trace (no "
            "speedup/delta columns) — rank it standalone, or analyze the two traces with --compare (trace2_path)"
        )
    metrics = build_metrics(data, table, args.comparison_scope)
    peaks = peaks_used(resolved, table)
    warnings = resolved.warnings + data.warnings
    metrics["sdpa_analyzer"]["peaks"] = peaks.model_dump()
    metrics["sdpa_analyzer"]["warnings"] = warnings
    path = write_metrics(data, metrics)
    write_roofline_table(data, table, scored.written)
    return RankResult(
        category=args.category,
        status="OK",
        comparison_scope=args.comparison_scope,
        metrics_file=str(path),
        total_time_ms=metrics["total_time_ms"],
        percent_of_compute=metrics["percent_of_compute"],
        operation_count=metrics["operation_count"],
        impact_estimates=len(metrics["impact_estimates"]),
        findings=[
            FindingSummary(
                rank=f["rank"],
                bound_type=f["bound_type"],
                library=f["library"],
                eff_bucket=f["eff_bucket"],
                estimate_method=f["estimate_method"],
                impact_score=f["impact_score"],
                impact_score_low=f["impact_score_low"],
                impact_score_high=f["impact_score_high"],
                percent_of_total=f.get("percent_of_total"),
                impact_to_band=f.get("impact_to_band"),
                members_within_band=f.get("members_within_band"),
                member_count=f["member_count"],
                # distinct member op names, capped: a group can hold thousands of rows (all in the metrics file)
                members=list(dict.fromkeys(m["operation"] for m in f["members"]))[:MAX_MEMBERS_SHOWN],
            )
            for f in metrics["category_findings"][:MAX_FINDINGS_SHOWN]
        ],
        findings_total=len(metrics["category_findings"]),
        no_findings_reason=metrics_no_findings_reason(metrics),
        peaks=peaks,
        warnings=capped(warnings, MAX_WARNINGS),
    )


TOOL = ToolSpec(
    name="rank_findings",
    title="Rank findings and write the metrics JSON",
    description=(
        "Impact estimates (impact_score in % of the E2E baseline), grouped into ranked category_findings "
        "(the P-items, in order); writes category_data/<category>_metrics.json atomically. Run compute_roofline "
        "first to see the per-op numbers."
    ),
    input_model=RankInput,
    result_model=RankResult,
    run=rank_findings,
    cli=CliSpec("rank", positional=("output_dir", "category"), flags={"comparison_scope": ("--scope",)}),
    writes=True,
)
