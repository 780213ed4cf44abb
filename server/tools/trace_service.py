"""analyze_trace as a service: path checks against the data roots, then server.ingest does the work."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from server.errors import InputError
from server.ingest.analyze import AnalyzeResult, TraceError
from server.ingest.analyze import analyze_trace as run_analysis
from server.roots import DataRoots

Progress = Callable[[float, float, str], None]


def analyze(
    roots: DataRoots,
    trace_path: str,
    output_dir: str,
    arch: str = "auto",
    trace2_path: str | None = None,
    progress: Progress | None = None,
) -> AnalyzeResult:
    trace = roots.resolve(trace_path, what="trace_path")
    out = roots.resolve(output_dir, what="output_dir")
    trace2 = roots.resolve(trace2_path, what="trace2_path") if trace2_path else None
    try:
        return run_analysis(trace, out, arch=arch or "auto", trace2_path=trace2, progress=progress)
    except TraceError as exc:
        raise InputError(str(exc)) from None


def _default_output(trace: Path) -> Path:
    name = trace.name
    for suffix in (".gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return trace.parent / f"{name}_analysis"


class _Bar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, done: float, total: float, message: str) -> None:
        if not self.tty:
            return
        frac = 0.0 if total <= 0 else max(0.0, min(1.0, done / total))
        filled = int(frac * 30)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {frac * 100:5.1f}% {message[:40]:<40}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def analyze_trace_cli(args: argparse.Namespace, roots: DataRoots) -> int:
    from server.cli.main import emit, table

    out = args.output_dir or str(_default_output(Path(args.trace)))
    bar = _Bar()
    try:
        res = analyze(roots, args.trace, out, args.arch, args.compare, bar)
    finally:
        bar.close()

    def human(r: AnalyzeResult) -> str:
        d = r.model_dump()
        lines = [f"{d.get('status')}: {args.trace} -> {out}"]
        cats = d.get("categories") or []
        if cats:
            rows = [[c.get("name"), c.get("rows"), c.get("instances"), c.get("kernel_time_ms")] for c in cats]
            lines.append(table(["category", "rows", "instances", "kernel ms"], rows))
        for w in d.get("warnings") or []:
            lines.append(f"warning: {w}")
        return "\n".join(lines)

    emit(res, args.json, human)
    return 0


__all__ = ["InputError", "analyze", "analyze_trace_cli"]
