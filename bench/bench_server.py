"""Benchmark: compute_roofline + rank_findings on a generated category of 100,000 rows, against a bare
`pandas.read_csv` of the same ops CSV timed in the same round.

The category imitates a long training trace: realistic Python call stacks (~40 frames, 2,000 distinct), two kernels
per row (a fill and the flash kernel) with their summaries, perf_params, ~440 MB of ops CSV; `make_folder` is also
the folder bench_findings.py ranks. Targets (issue 21, issue 36 item 1): roofline + rank <= 3.5x the bare read of
the same round (a ratio within a round: the machine's drift falls on both sides); the server's peak RSS < 500 MB.
Every mode prints a fixed pure-Python workload's time over each round's bare read beside the figures: the bare read
is memory-bound C and the tools mostly Python, so that control shows how much of a change in the ratio is the
machine. Current figures and their dates: bench/README.md; where the time goes: docs/metrics-layout-proposal.md.

    .venv/bin/python bench/bench_server.py [--rows 100000] [--runs 3] [--warm]  over MCP stdio, a fresh server a round
    .venv/bin/python bench/bench_server.py --stages [--layout L...] [--runs 3]  in process, stage by stage
    .venv/bin/python bench/bench_server.py --in-process                    in process, with a cProfile summary

Default: the server runs as a real stdio subprocess (`sdpa-analyzer serve`) called by the SDK's client, as an agent
would; each round is the bare read, then a fresh server (nothing cached): compute_roofline, rank_findings, and the
server's peak RSS (VmHWM). `--stages` calls the tools directly `--runs` times (caches cleared) and prints each
stage's time in units of its round's bare read, the time to write the two output files' bytes again as constant
data (fsynced: the write floor on this machine) and the metrics JSON's bytes by `operations[]` field. `--layout`
writes the metrics JSON in another layout, once a round after the same bare read, to measure what it would save
(never what the tools write): `proposed` writes each distinct call chain once (docs/metrics-layout-proposal.md). Our
own per-operation additions are written once already, in the roofline CSV (the metrics JSON declares them in
`sdpa_analyzer.roofline_rows`): the contract's layout is the contract's own bytes plus that declaration, its floor.
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
from typing import Any

import numpy as np
import pandas as pd
from common import mmm
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
WARM_WAIT_S = 4.0  # --warm: after tools/list, longer than the server's background import of the analysis (~0.6 s)
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


def _python_control() -> float:
    """Seconds of a fixed pure-Python workload of the kind the tools' stages are made of (formatting numbers, joining
    bytes, dict look-ups, list building): timed beside the bare read each round, its ratio to the bare read shows how
    much of a change in the tools' ratio is the machine (the bare read is memory-bound C, the stages mostly Python)."""
    t = time.perf_counter()
    for _ in range(5):
        texts = [repr(i * 0.37).encode() for i in range(200_000)]
        index = dict.fromkeys(texts)
        b",".join(text for text in texts if text in index)
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


async def _over_stdio(root: Path, folder: Path, warm: bool) -> tuple[float, float, dict, dict, float | None]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sdpa_analyzer.server.cli.main", "serve", "--root", str(root)]
    )
    async with Client(params) as c:
        if warm:  # as an agent's session reaches the tools: tools/list first, the server's background imports done
            await c.list_tools()
            await asyncio.sleep(WARM_WAIT_S)
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


# the stages of the path, as (module, function): wrapped with a timer for --stages (names as of issue 21)
_STAGES = (
    ("sdpa_analyzer.server.folder.read", "_read_csv", "read the ops CSV (chunked C parse, repeated cells interned)"),
    ("sdpa_analyzer.server.folder.read", "_parse_literal_columns", "shape literals and kernel summaries"),
    ("sdpa_analyzer.server.scoring.cache", "compute_records", "the perf models over every row"),
    ("sdpa_analyzer.server.scoring.outputs", "write_roofline_table", "render + write the roofline CSV"),
    ("sdpa_analyzer.server.scoring.ranking", "build_metrics", "build the metrics document"),
    ("sdpa_analyzer.server.scoring.outputs", "write_metrics", "render + write the metrics JSON"),
)


def _write_floor(nbytes: int, where: Path) -> float:
    """Seconds to write `nbytes` of constant bytes to a new file and fsync it, with the writeback hint the atomic
    writer gives every 32 MB (server.writers.atomic_stream): what writing files this size costs on this machine
    (page cache and disk) before rendering a byte. (Without the hint, the same bytes took 0.46-2.4 s per 740 MB
    here, against 0.30 s with it.)"""
    piece = b"x" * (4 << 20)
    path = where / "floor.bin"
    t = time.perf_counter()
    with open(path, "wb", buffering=0) as fh:
        done = hinted = 0
        while done < nbytes:
            done += fh.write(piece[: min(nbytes - done, len(piece))])
            if done - hinted >= 32 << 20 and hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fh.fileno(), hinted, done - hinted, os.POSIX_FADV_DONTNEED)
                hinted = done
        os.fsync(fh.fileno())
    took = time.perf_counter() - t
    path.unlink()
    return took


