"""rank_findings: impact estimates and ranked category findings; writes `<cat>_metrics.json`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec, capped
from sdpa_analyzer.server.tools.common import (
    ArchArg,
    BytesModelArg,
    CategoryArg,
    OutputDir,
    PeaksUsed,
    ScopeArg,
    peaks_used,
    resolve_output_dir,
)
from sdpa_analyzer.server.vocab import COMPARATIVE, IMPACT_UNIT_HELP, SDPA_BWD, SDPA_FWD

MAX_MEMBERS_SHOWN = 20
MAX_FINDINGS_SHOWN = 25  # the template renders every finding; the result lists the first ones
MAX_WARNINGS = 15


class RankInput(ToolInput):
    output_dir: OutputDir
    category: CategoryArg
    comparison_scope: ScopeArg = "standalone"
    arch: ArchArg = None
    bytes_model: BytesModelArg = "compulsory"


class Lever(ResultModel):
    """One change and what it buys the finding's members (from the models; the numbers to write)."""

    change: str
    time_ms: float | None = Field(None, description="the members' kernel time today (the levers' base), ms")
    time_after_ms: float | None = Field(None, description="their time after the change, ms")
    saved_ms: float | None = Field(None, description="ms saved")
    saved_pct_e2e: float | None = Field(None, description="ms saved as % of the E2E baseline")
    members: int | None = Field(None, description="members the lever applies to")
    compared_with: str | None = Field(None, description="what time_ms is, when not today's time")


class BandReference(ResultModel):
    """The published kernels behind the dominant member's expected band (name and source go in a table cell)."""

    operation: str
    band_id: str
    band_metric: str | None = None
    band_low: float | None = None
    band_high: float | None = None
    band_value: float | None = Field(None, description="the member's utilization the band is compared with, %")
    band_status: str | None = None
    kernel: str | None = Field(None, description="the best published kernel for this shape and GPU class")
    kernel_pct: float | None = Field(None, description="its efficiency at this shape, % of the datasheet peak")
    source: str | None = Field(None, description="where that figure is published")
    borrowed_from: str | None = Field(None, description="the GPU the band was measured on, when not this one")
    time_ms: float | None = None
    time_at_reference_ms: float | None = Field(None, description="the member's time at the reference's efficiency")


class FindingSummary(ResultModel):
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
        None, description="what matching the best published kernel for the members' shapes would give back, % of E2E"
    )
    members_within_band: int | None = Field(None, description="members inside their expected band (not bottlenecks)")
    member_count: int
    members: list[str] = Field(
        description=f"distinct member op names (at most {MAX_MEMBERS_SHOWN}; member_count has the total)"
    )
    levers: list[Lever] = Field(
        default_factory=list, description="what each change buys: band edge, roofline, fp8, head dim (kernel advisor)"
    )
    reference: BandReference | None = None
    facts: dict[str, Any] = Field(
        default_factory=dict, description="copies around the calls, KV-cache writes (share of the op, > 10 % rule)"
    )


class RankResult(ResultModel):
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
    in_band: list[str] = Field(
        default_factory=list,
        description="ops within or above their expected band: not findings (their numbers are in the metrics JSON "
        "sdpa_analyzer.in_band)",
    )
    facts: dict[str, Any] = Field(
        default_factory=dict,
        description="category facts: copies, KV-cache writes, attention kernels outside every op, backward vs "
        "forward",
    )
    peaks: PeaksUsed | None = None
    warnings: list[str] = Field(default_factory=list)


def rank_findings(ctx: ToolContext, args: RankInput) -> RankResult:
    # the scoring (numpy, pandas): imported when the tool runs, never to declare it
    from sdpa_analyzer.server.scoring.category import score_category
    from sdpa_analyzer.server.scoring.outputs import roofline_table_written, write_metrics
    from sdpa_analyzer.server.scoring.ranked import metrics_no_findings_reason
    from sdpa_analyzer.server.scoring.ranking import build_metrics

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
    forward = None
    if data.category == SDPA_BWD:  # the backward's facts relate each shape to its forward
        fwd = score_category(ctx.roots, out, SDPA_FWD, args.arch, args.bytes_model)
        forward = fwd.table.records if fwd.has_rows and fwd.table is not None else None
    metrics = build_metrics(data, table, args.comparison_scope, forward)
    peaks = peaks_used(resolved, table)
    warnings = resolved.warnings + data.warnings
    metrics["sdpa_analyzer"]["peaks"] = peaks.model_dump()
    metrics["sdpa_analyzer"]["warnings"] = warnings
    # the roofline CSV first: the metrics JSON declares it (each operation's `roofline` object is its row there);
    # both land, or neither
    with roofline_table_written(data, table, scored.written) as rows:
        metrics["sdpa_analyzer"]["roofline_rows"] = rows.declaration()
        path = write_metrics(data, metrics)
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
                levers=[Lever(**x) for x in f.get("advice", {}).get("levers", [])],
                reference=BandReference(**f["advice"]["reference"]) if "reference" in f.get("advice", {}) else None,
                facts=f.get("facts", {}),
            )
            for f in metrics["category_findings"][:MAX_FINDINGS_SHOWN]
        ],
        findings_total=len(metrics["category_findings"]),
        in_band=[f"{x['operation']} ({x['shape']}): {x['band_value']} % vs band {x['band_low']}–{x['band_high']} %"
                 for x in metrics["sdpa_analyzer"]["in_band"][:MAX_FINDINGS_SHOWN]],
        facts=_compact_facts(metrics["sdpa_analyzer"]["facts"]),
        no_findings_reason=metrics_no_findings_reason(metrics),
        peaks=peaks,
        warnings=capped(warnings, MAX_WARNINGS),
    )


def _compact_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """The category facts for the result: the long lists cut (all of them are in the metrics JSON)."""
    out = dict(facts)
    if "backward_vs_forward" in out:
        out["backward_vs_forward"] = out["backward_vs_forward"][:MAX_MEMBERS_SHOWN]
    return out


TOOL = ToolSpec(
    name="rank_findings",
    title="Rank findings and write the metrics JSON",
    description=(
        "Impact estimates (impact_score in % of the E2E baseline), grouped into ranked category_findings "
        "(the P-items, in order; ops within or above their expected band are not findings, listed in in_band); "
        "per finding what each change buys (levers: ms and % of E2E saved by matching the best published kernel "
        "for the shape, at the roofline, with fp8, with head dim 128), the published kernels behind the band and "
        "their source, and facts (layout copies, KV-cache writes); category facts (attention kernels outside "
        "every op, backward vs forward). Writes category_data/<category>_metrics.json atomically."
    ),
    input_model=RankInput,
    result_model=RankResult,
    run=rank_findings,
    cli=CliSpec("rank", positional=("output_dir", "category"), flags={"comparison_scope": ("--scope",)}),
    writes=True,
    agent="step 3: impact estimates and the ranked findings; writes the metrics JSON",
)
