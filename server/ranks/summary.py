"""The cross-rank summary, reduced from the ranks' small outcomes (never from their op rows).

Per rank and category: calls, kernel time, % of that rank's E2E, time-weighted efficiency. Per category and
per attention shape (op name + tensor arguments, as the metrics JSON writes `args`): time per rank (min /
median / max), the slowest rank, and the stragglers, ranks whose time is over STRAGGLER_RATIO × the median of
the ranks that run it; shapes that only some ranks run are listed as such. Every straggler becomes a finding
with its numbers: its time, the median, the ratio, the excess over the median, and that excess as a share of
the straggler's own E2E (the step waits for the slowest rank, so that is what bringing it to the median
would save), ranked by that share.

Files (atomic): `ranks_summary.json` (all of the above), `ranks_summary.csv` (one line per rank and category;
failed ranks with their error), `ranks_shapes.csv` (one line per shape and rank).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.numbers import finite
from sdpa_analyzer.server.ranks.discover import RankPlan
from sdpa_analyzer.server.ranks.task import RankOutcome
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.vocab import STRAGGLER_RATIO
from sdpa_analyzer.server.writers.atomic import write_json_atomic, write_text_atomic

SUMMARY_JSON = layout.RANKS_SUMMARY
SUMMARY_CSV = "ranks_summary.csv"
SHAPES_CSV = "ranks_shapes.csv"
SCHEMA = "sdpa-analyzer/ranks-summary/1"

_KEY = ["category", "operation", "args"]
_SPREAD_COLUMNS = ["folder", "median_ms", "median_calls", "median_eff", "ratio"]  # working columns, not output


def _rel(path: str | os.PathLike[str], out_dir: Path) -> str:
    try:
        return os.path.relpath(path, out_dir)
    except ValueError:  # another drive (Windows)
        return str(path)


def rank_entries(plan: RankPlan, outcomes: list[RankOutcome], out_dir: Path) -> list[dict[str, Any]]:
    """One entry per input trace: its rank, folder and status, or its one-line error."""
    planned = {str(t.path): t for t in plan.traces}
    entries = []
    for o in outcomes:
        t = planned.get(o.trace_path)
        entries.append(
            {
                "rank": o.rank, "trace_path": _rel(o.trace_path, out_dir),
                "folder": _rel(o.folder, out_dir) if o.status != "ERROR" else None, "status": o.status,
                "error": o.error, "rank_source": t.rank_source if t else None,
                "world_size": t.world_size if t else None, "e2e_ms": o.e2e_ms, "events": o.events, "gpu": o.gpu,
                "seconds": round(o.seconds, 3), "cpu_seconds": round(o.cpu_seconds, 3), "peak_rss_mb": o.peak_rss_mb,
                "warnings": o.warnings,
            }
        )  # fmt: skip
    for t in plan.traces:
        if t.error is not None:
            entries.append(
                {
                    "rank": t.rank, "trace_path": _rel(t.path, out_dir), "folder": None, "status": "ERROR",
                    "error": t.error, "rank_source": t.rank_source, "world_size": t.world_size, "e2e_ms": None,
                    "events": 0, "gpu": None, "seconds": 0.0, "cpu_seconds": 0.0, "peak_rss_mb": None, "warnings": [],
                }
            )  # fmt: skip
    entries.sort(key=lambda e: (e["rank"] is None, e["rank"] if e["rank"] is not None else 0, e["trace_path"]))
    return entries


def _outcome_frame(
    outcomes: list[RankOutcome], parts: Callable[[RankOutcome], Sequence[BaseModel]], columns: list[str]
) -> pd.DataFrame:
    """One line per part (`parts`: a category, a shape) of every analyzed rank, beside the rank, its E2E and folder."""
    rows = [
        {"rank": o.rank, "e2e_ms": o.e2e_ms, "folder": o.folder, **part.model_dump()}
        for o in outcomes
        if o.status == "OK"
        for part in parts(o)
    ]
    return pd.DataFrame(rows, columns=["rank", "e2e_ms", "folder", *columns])


def _category_frame(outcomes: list[RankOutcome]) -> pd.DataFrame:
    columns = ["category", "rows", "calls", "kernel_time_ms", "percent_of_e2e", "weighted_efficiency_pct",
               "efficiency_left_out_ms"]
    return _outcome_frame(outcomes, lambda o: o.categories, columns)


def _shape_frame(outcomes: list[RankOutcome]) -> pd.DataFrame:
    return _outcome_frame(outcomes, lambda o: o.shapes, [*_KEY, "shape", "calls", "time_ms", "efficiency_pct"])


def _spread(frame: pd.DataFrame, keys: list[str], time_col: str) -> pd.DataFrame:
    """Per group: ranks, min / median / max time and calls, the slowest rank; and on `frame`, each rank's ratio
    to its group's median (added in place as `ratio`, `median_ms`, `median_calls`, `median_eff`)."""
    g = frame.groupby(keys, sort=False)
    frame["median_ms"] = g[time_col].transform("median")
    frame["median_calls"] = g["calls"].transform("median")
    eff_col = "efficiency_pct" if "efficiency_pct" in frame else "weighted_efficiency_pct"
    frame["median_eff"] = g[eff_col].transform("median")
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["ratio"] = np.where(frame["median_ms"] > 0, frame[time_col] / frame["median_ms"], np.nan)
    slowest = frame.loc[g[time_col].idxmax(), [*keys, "rank"]].rename(columns={"rank": "slowest_rank"})
    stats = g.agg(
        ranks=("rank", "count"), time_min=(time_col, "min"), time_median=(time_col, "median"),
        time_max=(time_col, "max"), calls_min=("calls", "min"), calls_median=("calls", "median"),
        calls_max=("calls", "max"),
    ).reset_index()  # fmt: skip
    return stats.merge(slowest, on=keys, how="left")


