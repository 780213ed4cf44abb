"""Benchmark: the findings tools on a large category — render_findings_template, validate_findings, render_report.

The category is bench_server's generated one (every row the same op name with its own shapes, as a long
training trace with many sequence lengths gives): one finding then holds thousands of members, and its Data
table one row per member. `--one-time` adds the case of every row at one time (same count and mean kernel time,
distinct shapes): members are then told apart by their efficiency alone.

Each tool runs in a child process of its own (a fresh interpreter: its peak RSS is that tool's alone, read from
VmHWM, see `_peak_kib`) over a folder `rank_findings` wrote, at 20,000 and 100,000 rows, with a control in the same
rounds (the metrics JSON read once and split into lines). validate_findings' work is its call, the modules it
imports when it runs timed apart; it is called a second time in the same process (the server's case: the agent
validates up to three times, and the reader keeps its pass over an unchanged file).

Targets: every tool < 1 GB peak RSS at 100,000 rows; template and validator < 5 s at 20,000 rows; time linear in the
rows; validate's work < 0.5 s at 20,000 rows and flat per row (<= 1.5x) to 100,000. The bench prints PASS/FAIL.

Where validate's work goes at 20,000 rows: the reader's one pass over the metrics JSON (reading and splitting the
lines, msgspec's decode of each line's lookup fields, the bracket count and the UTF-8 check of non-ASCII lines), the
checks' parses of the finding's members' operations (2,048 kept parsed), and the findings file's own parse and
checks. A P-item's and the category's numbers are built only when prose types a number. Measured and not kept: one
msgspec call over the whole list (slower than one call per line), `args` kept as msgspec.Raw, the buffered reader's
own line iterator. The UTF-8 check stays: msgspec does not check the strings of fields it skips.
Current figures and the command for each: bench/README.md.

    .venv/bin/python bench/bench_findings.py [--rows 20000 100000] [--repeat 3] [--one-time] [--no-report]
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pandas as pd  # noqa: E402
from bench_server import make_folder  # noqa: E402
from common import mmm  # noqa: E402

TARGET_S = 5.0  # template and validator at 20,000 rows
TARGET_VALIDATE_S = 0.5  # validate_findings' work at 20,000 rows (issue 36)
FLAT_PER_ROW = 1.5  # validate's seconds per row at the largest size, at most this times the smallest size's
TARGET_RSS_MB = 1024.0  # every tool at 100,000 rows
TOOLS = ("render_findings_template", "validate_findings", "render_report")
CONTROL = "control"  # the floor of reading the metrics JSON once: its bytes read and split into lines
# what a tool imports when it runs (not to be declared): timed apart, so that `work` is the tool's own
RUN_IMPORTS = {"validate_findings": (
    "sdpa_analyzer.server.findings.validate", "sdpa_analyzer.server.folder.metrics_file",
    "sdpa_analyzer.server.ranks.read",
)}


def one_time_folder(root: Path, rows: int) -> Path:
    """bench_server's folder with every row at one time: 10 calls of 500 µs."""
    folder = make_folder(root, rows)
    csv = folder / "category_data" / "sdpa_fwd_ops.csv"
    df = pd.read_csv(csv)
    df["operation_count"], df["Kernel Time (µs)_mean"], df["Kernel Time (µs)_sum"] = 10, 500.0, 5000.0
    df.to_csv(csv, index=False)
    return folder


def _arguments(tool: str, folder: Path) -> dict[str, str]:
    if tool == "validate_findings":
        return {"findings_path": str(folder / "category_findings" / "sdpa_fwd_findings.md")}
    if tool == "render_report":
        return {"output_dir": str(folder)}
    return {"output_dir": str(folder), "category": "sdpa_fwd"}


def child(tool: str, root: str, folder: str) -> None:
    """Run one tool in this (fresh) process; print its wall time and this process's peak RSS as JSON."""
    from sdpa_analyzer.server.roots import DataRoots
    from sdpa_analyzer.server.tools import call

    roots = DataRoots([Path(root)])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    for module in RUN_IMPORTS.get(tool, ()):
        importlib.import_module(module)
    imported = time.perf_counter()
    if tool == CONTROL:
        with open(Path(folder) / "category_data" / "sdpa_fwd_metrics.json", "rb") as fh:
            while block := fh.read(8 << 20):
                block.split(b"\n")
    else:
        call(tool, roots, **_arguments(tool, Path(folder)))
    done = time.perf_counter()
    again = None
    if tool == "validate_findings":  # a server's agent validates the same file up to three times
        call(tool, roots, **_arguments(tool, Path(folder)))
        again = time.perf_counter() - done
    print(json.dumps({"seconds": done - t, "work_s": done - imported, "peak_rss_mb": _peak_kib() / 1024,
                      "import_rss_mb": before / 1024, "again_s": again}))


