"""Benchmark: the findings tools on a large category — render_findings_template, validate_findings, render_report.

The category is bench_server's generated one (every row the same op name with its own shapes, as a long
training trace with many sequence lengths gives): one finding then holds thousands of members, and its Data
table one row per member. Before the member lookup was indexed (2-core machine, 20,000 rows): the template took
367 s and the validator more than 530 s (it compared every member with every operation of its name).

The second case gives every row the same time (the same count and mean kernel time, distinct shapes, hence
distinct efficiencies): members are then told apart by their efficiency alone. Before runs of one time were
indexed by efficiency (issue 18), 4,000 such rows took tens of seconds and 8,000 about 144 s.

Target: template and validator each < 5 s at 20,000 rows, in both cases (linear: ~10x the 2,000-row time, not
~100x).

    .venv/bin/python bench/bench_findings.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pandas as pd  # noqa: E402
from bench_server import make_folder  # noqa: E402

from server.roots import DataRoots  # noqa: E402
from server.tools import call  # noqa: E402

TARGET_S = 5.0


def _timed(fn: object, *args: object, **kwargs: object) -> float:
    t = time.perf_counter()
    fn(*args, **kwargs)  # type: ignore[operator]
    return time.perf_counter() - t


def one_time_folder(root: Path, rows: int) -> Path:
    """bench_server's folder with every row at one time: 10 calls of 500 µs."""
    folder = make_folder(root, rows)
    csv = folder / "category_data" / "sdpa_fwd_ops.csv"
    df = pd.read_csv(csv)
    df["operation_count"], df["Kernel Time (µs)_mean"], df["Kernel Time (µs)_sum"] = 10, 500.0, 5000.0
    df.to_csv(csv, index=False)
    return folder


def run(rows: int, one_time: bool = False) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = one_time_folder(root, rows) if one_time else make_folder(root, rows)
        roots = DataRoots([root])
        common = {"output_dir": str(folder), "category": "sdpa_fwd"}
        call("rank_findings", roots, arch="h100-sxm", **common)
        findings = folder / "category_findings" / "sdpa_fwd_findings.md"
        return {
            "template": _timed(call, "render_findings_template", roots, **common),
            "validate": _timed(call, "validate_findings", roots, findings_path=str(findings)),
            "report": _timed(call, "render_report", roots, output_dir=str(folder)),
        }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000)
    args = ap.parse_args()
    worst = 0.0
    for label, one_time in (("distinct times", False), ("one time", True)):
        small = run(args.rows // 10, one_time)
        large = run(args.rows, one_time)
        print(label)
        for tool in large:
            ratio = large[tool] / small[tool] if small[tool] > 0 else float("nan")
            print(f"  {tool:9s} {args.rows // 10:>7,} rows {small[tool]:6.2f} s   {args.rows:>7,} rows "
                  f"{large[tool]:6.2f} s   ({ratio:.1f}x for 10x the rows)")
        worst = max(worst, large["template"], large["validate"])
    ok = worst < TARGET_S
    print(f"template + validate worst {worst:.2f} s at {args.rows:,} rows (target < {TARGET_S:g} s): "
          f"{'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
