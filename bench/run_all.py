"""`make bench`: run every benchmark in turn and print its numbers (targets are in each script's docstring)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [
    "bench_perf_models.py",
    "bench_batch_parse.py",
    "bench_server.py",
    "bench_analyze_trace.py",
    "bench_ranks.py",
    "bench_start.py",
    "bench_run.py",
    "bench_hardening.py",
    "bench_findings.py",
]


def main() -> int:
    failed = 0
    for name in BENCHES:
        print(f"== {name}", flush=True)
        rc = subprocess.call([sys.executable, str(HERE / name)])
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
