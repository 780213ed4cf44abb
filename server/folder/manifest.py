"""The run record of an analysis folder written by analyze_trace, and the rule that reads it.

analyze_trace writes a folder all-or-nothing (server.folder.write): every file is first written into a
staging folder inside the target, then moved into place under a pending marker, and the manifest, moved
last, is the commit. The manifest then carries RUN_KEY:

    "sdpa_analyzer_run": {"run_id": "...", "complete": true, "trace_path": "...", "trace2_path": null,
                          "analyzed_categories": ["sdpa_fwd", "sdpa_bwd", "inferenceattention"],
                          "categories_with_data": ["sdpa_fwd"], "finished_at": "2026-12-01T09:00:00Z"}

and each category's metadata carries the same `sdpa_analyzer_run_id`. A reader decides (check_complete):

* a pending marker whose run is not the manifest's: a run was interrupted (or is still moving files in) →
  error "analysis incomplete: re-run analyze_trace";
* a complete run record: a category it lists must have its ops CSV and metadata of that run (else the same
  error); a category it analyzed and does not list is NO_DATA (whatever file lies around);
* metadata of ours with a run id but no run record in the manifest → the same error (interrupted);
* no run record at all (an orchestrator's folder, or one written before run records existed) → read as before.

Derived files carry the run they were computed from (docs/formats.md): the metrics JSON's `sdpa_analyzer.run_id`,
the roofline CSV's `sdpa_analyzer_run_id` column, the findings template's RUN_LINE. Their writers hold the
folder's lock shared while they write (`same_run`: analyze_trace commits under it exclusively), after checking
that the run they read is still the folder's; a reader that finds a derived file of another run than the
folder's refuses it (`older_analysis`). Folders without a run record skip both checks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.roots import DataRoots

if os.name == "posix":
    import fcntl
else:  # pragma: no cover - no cross-process locks elsewhere
    fcntl = None

RUN_KEY = "sdpa_analyzer_run"
RUN_ID_KEY = "sdpa_analyzer_run_id"  # in each category's metadata
PENDING_MARKER = ".sdpa-analyze-pending.json"  # in the analysis folder while a run moves its files in
STAGE_PREFIX = ".sdpa-stage-"  # staging folders inside the analysis folder


def incomplete(output_dir: Path, why: str) -> InputError:
    return InputError(
        f"{output_dir}: analysis incomplete ({why}) — re-run analyze_trace into this folder "
        "(findings files are kept)"
    )


def run_record(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """The manifest's run record when it is a complete one of ours, else None."""
    run = manifest.get(RUN_KEY) if isinstance(manifest, dict) else None
    if isinstance(run, dict) and run.get("complete") is True and isinstance(run.get("run_id"), str):
        return run
    return None


def check_complete(
    output_dir: Path,
    category: str,
    manifest: dict[str, Any] | None,
    metadata: dict[str, Any] | None,
    marker: dict[str, Any] | None,
    has_csv: bool,
) -> bool | None:
    """True: the run lists the category (its files must load); False: it analyzed the category and found no
    ops (NO_DATA); None: no run record (a folder of another writer: read as it is). Raises when incomplete."""
    run = run_record(manifest)
    if marker is not None and (run is None or marker.get("run_id") != run["run_id"]):
        raise incomplete(output_dir, "an analyze_trace run was interrupted, or is still moving its files in")
    meta_run = metadata.get(RUN_ID_KEY) if isinstance(metadata, dict) else None
    if run is None:
        if isinstance(manifest, dict) and RUN_KEY in manifest:
            raise incomplete(output_dir, "the manifest's run record is not complete")
        if meta_run is not None:
            raise incomplete(output_dir, f"{category} metadata belongs to a run the manifest does not record")
        return None
    analyzed = run.get("analyzed_categories")
    if not isinstance(analyzed, list) or category not in analyzed:
        return None  # a run that did not look at this category says nothing about it
    with_data = run.get("categories_with_data")
    if not isinstance(with_data, list) or category not in with_data:
        return False
    if not has_csv:
        raise incomplete(output_dir, f"{layout.ops_csv(category)} is missing")
    if meta_run != run["run_id"]:
        raise incomplete(output_dir, f"{layout.metadata_json(category)} is not from the run the manifest records")
    return True


def current_run_id(manifest: dict[str, Any] | None) -> str | None:
    """The run id of a manifest's complete run record, or None (no record: an orchestrator's folder)."""
    run = run_record(manifest)
    return run["run_id"] if run is not None else None


def read_run_id(output_dir: Path, roots: DataRoots) -> str | None:
    """The folder's current run id, read now from its manifest (None: no manifest, no run record, unreadable:
    the loaders report a broken manifest themselves)."""
    path = output_dir / layout.manifest()
    try:
        if not roots.is_file(path, what="category manifest"):
            return None
        return current_run_id(orjson.loads(roots.read_bytes(path, what="category manifest")))
    except (OSError, ValueError):
        return None


def older_analysis(what: Path | str, file_run: Any, folder_run: str | None, fix: str) -> InputError | None:
    """The error for a derived file computed from another run than the folder's current one (None when it is the
    current run's, or either side records no run)."""
    if folder_run is None or not isinstance(file_run, str) or file_run == folder_run:
        return None
    return InputError(
        f"{what} was computed from an older analysis (run {file_run[:12]}; the folder is now run {folder_run[:12]}): "
        f"{fix}"
    )


@contextmanager
def same_run(output_dir: Path, roots: DataRoots, run_id: str | None, *, written: str, tool: str) -> Iterator[None]:
    """Hold the analysis folder's lock shared while a derived file is written, once the folder's run is checked to
    still be `run_id` (the run the writer read): otherwise the write is refused in one line, nothing written.
    analyze_trace commits under the same lock held exclusively, so it cannot replace the run meanwhile."""
    with roots.directory(output_dir, what="output_dir") as fd:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            now = read_run_id(output_dir, roots)
            if now != run_id:
                raise InputError(
                    f"{written} not written: {output_dir.name} was re-analyzed (run {str(now)[:12]}) while {tool} ran "
                    f"on the older analysis (run {str(run_id)[:12]}) — re-run {tool}"
                )
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
