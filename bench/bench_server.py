"""Benchmark: compute_roofline + rank_findings over MCP stdio on a generated 100,000-row category.

The category imitates a long training trace: realistic Python call stacks (~40 frames), two kernels per row
(a fill and the flash kernel) with their summaries, perf_params, ~380 MB of CSV. The server runs as a real
stdio subprocess (`sdpa-analyzer serve`), called by the SDK's client, as Claude Code would.

Targets (issue 21, 2-core machine): roofline + rank <= 3.5x a bare `pandas.read_csv` of the same file, the two timed
in the same round (the ratio holds when the machine's speed drifts); the server's peak RSS < 500 MB. Each round
starts a fresh server (nothing cached) right after its bare read.

Measured 2026-12-02 (3 rounds each, min / median / max; another session kept the machine busy, load 1.6-3.5):
before the issue-21 work 4.95 / 5.06 / 5.64x and 4.08 / 5.19 / 9.79x (two runs), server peak 498-542 MB; after it
5.45 / 5.47 / 6.26x, server peak 478-480 MB (in_band written column-wise and streamed, records without columns
overwritten, the roofline CSV's distinct cells formatted a chunk at a time). No change to the ratio beyond this
noise. Where the time goes, in process, x the bare read (~2.0 s): loading
1.7 (the CSV parse itself ~1.1, interning repeated cells, the shape literals, the kernel summaries), modeling 0.9,
the 131 MB roofline CSV 0.6-0.9, building the metrics 0.25, the 740 MB metrics JSON 1.0-1.1 (39 % of its bytes are
the call stacks, 19 % the per-op roofline block). pandas' C reader holds the GIL (a chunked read in a thread beside
pure-Python work: 3.20 s against 3.00 s one after the other), so the stages cannot overlap on the second core.
Before the 100k-row work of issue 9: 11.3 s = 6.8x, ~600 MB.

    .venv/bin/python bench/bench_server.py [--rows 100000] [--runs 3] [--in-process]

`--in-process` calls the tools directly (no MCP, no subprocess) and prints a cProfile summary of the hot spots.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from mcp import Client, StdioServerParameters

FLASH = (
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<{d}, 128, 64, 4, false, false, "
    "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<{d}, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
    "false, false, false, true, false>(pytorch_flash::Flash_fwd_params)"
)
FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
DISTINCT_STACKS = 2000
TARGET_RATIO = 3.5  # roofline + rank vs a bare read_csv of the same file, timed in the same round (issue 21)
TARGET_RSS_MB = 500.0
STACK_DEPTH = 40


def _stacks(rng: np.random.Generator) -> list[str]:
    """Distinct call stacks as analysis CSVs write them (a list repr, Python frames and modules, root first)."""
    out = []
    for s in range(DISTINCT_STACKS):
        frames = []
        for k in range(STACK_DEPTH):
            if k % 4 == 3:
                frames.append(f"nn.Module: DecoderLayer_{(s * 7 + k) % 48}")
            else:
                path = f"project/models/transformer/block_{k % 9}/attention_layer_{s % 97}.py"
                frames.append(f"{path}({100 + k}): forward_{k}")
        frames += ["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention"]
        out.append(repr(frames)[:-1] + f", ['{FILL}'], ['{FLASH.format(d=128)}']]")
    return out


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
        f"[{{'name': '{FILL}', 'stream': 7, 'count': {ci}, 'total_duration_us': np.float64({1.5 * ci:.3f}), "
        f"'mean_duration_us': np.float64(1.5)}}, {{'name': '{FLASH.format(d=di)}', 'stream': 7, 'count': {ci}, "
        f"'total_duration_us': np.float64({m * ci:.3f}), 'mean_duration_us': np.float64({m:.3f})}}]"
        for di, ci, m in zip(d, count, mean_us, strict=True)
    ]
    perf = [
        f"{{'B': {bi}, 'N_Q': {ni}, 'H_Q': {hi}, 'N_KV': {ni}, 'H_KV': {ki}, 'd_h_qk': {di}, 'd_h_v': {di}, "
        f"'dropout': 0.0, 'causal': {c}, 'flash_impl': True}}"
        for bi, hi, ki, ni, di, c in zip(b, h, hkv, n, d, causal, strict=True)
    ]
    stacks = _stacks(rng)
    df = pd.DataFrame({
        "name": "aten::_scaled_dot_product_flash_attention", "op category": "SDPA_fwd", "Input Dims": dims,
        "Input type": types, "Concrete Inputs": conc, "operation_count": count,
        "Kernel Time (µs)_sum": mean_us * count, "Kernel Time (µs)_mean": mean_us,
        "Kernel Time (µs)_std": mean_us * 0.01, "kernel_details_summary": kd, "perf_params": perf,
        "entry_point": "project/models/transformer/attention.py(88): forward",
        "call_stack_full": [stacks[i] for i in rng.integers(0, DISTINCT_STACKS, rows)],
    })
    out = root / "bench_folder"
    (out / "category_data").mkdir(parents=True)
    (out / "metadata").mkdir()
    df.to_csv(out / "category_data" / "sdpa_fwd_ops.csv", index=False)
    total_ms = float((mean_us * count).sum()) / 1000.0 * 1.5
    meta = {"platform": "H100", "gpu_utilization": {"total_time_ms": total_ms}}
    (out / "metadata" / "sdpa_fwd_metadata.json").write_text(json.dumps(meta))
    return out


def _bare_read(csv: Path) -> float:
    t = time.perf_counter()
    pd.read_csv(csv, low_memory=False)
    return time.perf_counter() - t


def _server_peak_rss_mb() -> float | None:
    """VmHWM of this process's server child, read from /proc while it runs (Linux).

    Not `getrusage(RUSAGE_CHILDREN)`: a child's ru_maxrss includes the parent's pages it shared between fork
    and exec, and this parent holds a 100k-row DataFrame and two CSV reads at that moment.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    me = str(os.getpid())
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2 :].split()[1] != me:  # the field after the state is the parent pid
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            continue
    return None


