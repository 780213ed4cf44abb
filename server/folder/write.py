"""Write the analysis folder of docs/formats.md: per-category ops CSV + metadata, and the manifest.

Every file is written atomically (temp file + rename). Category files of ours that this run does not
produce (a category that disappeared since the last run) are removed together with their derived
`<cat>_metrics.json`, so a stale table is never read as current. An existing manifest keeps the
entries of other (non-attention) categories an orchestrator put there. Findings files are never touched.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perf_models.hardware import GpuSpec
from server.vocab import CATEGORIES, DISPLAY_NAMES
from server.writers.atomic import write_json_atomic, write_text_atomic

SKILL = "sdpa-analyzer"


def gpu_metadata(gpu: GpuSpec) -> dict[str, Any]:
    """platform + peaks in the metadata layout of docs/formats.md (achievable numbers where known)."""
    bw, bw_kind = gpu.peak_tbs()
    return {
        "platform": gpu.key,
        "platform_name": gpu.name,
        "peak_hbm_bw_tbs": bw,
        "peak_hbm_bw_kind": bw_kind,
        "max_achievable_tflops": {spec: gpu.peak_tflops(spec)[0] for spec in gpu.specs()},
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
) -> list[Path]:
    """Write ops CSV + metadata for every category in `tables`, then the manifest. Returns files written."""
    written: list[Path] = []
    cat_dir = output_dir / "category_data"
    meta_dir = output_dir / "metadata"
    entries = []
    for cat in CATEGORIES:
        csv_path = cat_dir / f"{cat}_ops.csv"
        meta_path = meta_dir / f"{cat}_metadata.json"
        metrics_path = cat_dir / f"{cat}_metrics.json"
        if cat not in tables:
            for stale in (csv_path, meta_path, metrics_path):
                if stale.exists():
                    stale.unlink()
            continue
        df = tables[cat]
        written.append(write_text_atomic(csv_path, df.to_csv(index=False)))
        if metrics_path.exists():
            metrics_path.unlink()  # derived from the previous table
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
        }
        written.append(write_json_atomic(meta_path, _jsonable(meta)))
        entries.append(
            {
                "name": cat,
                "display_name": DISPLAY_NAMES[cat],
                "skill": SKILL,
                "tier": "compute_kernel",
                "ops_count": t["rows"],
                "instances": t["instances"],
                "csv_file": f"./category_data/{cat}_ops.csv",
                "metadata_file": f"./metadata/{cat}_metadata.json",
                "gpu_kernel_time_ms": round(t["gpu_kernel_time_ms"], 6),
                "cpu_duration_ms": round(t["cpu_duration_ms"], 6),
                "sync_time_ms": 0,
                "sync_ops_count": 0,
                "has_sync_bottleneck": False,
            }
        )
    manifest_path = cat_dir / "category_manifest.json"
    others = _foreign_entries(manifest_path)
    manifest = {
        "platform": common_meta.get("platform"),
        "trace_path": common_meta.get("trace_path"),
        "output_dir": ".",
        "comparison_scope": manifest_extra.get("comparison_scope", "standalone"),
        "gpu_utilization": common_meta.get("gpu_utilization"),
        **{k: v for k, v in manifest_extra.items() if k != "comparison_scope"},
        "categories": others + entries,
        "time_metric_note": "Use gpu_kernel_time_ms for bottleneck prioritization. "
        "cpu_duration_ms includes sync/launch overhead.",
        "generated_by": "sdpa-analyzer analyze_trace",
    }
    written.append(write_json_atomic(manifest_path, _jsonable(manifest)))
    return written


def _foreign_entries(path: Path) -> list[dict[str, Any]]:
    """Categories of another tool in an existing manifest (kept); ours are rewritten."""
    if not path.exists():
        return []
    try:
        import orjson

        data = orjson.loads(path.read_bytes())
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