def _field_bytes(metrics: Path, every: int = 50) -> dict[str, float]:
    """Share of the metrics JSON's bytes per top-level field of operations[] (a sample of every `every`-th entry)."""
    sizes: dict[str, int] = {}
    with open(metrics, "rb") as fh:
        fh.readline()  # the line that opens operations[]
        for k, line in enumerate(fh):
            if line.startswith(b"]"):
                break
            if k % every:
                continue
            op = json.loads(line.rstrip(b",\n"))
            for key, value in op.items():
                sizes[key] = sizes.get(key, 0) + len(json.dumps(value, separators=(",", ":"))) + len(key) + 4
    total = metrics.stat().st_size
    return {key: every * size / total for key, size in sorted(sizes.items(), key=lambda kv: -kv[1])}


LAYOUTS = ("contract", "proposed")


def _other_layout(metrics: Any, table: Any, layout: str) -> Any:
    """The metrics document in the proposed layout (to measure it, never written by the tools):
    `operations[i].call_chain` replaced by `call_chain_id` into `sdpa_analyzer.call_chains` (each distinct chain
    once)."""
    from sdpa_analyzer.server.scoring.ranking import Metrics
    from sdpa_analyzer.server.writers.json_columns import Field, Ints, Obj

    fields, document = [], dict(metrics.document)
    for f in metrics.operations.fields:
        if f.key == "call_chain" and layout == "proposed":
            codes, chains = table.column_codes("call_chain")
            fields.append(Field("call_chain_id", Ints(np.asarray(codes, dtype=np.int64))))
            document["sdpa_analyzer"] = {**document["sdpa_analyzer"], "call_chains": list(chains)}
        else:
            fields.append(f)
    return Metrics(document, Obj(fields), metrics.rows)


