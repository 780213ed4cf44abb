"""validate_findings and render_findings_template as services: path checks, metrics lookup, atomic writes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.errors import InputError
from server.findings.metrics_view import MetricsFormatError, load_metrics
from server.findings.template import render_findings_template as render_template
from server.findings.validate import ValidationReport, find_metrics_for, validate_findings_file
from server.folder.read import check_category, read_json_file
from server.roots import DataRoots
from server.writers.atomic import write_text_atomic


class TemplateResult(BaseModel):
    category: str
    findings_file: str = Field(description="where the skeleton was written")
    wrote_main_file: bool = Field(description="False when a findings file existed and was left untouched")
    slots: int = Field(description="number of {{FILL: ...}} prose slots to replace")
    p_items: int
    markdown: str


def validate_findings(
    roots: DataRoots, findings_path: str, tier: str = "compute", comparison_scope: str | None = None
) -> ValidationReport:
    if tier not in ("compute", "system"):
        raise InputError(f"tier={tier!r} is invalid: expected compute or system")
    if comparison_scope not in (None, "standalone", "comparative"):
        raise InputError(f"comparison_scope={comparison_scope!r} is invalid: expected standalone or comparative")
    path = roots.resolve(findings_path, what="findings_path")
    if not path.is_file():
        raise InputError(
            f"findings file not found: {path} — write category_findings/<category>_findings.md first "
            "(render_findings_template gives a skeleton)"
        )
    metrics: dict[str, Any] | None = None
    mpath = find_metrics_for(path)
    if mpath is not None:
        try:  # Decimal parsing keeps each number as written: rule 9 compares the exact spelling
            metrics = load_metrics(roots.resolve(mpath, what="metrics file"))
        except MetricsFormatError as exc:
            raise InputError(f"{mpath}: {exc}") from None
    return validate_findings_file(path, metrics, tier=tier, comparison_scope=comparison_scope)


def render_findings_template(roots: DataRoots, output_dir: str, category: str) -> TemplateResult:
    cat = check_category(category)
    out = roots.resolve(output_dir, what="output_dir")
    mpath = out / "category_data" / f"{cat}_metrics.json"
    csv_path = out / "category_data" / f"{cat}_ops.csv"
    if mpath.is_file():
        metrics = read_json_file(mpath, "metrics JSON")
    elif not out.is_dir():
        raise InputError(f"output_dir not found: {out}")
    elif not csv_path.exists():
        metrics = {"category": cat, "status": "NO_DATA"}
    else:
        raise InputError(f"{mpath} not found — run rank_findings for {cat} first, then render the template")
    text = render_template(metrics, cat)
    main = out / "category_findings" / f"{cat}_findings.md"
    target = main
    wrote_main = True
    if main.exists():  # never overwrite a findings file: the LLM may already have written prose there
        target = main.with_name(f"{cat}_findings.template.md")
        wrote_main = False
    write_text_atomic(target, text)
    return TemplateResult(
        category=cat,
        findings_file=str(target),
        wrote_main_file=wrote_main,
        slots=text.count("{{FILL:"),
        p_items=sum(1 for line in text.splitlines() if line.startswith("### P")),
        markdown=text,
    )