async def _over_stdio(root: Path, folder: Path) -> tuple[float, float, dict, dict, float | None]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "server.cli.main", "serve", "--root", str(root)])
    async with Client(params) as c:
        args = {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
        t0 = time.perf_counter()
        roof = await c.call_tool("compute_roofline", args)
        t1 = time.perf_counter()
        rank = await c.call_tool("rank_findings", args)
        t2 = time.perf_counter()
        peak_mb = _server_peak_rss_mb()
    for r in (roof, rank):
        if r.is_error:
            raise SystemExit(f"tool failed: {r.content[0].text}")
    return t1 - t0, t2 - t1, roof.structured_content, rank.structured_content, peak_mb


def _spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """min / median / max."""
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3, help="rounds of bare read + a fresh server's roofline and rank")
    ap.add_argument("--in-process", action="store_true", help="call the tools directly, with a profile")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = make_folder(root, args.rows)
        csv = folder / "category_data" / "sdpa_fwd_ops.csv"
        size_mb = csv.stat().st_size / 1e6
        if args.in_process:
            from server.roots import DataRoots
            from server.tools import call

            bare = min(_bare_read(csv) for _ in range(2))
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            call("compute_roofline", DataRoots([root]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
            call("rank_findings", DataRoots([root]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
            prof.disable()
            print(f"in-process roofline + rank: {time.perf_counter() - t0:.2f} s (profiled); bare read {bare:.2f} s")
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
            return 0
        bares, totals, ratios, peaks = [], [], [], []
        for k in range(args.runs):  # each round: the bare read, then a fresh server (no cached load) right after
            bare = _bare_read(csv)
            (folder / "category_data" / "sdpa_fwd_roofline.csv").unlink(missing_ok=True)
            roof_s, rank_s, roof, rank, server_rss_mb = asyncio.run(_over_stdio(root, folder))
            both = roof_s + rank_s
            bares.append(bare)
            totals.append(both)
            ratios.append(both / bare)
            if server_rss_mb is not None:
                peaks.append(server_rss_mb)
            print(f"  round {k + 1}: bare read {bare:.2f} s; compute_roofline {roof_s:.2f} s + rank_findings "
                  f"{rank_s:.2f} s = {both:.2f} s ({both / bare:.2f}x); server peak RSS "
                  f"{server_rss_mb if server_rss_mb is not None else float('nan'):.0f} MB", flush=True)
        metrics = Path(rank["metrics_file"]).stat().st_size / 1e6
        table = Path(roof["roofline_file"]).stat().st_size / 1e6
    print(f"rows: {args.rows:,} ({roof['modeled_rows']:,} modeled); ops CSV {size_mb:.0f} MB; "
          f"roofline CSV {table:.0f} MB; metrics JSON {metrics:.0f} MB")
    print(f"min / median / max of {args.runs} rounds: bare pandas.read_csv {_spread(bares)} s; roofline + rank over "
          f"MCP stdio {_spread(totals)} s; ratio {_spread(ratios)}x (target <= {TARGET_RATIO:g}x)")
    ok = statistics.median(ratios) <= TARGET_RATIO
    if peaks:
        print(f"server peak RSS {_spread(peaks, '{:.0f}')} MB (target < {TARGET_RSS_MB:.0f} MB)")
        ok &= max(peaks) < TARGET_RSS_MB
    print(f"targets: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
