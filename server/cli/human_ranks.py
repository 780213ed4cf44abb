"""Terminal renderings of analyze_ranks and load_rank_summary (kept apart from human.py, which other tools edit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdpa_analyzer.server.cli.human import fmt, plural, short_op, table
from sdpa_analyzer.server.vocab import STRAGGLER_RATIO

SAME_TIME = 0.005  # a category straggler whose one straggling shape takes its whole time (within 0.5 %) is one line


def _what(s: Any) -> str:
    return f"{short_op(s.operation or '')} {s.shape or ''}".strip()


def _nested(items: list[Any]) -> list[tuple[str, Any, str]]:
    """(position, straggler, what) rows: each category straggler followed by its rank's straggling shapes of that
    category, indented; a category whose only straggling shape is the whole of its time is one row."""
    shapes: dict[tuple[int, str], list[Any]] = {}
    for s in items:
        if s.kind == "shape":
            shapes.setdefault((s.rank, s.category), []).append(s)
    categories = {(s.rank, s.category) for s in items if s.kind == "category"}
    rows: list[tuple[str, Any, str]] = []
    for s in items:
        key = (s.rank, s.category)
        if s.kind == "shape":
            if key not in categories:  # its category is not a straggler (or not on this page): a row of its own
                rows.append((str(s.position), s, _what(s)))
            continue
        inner = shapes.get(key, [])
        if len(inner) == 1 and abs(inner[0].time_ms - s.time_ms) <= SAME_TIME * max(s.time_ms, 1e-9):
            rows.append((f"{s.position}+{inner[0].position}", s, f"whole category = its one shape: {_what(inner[0])}"))
            continue
        rows.append((str(s.position), s, "(whole category)"))
        rows += [(str(x.position), x, f"  └ {_what(x)}") for x in inner]
    return rows


def _stragglers(items: list[Any]) -> str:
    rows = [
        [
            position,
            s.rank,
            s.category,
            what,
            s.time_ms,
            s.median_ms,
            f"{fmt(s.ratio)}x",
            s.excess_ms,
            s.percent_of_rank_e2e,
        ]
        for position, s, what in _nested(items)
    ]
    return table(["#", "rank", "category", "what", "time ms", "median ms", "ratio", "excess ms", "%E2E"], rows, 100)


def _counted(items: list[Any]) -> str:
    """`1 rank category, 1 shape`: what the straggler findings listed are."""
    cats = sum(1 for s in items if s.kind == "category")
    return f"{plural(cats, 'rank category', 'rank categories')}, {plural(len(items) - cats, 'shape')}"


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


def _failures_and_spreads(r: Any) -> list[str]:
    """The failed ranks, a line each, and the per-category spread table: the same in both results."""
    lines = [f"rank {fmt(e.rank)} failed: {e.error}" for e in r.errors]
    if r.categories:
        lines.append(_spreads(r.categories))
    return lines


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
    lines += _failures_and_spreads(r)
    if r.stragglers:
        lines.append(f"stragglers over {STRAGGLER_RATIO:g}x the median ({len(r.stragglers)} of "
                     f"{r.stragglers_total}): {_counted(r.stragglers)}")
        lines.append(_stragglers(r.stragglers))
    elif r.ranks_ok:
        lines.append(f"no stragglers: every rank within {STRAGGLER_RATIO:g}x the median")
    lines.append(f"summary: {r.summary_file}")
    return "\n".join(lines + [f"warning: {w}" for w in r.warnings])


def human_rank_summary(r: Any) -> str:
    lines = [
        f"{r.summary_file}: {r.traces} traces, {r.ranks_ok} ok, {r.ranks_failed} failed, world size "
        f"{fmt(r.world_size)}" + (f"; this folder is rank {r.folder_rank}" if r.folder_rank is not None else "")
    ]
    if r.missing_ranks:
        lines.append(f"missing ranks: {', '.join(map(str, r.missing_ranks))}")
    lines += _failures_and_spreads(r)
    if r.findings:
        lines.append(f"findings {r.offset + 1}-{r.offset + len(r.findings)} of {r.findings_total}: "
                     f"{_counted(r.findings)}")
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
