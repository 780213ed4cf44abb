"""Benchmark: the small adversarial inputs that used to take minutes (issue #12), each through its tool.

Each input is a few hundred KB to a few MB; before the fixes (measured on main, 2-core machine) they took:
CSV row with 250k extra fields 46-116 s; a trace whose last string is '}]'*60000 58 s; a findings line of
'<!--'*50000 55-163 s; 8000 P-items each with a marker 17.7 s. Target: every case under 2 s, and the
separator-filled trace within 3x the same trace without them.

    .venv/bin/python bench/bench_hardening.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from server.roots import DataRoots  # noqa: E402
from server.tools import call  # noqa: E402
from server.tools.base import ToolFailure  # noqa: E402
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

    from server.render.markdown import render_markdown

    for label, prose in (("report prose of '['*200000 (link brackets)", "[" * 200_000),
                         ("report prose of '`a` '*50000 (code spans)", "`a` " * 50_000)):  # fmt: skip
        worst = max(worst, timed(label, lambda prose=prose: render_markdown(prose)))

    ok = worst < 2.0 and sep < 3 * max(base, 0.2)
    print(f"worst {worst:.2f} s (target < 2 s); separators {sep / max(base, 1e-9):.1f}x the plain trace "
          f"(target < 3x): {'OK' if ok else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