def _stragglers(frame: pd.DataFrame, time_col: str, kind: str, out_dir: Path) -> list[dict[str, Any]]:
    """The ranks over STRAGGLER_RATIO × their group's median (groups run by at least two ranks), as findings."""
    counts = frame.groupby(_KEY if kind == "shape" else ["category"], sort=False)["rank"].transform("count")
    over = (counts >= 2) & (frame["ratio"] > STRAGGLER_RATIO)
    hit = frame[over].assign(ranks_compared=counts[over])  # (an empty frame would adopt a whole Series' index)
    eff_col = "efficiency_pct" if kind == "shape" else "weighted_efficiency_pct"
    out = []
    for r in hit.to_dict("records"):
        excess = float(r[time_col] - r["median_ms"])
        e2e = r["e2e_ms"]
        out.append(
            {
                "kind": kind, "category": r["category"], "operation": r.get("operation"), "args": r.get("args"),
                "shape": r.get("shape"), "rank": int(r["rank"]), "time_ms": finite(r[time_col], 6),
                "median_ms": finite(r["median_ms"], 6), "ratio": finite(r["ratio"], 4),
                "excess_ms": finite(excess, 6),
                "percent_of_rank_e2e": finite(100.0 * excess / e2e, 4) if e2e and e2e > 0 else None,
                "calls": int(r["calls"]), "median_calls": finite(r["median_calls"], 1),
                "efficiency_pct": finite(r[eff_col], 2), "median_efficiency_pct": finite(r["median_eff"], 2),
                "ranks_compared": int(r["ranks_compared"]), "rank_folder": _rel(r["folder"], out_dir),
            }
        )  # fmt: skip
    return out


