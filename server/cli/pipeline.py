"""`sdpa-analyzer run TRACE`: the whole answer on one trace in one process — analyze_trace, then for each
category compute_roofline, rank_findings and render_findings_template, then (with `--report`) render_report.

Each step is the tool itself, called through `execute` as its own command calls it, so the files are those the
separate commands write (tests/server/cli/test_run.py compares them byte for byte); one process pays the imports
once and scores each category once (the scoring cache serves the roofline's table to the ranking). The options
are the steps' input fields, each declared once by its tool and given to every step that takes it (`--arch`
scores every step against that GPU, as passing it to each command does); the chain sets the folder and the
category itself. Every step's arguments are checked before the first one writes, so a bad choice is one line
and nothing is written.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel

from sdpa_analyzer.server.cli.options import (
    add_field_options,
    add_positionals,
    add_root_option,
    add_settings,
    cli_roots,
    settings_from,
    tool_arguments,
)
from sdpa_analyzer.server.cli.output import human_text, print_json, print_text
from sdpa_analyzer.server.cli.progress import ProgressBar
from sdpa_analyzer.server.cli.wording import PROG, cli_words
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.result import AnalyzeResult
from sdpa_analyzer.server.tools import TOOLS_BY_NAME
from sdpa_analyzer.server.tools.base import ToolContext, ToolFailure, ToolSpec, execute, parse_input
from sdpa_analyzer.server.vocab import CATEGORIES, COMPARATIVE

COMMAND = "run"
ANALYZE = "analyze_trace"
PER_CATEGORY = ("compute_roofline", "rank_findings", "render_findings_template")
REPORT = "render_report"
# what the chain passes itself: the analysis folder analyze_trace wrote, each category in turn, the page of rows
# the roofline table shows (its CSV holds every row), the report's default file name
SET_BY_CHAIN = frozenset({"output_dir", "category", "limit", "offset", "output"})


def _specs() -> list[ToolSpec[Any, Any]]:
    return [TOOLS_BY_NAME[name] for name in (ANALYZE, *PER_CATEGORY, REPORT)]


def add_run_command(sub: Any) -> None:
    analyze = TOOLS_BY_NAME[ANALYZE]
    steps = " -> ".join(TOOLS_BY_NAME[n].cli.command for n in (ANALYZE, *PER_CATEGORY))
    p = sub.add_parser(
        COMMAND,
        help=f"the whole answer on one trace: {steps} for each category, in one process",
        description=cli_words(
            f"The whole answer on one trace, in one process: {steps} for every category (and, with --report, "
            "the HTML report), writing exactly the files the separate commands write. Each option goes to every "
            "step that takes it; with --compare the ranking compares the two traces unless --scope says otherwise."
        ),
    )
    add_positionals(p, analyze)
    taken = set(analyze.cli.positional)
    for spec in _specs():
        taken |= set(add_field_options(p, spec, skip=taken | (SET_BY_CHAIN if spec is not analyze else set())))
        add_settings(p, spec.cli.settings)
    p.add_argument("--report", action="store_true", help=f"also write the HTML report ({PROG} report)")
    p.add_argument("--json", action="store_true", help="print every step's structured result (as the MCP tools "
                   "return them), by tool and category")  # fmt: skip
    add_root_option(p, "no restriction")
    p.set_defaults(fn=cmd_run)


def _arguments(args: argparse.Namespace, spec: ToolSpec[Any, Any], **chain: Any) -> dict[str, Any]:
    """The step's arguments: what the command line gave for its fields, the scope of a comparative analysis
    when none was given, and what the chain sets."""
    arguments = tool_arguments(args, spec)
    fields = spec.input_model.model_fields
    if "comparison_scope" in fields and "comparison_scope" not in arguments and getattr(args, "trace2_path", None):
        arguments["comparison_scope"] = COMPARATIVE  # two traces: rank what trace 2 gains, as analyze set it up
    return {**arguments, **{k: v for k, v in chain.items() if k in fields}}


def _check_arguments(args: argparse.Namespace) -> None:
    """Every step's arguments, validated before the first step writes (placeholders for what the chain sets)."""
    for spec in _specs():
        if spec.name != REPORT or args.report:
            parse_input(spec, _arguments(args, spec, output_dir=".", category=CATEGORIES[0]))
    if getattr(args, "comparison_scope", None) == COMPARATIVE and not getattr(args, "trace2_path", None):
        raise InputError(  # rank_findings would refuse it after analyze and roofline wrote: said before them
            "--scope comparative needs a second trace to compare with — pass --compare TRACE2, or leave --scope out"
        )


def _step(spec: ToolSpec[Any, Any], ctx: ToolContext, arguments: dict[str, Any], where: str) -> BaseModel:
    try:
        return execute(spec, ctx, arguments)
    except ToolFailure as exc:  # the failing step named; what the steps before it wrote is complete
        raise ToolFailure(f"{spec.cli.command}{where}: {exc}", internal=exc.internal) from None


def cmd_run(args: argparse.Namespace) -> int:
    analyze, *per_category, report = _specs()
    _check_arguments(args)
    results: dict[str, Any] = {}
    bar = ProgressBar()
    try:
        settings = [s for spec in _specs() for s in spec.cli.settings]
        ctx = ToolContext(cli_roots(args), bar, **settings_from(args, settings))
        analyzed = _step(analyze, ctx, _arguments(args, analyze), "")
        bar.close()  # the other steps send no progress worth a bar
        assert isinstance(analyzed, AnalyzeResult)
        results[analyze.name] = analyzed
        _show(args, analyze, analyzed)
        folder = analyzed.output_dir
        for cat in CATEGORIES:
            results[cat] = {}
            for spec in per_category:
                result = _step(spec, ctx, _arguments(args, spec, output_dir=folder, category=cat), f" {cat}")
                results[cat][spec.name] = result
                _show(args, spec, result, cat)
        if args.report:
            results[report.name] = _step(report, ctx, _arguments(args, report, output_dir=folder), "")
            _show(args, report, results[report.name])
    finally:
        bar.close()
    if args.json:
        print_json(results)
    else:
        print_text(f"\nnext: fill the prose slots of the findings files above (the agent in agent.md does it), then "
                   f"{PROG} validate FILE")  # fmt: skip
    return 0


def _show(args: argparse.Namespace, spec: ToolSpec[Any, Any], result: BaseModel, category: str | None = None) -> None:
    """Each step's table as soon as it is done (a category without attention ops is one line)."""
    if args.json:
        return
    if category is not None and spec.name == PER_CATEGORY[0]:
        if getattr(result, "status", None) == "NO_DATA":
            print_text(f"\n== {category}: no attention ops of this category")
            return
        print_text(f"\n== {category}")
    if category is not None and getattr(result, "status", None) == "NO_DATA":
        return  # the category's line said it
    print_text(human_text(spec.name, result))
