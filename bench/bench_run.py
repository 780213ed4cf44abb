"""Benchmark: `sdpa-analyzer run TRACE` (one process) against the separate commands that write the same files.

The separate commands are what a user types without `run`: `analyze`, then `roofline`, `rank` and `template` for
each category (ten processes, each paying the interpreter start and the imports). Each figure is whole processes,
from launch to exit, into a fresh output folder. Two controls run in the same rounds: `import numpy, pandas` in a
fresh interpreter (the floor every process of the chain pays) and a bare parse of the trace
(`orjson.loads` of the decompressed file, the anchor the trace benchmarks use). All of them run once per round, in
rotating order, so the machine's background load falls on each alike; ratios are taken within a round.

The trace: ../shared's 8.6 MB H100 Qwen trace when present (the issue's small trace), else the synthetic demo trace.

    .venv/bin/python bench/bench_run.py [--rounds 5] [--trace PATH]

Exit 1 when `run` is not faster than the separate commands (median over the rounds).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import PYCACHE, bench_env, cli, mmm, rotated_rounds

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACE = Path(os.environ.get("SDPA_SHARED_DIR", REPO.parent / "shared")) / "traces" / "h100" / (
    "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
)
CATEGORIES = ("sdpa_fwd", "sdpa_bwd", "inferenceattention")




def _timed(*commands: list[str]) -> float:
    t0 = time.perf_counter()
    for cmd in commands:
        subprocess.run(cmd, cwd=REPO, env=bench_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - t0


def _separate(trace: Path, out: Path) -> list[list[str]]:
    command_line = cli()
    steps = [[*command_line, "analyze", str(trace), "-o", str(out)]]
    for cat in CATEGORIES:
        steps += [[*command_line, command, str(out), cat] for command in ("roofline", "rank", "template")]
    return steps


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="counted rounds (each runs everything once)")
    ap.add_argument("--trace", type=Path, default=None, help="the trace (default: the shared Qwen trace, else "
                    "the synthetic demo trace)")  # fmt: skip
    args = ap.parse_args()
    PYCACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        trace = args.trace or (SHARED_TRACE if SHARED_TRACE.exists() else None)
        if trace is None:
            from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace

            trace = root / "demo.json.gz"
            write_trace(build_trace(demo_calls()), trace)
        raw = root / "trace.json"
        opener = gzip.open if trace.name.endswith(".gz") else open
        with opener(trace, "rb") as src, open(raw, "wb") as dst:
            shutil.copyfileobj(src, dst)
        parse = f"import orjson; orjson.loads(open({str(raw)!r}, 'rb').read())"
        runs = {
            "import numpy, pandas": lambda: _timed([sys.executable, "-c", "import numpy, pandas"]),
            "bare parse": lambda: _timed([sys.executable, "-c", parse]),
            "run": lambda: _timed([*cli(), "run", str(trace), "-o", str(_fresh(root / "one"))]),
            "separate commands": lambda: _timed(*_separate(trace, _fresh(root / "separate"))),
        }
        times, before, after = rotated_rounds(runs, args.rounds)
        size_mb = raw.stat().st_size / 1e6
    print(f"trace {trace.name} ({size_mb:.1f} MB of JSON); {args.rounds} rounds; load average {before} before, "
          f"{after} after (1, 5, 15 min)")  # fmt: skip
    print(f"{'':<22} {'seconds min / median / max':<28} {'x run':<20} x bare parse")
    for name in times:
        per_run = [t / r for t, r in zip(times[name], times["run"], strict=True)]
        per_parse = [t / p for t, p in zip(times[name], times["bare parse"], strict=True)]
        print(f"{name:<22} {mmm(times[name], '.3f'):<28} {mmm(per_run):<20} {mmm(per_parse)}")
    faster = statistics.median(times["run"]) < statistics.median(times["separate commands"])
    print(f"run faster than the {len(_separate(trace, root))} separate commands: {'PASS' if faster else 'FAIL'}")
    return 0 if faster else 1


if __name__ == "__main__":
    raise SystemExit(main())