def _peak_kib() -> int:
    """This process's peak RSS. On Linux VmHWM (of this process's own memory since its exec): getrusage's ru_maxrss
    also carries the high-water mark of the parent it was spawned from (the kernel keeps it across exec, and this
    bench's parent held a whole ranked category), which made every tool read the parent's ~650 MB."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _in_child(tool: str, root: Path, folder: Path) -> dict[str, float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", tool, str(root), str(folder)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(
    rows: int, repeat: int, one_time: bool = False, tools: tuple[str, ...] = TOOLS
) -> dict[str, dict[str, list[float]]]:
    """Per tool: the wall seconds and peak RSS (MB) of each repetition. The template runs first in each round (the
    validator reads the file it writes; the findings file is removed before each template run so it is rewritten)."""
    from sdpa_analyzer.server.roots import DataRoots
    from sdpa_analyzer.server.tools import call

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = one_time_folder(root, rows) if one_time else make_folder(root, rows)
        call("rank_findings", DataRoots([root]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
        size_mb = (folder / "category_data" / "sdpa_fwd_metrics.json").stat().st_size / 1e6
        out: dict[str, dict[str, list[float]]] = {t: {"seconds": [], "peak_rss_mb": []} for t in (*tools, CONTROL)}
        for _ in range(repeat):
            (folder / "category_findings" / "sdpa_fwd_findings.md").unlink(missing_ok=True)
            for tool in (*tools, CONTROL):
                got = _in_child(tool, root, folder)
                out[tool]["seconds"].append(got["seconds"])
                out[tool]["peak_rss_mb"].append(got["peak_rss_mb"])
                out[tool].setdefault("work_s", []).append(got["work_s"])
                if got.get("again_s") is not None:
                    out[tool].setdefault("again_s", []).append(got["again_s"])
        out["_json"] = {"size_mb": [size_mb]}
        return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each tool per size (min/median/max printed)")
    ap.add_argument("--one-time", action="store_true", help="also the case of every row at one time")
    ap.add_argument("--no-report", action="store_true", help="template and validator only (the report is slow)")
    ap.add_argument("--child", nargs=3, metavar=("TOOL", "ROOT", "FOLDER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    ok = True
    tools = TOOLS[:2] if args.no_report else TOOLS
    cases = [("distinct times", False), *([("one time", True)] if args.one_time else [])]
    for label, one_time in cases:
        results = {rows: run(rows, args.repeat, one_time, tools) for rows in sorted(args.rows)}
        print(f"{label} (seconds and peak RSS in MB: min/median/max of {args.repeat} runs, each in a fresh process; "
              f"{CONTROL}: the metrics JSON read once and split into lines)")
        smallest = min(results)
        for rows, res in results.items():
            print(f"  {rows:>7,} rows, metrics JSON {res['_json']['size_mb'][0]:.0f} MB")
            for tool in (*tools, CONTROL):
                secs, rss = res[tool]["seconds"], res[tool]["peak_rss_mb"]
                ratio = ""
                if rows != smallest:
                    base = statistics.median(results[smallest][tool]["seconds"])
                    ratio = f"  ({statistics.median(secs) / base:.1f}x the {smallest:,}-row time for " \
                            f"{rows / smallest:g}x the rows)"
                rss_ok = tool == CONTROL or max(rss) < TARGET_RSS_MB
                ok &= rss_ok
                time_ok = tool in ("render_report", CONTROL) or rows > 20_000 or max(secs) < TARGET_S
                ok &= time_ok
                print(f"    {tool:24s} {mmm(secs)} s  peak {mmm(rss, '.0f')} MB "
                      f"[RSS < {TARGET_RSS_MB:.0f} MB: {'PASS' if rss_ok else 'FAIL'}]{ratio}")
            work = res["validate_findings"]["work_s"]
            per_control = [v / c for v, c in zip(work, res[CONTROL]["seconds"], strict=True)]
            print(f"    validate_findings' work (the call, its run-time imports apart) {mmm(work)} s = "
                  f"{mmm(per_control)}x the {CONTROL} of the same round")
            again = res["validate_findings"]["again_s"]
            again_ratio = [a / c for a, c in zip(again, res[CONTROL]["seconds"], strict=True)]
            print(f"    validate_findings called again in the same process (a server's agent validates up to three "
                  f"times) {mmm(again)} s = {mmm(again_ratio)}x the {CONTROL}")
        ok &= _validate_checks(results)
    print(f"targets (every tool < {TARGET_RSS_MB:.0f} MB peak RSS; template and validate < {TARGET_S:g} s at 20,000 "
          f"rows; validate < {TARGET_VALIDATE_S:g} s at 20,000 rows and flat per row): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def _validate_checks(results: dict[int, dict[str, dict[str, list[float]]]]) -> bool:
    """validate_findings: under TARGET_VALIDATE_S at 20,000 rows, and its seconds per row flat from the smallest size
    to the largest (medians: a loaded machine slows single rounds, not the trend)."""
    ok = True
    per_row = {rows: statistics.median(res["validate_findings"]["work_s"]) / rows for rows, res in results.items()}
    if 20_000 in results:
        secs = results[20_000]["validate_findings"]["work_s"]
        met = statistics.median(secs) < TARGET_VALIDATE_S
        ok &= met
        print(f"  validate's work at 20,000 rows: median {statistics.median(secs):.2f} s "
              f"[< {TARGET_VALIDATE_S:g} s: {'PASS' if met else 'FAIL'}]")
    if len(per_row) > 1:
        small, large = min(per_row), max(per_row)
        growth = per_row[large] / per_row[small]
        flat = growth <= FLAT_PER_ROW
        ok &= flat
        print(f"  validate's work per row: {per_row[small] * 1e6:.1f} us at {small:,} rows, "
              f"{per_row[large] * 1e6:.1f} us at {large:,} rows = {growth:.2f}x "
              f"[flat, <= {FLAT_PER_ROW:g}x: {'PASS' if flat else 'FAIL'}]")
    return ok


if __name__ == "__main__":
    sys.exit(main())
