"""`make demo`: synthetic trace → analyze → roofline → rank → findings template → HTML report, as tables."""

from __future__ import annotations

import shutil
from pathlib import Path

from sdpa_analyzer.server.cli.human import human_rank, human_roofline
from sdpa_analyzer.server.cli.wording import cli_words
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace
from sdpa_analyzer.server.tools import call

DEMO_MARKER = ".sdpa-analyzer-demo"  # only a folder holding this (one the demo wrote) is emptied on a re-run


def _fresh(out: Path) -> None:
    """Start from an empty folder, so a previous run's findings never leak into this one; a folder the demo did
    not write is left alone unless empty."""
    if out.exists():
        if (out / DEMO_MARKER).is_file():
            shutil.rmtree(out)
        elif any(out.iterdir()):
            raise InputError(f"{out} exists and was not written by the demo — pass another --output-dir or remove it")
    out.mkdir(parents=True, exist_ok=True)
    (out / DEMO_MARKER).write_text("written by `sdpa-analyzer demo`; the next demo run empties this folder\n")


def run_demo(out: Path) -> int:
    out = out.resolve()
    _fresh(out)
    roots = DataRoots([out])
    trace_path = out / "demo_trace.json.gz"
    write_trace(build_trace(demo_calls()), trace_path)
    print(f"1. wrote a synthetic H100 profiler trace: {trace_path}")
    analysis = out / "analysis"
    res = call("analyze_trace", roots, trace_path=str(trace_path), output_dir=str(analysis))
    cats = [c.name for c in res.categories]
    print(f"2. analyze_trace -> {analysis} ({res.status}; categories: {', '.join(cats) or 'none'})\n")
    for cat in cats:
        print(f"== {cat}: compute_roofline")
        print(cli_words(human_roofline(call("compute_roofline", roots, output_dir=str(analysis), category=cat,
                                            limit=10))))
        print(f"\n== {cat}: rank_findings")
        print(cli_words(human_rank(call("rank_findings", roots, output_dir=str(analysis), category=cat))))
        print()
    report = call("render_report", roots, output_dir=str(analysis))
    print(f"3. HTML report: {report.report_file}")
    print(
        "next: render_findings_template (or `sdpa-analyzer template OUT CATEGORY`) writes the findings skeleton "
        "that the agent in agent.md fills; validate_findings checks it"
    )
    return 0
