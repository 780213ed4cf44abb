"""The small results of analyze_ranks and load_rank_summary, built from the summary JSON object.

An LLM reads these: totals, the spread per category, the top stragglers and the first errors, each list
capped (the `*_total` fields say how many there are); everything else is in the summary files they name.
"""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_LISTED = 20


class _Deferred(BaseModel):
    # the validators are built on first use, not at import: the CLI's parser and `--help` import these declarations
    model_config = ConfigDict(defer_build=True)


class Straggler(_Deferred):
    """A rank whose attention time (a whole category, or one shape) is over 1.1 × the median of the ranks."""

    position: int = Field(description="1-based order by percent_of_rank_e2e (then excess_ms)")
    kind: Literal["category", "shape"] = Field(description="category: the rank's whole category; shape: one shape")
    category: str
    operation: str | None = Field(None, description="op name (kind shape)")
    args: str | None = Field(None, description="tensor inputs, as the metrics JSON `operations[].args` (kind shape)")
    shape: str | None = None
    rank: int = Field(description="the straggler rank")
    time_ms: float = Field(description="the rank's kernel time")
    median_ms: float = Field(description="median kernel time over the ranks that run it")
    ratio: float = Field(description="time_ms / median_ms")
    excess_ms: float = Field(description="time_ms - median_ms: what the step would save at the median")
    percent_of_rank_e2e: float | None = Field(None, description="excess_ms as % of the straggler rank's E2E time")
    calls: int
    median_calls: float | None = None
    efficiency_pct: float | None = Field(None, description="the rank's time-weighted roofline efficiency")
    median_efficiency_pct: float | None = None
    ranks_compared: int
    rank_folder: str = Field(description="the straggler's analysis folder (relative to output_dir)")


class CategorySpread(_Deferred):
    category: str
    ranks: int = Field(description="ranks that run this category")
    kernel_time_ms_min: float | None = None
    kernel_time_ms_median: float | None = None
    kernel_time_ms_max: float | None = None
    slowest_rank: int
    straggler_ranks: list[int] = Field(default_factory=list, description=f"at most {MAX_LISTED}")
    on_all_ranks: bool = True


class RankError(_Deferred):
    rank: int | None = None
    trace_path: str
    error: str


class RanksResult(_Deferred):
    status: Literal["OK", "PARTIAL", "ERROR"] = Field(
        description="OK: every trace analyzed; PARTIAL: some ranks failed (see errors); ERROR: none analyzed"
    )
    output_dir: str
    summary_file: str = Field(description="ranks_summary.json: every rank, category, shape and straggler")
    files: list[str] = Field(default_factory=list)
    engine: str
    workers: int | None = Field(None, description="processes (pool) or Dask workers that ran the ranks")
    dask_address: str | None = None
    world_size: int | None = None
    world_size_source: str = "unknown"
    traces: int = 0
    ranks_ok: int = 0
    ranks_no_data: int = 0
    ranks_failed: int = 0
    missing_ranks: list[int] = Field(default_factory=list, description=f"at most {MAX_LISTED * 5}")
    missing_total: int = 0
    duplicate_ranks: list[int] = Field(default_factory=list)
    errors: list[RankError] = Field(default_factory=list, description=f"at most {MAX_LISTED}")
    categories: list[CategorySpread] = Field(default_factory=list)
    stragglers: list[Straggler] = Field(default_factory=list, description="the top stragglers")
    stragglers_total: int = 0
    shapes_total: int = 0
    partial_shapes: int = Field(0, description="shapes that only some ranks run")
    rank_seconds_median: float | None = Field(None, description="median time to analyze one rank")
    rank_seconds_max: float | None = None
    peak_rss_mb_max: float | None = Field(None, description="largest worker peak resident memory")
    seconds: float = 0.0
    warnings: list[str] = Field(default_factory=list)


def spreads(summary: dict[str, Any], category: str | None = None) -> list[CategorySpread]:
    out = []
    for c in summary.get("categories", []):
        if category is not None and c["category"] != category:
            continue
        t = c.get("kernel_time_ms", {})
        out.append(
            CategorySpread(
                category=c["category"], ranks=c["ranks"], kernel_time_ms_min=t.get("min"),
                kernel_time_ms_median=t.get("median"), kernel_time_ms_max=t.get("max"), slowest_rank=c["slowest_rank"],
                straggler_ranks=c.get("straggler_ranks", [])[:MAX_LISTED], on_all_ranks=c.get("on_all_ranks", True),
            )
        )  # fmt: skip
    return out


def stragglers(summary: dict[str, Any], category: str | None = None) -> list[dict[str, Any]]:
    return [s for s in summary.get("stragglers", []) if category is None or s["category"] == category]


def ranks_result(
    summary: dict[str, Any], output_dir: str, files: list[str], limit: int = 10, seconds: float = 0.0
) -> RanksResult:
    ok, failed = summary.get("ranks_ok", 0), summary.get("ranks_failed", 0)
    analyzed = ok + summary.get("ranks_no_data", 0)
    ranks = [r for r in summary.get("ranks", []) if r.get("status") != "ERROR"]
    secs = sorted(r["seconds"] for r in ranks if r.get("seconds"))
    rss = [r["peak_rss_mb"] for r in ranks if r.get("peak_rss_mb")]
    found = stragglers(summary)
    missing = summary.get("missing_ranks", [])
    return RanksResult(
        status="ERROR" if analyzed == 0 else ("PARTIAL" if failed else "OK"),
        output_dir=output_dir, summary_file=files[-1] if files else "", files=files,
        engine=summary.get("engine", "pool"), workers=summary.get("workers"),
        dask_address=summary.get("dask_address"), world_size=summary.get("world_size"),
        world_size_source=summary.get("world_size_source", "unknown"), traces=summary.get("traces", 0),
        ranks_ok=ok, ranks_no_data=summary.get("ranks_no_data", 0), ranks_failed=failed,
        missing_ranks=missing[: MAX_LISTED * 5], missing_total=len(missing),
        duplicate_ranks=[d["rank"] for d in summary.get("duplicate_ranks", [])][:MAX_LISTED],
        errors=[RankError(**e) for e in summary.get("errors", [])[:MAX_LISTED]],
        categories=spreads(summary), stragglers=[Straggler(**s) for s in found[:limit]],
        stragglers_total=len(found), shapes_total=len(summary.get("shapes", [])),
        partial_shapes=sum(not s.get("on_all_ranks", True) for s in summary.get("shapes", [])),
        rank_seconds_median=round(statistics.median(secs), 3) if secs else None,
        rank_seconds_max=round(secs[-1], 3) if secs else None, peak_rss_mb_max=max(rss) if rss else None,
        seconds=round(seconds, 3), warnings=list(summary.get("warnings", []))[:MAX_LISTED],
    )  # fmt: skip
