"""Benchmark: the small adversarial inputs that used to take minutes (issue #12), each through its tool.

Each input is a few hundred KB to a few MB; before the fixes (measured on main, 2-core machine) they took:
CSV row with 250k extra fields 46-116 s; a trace whose last string is '}]'*60000 58 s; a findings line of
'<!--'*50000 55-163 s; 8000 P-items each with a marker 17.7 s. Target: every case under 2 s, and the
separator-filled trace within 3x the same trace without them.

Padding and size (issue 18), each a small .gz that inflates to hundreds of MB: 256 MB of spaces after
`"traceEvents": [` (~17 s before: a Python loop per byte; target well under 2 s), 768 MB of spaces before the
key (> 2 GB and a misleading "not valid JSON" before; target < 1 GB peak RSS, in a child process, and a normal
analysis), and 2 GiB of spaces against a 1 GiB limit (target: the one-line error naming the limit, in seconds).

    .venv/bin/python bench/bench_hardening.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sdpa_analyzer.server.roots import DataRoots  # noqa: E402
from sdpa_analyzer.server.tools import call  # noqa: E402
from sdpa_analyzer.server.tools.base import ToolFailure  # noqa: E402
from tests.support import FLASH_ROW, kernel_trace, make_folder  # noqa: E402


def timed(label: str, fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    try:
        fn()
        outcome = "ok"
    except ToolFailure as exc:
        outcome = f"refused: {str(exc)[:70]}..."
    seconds = time.perf_counter() - start
    print(f"{label:<52} {seconds:6.2f} s  {outcome}")
    return seconds


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-hardening-"))
    roots = DataRoots([tmp])
    worst = 0.0

    make_folder(tmp, [FLASH_ROW + ",x" * 250_000], name="csv")
    worst = max(worst, timed("CSV row with 250k extra fields (500 KB)", lambda: call(
        "load_category_data", roots, output_dir="csv", category="sdpa_fwd")))  # fmt: skip

    doc = kernel_trace([{}] * 3000)
    plain = tmp / "plain.json"
    plain.write_text(json.dumps(doc))
    base = timed("trace, 3000 calls (1.6 MB)", lambda: call("analyze_trace", roots, trace_path=str(plain),
                                                            output_dir="p"))  # fmt: skip
    doc["traceEvents"][-1]["args"]["note"] = "}]" * 60_000
    hostile = tmp / "hostile.json"
    hostile.write_text(json.dumps(doc))
    sep = timed("same trace, last string '}]'*60000", lambda: call("analyze_trace", roots,
                                                                  trace_path=str(hostile), output_dir="h"))  # fmt: skip
    worst = max(worst, sep)

    findings = tmp / "f" / "category_findings" / "sdpa_fwd_findings.md"
    findings.parent.mkdir(parents=True)
    findings.write_text("# T\n\n## Recommendations\n\n" + "<!--" * 50_000 + "\n")
    worst = max(worst, timed("findings line of '<!--'*50000", lambda: call(
        "validate_findings", roots, findings_path=str(findings))))  # fmt: skip
    pairs = "\n".join(["### P1: x (Lib)", "<!-- impact-begin kind=p_item low=1 mid=2 high=3 -->"] * 8000)
    findings.write_text(f"# T\n\n## Recommendations\n\n{pairs}\n\n## Detailed Analysis\n")
    worst = max(worst, timed("findings with 8000 P-items and markers", lambda: call(
        "validate_findings", roots, findings_path=str(findings))))  # fmt: skip

    worst = max(worst, padding(tmp, roots, doc))
    from sdpa_analyzer.server.render.markdown import render_markdown

    for label, prose in (("report prose of '['*200000 (link brackets)", "[" * 200_000),
                         ("report prose of '`a` '*50000 (code spans)", "`a` " * 50_000)):  # fmt: skip
        worst = max(worst, timed(label, lambda prose=prose: render_markdown(prose)))

    ok = worst < 2.0 and sep < 3 * max(base, 0.2)
    print(f"worst {worst:.2f} s (target < 2 s); separators {sep / max(base, 1e-9):.1f}x the plain trace "
          f"(target < 3x): {'OK' if ok else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


def _padded_gz(path: Path, head: bytes, pad: int, tail: bytes) -> None:
    """head + `pad` spaces + tail, gzip-compressed a block at a time (never held whole)."""
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    block = b" " * (16 << 20)
    with path.open("wb") as fh:
        fh.write(comp.compress(head))
        for _ in range(pad // len(block)):
            fh.write(comp.compress(block))
        fh.write(comp.compress(b" " * (pad % len(block)) + tail))
        fh.write(comp.flush())


_CHILD = r"""
import json, sys, time
from pathlib import Path
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.analyze import analyze_trace
def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
base = hwm()
t = time.perf_counter()
try:
    outcome = analyze_trace(Path(sys.argv[1]), Path(sys.argv[2])).status
except InputError as exc:
    outcome = "refused: " + str(exc)
print(json.dumps({"s": time.perf_counter() - t, "peak_mb": (hwm() - base) / 1024, "outcome": outcome}))
"""


def padding(tmp: Path, roots: DataRoots, doc: dict) -> float:
    """The padding and size cases; returns the worst time of the two that must finish fast."""
    events = json.dumps(doc["traceEvents"]).encode()
    after = tmp / "after.json.gz"
    _padded_gz(after, b'{"traceEvents": [', 256 << 20, events[1:] + b"}")
    fast = timed(f"256 MB of spaces after the '[' ({after.stat().st_size // 1024} KB .gz)", lambda: call(
        "analyze_trace", roots, trace_path=str(after), output_dir="pad1"))  # fmt: skip
    before = tmp / "before.json.gz"
    _padded_gz(before, b"{", 768 << 20, b'"traceEvents": ' + events + b"}")
    res = json.loads(subprocess.run([sys.executable, "-c", _CHILD, str(before), str(tmp / "pad2")], cwd=REPO,
                                    capture_output=True, text=True, check=True).stdout)  # fmt: skip
    print(f"{'768 MB of spaces before the key (' + str(before.stat().st_size // 1024) + ' KB .gz)':<52} "
          f"{res['s']:6.2f} s  peak RSS +{res['peak_mb']:.0f} MB (target < 1024)  {res['outcome'][:60]}")
    bomb = tmp / "bomb.json.gz"
    _padded_gz(bomb, b'{"traceEvents": [', 2 << 30, events[1:] + b"}")
    env = {**os.environ, "SDPA_ANALYZER_MAX_TRACE_BYTES": "1G"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(bomb), str(tmp / "pad3")], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    res3 = json.loads(out)
    print(f"{'2 GiB of spaces, limit 1G (' + str(bomb.stat().st_size // 1024) + ' KB .gz)':<52} {res3['s']:6.2f} s  "
          f"{res3['outcome'][:90]}...")  # fmt: skip
    ok = res["peak_mb"] < 1024 and res["outcome"] == "OK" and "limit" in res3["outcome"]
    print(f"padding and size: {'OK' if ok else 'MISSED'}")
    return fast if ok else float("inf")


if __name__ == "__main__":
    raise SystemExit(main())
