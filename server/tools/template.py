"""render_findings_template: the findings skeleton, every number and table filled from the metrics JSON."""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import Field

from sdpa_analyzer.server.errors import InputError, shorten_message
from sdpa_analyzer.server.findings.spec import SLOT_CLOSE, SLOT_OPEN, metrics_run_id
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.manifest import older_analysis, read_run_id, same_run
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import CategoryArg, OutputDir, resolve_output_dir
from sdpa_analyzer.server.writers.atomic import write_text_atomic


class TemplateInput(ToolInput):
    output_dir: OutputDir
    category: CategoryArg


MAX_SLOTS_LISTED = 60
SLOT_HINT_CHARS = 160


class Slot(ResultModel):
    line: int = Field(description="1-based line of the findings file")
    hint: str = Field(description="what the slot needs (shortened between words)")


class TemplateResult(ResultModel):
    category: str
    findings_file: str = Field(description="where the skeleton was written: read it with the Read tool")
    wrote_main_file: bool = Field(description="False when a findings file existed and was left untouched")
    kept_file: str | None = Field(
        None, description="the findings file that existed and was left unchanged (the skeleton went beside it)"
    )
    slots: int = Field(description="number of {{FILL: ...}} prose slots to replace")
    slot_list: list[Slot] = Field(
        default_factory=list, description=f"where the slots are (the first {MAX_SLOTS_LISTED})"
    )
    p_items: int
    lines: int = Field(description="lines in the file")


def _slot_hint(line: str) -> str:
    return line.split(SLOT_OPEN, 1)[1].split(SLOT_CLOSE, 1)[0].strip()


def render_findings_template(ctx: ToolContext, args: TemplateInput) -> TemplateResult:
    # the folder reader, the ranking and the template (pandas): imported when the tool runs, never to declare it
    from sdpa_analyzer.server.folder.metrics_file import metrics_document
    from sdpa_analyzer.server.folder.read import check_analysis_folder, read_json_file
    from sdpa_analyzer.server.scoring.ranking import OURS

    cat = args.category
    roots = ctx.roots
    out = resolve_output_dir(roots, args.output_dir)
    mpath = out / layout.metrics_json(cat)
    csv_path = out / layout.ops_csv(cat)
    if not roots.is_dir(out, what="output_dir"):
        raise InputError(f"output_dir not found: {out}")
    check_analysis_folder(out, roots)
    if roots.is_file(mpath, what="metrics JSON"):
        with metrics_document(mpath, roots, "float", partial(read_json_file, mpath, "metrics JSON", roots)) as metrics:
            if str(metrics.get("status", "")).upper() == "NO_DATA":  # any writer's: the one-line file
                return _render(ctx, args, {"category": cat, "status": "NO_DATA"})
            if not isinstance(metrics.get(OURS), dict):
                raise InputError(
                    f"{mpath} was not written by sdpa-analyzer's rank_findings (no {OURS} block: another tool's "
                    f"file) — run rank_findings for {cat} first, then render the template"
                )
            return _render(ctx, args, metrics)
    if not roots.exists(csv_path, what="ops CSV"):
        return _render(ctx, args, {"category": cat, "status": "NO_DATA"})
    raise InputError(f"{mpath} not found — run rank_findings for {cat} first, then render the template")


def _render(ctx: ToolContext, args: TemplateInput, metrics: dict[str, Any]) -> TemplateResult:
    from sdpa_analyzer.server.findings.template import render_findings_template as render_template

    cat = args.category
    roots = ctx.roots
    out = resolve_output_dir(roots, args.output_dir)
    mpath = out / layout.metrics_json(cat)
    folder_run = read_run_id(out, roots)
    stale = older_analysis(mpath, metrics_run_id(metrics), folder_run, "re-run rank_findings, then the template")
    if stale is not None:
        raise stale
    text = render_template(metrics, cat)
    main = out / layout.findings_md(cat)
    target = roots.write_target(main, what="findings file")
    wrote_main = True
    with same_run(out, roots, folder_run, written=main.name, tool="render_findings_template"):
        try:  # never overwrite a findings file (nor a link in its place): the LLM may have written prose there
            write_text_atomic(target, text, roots=roots, overwrite=False)
        except FileExistsError:
            target = out / layout.findings_template_md(cat)
            wrote_main = False
            write_text_atomic(target, text, roots=roots)
    lines = text.splitlines()
    slot_list = [
        Slot(line=i + 1, hint=shorten_message(_slot_hint(line), SLOT_HINT_CHARS)) for i, line in enumerate(lines)
        if SLOT_OPEN in line
    ]
    return TemplateResult(
        category=cat,
        findings_file=str(target),
        wrote_main_file=wrote_main,
        kept_file=None if wrote_main else str(main),
        slots=text.count(SLOT_OPEN),
        slot_list=slot_list[:MAX_SLOTS_LISTED],
        p_items=sum(1 for line in lines if line.startswith("### P")),
        lines=len(lines),
    )


TOOL = ToolSpec(
    name="render_findings_template",
    title="Render the findings skeleton",
    description=(
        "Write category_findings/<category>_findings.md with every heading, marker, number and table filled from "
        "<category>_metrics.json (run rank_findings first). Returns the file's path and where its {{FILL: ...}} "
        "prose slots are: read the file, replace each slot with prose, then run validate_findings. An existing "
        "findings file is never overwritten (the skeleton then goes to <category>_findings.template.md)."
    ),
    input_model=TemplateInput,
    result_model=TemplateResult,
    run=render_findings_template,
    cli=CliSpec("template", positional=("output_dir", "category")),
    writes=True,
    agent="step 4: writes the findings skeleton with every number and table in place",
)
