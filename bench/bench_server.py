"""Benchmark: compute_roofline + rank_findings on a generated 100,000-row category CSV.

Targets (2-core machine): under 2 s and under 500 MB peak memory for roofline + rank.
Run: .venv/bin/python bench/bench_server.py [--rows 100000]

Also prints where the time went (the service's steps, timed by wrapping them; "rest" is everything else:
arch resolution, result models, the fsync and rename of the metrics file).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from server.roots import DataRoots
from server.tools import call

KERNEL = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<{d}, 128, 64, 4, false, false> >(Params)"


def make_folder(root: Path, rows: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    b = rng.integers(1, 33, rows)
    h = rng.choice([8, 16, 32, 64], rows)
    g = rng.choice([1, 2, 4, 8], rows)
    hkv = np.maximum(h // g, 1)
    n = rng.integers(64, 8193, rows)
    d = rng.choice([64, 128], rows)
    causal = rng.random(rows) < 0.5
    count = rng.integers(1, 50, rows)
    mean_us = rng.uniform(20, 5000, rows)
    dims = [
        f"(({bi}, {hi}, {ni}, {di}), ({bi}, {ki}, {ni}, {di}), ({bi}, {ki}, {ni}, {di}), (), (), (), ())"
        for bi, hi, ki, ni, di in zip(b, h, hkv, n, d, strict=True)
    ]
    types = "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')"
    conc = [f"('', '', '', '0.', '{c}', 'False', '0.125')" for c in causal]
    kd = [
        f"[{{'name': '{KERNEL.format(d=di)}', 'stream': 7, 'count': {ci}, "
        f"'total_duration_us': np.float64({m * ci:.3f})}}]"
        for di, ci, m in zip(d, count, mean_us, strict=True)
    ]
    df = pd.DataFrame({
        "name": "aten::_scaled_dot_product_flash_attention", "op category": "SDPA_fwd", "Input Dims": dims,
        "Input type": types, "Concrete Inputs": conc, "operation_count": count,
        "Kernel Time (µs)_sum": mean_us * count, "Kernel Time (µs)_mean": mean_us, "kernel_details_summary": kd,
        "entry_point": "model.py(1): forward",
    })
    out = root / "bench_folder"
    (out / "category_data").mkdir(parents=True)
    (out / "metadata").mkdir()
    df.to_csv(out / "category_data" / "sdpa_fwd_ops.csv", index=False)
    total_ms = float((mean_us * count).sum()) / 1000.0 * 1.5
    meta = {"platform": "H100", "gpu_utilization": {"total_time_ms": total_ms}}
    (out / "metadata" / "sdpa_fwd_metadata.json").write_text(json.dumps(meta))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_folder(Path(tmp), args.rows)
        roots = DataRoots([Path(tmp)])
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.perf_counter()
        roof = call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
        t1 = time.perf_counter()
        ranked = call("rank_findings", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
        t2 = time.perf_counter()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"rows: {args.rows:,} ({roof.modeled_rows:,} modeled), findings: {len(ranked.findings)}")
    print(f"compute_roofline: {t1 - t0:.2f} s; rank_findings: {t2 - t1:.2f} s; both: {t2 - t0:.2f} s (target < 2 s)")
    print(f"peak RSS: {rss:.0f} MB (before the tools: {rss0:.0f} MB; target < 500 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
