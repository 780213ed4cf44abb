"""Write the analysis folder of docs/formats.md: per-category ops CSV + metadata, and the manifest, all-or-nothing.

A run never leaves a folder that reads as something it is not (server.folder.manifest has the reader's side):

1. every file is written into a staging folder inside the target (`<output_dir>/.sdpa-stage-<run>/`, on the same
   file system, under the data roots), each atomically; a full disk or a kill here leaves the target as it was
   (the stage is removed on failure, and by the next run when its writer died);
2. under an exclusive lock on the target (concurrent runs commit one after the other), a pending marker naming
   the run is written, the staged files are renamed into category_data/ and metadata/, the category files of ours
   this run does not produce are removed with the derived `<cat>_metrics.json` / `<cat>_roofline.csv` (a stale
   table is never read as current), and
3. the manifest, with the run record, is written last: that rename is the commit. The marker is then removed.

A kill during step 2 leaves the marker without a matching manifest: loading says "analysis incomplete: re-run
analyze_trace" instead of mixing two traces' files or reading a missing category as "no attention". Only the
files the folder contract gives to our categories are replaced or removed, always by name inside the checked
folder (never through a link). An existing manifest keeps the entries of other (non-attention) categories an
orchestrator put there; category_findings/ (the LLM's) and everything else in the folder are never touched.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.manifest import PENDING_MARKER, RUN_ID_KEY, RUN_KEY, STAGE_PREFIX
from sdpa_analyzer.server.roots import FD_WALK, UNRESTRICTED, DataRoots
from sdpa_analyzer.server.vocab import CATEGORIES, DISPLAY_NAMES
from sdpa_analyzer.server.writers.atomic import remove_tree, sweep_stale, write_json_atomic, write_text_atomic

if os.name == "posix":
    import fcntl
else:  # pragma: no cover - no cross-process locks elsewhere: stale files are judged by age alone
    fcntl = None

SKILL = "sdpa-analyzer"


def gpu_metadata(gpu: GpuSpec) -> dict[str, Any]:
    """platform + peaks in the metadata layout of docs/formats.md (the roofs the tools score against)."""
    bw, bw_kind = gpu.peak_tbs()
    return {
        "platform": gpu.key,
        "platform_name": gpu.name,
        "peak_hbm_bw_tbs": bw,
        "peak_hbm_bw_kind": bw_kind,
        "max_achievable_tflops": {spec: gpu.peak_tflops(spec)[0] for spec in gpu.specs()},
        # which roof each of them is: datasheet, or sustained (at the clock the part holds above its rated boost)
        "max_achievable_tflops_kind": {spec: gpu.peak_tflops(spec)[1] for spec in gpu.specs()},
        "memory_gb": gpu.memory_gb,
    }


def relative_trace_path(trace: Path, output_dir: Path) -> str:
    try:
        return os.path.relpath(trace, output_dir)
    except ValueError:  # another drive (Windows)
        return str(trace)


def write_folder(
    output_dir: Path,
    tables: dict[str, pd.DataFrame],
    totals: dict[str, dict[str, Any]],
    common_meta: dict[str, Any],
    manifest_extra: dict[str, Any],
    *,
    roots: DataRoots = UNRESTRICTED,
) -> list[Path]:
    """Write ops CSV + metadata for every category in `tables`, then the manifest (see the module docstring).
    Returns the files written, at their final paths."""
    run_id = uuid.uuid4().hex
    out = roots.resolve(output_dir, what="output_dir")
    with roots.directory(out, what="output_dir", create=True) as ofd:
        sweep_stale_stages(ofd, out)
        stage = out / f"{STAGE_PREFIX}{run_id}"
        with _held_stage(ofd, stage, roots):
            staged = _stage_files(stage, out, tables, totals, common_meta, manifest_extra, run_id, roots)
            with _locked(ofd):
                entries = [_entry(c, totals[c]) for c in CATEGORIES if c in tables]
                return _commit(out, stage, staged, entries, common_meta, manifest_extra, run_id, roots)


def _stage_files(
    stage: Path,
    out: Path,
    tables: dict[str, pd.DataFrame],
    totals: dict[str, dict[str, Any]],
    common_meta: dict[str, Any],
    manifest_extra: dict[str, Any],
    run_id: str,
    roots: DataRoots,
) -> list[str]:
    """Every file of the run written into the stage; returns their paths relative to the folder."""
    staged: list[str] = []

    def put(rel: str, write: Any, payload: Any) -> None:
        try:
            write(stage / rel, payload, roots=roots)
        except OSError as exc:  # name the file the user asked for, not the staged copy
            raise type(exc)(exc.errno, exc.strerror or str(exc), str(out / rel)) from None
        staged.append(rel)

    for cat in CATEGORIES:
        if cat not in tables:
            continue
        put(layout.ops_csv(cat), write_text_atomic, tables[cat].to_csv(index=False))
        t = totals[cat]
        meta = {
            **common_meta,
            "category": DISPLAY_NAMES[cat],
            "category_name": cat,
            "time_breakdown": {
                "gpu_kernel_time_ms": round(t["gpu_kernel_time_ms"], 6),
                "cpu_duration_ms": round(t["cpu_duration_ms"], 6),
                "sync_time_ms": 0,
                "sync_ops_count": 0,
                "has_sync_bottleneck": False,
            },
            "ops_rows": t["rows"],
            "instances": t["instances"],
            RUN_ID_KEY: run_id,
        }
        put(layout.metadata_json(cat), write_json_atomic, _jsonable(meta))
    if isinstance(manifest_extra.get("trace2_gpu_utilization"), dict):
        put(layout.trace2_utilization(), write_json_atomic, _jsonable(manifest_extra["trace2_gpu_utilization"]))
    return staged


def _commit(
    out: Path,
    stage: Path,
    staged: list[str],
    entries: list[dict[str, Any]],
    common_meta: dict[str, Any],
    manifest_extra: dict[str, Any],
    run_id: str,
    roots: DataRoots,
) -> list[Path]:
    """Move the staged files in under the pending marker, remove what this run replaces, write the manifest."""
    marker = {"run_id": run_id, "pid": os.getpid(), "started_at": _now()}
    write_json_atomic(out / PENDING_MARKER, marker, roots=roots)
    written: list[Path] = []
    for rel in staged:
        _move(stage / rel, out / rel, roots)
        written.append(out / rel)
    produced = set(staged)
    for cat in CATEGORIES:
        derived = list(layout.derived(cat))
        own = [layout.ops_csv(cat), layout.metadata_json(cat)]
        for rel in derived + [r for r in own if r not in produced]:
            roots.unlink(out / rel, what="stale category file")
    if layout.trace2_utilization() not in produced:
        roots.unlink(out / layout.trace2_utilization(), what="stale category file")

    manifest_path = out / layout.manifest()
    with_data = [c for c in CATEGORIES if layout.ops_csv(c) in produced]
    manifest = {
        "platform": common_meta.get("platform"),
        "trace_path": common_meta.get("trace_path"),
        "output_dir": ".",
        "comparison_scope": manifest_extra.get("comparison_scope", "standalone"),
        "gpu_utilization": common_meta.get("gpu_utilization"),
        **{k: v for k, v in manifest_extra.items() if k != "comparison_scope"},
        "categories": _foreign_entries(manifest_path, roots) + entries,
        "time_metric_note": "Use gpu_kernel_time_ms for bottleneck prioritization. "
        "cpu_duration_ms includes sync/launch overhead.",
        "generated_by": "sdpa-analyzer analyze_trace",
        RUN_KEY: {
            "run_id": run_id,
            "complete": True,
            "trace_path": common_meta.get("trace_path"),
            "trace2_path": manifest_extra.get("trace2_path"),
            "analyzed_categories": list(CATEGORIES),
            "categories_with_data": with_data,
            "finished_at": _now(),
        },
    }
    written.append(write_json_atomic(manifest_path, _jsonable(manifest), roots=roots))  # the commit
    roots.unlink(out / PENDING_MARKER, what="analyze marker")
    return written


def _entry(cat: str, t: dict[str, Any]) -> dict[str, Any]:
    """The manifest entry of a category with data."""
    return {
        "name": cat,
        "display_name": DISPLAY_NAMES[cat],
        "skill": SKILL,
        "tier": "compute_kernel",
        "ops_count": t["rows"],
        "instances": t["instances"],
        "csv_file": f"./{layout.ops_csv(cat)}",
        "metadata_file": f"./{layout.metadata_json(cat)}",
        "gpu_kernel_time_ms": round(t["gpu_kernel_time_ms"], 6),
        "cpu_duration_ms": round(t["cpu_duration_ms"], 6),
        "sync_time_ms": 0,
        "sync_ops_count": 0,
        "has_sync_bottleneck": False,
    }


def _move(src: Path, dst: Path, roots: DataRoots) -> None:
    """Rename a staged file onto its place (same file system; the destination name is replaced, never followed)."""
    with roots.directory(src.parent, what="stage folder") as sfd, roots.directory(
        dst.parent, what="output folder", create=True
    ) as dfd:
        if FD_WALK:
            os.replace(src.name, dst.name, src_dir_fd=sfd, dst_dir_fd=dfd)
        else:
            os.replace(src, dst)


@contextmanager
def _held_stage(ofd: int, stage: Path, roots: DataRoots) -> Iterator[None]:
    """The stage folder, made and locked for this run (another run's sweep leaves a held stage alone), and
    removed afterwards whatever happened."""
    with roots.directory(stage, what="stage folder", create=True) as sfd:
        try:
            if fcntl is not None:
                fcntl.flock(sfd, fcntl.LOCK_EX)
            yield
        finally:
            with suppress(OSError):
                remove_tree(ofd, stage.parent, stage.name)


@contextmanager
def _locked(fd: int) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def sweep_stale_stages(ofd: int, out: Path) -> int:
    """Remove the stage folders of dead runs (unlocked and untouched for 60 s); returns how many."""
    return sweep_stale(ofd, out, lambda name: name.startswith(STAGE_PREFIX), directories=True)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _foreign_entries(path: Path, roots: DataRoots) -> list[dict[str, Any]]:
    """Categories of another tool in an existing manifest (kept); ours are rewritten."""
    try:
        if not roots.is_file(path, what="category manifest"):
            return []
        data = orjson.loads(roots.read_bytes(path, what="category manifest"))
    except (OSError, ValueError):
        return []
    cats = data.get("categories") if isinstance(data, dict) else None
    if not isinstance(cats, list):
        return []
    return [c for c in cats if isinstance(c, dict) and c.get("name") not in CATEGORIES]


def _jsonable(x: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy scalars -> Python numbers, tuples -> lists."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