def _stages(root: Path, folder: Path, csv: Path, runs: int, layouts: list[str]) -> int:
    """--stages: where the time of roofline + rank goes, in units of a bare read_csv of the same file. With several
    layouts, each round runs the path once per layout after one bare read (in rotating order): their ratios share
    the round's machine."""
    import importlib

    from sdpa_analyzer.server.folder import cache as folder_cache
    from sdpa_analyzer.server.roots import DataRoots
    from sdpa_analyzer.server.scoring import cache as scoring_cache
    from sdpa_analyzer.server.tools import call

    spent: dict[tuple[str, str], list[float]] = {}
    now: list[Any] = [0, layouts[0]]  # the round and the layout being timed

    def timed(module: str, name: str) -> None:
        mod = importlib.import_module(module)
        inner = getattr(mod, name)

        def wrapper(*a: object, **k: object) -> object:
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                spent.setdefault((now[1], name), [0.0] * runs)[now[0]] += time.perf_counter() - t

        setattr(mod, name, wrapper)

    for module, name, _ in _STAGES:
        timed(module, name)
    ranking = importlib.import_module("sdpa_analyzer.server.scoring.ranking")
    timed_build = ranking.build_metrics

    def build(data: Any, table: Any, *a: Any, **k: Any) -> Any:  # another layout's time counted with the build
        built = timed_build(data, table, *a, **k)
        return built if now[1] == "contract" else _other_layout(built, table, now[1])

    ranking.build_metrics = build
    bares, controls = [], []
    totals: dict[str, list[float]] = {layout: [] for layout in layouts}
    floors: dict[str, list[float]] = {layout: [] for layout in layouts}
    sizes: dict[str, tuple[float, float]] = {}
    shares: dict[str, dict[str, float]] = {}
    roof_csv = folder / "category_data" / "sdpa_fwd_roofline.csv"
    metrics = folder / "category_data" / "sdpa_fwd_metrics.json"
    for run in range(runs):
        now[0] = run
        bares.append(_bare_read(csv))
        controls.append(_python_control() / bares[-1])
        for layout in layouts[run % len(layouts) :] + layouts[: run % len(layouts)]:
            now[1] = layout
            folder_cache.clear()
            scoring_cache.clear()
            roof_csv.unlink(missing_ok=True)
            t = time.perf_counter()
            for tool in ("compute_roofline", "rank_findings"):
                call(tool, DataRoots([root]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
            totals[layout].append(time.perf_counter() - t)
            sizes[layout] = (roof_csv.stat().st_size / 1e6, metrics.stat().st_size / 1e6)
            floors[layout].append(_write_floor(roof_csv.stat().st_size + metrics.stat().st_size, folder))
            if layout not in shares:
                shares[layout] = _field_bytes(metrics)

    def per_bare(seconds: list[float]) -> str:
        """min / median / max of each round's seconds over that round's bare read."""
        return mmm([x / b for x, b in zip(seconds, bares, strict=True)])

    print(f"{runs} rounds in process; bare read_csv {mmm(bares)} s; python control / the bare read {mmm(controls)}")
    for layout in layouts:
        named = "the contract's layout" if layout == "contract" else f"layout {layout!r} (not the contract)"
        print(f"metrics JSON in {named}: {sizes[layout][1]:.0f} MB; roofline + rank {mmm(totals[layout])} s = "
              f"{per_bare(totals[layout])} x the bare read")  # fmt: skip
        accounted = [0.0] * runs
        for _, name, what in _STAGES:
            times = spent.get((layout, name), [0.0] * runs)
            accounted = [a + t for a, t in zip(accounted, times, strict=True)]
            print(f"  {what:58s} {per_bare(times)}")
        rest = [t - a for t, a in zip(totals[layout], accounted, strict=True)]
        print(f"  {'the rest (checks, locks, the results, the page of rows)':58s} {per_bare(rest)}")
        print(f"  write floor: {sum(sizes[layout]):.0f} MB of constant bytes written + fsynced right after = "
              f"{per_bare(floors[layout])} x the bare read")  # fmt: skip
        print("  metrics JSON bytes by operations[] field (share of the file): "
              + ", ".join(f"{k} {100 * v:.1f} %" for k, v in list(shares[layout].items())[:8]))  # fmt: skip
        if layout != layouts[0]:  # paired within each round: the load of the round falls on both
            base, json_stage = layouts[0], "write_metrics"
            whole = [x / y for x, y in zip(totals[layout], totals[base], strict=True)]
            stage = [x / y for x, y in zip(spent[(layout, json_stage)], spent[(base, json_stage)], strict=True)]
            print(f"  x {base!r} in the same round: roofline + rank {mmm(whole)}; metrics JSON stage {mmm(stage)}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3, help="rounds of bare read + a fresh server's roofline and rank")
    ap.add_argument("--in-process", action="store_true", help="call the tools directly, with a profile")
    ap.add_argument("--warm", action="store_true",
                    help="over MCP: call tools/list and wait until the server's background imports are done before "
                    "timing (an agent's session), instead of calling compute_roofline first on a fresh server")
    ap.add_argument("--stages", action="store_true",
                    help="in process: each stage's time x the bare read, the output files' write floor, the metrics "
                    "JSON's bytes by field (the evidence for the contract proposal)")
    ap.add_argument("--layout", choices=LAYOUTS, nargs="+", default=["contract"],
                    help="with --stages: also write the metrics JSON in the proposed layout (each distinct call chain "
                    "once), to measure what it buys")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = make_folder(root, args.rows)
        csv = folder / "category_data" / "sdpa_fwd_ops.csv"
        size_mb = csv.stat().st_size / 1e6
        if args.stages:
            return _stages(root, folder, csv, args.runs, args.layout)
        if args.in_process:
            from sdpa_analyzer.server.roots import DataRoots
            from sdpa_analyzer.server.tools import call

            bare = min(_bare_read(csv) for _ in range(2))
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            call("compute_roofline", DataRoots([root]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
            call("rank_findings", DataRoots([root]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
            prof.disable()
            print(f"in-process roofline + rank: {time.perf_counter() - t0:.2f} s (profiled); bare read {bare:.2f} s")
            pstats.Stats(prof).sort_stats("cumulative").print_stats(int(os.environ.get("BENCH_PROFILE_LINES", "25")))
            pstats.Stats(prof).sort_stats("tottime").print_stats(int(os.environ.get("BENCH_PROFILE_LINES", "25")))
            return 0
        bares, totals, ratios, peaks, controls = [], [], [], [], []
        for k in range(args.runs):  # each round: the bare read, then a fresh server (no cached load) right after
            bare = _bare_read(csv)
            controls.append(_python_control() / bare)
            (folder / "category_data" / "sdpa_fwd_roofline.csv").unlink(missing_ok=True)
            roof_s, rank_s, roof, rank, server_rss_mb = asyncio.run(_over_stdio(root, folder, args.warm))
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
    print(f"min / median / max of {args.runs} rounds: bare pandas.read_csv {mmm(bares)} s; roofline + rank over "
          f"MCP stdio {mmm(totals)} s; ratio {mmm(ratios)}x (target <= {TARGET_RATIO:g}x)")
    print(f"python control (a fixed pure-Python workload) / the bare read, same rounds: {mmm(controls)} "
          "(the machine's drift: the tools' ratio moves with it)")
    ok = statistics.median(ratios) <= TARGET_RATIO
    if peaks:
        print(f"server peak RSS {mmm(peaks, '.0f')} MB (target < {TARGET_RSS_MB:.0f} MB)")
        ok &= max(peaks) < TARGET_RSS_MB
    print(f"targets: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
