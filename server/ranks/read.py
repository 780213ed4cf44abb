"""Read a ranks folder's summary back (load_rank_summary): the cross-rank findings for the subagent.

A folder is a ranks folder when it holds ranks_summary.json (written last by analyze_ranks, so its presence
means the run finished). A rank folder of such a run points to it: its parent holds the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from server.errors import InputError
from server.folder.read import read_json_file
from server.ranks.summary import SCHEMA, SUMMARY_JSON


def summary_path(folder: Path) -> Path:
    """ranks_summary.json of `folder`, or of its parent when `folder` is one of its rank folders."""
    for candidate in (folder / SUMMARY_JSON, folder.parent / SUMMARY_JSON):
        if candidate.is_file():
            return candidate
    raise InputError(
        f"no {SUMMARY_JSON} in {folder} (or its parent) — pass the output folder of analyze_ranks, or run "
        "analyze_ranks (sdpa-analyzer analyze-ranks TRACE... -o OUT) first"
    )


def load_summary(folder: Path) -> tuple[Path, dict[str, Any]]:
    path = summary_path(folder)
    summary = read_json_file(path, "ranks summary")
    if summary.get("schema") != SCHEMA:
        raise InputError(
            f"{path}: schema {summary.get('schema')!r} is not {SCHEMA!r} — rerun analyze_ranks with this version "
            "(--overwrite)"
        )
    return path, summary
