"""validate_findings: check a `<cat>_findings.md` against prompts/findings_format.md and its metrics JSON.

Every broken rule becomes a FindingError with a rule id (`R<n>-<what>`, n = the rule number of the
spec, R0 = unfilled template slots), a 1-based line and a concrete fix. Arbitrary text never raises:
the only exceptions are a missing file (FileNotFoundError), a bad argument or a malformed metrics
JSON (ValueError), each with a one-line message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdpa_analyzer.server.findings.bare import check_bare
from sdpa_analyzer.server.findings.candidates import (
    check_candidate_set,
    check_detail_numbers,
    check_stray_detail_markers,
    detail_marker,
    sub_section_lines,
)
from sdpa_analyzer.server.findings.claims import check_claims, check_form_factor, claims_for
from sdpa_analyzer.server.findings.document import Collector, Document, parse_document
from sdpa_analyzer.server.findings.grounding import Grounding, build_grounding, skeleton_for
from sdpa_analyzer.server.findings.items import (
    check_impact_line,
    check_labels,
    check_marker_numbers,
    check_p_item_set,
    check_stray_p_markers,
    check_title,
    check_warning_line,
    p_item_marker,
)
from sdpa_analyzer.server.findings.markdown import read_blocks, split_cells, structural_lines
from sdpa_analyzer.server.findings.metrics_view import MetricsView, view_metrics
from sdpa_analyzer.server.findings.models import FileKind, ValidationReport
from sdpa_analyzer.server.findings.owners import (
    Owner,
    Suppressed,
    check_block_titles,
    report_block_owners,
    report_item_owners,
    resolve_owners,
)
from sdpa_analyzer.server.findings.prose import Run, check_run, read_runs
from sdpa_analyzer.server.findings.references import (
    RESOLVED_LINE,
    RefTable,
    Resolution,
    reference_table,
    resolve,
    strip_reference_list,
)
from sdpa_analyzer.server.findings.spec import NO_DATA_SENTENCE, RUN_LINE_FOUND, SLOT_OPEN
from sdpa_analyzer.server.findings.tables import check_table_rows, data_table
from sdpa_analyzer.server.findings.wording import (
    check_citation,
    check_gpu,
    check_language,
    check_scope_words,
    check_verdicts,
    comparison_fix,
    facts_for,
)
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots
from sdpa_analyzer.server.vocab import SCOPES, TIERS

_SLOT = re.compile(r"\{\{\s*FILL\s*:", re.I)
OURS_BLOCK = "sdpa_analyzer"  # the metrics JSON's block rank_findings writes (server.scoring.ranking.OURS)
_SPEC_PLACEHOLDER = re.compile(
    r"<(short title|title|Library|one sentence[^<>]*|one or two sentences[^<>]*|why [^<>]*)>"
)
_STATUS_ERROR = re.compile(r"^[\s>*_#-]*status[*_\s]*:[*_\s]*error\b", re.I)
_TOP_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_GPU_HINT = re.compile(r"\d{2}")  # a GPU model name has two digits in a row: no run without them names one
_SECTION_HEADING = re.compile(r"^##\s+(Recommendations|Detailed Analysis)\s*$")


def find_metrics_for(findings_path: Path, roots: DataRoots = UNRESTRICTED) -> Path | None:
    """`<out>/category_findings/<cat>_findings.md` -> `<out>/category_data/<cat>_metrics.json` if it exists
    (checked through the data roots: a metrics file linked from outside them is refused, not skipped)."""
    path = Path(findings_path)
    category = layout.category_of_findings(path)
    if category is None:
        return None
    candidate = layout.folder_of_findings(path) / layout.metrics_json(category)
    return candidate if roots.is_file(candidate, what="metrics JSON") else None


def validate_findings_file(
    findings_path: Path,
    metrics: dict[str, Any] | None,
    tier: str = "compute",
    comparison_scope: str | None = None,
    roots: DataRoots = UNRESTRICTED,
    quotable: dict[str, Any] | None = None,
) -> ValidationReport:
    """Validate one findings file; `metrics` is the parsed `<cat>_metrics.json` (None: structure only); `quotable`:
    another tool result whose numbers and names any prose may quote (a distributed job's ranks summary)."""
    path = Path(findings_path)
    if roots.is_dir(path, what="findings path"):
        raise IsADirectoryError(f"findings path is a folder, not a file: {path} (pass .../<cat>_findings.md)")
    if not roots.is_file(path, what="findings path"):
        raise FileNotFoundError(
            f"findings file not found: {path} (write it first; render_findings_template gives the skeleton)"
        )
    text = roots.read_bytes(path, what="findings file").decode("utf-8", errors="replace")
    return validate_findings_text(text, metrics, tier, comparison_scope, quotable)


def validate_findings_text(
    text: str,
    metrics: dict[str, Any] | None,
    tier: str = "compute",
    comparison_scope: str | None = None,
    quotable: dict[str, Any] | None = None,
) -> ValidationReport:
    if tier not in TIERS:
        raise ValueError(f"tier={tier!r} is invalid: expected one of {', '.join(TIERS)}")
    if comparison_scope is not None and comparison_scope not in SCOPES:
        raise ValueError(f"comparison_scope={comparison_scope!r} is invalid: expected one of {', '.join(SCOPES)}")
    view = view_metrics(metrics) if metrics is not None else None
    out = Collector()
    written = text.splitlines()
    refs: References | None = None
    lines = blank_reference_list(written)
    if view is not None and metrics is not None and view.status == "OK":
        table = reference_table(metrics, view, quotable)
        resolution = resolve(lines, table)
        # strict (every quantity a reference) for a metrics JSON of ours; an orchestrator's (no block of ours) had no
        # template to list references: its prose is checked against its own fields, as numbers
        refs = References(table, resolution, RESOLVED_LINE in text, isinstance(metrics.get(OURS_BLOCK), dict))
        lines = resolution.resolved
        for problem in resolution.problems:
            out.error(problem.rule, problem.line, problem.message, problem.fix, edit=(problem.old, problem.new))
    _check_slots(lines, out)
    scope = _resolve_scope(comparison_scope, view, lines, out)
    blocks = read_blocks(lines)
    structural = structural_lines(lines, blocks)
    kind: FileKind
    p_items = 0
    if any(_STATUS_ERROR.match(line) for line in structural):
        kind = "error"
        _check_error_file(structural, view, out)
    elif _is_no_data(structural):
        kind = "no_data"
        _check_no_data_file(structural, view, out)
    else:
        doc = parse_document(lines, blocks, out)
        p_items = len(doc.p_items)
        kind = _check_findings(doc, metrics, view, tier, scope, out, quotable, refs)
    if out.dropped:
        out.warn("R-truncated", None, f"{out.dropped} more error(s) not listed.", "Fix the errors above and re-run.")
    return ValidationReport(
        passed=not out.errors,
        errors=out.errors,
        warnings=out.warnings,
        error_count=len(out.errors) + out.dropped,
        p_items=p_items,
        scope=scope,
        tier=tier,
        kind=kind,
        metrics_checked=view is not None,
        references=refs.resolution.count if refs is not None else 0,
        resolved_text=resolved_file_text(written, refs) if refs is not None and refs.resolution.count else None,
    )


@dataclass(frozen=True)
class References:
    """The file's references: their table, the file resolved and masked, and whether validate_findings wrote it."""

    table: RefTable
    resolution: Resolution
    resolved: bool
    strict: bool = True


def blank_reference_list(lines: list[str]) -> list[str]:
    """The template's reference list (an HTML comment) as blank lines: line numbers stay those of the file."""
    kept = strip_reference_list(lines)
    if len(kept) == len(lines):
        return lines
    out, k = [], 0
    for line in lines:
        if k < len(kept) and line == kept[k]:
            out.append(line)
            k += 1
        else:
            out.append("")
    return out


def resolved_file_text(written: list[str], refs: References) -> str:
    """What validate_findings writes once the file passes: references written out, the reference list gone, and
    RESOLVED_LINE after the title (the orchestrator reads plain markdown; a re-validation knows its numbers)."""
    lines = strip_reference_list(resolve(written, refs.table).resolved)
    if RESOLVED_LINE not in lines:
        at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
        while at < len(lines) and RUN_LINE_FOUND.match(lines[at]):
            at += 1
        lines.insert(at, RESOLVED_LINE)
    return "\n".join(lines).rstrip("\n") + "\n"


def _check_slots(lines: list[str], out: Collector) -> None:
    """R0: template slots (`{{FILL: ...}}`) and the spec's own `<placeholders>` left in the file."""
    for index, line in enumerate(lines):
        close = -1  # the `}}` after the latest slot, found once for all the slots before it (linear)
        for match in _SLOT.finditer(line):
            if close < match.end() and close != -2:
                close = line.find("}}", match.end())
                close = -2 if close < 0 else close  # none: none for the later slots either
            stop = close + 2 if close >= 0 else match.start() + 60
            slot = line[match.start() : min(stop, match.start() + 90)]
            out.error(
                "R0-unfilled-slot",
                index,
                f"unfilled template slot `{slot}`.",
                "Replace the whole `{{FILL: ...}}` with your own text, following its hint.",
            )
        placeholder = _SPEC_PLACEHOLDER.search(line)
        if placeholder:
            out.error(
                "R0-placeholder",
                index,
                f"placeholder `{placeholder.group(0)}` copied from the spec.",
                "Replace it with the real text.",
            )


def _resolve_scope(argument: str | None, view: MetricsView | None, lines: list[str], out: Collector) -> str:
    metrics_scope = view.scope if view is not None and view.scope in SCOPES else None
    if argument is not None:
        if metrics_scope is not None and metrics_scope != argument:
            out.error(
                "R5-scope",
                None,
                f"comparison_scope={argument} but the metrics JSON was ranked {metrics_scope}.",
                f"Validate with comparison_scope={metrics_scope}, or re-run rank_findings with {argument} (a "
                "comparative ranking needs a folder analyzed from two traces).",
            )
        return argument
    if metrics_scope is not None:
        return metrics_scope
    for line in lines:
        if line.lstrip().startswith("|"):
            cells = split_cells(line)
            if "Args (T1)" in cells or "Trace 1 Time (ms)" in cells:
                return "comparative"
    return "standalone"


def _is_no_data(lines: list[str]) -> bool:
    if not any(NO_DATA_SENTENCE.lower() in line.lower() for line in lines):
        return False
    return not any(_SECTION_HEADING.match(line) for line in lines)


def _check_no_data_file(lines: list[str], view: MetricsView | None, out: Collector) -> None:
    """Rule 12: the sentence, optional headings, nothing else."""
    for index, line in enumerate(lines):
        text = line.strip()
        if not text or _TOP_HEADING.match(line) or NO_DATA_SENTENCE.lower() in text.lower():
            continue
        out.error(
            "R12-no-data-extra",
            index,
            "a no-data findings file holds only the no-data sentence.",
            f"Delete this line; the file says just '{NO_DATA_SENTENCE}'.",
        )
    if view is not None and view.status == "OK" and (view.operations or view.findings):
        out.error(
            "R12-status-mismatch",
            None,
            f"the metrics JSON has {len(view.operations)} operation(s) and {len(view.findings)} finding(s).",
            "Write the findings (render_findings_template) instead of the no-data file.",
        )


def _check_error_file(lines: list[str], view: MetricsView | None, out: Collector) -> None:
    """Rule 12: `Status: ERROR`, the error text, and no findings at all."""
    status = next(i for i, line in enumerate(lines) if _STATUS_ERROR.match(line))
    forbidden = re.compile(r"^###\s+P\d|<!--\s*(impact-begin|reasoning-candidate)|^\s*\|")
    for index, line in enumerate(lines):
        if forbidden.search(line):
            out.error(
                "R12-error-findings",
                index,
                "a Status: ERROR file must hold no findings, markers or tables.",
                "Delete it: after a tool failure, report the error only; never analyze the raw CSV.",
            )
    cause = _STATUS_ERROR.sub("", lines[status]).strip(" *_:-—.")
    others = [line for i, line in enumerate(lines) if i != status and line.strip() and not _TOP_HEADING.match(line)]
    if not cause and not others:
        out.error(
            "R12-error-cause",
            status,
            "Status: ERROR without the error message.",
            "Add the tool's error text, e.g. `Error: <message from the failed tool>`.",
        )
    if view is not None and view.status == "OK":
        out.error(
            "R12-status-mismatch",
            status,
            f"the metrics JSON has status OK with {len(view.findings)} finding(s), not a failure.",
            "Write the findings (render_findings_template) instead of a Status: ERROR file.",
        )


def _check_findings(
    doc: Document,
    metrics: dict[str, Any] | None,
    view: MetricsView | None,
    tier: str,
    scope: str,
    out: Collector,
    quotable: dict[str, Any] | None = None,
    refs: References | None = None,
) -> FileKind:
    if view is not None and view.status == "ERROR":
        out.error(
            "R12-error-expected",
            None,
            f"the metrics JSON has status ERROR ({(view.error or '')[:120]}).",
            "Replace the file with `Status: ERROR` and that error; write no findings.",
        )
        view = None  # nothing to compare the numbers and cells with
    elif view is not None and view.status == "NO_DATA":
        out.error(
            "R12-status-mismatch",
            None,
            "the metrics say NO_DATA (no attention ops in the trace).",
            f"Replace the file with the single sentence '{NO_DATA_SENTENCE}'.",
        )
        view = None
    expected = [f.rank for f in view.findings] if view is not None and view.status == "OK" else None
    findings = {f.rank: f for f in view.findings} if view is not None else {}
    operations = view.operations if view is not None else []
    empty = (expected == []) or (expected is None and not doc.p_items and not doc.candidates)
    if empty:
        _check_empty_sections(doc, out)
    grounding = None
    if view is not None and metrics is not None:
        grounding = build_grounding(metrics, view, skeleton_for(metrics, view), quotable)
    runs = read_runs(doc) if grounding is not None else []
    item_owners, block_owners = resolve_owners(doc, runs, view.findings if view else [], grounding)
    hidden = Suppressed()
    check_p_item_set(doc, expected, findings, out)
    report_item_owners(doc, item_owners, runs, findings, out, hidden)
    wanted = set(expected) if expected is not None else None
    seen: set[int] = set()
    for item, owner in zip(doc.p_items, item_owners, strict=True):
        if wanted is not None and (item.rank not in wanted or item.rank in seen):
            continue  # an invented or repeated P-item: R2-p-items / R11-not-empty say delete it, nothing else
        seen.add(item.rank)
        finding = findings.get(owner.content)
        check_title(item, finding, out)
        labels = check_labels(doc, item, out)
        marker = p_item_marker(doc, item, out)
        check_impact_line(doc, item, marker, labels, finding, out)
        if marker is not None and finding is not None:
            check_marker_numbers(marker, finding, f"P{item.rank} p_item", out)
        check_warning_line(doc, item, marker, finding, out)
    check_stray_p_markers(doc, out)
    check_candidate_set(doc, expected, tier, out)
    report_block_owners(doc, block_owners, runs, out, hidden)
    for candidate, owner in zip(doc.candidates, block_owners, strict=True):
        finding = findings.get(owner.content) if candidate.rank is not None else None
        labels = sub_section_lines(doc, candidate, out)
        if tier == "compute":
            table = data_table(doc, candidate, labels, scope, out)
            if table is not None and view is not None:
                check_table_rows(table, candidate, finding, operations, scope, out)
        marker = detail_marker(doc, candidate, labels, finding, out)
        if marker is not None:
            check_detail_numbers(doc, marker, finding, out)
    check_stray_detail_markers(doc, out)
    if grounding is not None and metrics is not None and view is not None:
        check_block_titles(doc, item_owners, block_owners, runs, findings, out)
        _check_prose(doc, metrics, view, scope, runs, (item_owners, block_owners), grounding, out, refs)
    out.errors = [error for error in out.errors if not hidden.hides(error.rule, error.line)]
    return "empty" if empty else "findings"


def _check_prose(
    doc: Document,
    metrics: dict[str, Any],
    view: MetricsView,
    scope: str,
    runs: list[Run],
    owners: tuple[list[Owner], list[Owner]],
    grounding: Grounding,
    out: Collector,
    refs: References | None = None,
) -> None:
    """Rules 13-18 on every run of prose, each against the rank whose content its region holds."""
    item_owners, block_owners = owners
    ranks = set(grounding.ranks)
    gpu_block = metrics.get("sdpa_analyzer") if isinstance(metrics.get("sdpa_analyzer"), dict) else {}
    gpu_named = gpu_block.get("gpu") if isinstance(gpu_block.get("gpu"), dict) else {}
    # vendor words allowed: the GPU's own name and the finding's library and implementation, never the words of a
    # source citation or a note (a peak's source names its vendor's tools)
    own_gpu = " ".join(str(gpu_named.get(k) or "") for k in ("name", "key"))
    facts = {f.rank: facts_for(f, view, own_gpu) for f in view.findings}
    ours = metrics.get("sdpa_analyzer") if isinstance(metrics.get("sdpa_analyzer"), dict) else {}
    category_facts = ours.get("facts") if isinstance(ours.get("facts"), dict) else {}
    claims = {f.rank: claims_for(f, view, category_facts) for f in view.findings}
    examples = {f.rank: str(f.members[0].get("operation")) for f in view.findings if f.members}
    any_op = str(view.operations[0].get("name")) if view.operations else "aten::_scaled_dot_product_flash_attention"
    everything_names = " ".join([own_gpu, *(f.names for f in facts.values())]).lower()
    gpu = metrics.get("sdpa_analyzer") if isinstance(metrics.get("sdpa_analyzer"), dict) else {}
    gpu_info = gpu.get("gpu") if isinstance(gpu.get("gpu"), dict) else {}
    gpu_name = str(gpu_info.get("name") or "")
    compares = dict.fromkeys(ranks, False)
    gpu_allowed: dict[int | None, str] = {}
    run_ranks: list[int | None] = []
    for run in runs:
        rank: int | None = None
        if run.region == "p_item":
            rank = item_owners[run.index].prose_rank
        elif run.region == "candidate":
            rank = block_owners[run.index].prose_rank
        run_ranks.append(rank)
    free = [run for run, rank in zip(runs, run_ranks, strict=True) if rank is None]
    grounding.expect_free_text([n for r in free for n in r.numbers], [span for r in free for _, span in r.spans])
    for run, rank in zip(runs, run_ranks, strict=True):
        if rank is not None and rank not in ranks:
            continue  # an invented P-item or block: R2 / R3 / R11 report it
        example = examples.get(rank, any_op) if rank is not None else any_op
        check_run(run, rank, grounding, ranks, example, out, numbers=refs is None or not refs.strict)
        allowed = facts[rank].names if rank is not None else everything_names
        check_language(run, allowed, out)
        if _GPU_HINT.search(run.text):
            if rank not in gpu_allowed:
                gpu_allowed[rank] = f"{allowed} {grounding.names.get(rank, '') if rank is not None else ''}".upper()
            check_gpu(run, gpu_allowed[rank], gpu_name, out)
        if rank is not None:
            check_verdicts(run, facts[rank], grounding, out)
            check_claims(run, claims[rank], out)
        check_form_factor(run, gpu_name, out)
        if check_scope_words(run, scope, out) and rank is not None:
            compares[rank] = True
        if run.region == "candidate" and run.raw.lstrip().startswith("**Identification:**"):
            check_citation(run, grounding.citations.get(rank) if rank is not None else None, out)
    if refs is not None:
        masked = refs.resolution.masked
        masked_doc = parse_document(masked, read_blocks(masked), Collector())
        masked_runs = []
        for run in read_runs(masked_doc):  # the same blocks as the resolved file's: the same owners
            owners_of = item_owners if run.region == "p_item" else block_owners if run.region == "candidate" else None
            rank = owners_of[run.index].prose_rank if owners_of is not None and run.index < len(owners_of) else None
            if rank is None or rank in ranks:
                masked_runs.append((run, rank))
        check_bare(masked_runs, refs.table, refs.resolved, out, digits=refs.strict)
    if scope == "comparative":
        for item, owner in zip(doc.p_items, item_owners, strict=True):
            rank = owner.prose_rank
            unfilled = any(SLOT_OPEN in doc.lines[i] for i in range(item.index, item.end))
            if rank in ranks and not compares[rank] and not unfilled:
                compares[rank] = True  # one error per P-item
                out.error(
                    "R16-scope",
                    item.index,
                    f"P{rank} does not say how trace 2 compares with trace 1 (a comparative file).",
                    comparison_fix(facts[rank]),
                )


def _check_empty_sections(doc: Document, out: Collector) -> None:
    """Rule 11: with no category_findings[], both sections are present and hold nothing."""
    for start, end in ((doc.rec, doc.rec_end), (doc.det, doc.det_end)):
        if start is None:
            continue
        warned = False
        for index in range(start + 1, end):
            line = doc.lines[index].strip()
            if line.startswith(("#", "<!--", "|")):
                out.error(
                    "R11-not-empty",
                    index,
                    "category_findings[] is empty but this section has content.",
                    "Leave `## Recommendations` and `## Detailed Analysis` empty: no manufactured P-items.",
                )
            elif line and not warned:
                warned = True
                out.warn(
                    "R11-not-empty",
                    index,
                    "text in a section that should be empty.",
                    "Move the sentence above `## Recommendations`.",
                )
