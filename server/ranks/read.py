"""Read a ranks folder's summary back (load_rank_summary): the cross-rank findings for the subagent.

A folder is a ranks folder when it holds ranks_summary.json (written last by analyze_ranks, so its presence
means the run finished). A rank folder of such a run (`rank_<r>`) points to it: its parent holds the summary,
when that parent lies under the data roots too (the root itself never points above it). The file is read
through the sandbox and schema-checked (`RankSummaryDoc`) like every other file we read: a hand-edited summary
with a wrong type is one line naming the field, never an internal error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sdpa_analyzer.server.errors import InputError, format_validation_error
from sdpa_analyzer.server.folder.read import read_json_file
from sdpa_analyzer.server.ranks.result import RankError, Straggler
from sdpa_analyzer.server.ranks.summary import RANK_FOLDER, SCHEMA, SUMMARY_JSON
from sdpa_analyzer.server.roots import DataRoots


class _Doc(BaseModel):
    """A part of the summary file: JSON types as written (no "5" for 5, no true for 1); other keys are kept."""

    model_config = ConfigDict(strict=True, extra="allow")


class MinMedMax(_Doc):
    min: float | None = None
    median: float | None = None
    max: float | None = None


class RankEntry(_Doc):
    rank: int | None = None
    trace_path: str
    folder: str | None = None
    status: Literal["OK", "NO_DATA", "ERROR"]
    error: str | None = None
    e2e_ms: float | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_rss_mb: float | None = None
    warnings: list[str] = Field(default_factory=list)


class _Spread(_Doc):
    category: str
    ranks: int
    calls: MinMedMax | None = None
    slowest_rank: int
    straggler_ranks: list[int] = Field(default_factory=list)
    on_all_ranks: bool = True
    present_ranks: list[int] | None = None
    absent_ranks: list[int] | None = None


class CategoryStat(_Spread):
    kernel_time_ms: MinMedMax


class ShapeStat(_Spread):
    operation: str
    args: str
    shape: str
    time_ms: MinMedMax


class DuplicateRank(_Doc):
    rank: int
    traces: list[str]


class RankSummaryDoc(_Doc):
    """What the readers of ranks_summary.json use (server.ranks.summary writes it; docs/formats.md)."""

    schema_id: str = Field(alias="schema")
    engine: str = "pool"
    workers: int | None = None
    dask_address: str | None = None
    world_size: int | None = None
    world_size_source: str = "unknown"
    traces: int = 0
    ranks_ok: int = 0
    ranks_no_data: int = 0
    ranks_failed: int = 0
    missing_ranks: list[int] = Field(default_factory=list)
    duplicate_ranks: list[DuplicateRank] = Field(default_factory=list)
    ranks: list[RankEntry] = Field(default_factory=list)
    categories: list[CategoryStat] = Field(default_factory=list)
    shapes: list[ShapeStat] = Field(default_factory=list)
    stragglers: list[Straggler] = Field(default_factory=list)
    errors: list[RankError] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def summary_path(folder: Path, roots: DataRoots) -> Path:
    """ranks_summary.json of `folder`, or of its parent when `folder` is one of its rank folders (and the parent is
    under the roots). A link out of the roots on the way is refused, never followed."""
    own = folder / SUMMARY_JSON
    if roots.is_file(own, what="ranks summary"):
        return own
    parent = folder.parent
    if RANK_FOLDER.fullmatch(folder.name) and parent != folder and roots.root_of(parent) is not None:
        theirs = parent / SUMMARY_JSON
        if roots.is_file(theirs, what="ranks summary"):
            return theirs
    raise InputError(
        f"no {SUMMARY_JSON} in {folder} (or, for a rank_<r> folder, its parent) — pass the output folder of "
        "analyze_ranks, or run analyze_ranks (sdpa-analyzer analyze-ranks TRACE... -o OUT) first"
    )


def load_summary(folder: Path, roots: DataRoots) -> tuple[Path, dict[str, Any]]:
    """(the summary's path, its checked content as plain data: every field the readers use, with its defaults)."""
    path = summary_path(folder, roots)
    raw = read_json_file(path, "ranks summary", roots)
    if raw.get("schema") != SCHEMA:
        raise InputError(
            f"{path}: schema {str(raw.get('schema'))[:60]!r} is not {SCHEMA!r} — rerun analyze_ranks with this "
            "version (--overwrite)"
        )
    try:
        doc = RankSummaryDoc.model_validate(raw)
    except ValidationError as exc:
        raise InputError(
            f"{path}: {format_validation_error(exc, limit=1)} — the ranks summary was edited or damaged; rerun "
            "analyze_ranks (--overwrite)"
        ) from None
    return path, doc.model_dump(by_alias=True)
