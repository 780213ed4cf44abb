"""`make demo`: synthetic trace → analyze → roofline → rank → findings template → HTML report."""

from __future__ import annotations

from pathlib import Path

from server.cli.main import human_rank, human_roofline
from server.roots import DataRoots
from server.synthetic import build_trace, demo_calls, write_trace
from server.tools.plot_service import write_report
from server.tools.service import compute_roofline, rank_findings
from server.tools.trace_service import analyze


def run_demo(out: Path) -> int:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    roots = DataRoots([out])
    trace_path = out / "demo_trace.json.gz"
    write_trace(build_trace(demo_calls()), trace_path)
    print(f"1. wrote a synthetic H100 profiler trace: {trace_path}")
    analysis = out / "analysis"
    res = analyze(roots, str(trace_path), str(analysis))
    cats = [c.name for c in res.categories]
    print(f"2. analyze_trace -> {analysis} ({res.status}; categories: {', '.join(cats) or 'none'})\n")
    for cat in cats:
        print(f"== {cat}: compute_roofline")
        print(human_roofline(compute_roofline(roots, str(analysis), cat, limit=10)))
        print(f"\n== {cat}: rank_findings")
        print(human_rank(rank_findings(roots, str(analysis), cat)))
        print()
    report = write_report(roots, str(analysis))
    print(f"3. HTML report: {report}")
    print(
        "next: render_findings_template (or `sdpa-analyzer template OUT CATEGORY`) writes the findings skeleton "
        "that the agent in agent.md fills; validate_findings checks it"
    )
    return 0