def build_summary(
    plan: RankPlan, outcomes: list[RankOutcome], out_dir: Path, run: dict[str, Any]
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """(summary JSON object, per rank × category table, per shape × rank table)."""
    entries = rank_entries(plan, outcomes, out_dir)
    analyzed = {o.rank for o in outcomes if o.status != "ERROR"}
    cats = _category_frame(outcomes)
    shapes = _shape_frame(outcomes)
    stragglers: list[dict[str, Any]] = []
    category_stats: list[dict[str, Any]] = []
    shape_stats: list[dict[str, Any]] = []
    if len(cats):
        stats = _spread(cats, ["category"], "kernel_time_ms")
        found = _stragglers(cats, "kernel_time_ms", "category", out_dir)
        stragglers += found
        for s in stats.to_dict("records"):
            present = set(cats.loc[cats["category"] == s["category"], "rank"].tolist())
            category_stats.append(
                {
                    "category": s["category"], "ranks": int(s["ranks"]),
                    "kernel_time_ms": _mmm(s, "time"), "calls": _mmm(s, "calls"),
                    "slowest_rank": int(s["slowest_rank"]),
                    "straggler_ranks": sorted(x["rank"] for x in found if x["category"] == s["category"]),
                    **_presence(present, analyzed),
                }
            )  # fmt: skip
    if len(shapes):
        stats = _spread(shapes, _KEY, "time_ms")
        found = _stragglers(shapes, "time_ms", "shape", out_dir)
        stragglers += found
        by_key: dict[tuple[str, str, str], list[int]] = {}
        for x in found:
            by_key.setdefault((x["category"], x["operation"], x["args"]), []).append(x["rank"])
        present_by_key = shapes.groupby(_KEY, sort=False)["rank"].agg(list).to_dict()
        label = shapes.groupby(_KEY, sort=False)["shape"].first().to_dict()
        for s in stats.to_dict("records"):
            key = (s["category"], s["operation"], s["args"])
            shape_stats.append(
                {
                    "category": s["category"], "operation": s["operation"], "args": s["args"], "shape": label[key],
                    "ranks": int(s["ranks"]), "time_ms": _mmm(s, "time"), "calls": _mmm(s, "calls"),
                    "slowest_rank": int(s["slowest_rank"]), "straggler_ranks": sorted(by_key.get(key, [])),
                    **_presence(set(present_by_key[key]), analyzed),
                }
            )  # fmt: skip
        shape_stats.sort(key=lambda s: -(s["time_ms"]["max"] or 0.0))
    stragglers.sort(key=lambda x: (-(x["percent_of_rank_e2e"] or -1.0), -(x["excess_ms"] or 0.0), x["rank"]))
    for i, x in enumerate(stragglers, start=1):
        x["position"] = i
    failed = [e for e in entries if e["status"] == "ERROR"]
    summary = {
        "schema": SCHEMA,
        "generated_by": "sdpa-analyzer analyze_ranks",
        "output_dir": ".",
        **run,
        "straggler_ratio": STRAGGLER_RATIO,
        "world_size": plan.world_size,
        "world_size_source": plan.world_size_source,
        "traces": len(entries),
        "ranks_ok": sum(e["status"] == "OK" for e in entries),
        "ranks_no_data": sum(e["status"] == "NO_DATA" for e in entries),
        "ranks_failed": len(failed),
        "missing_ranks": plan.missing_ranks,
        "duplicate_ranks": [
            {"rank": d["rank"], "traces": [_rel(p, out_dir) for p in d["traces"]]}  # type: ignore[attr-defined]
            for d in plan.duplicate_ranks
        ],
        "ranks": entries,
        "rank_categories": _records(cats.drop(columns=_SPREAD_COLUMNS, errors="ignore")),
        "categories": category_stats,
        "shapes": shape_stats,
        "stragglers": stragglers,
        "errors": [{"rank": e["rank"], "trace_path": e["trace_path"], "error": e["error"]} for e in failed],
        "warnings": list(plan.warnings),
    }
    return summary, _category_table(entries, cats), _shape_table(shapes)


def _mmm(stats: dict[str, Any], prefix: str) -> dict[str, float | None]:
    nd = 6 if prefix == "time" else 1
    return {k: finite(stats[f"{prefix}_{k}"], nd) for k in ("min", "median", "max")}


def _presence(present: set[int], analyzed: set[int]) -> dict[str, Any]:
    """On every analyzed rank, or which ranks (whichever list is shorter: present or absent)."""
    if len(present) >= len(analyzed):
        return {"on_all_ranks": True}
    if 2 * len(present) <= len(analyzed):
        return {"on_all_ranks": False, "present_ranks": sorted(present)}
    return {"on_all_ranks": False, "absent_ranks": sorted(analyzed - present)}


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for r in frame.to_dict("records"):
        out.append({k: (finite(v, 6) if isinstance(v, float) else v) for k, v in r.items()})
    return out


def _category_table(entries: list[dict[str, Any]], cats: pd.DataFrame) -> pd.DataFrame:
    """One line per rank and category; a trace without categories (NO_DATA, ERROR) keeps one line, with its
    status and error (a duplicate of rank r must not take rank r's categories: only OK traces are joined)."""
    cols = ["rank", "category", "rows", "calls", "kernel_time_ms", "percent_of_e2e", "weighted_efficiency_pct",
            "efficiency_left_out_ms"]
    per_cat = (cats[cols] if len(cats) else pd.DataFrame(columns=cols)).astype({"rank": "Int64"})
    base = pd.DataFrame(
        [{k: e[k] for k in ("rank", "trace_path", "folder", "status", "error", "e2e_ms")} for e in entries],
        columns=["rank", "trace_path", "folder", "status", "error", "e2e_ms"],
    ).astype({"rank": "Int64"})
    base["order"] = range(len(base))
    ok = base[base["status"] == "OK"].merge(per_cat, on="rank", how="left")
    table = pd.concat([ok, base[base["status"] != "OK"]], ignore_index=True)
    table = table.sort_values("order", kind="stable").drop(columns="order")[[*base.columns[:-1], *cols[1:]]]
    for col in ("rows", "calls"):  # integers stay integers beside the empty cells of those lines
        table[col] = table[col].astype("Int64")
    return table.reset_index(drop=True)


def _shape_table(shapes: pd.DataFrame) -> pd.DataFrame:
    cols = [*_KEY, "shape", "rank", "calls", "time_ms", "efficiency_pct", "median_ms", "ratio"]
    if shapes.empty:
        return pd.DataFrame(columns=[*cols, "straggler"])
    t = shapes[cols].copy()
    t["ratio"] = t["ratio"].round(4)
    t["straggler"] = t["ratio"] > STRAGGLER_RATIO
    return t.sort_values([*_KEY, "rank"], kind="stable")


def write_summary(
    out_dir: Path, summary: dict[str, Any], cats: pd.DataFrame, shapes: pd.DataFrame, roots: DataRoots
) -> list[Path]:
    """The three summary files, each atomically and through the roots; the JSON last (its presence marks a
    finished run)."""
    written = [
        write_text_atomic(out_dir / SUMMARY_CSV, cats.to_csv(index=False), roots=roots),
        write_text_atomic(out_dir / SHAPES_CSV, shapes.to_csv(index=False), roots=roots),
    ]
    written.append(write_json_atomic(out_dir / SUMMARY_JSON, summary, roots=roots))
    return written
