"""validate_findings: check a findings file against the contract and the metrics JSON beside it."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.findings.models import ValidationReport
from sdpa_analyzer.server.findings.spec import findings_run_id, metrics_run_id
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.manifest import older_analysis, read_run_id
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.vocab import SCOPE_HELP, Scope, Tier
from sdpa_analyzer.server.writers.atomic import write_text_atomic

MAX_ERRORS_LISTED = 40


class ValidateInput(ToolInput):
    findings_path: Annotated[
        str,
        Field(min_length=1, max_length=4096, description="category_findings/<category>_findings.md under a data root"),
    ]
    tier: Annotated[
        Tier, Field(description="compute: category findings (P-items from the metrics JSON); system: system findings")
    ] = "compute"
    comparison_scope: Annotated[Scope | None, Field(description=SCOPE_HELP + "; default: the metrics JSON's scope")] = (
        None
    )


def _check_runs(path: Path, mpath: Path, metrics: dict[str, Any], roots: DataRoots) -> None:
    """Refuse numbers of another analysis: a metrics JSON of an older run than the folder's, or a findings file
    rendered from another run than the metrics JSON's (folders and files that record no run are not checked)."""
    metrics_run = metrics_run_id(metrics)
    stale = older_analysis(mpath, metrics_run, read_run_id(mpath.parent.parent, roots), "re-run rank_findings")
    if stale is not None:
        raise stale
    text_run = findings_run_id(roots.read_bytes(path, what="findings_path").decode("utf-8", errors="replace"))
    if metrics_run is not None and text_run is not None and text_run != metrics_run:
        raise InputError(
            f"{path} was rendered from another analysis than {mpath.name} (run {text_run[:12]}, not "
            f"{metrics_run[:12]}) — re-run render_findings_template, fill it again"
        )


# What a findings path must not be: another file of the analysis folder (a metrics JSON, an ops CSV, a trace)
# read as markdown would only report missing sections.
_NOT_FINDINGS_SUFFIXES = (".json", ".json.gz", ".gz", ".csv")
_SNIFF_BYTES = 512
# a JSON object or array opening (`{"`, `[{`, `[1`, `[]`, …), which no markdown opens with (`[text](url)` does not)
_JSON_START = re.compile(rb'\s*(\{\s*["}]|\[\s*([\[{"\]]|-?\d|true|false|null))')


def _refuse_other_files(roots: DataRoots, path: Path) -> None:
    """An InputError when `path` is plainly not a findings file: a JSON, CSV or gzip name, or JSON or gzip bytes."""
    name = path.name.lower()
    with roots.open_read(path, what="findings_path") as f:
        head = f.read(_SNIFF_BYTES)
    kind = None
    if head[:2] == b"\x1f\x8b":
        kind = "a gzip file"
    elif _JSON_START.match(head):
        kind = "JSON"
    elif name.endswith(_NOT_FINDINGS_SUFFIXES):
        kind = f"a {name.rsplit('.', 1)[-1].upper()} file"
    if kind is not None:
        raise InputError(
            f"{path} is not a findings file (it is {kind}) — pass category_findings/<category>_findings.md, the "
            "markdown file render_findings_template writes"
        )


def validate_findings(ctx: ToolContext, args: ValidateInput) -> ValidationReport:
    # the validator (markdown-it, the metrics view): imported when the tool runs, never to declare it
    from sdpa_analyzer.server.findings.metrics_view import load_metrics
    from sdpa_analyzer.server.findings.validate import find_metrics_for
    from sdpa_analyzer.server.folder.metrics_file import metrics_document

    roots = ctx.roots
    path = roots.resolve(args.findings_path, what="findings_path")
    if not roots.is_file(path, what="findings_path"):
        raise InputError(
            f"findings file not found: {path} — write category_findings/<category>_findings.md first "
            "(render_findings_template gives a skeleton)"
        )
    _refuse_other_files(roots, path)
    mpath = find_metrics_for(path, roots)
    if mpath is None:
        report = _validate(path, None, None, args, roots)
    else:  # Decimal parsing keeps each number as written: rule 9 compares the exact spelling
        whole = partial(load_metrics, mpath, roots)  # MetricsFormatError names the file
        with metrics_document(mpath, roots, "decimal", whole) as metrics:  # operations[] streamed
            _check_runs(path, mpath, metrics, roots)
            report = _validate(path, mpath, metrics, args, roots)
    # fix the first errors and validate again: a long list would not fit an LLM's context
    listed: dict[str, Any] = {"errors": report.errors[:MAX_ERRORS_LISTED],
                              "warnings": report.warnings[:MAX_ERRORS_LISTED]}  # fmt: skip
    if report.passed and report.resolved_text is not None:
        # the references written out, in place: the orchestrator reads plain markdown with the tools' numbers
        write_text_atomic(roots.write_target(path, what="findings file"), report.resolved_text, roots=roots)
        listed["resolved_file"] = str(path)
    return report.model_copy(update=listed)


def _validate(
    path: Path, mpath: Path | None, metrics: dict[str, Any] | None, args: ValidateInput, roots: DataRoots
) -> ValidationReport:
    from sdpa_analyzer.server.findings.metrics_view import MetricsFormatError
    from sdpa_analyzer.server.findings.validate import validate_findings_file

    try:
        return validate_findings_file(
            path,
            metrics,
            tier=args.tier,
            comparison_scope=args.comparison_scope,
            roots=roots,
            quotable=_rank_summary(path, roots),
        )
    except MetricsFormatError as exc:  # the metrics' content (not its syntax): name the file
        raise InputError(f"{mpath}: {exc}") from None


def _rank_summary(findings: Path, roots: DataRoots) -> dict[str, Any] | None:
    """The ranks summary of a rank folder (load_rank_summary's source): its numbers are tool results the prose of a
    distributed job's findings may quote (the prompt's "Many ranks"). None outside a ranks folder. The ranks reader
    (which imports pandas, ~0.7 s) is imported only when the folder or its parent holds a summary to read."""
    folder = layout.folder_of_findings(findings)
    if not any(_is_file(roots, where / layout.RANKS_SUMMARY) for where in (folder, folder.parent)):
        return None
    from sdpa_analyzer.server.ranks.read import load_summary

    try:
        return load_summary(folder, roots)[1]
    except (InputError, OSError, ValueError):
        return None


def _is_file(roots: DataRoots, path: Path) -> bool:
    try:
        return roots.is_file(path, what="ranks summary")
    except (InputError, OSError):  # outside the roots: no summary of ours
        return False


TOOL = ToolSpec(
    name="validate_findings",
    title="Validate a findings file",
    description=(
        "Check a findings file against the findings contract and the metrics JSON beside it: sections, P-items "
        "in rank order, candidate blocks, Data tables, impact markers and their numbers, and prose that writes "
        "every quantity as a reference ({{P1.op1.time_ms}}). Every error has a rule id, a 1-based line and a "
        "concrete fix; passed is true only when there is none. A passing file's references are written out in "
        "place (resolved_file)."
    ),
    input_model=ValidateInput,
    result_model=ValidationReport,
    run=validate_findings,
    cli=CliSpec("validate", positional=("findings_path",), flags={"comparison_scope": ("--scope",)}),
    agent="step 6: checks the finished file",
)
