"""Terminal renderings of analyze_ranks and load_rank_summary (kept apart from human.py, which other tools edit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.cli.human import fmt, short_op, table


def _stragglers(items: list[Any]) -> str:
    rows = [
        [
            s.position,
            s.rank,
            s.category,
            "(whole category)" if s.kind == "category" else f"{short_op(s.operation or '')} {s.shape or ''}",
            s.time_ms,
            s.median_ms,
            f"{s.ratio:.2f}x",
            s.excess_ms,
            s.percent_of_rank_e2e,
        ]
        for s in items
    ]
    return table(["#", "rank", "category", "what", "time ms", "median ms", "ratio", "excess ms", "%E2E"], rows, 60)


def _spreads(categories: list[Any]) -> str:
    rows = [
        [
            c.category,
            c.ranks,
            c.kernel_time_ms_min,
            c.kernel_time_ms_median,
            c.kernel_time_ms_max,
            c.slowest_rank,
            ",".join(map(str, c.straggler_ranks)) or "—",
        ]
        for c in categories
    ]
    return table(["category", "ranks", "min ms", "median ms", "max ms", "slowest", "stragglers"], rows)


def human_analyze_ranks(r: Any) -> str:
    workers = f"{r.workers} worker{'s' if r.workers != 1 else ''}" if r.workers else "no workers"
    lines = [
        f"{r.status}: {r.traces} traces -> {r.output_dir} ({r.engine}, {workers}, {fmt(r.seconds)} s); "
        f"{r.ranks_ok} ok, {r.ranks_no_data} without attention, {r.ranks_failed} failed; world size "
        f"{fmt(r.world_size)} ({r.world_size_source})"
    ]
    if r.missing_total:
        lines.append(f"missing ranks ({r.missing_total}): {', '.join(map(str, r.missing_ranks))}")
    if r.duplicate_ranks:
        lines.append(f"duplicated ranks: {', '.join(map(str, r.duplicate_ranks))}")
    lines += [f"rank {fmt(e.rank)} failed: {e.error}" for e in r.errors]
    if r.categories:
        lines.append(_spreads(r.categories))
    if r.stragglers:
        lines.append(f"stragglers (over 1.1x the median; {len(r.stragglers)} of {r.stragglers_total}):")
        lines.append(_stragglers(r.stragglers))
    elif r.ranks_ok:
        lines.append("no stragglers: every rank within 1.1x the median")
    lines.append(f"summary: {r.summary_file}")
    return "\n".join(lines + [f"warning: {w}" for w in r.warnings])


def human_rank_summary(r: Any) -> str:
    lines = [
        f"{r.summary_file}: {r.traces} traces, {r.ranks_ok} ok, {r.ranks_failed} failed, world size "
        f"{fmt(r.world_size)}" + (f"; this folder is rank {r.folder_rank}" if r.folder_rank is not None else "")
    ]
    if r.missing_ranks:
        lines.append(f"missing ranks: {', '.join(map(str, r.missing_ranks))}")
    lines += [f"rank {fmt(e.rank)} failed: {e.error}" for e in r.errors]
    if r.categories:
        lines.append(_spreads(r.categories))
    if r.findings:
        lines.append(f"findings {r.offset + 1}-{r.offset + len(r.findings)} of {r.findings_total}:")
        lines.append(_stragglers(r.findings))
    else:
        lines.append(f"no straggler findings (of {r.findings_total})")
    if r.partial_shapes_total:
        lines.append(f"shapes on some ranks only: {r.partial_shapes_total}")
        rows = [
            [short_op(s.operation), s.shape, s.ranks, s.time_ms_max, ",".join(map(str, s.present_ranks or [])) or "—"]
            for s in r.partial_shapes
        ]
        lines.append(table(["op", "shape", "ranks", "max ms", "present on"], rows))
    return "\n".join(lines)


RANK_RENDERERS: dict[str, Callable[[Any], str]] = {
    "analyze_ranks": human_analyze_ranks,
    "load_rank_summary": human_rank_summary,
}
