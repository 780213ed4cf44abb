"""validate_findings_file against the corpus in tests/server/findings/findings_corpus.

The broken files are the valid ones with one defect each. Each expected line number was found by
searching the mutated text for the edit (not by running the validator), and the snippet is the start
of that line, so a shifted corpus file fails loudly here instead of passing on a neighbouring line.
"""

from __future__ import annotations

import json
import random
import re
from decimal import Decimal
from pathlib import Path

import pytest

from sdpa_analyzer.server.findings import (
    FindingError,
    ValidationReport,
    find_metrics_for,
    load_metrics,
    validate_findings_file,
    validate_findings_text,
)
from tests.support import FINDINGS_CORPUS

CORPUS = FINDINGS_CORPUS


def metrics_of(name: str | None) -> dict | None:
    return load_metrics(CORPUS / "metrics" / f"{name}.json") if name else None


VALID = [
    # file, metrics, kind, scope, P-items
    ("standalone.md", "standalone", "findings", "standalone", 2),
    ("heuristic.md", "heuristic", "findings", "standalone", 2),
    ("comparative.md", "comparative", "findings", "comparative", 1),
    ("empty.md", "empty", "empty", "standalone", 0),
    ("no_data.md", None, "no_data", "standalone", 0),
    ("no_data.md", "error", "no_data", "standalone", 0),
    ("error.md", "error", "error", "standalone", 0),
    ("error.md", None, "error", "standalone", 0),
]


@pytest.mark.parametrize(("file", "metrics", "kind", "scope", "p_items"), VALID)
def test_valid_corpus_passes(file: str, metrics: str | None, kind: str, scope: str, p_items: int) -> None:
    report = validate_findings_file(CORPUS / "valid" / file, metrics_of(metrics))
    assert report.errors == []
    assert report.passed
    assert report.warnings == []
    assert (report.kind, report.scope, report.p_items) == (kind, scope, p_items)
    assert report.metrics_checked is (metrics is not None)


@pytest.mark.parametrize(("file", "metrics"), [("standalone.md", "standalone"), ("heuristic.md", "heuristic")])
def test_valid_corpus_passes_with_float_parsed_metrics(file: str, metrics: str) -> None:
    # json.load gives floats; repr(float) is what Python/orjson wrote, so rule 9 still matches.
    plain = json.loads((CORPUS / "metrics" / f"{metrics}.json").read_text())
    assert validate_findings_file(CORPUS / "valid" / file, plain).passed


BROKEN = [
    # file, metrics, rule id, expected 1-based line (None: whole file), start of that line
    ("broken/r0_unfilled_slot.md", "standalone", "R0-unfilled-slot", 20, "**Insight**: {{FILL: Insight"),
    ("broken/r0_placeholder.md", "standalone", "R0-placeholder", 14, "**Action**: <one or two sent"),
    ("broken/r1_sections_missing.md", "standalone", "R1-sections", 27, "<!-- reasoning-candidate tie"),
    ("broken/r1_sections_nearmiss.md", "standalone", "R1-sections", 10, "## Recommendation"),
    ("broken/r1_order.md", "empty", "R1-order", 7, "## Recommendations"),
    ("broken/r1_duplicate.md", "empty", "R1-duplicate", 7, "## Recommendations"),
    ("broken/r1_extra_section.md", "standalone", "R1-extra-section", 69, "## Appendix"),
    ("broken/r2_p_items_missing.md", "standalone", "R2-p-items", 19, "## Detailed Analysis"),
    ("broken/r2_p_items_extra.md", "standalone", "R2-p-items", 26, "### P3: Another problem"),
    ("broken/r2_rank_order.md", "standalone", "R2-rank-order", 12, "### P2: Memory-efficient att"),
    ("broken/r2_heading.md", "standalone", "R2-heading", 12, "### P1 - Long-sequence flash"),
    ("broken/r2_library_missing.md", "standalone", "R2-library", 12, "### P1: Long-sequence flash "),
    ("broken/r2_library_unknown.md", "standalone", "R2-library", 19, "### P2: Memory-efficient att"),
    ("broken/r2_labels.md", "standalone", "R2-labels", 13, "**Insight:** The flash atten"),
    ("broken/r2_label_order.md", "standalone", "R2-label-order", 13, "**Action**: Profile the domi"),
    ("broken/r2_label_empty.md", "standalone", "R2-label-empty", 14, "**Action**:"),
    ("broken/r3_candidates.md", "standalone", "R3-candidates", 26, "## Detailed Analysis"),
    # the blocks' rank= attributes swapped: one fix (write the two marker lines), not "reorder the blocks"
    ("broken/r3_rank.md", "standalone", "R3-swapped-rank", 28, "<!-- reasoning-candidate tie"),
    ("broken/r3_tier.md", "standalone", "R3-tier", 28, "<!-- reasoning-candidate tie"),
    ("broken/r3_malformed.md", "standalone", "R3-malformed", 28, "<!-- reasoning-candidate ran"),
    ("broken/r3_outside.md", "standalone", "R3-outside", 26, "<!-- reasoning-candidate tie"),
    ("broken/r4_subsections_missing.md", "standalone", "R4-subsections", 28, "<!-- reasoning-candidate tie"),
    ("broken/r4_subsections_nearmiss.md", "standalone", "R4-subsections", 40, "**Resolution**: A better til"),
    ("broken/r4_order.md", "standalone", "R4-order", 40, "**Reasoning for Slowdown:** "),
    ("broken/r4_own_line.md", "standalone", "R4-own-line", 38, "**Reasoning for Slowdown:** "),
    ("broken/r4_duplicate.md", "standalone", "R4-duplicate", 42, "**Resolution:** Said twice."),
    ("broken/r5_columns_dropped.md", "standalone", "R5-columns", 34, "| Operation | Args | Kernel "),
    ("broken/r5_columns_reordered.md", "heuristic", "R5-columns", 28, "| Operation | Args | Kernel "),
    ("broken/r5_no_table.md", "standalone", "R5-no-table", 32, "**Data:**"),
    ("broken/r5_separator.md", "standalone", "R5-separator", 35, "| aten::_scaled_dot_product_"),
    ("broken/r5_row_cells.md", "standalone", "R5-row-cells", 36, "| aten::_scaled_dot_product_"),
    ("broken/r5_empty_cell.md", "standalone", "R5-empty-cell", 36, "| aten::_scaled_dot_product_"),
    ("broken/r5_no_rows.md", "standalone", "R5-no-rows", 34, "| Operation | Args | Kernel "),
    ("broken/r6_operation.md", "standalone", "R6-operation", 36, "| aten::scaled_dot_product_a"),
    ("broken/r6_args.md", "standalone", "R6-args", 36, "| aten::_scaled_dot_product_"),
    ("broken/r6_kernel_path.md", "standalone", "R6-kernel-path", 57, "| aten::_scaled_dot_product_"),
    ("broken/r6_kernel_name.md", "standalone", "R6-kernel-name", 36, "| aten::_scaled_dot_product_"),
    ("broken/r6_missing_row.md", "standalone", "R6-missing-row", 54, "| Operation | Args | Kernel "),
    ("broken/r7_efficiency_format.md", "standalone", "R7-efficiency", 36, "| aten::_scaled_dot_product_"),
    ("broken/r7_efficiency_unit.md", "standalone", "R7-efficiency", 57, "| aten::_scaled_dot_product_"),
    ("broken/r7_efficiency_heuristic.md", "heuristic", "R7-efficiency", 50, "| flash_attn::_flash_attn_fo"),
    ("broken/r7_bound.md", "standalone", "R7-bound", 36, "| aten::_scaled_dot_product_"),
    ("broken/r7_bound_comparative.md", "comparative", "R7-bound", 22, "| aten::_scaled_dot_product_"),
    ("broken/r8_syntax.md", "standalone", "R8-syntax", 15, "<!-- impact-begin kind=p_ite"),
    ("broken/r8_unclosed.md", "standalone", "R8-unclosed", 64, "<!-- impact-begin kind=detai"),
    ("broken/r8_unmatched_end.md", "standalone", "R8-unmatched-end", 68, "<!-- impact-end -->"),
    ("broken/r8_nested.md", "standalone", "R8-nested", 21, "<!-- impact-begin kind=p_ite"),
    ("broken/r8_kind.md", "standalone", "R8-kind", 15, "<!-- impact-begin kind=pitem"),
    ("broken/r8_attrs.md", "standalone", "R8-attrs", 15, "<!-- impact-begin kind=p_ite"),
    ("broken/r8_value.md", "standalone", "R8-value", 15, "<!-- impact-begin kind=p_ite"),
    ("broken/r8_null_mix.md", "standalone", "R8-null-mix", 15, "<!-- impact-begin kind=p_ite"),
    ("broken/r8_p_item.md", "standalone", "R8-p-item", 12, "### P1: Long-sequence flash "),
    ("broken/r8_detail_estimate.md", "standalone", "R8-detail-estimate", 42, "**Impact estimate:**"),
    ("broken/r8_impact_outside.md", "standalone", "R8-impact-outside", 15, "**Impact**: impact_score: 10"),
    ("broken/r9_marker_numbers_mid.md", "standalone", "R9-marker-numbers", 15, "<!-- impact-begin kind=p_ite"),
    ("broken/r9_marker_numbers_detail.md", "standalone", "R9-marker-numbers", 43, "<!-- impact-begin kind=detai"),
    ("broken/r9_marker_numbers_int.md", "heuristic", "R9-marker-numbers", 8, "<!-- impact-begin kind=p_ite"),
    ("broken/r9_impact_text.md", "standalone", "R9-impact-text", 16, "**Impact**: impact_score: 10"),
    ("broken/r9_impact_bullet.md", "standalone", "R9-impact-text", 44, "- Low end impact_score: 9.30"),
    ("broken/r10_warning_missing.md", "heuristic", "R10-heuristic-warning", 18, ""),
    ("broken/r10_warning_percent.md", "heuristic", "R10-heuristic-warning", 18, "> **Warning — estimated:** N"),
    ("broken/r10_unexpected_warning.md", "standalone", "R10-unexpected-warning", 18, "> **Warning — estimated:** N"),
    ("broken/r11_not_empty.md", "empty", "R11-not-empty", 7, "### P1: Flash attention is s"),
    ("broken/r12_no_data_extra.md", None, "R12-no-data-extra", 5, "The attention looks slow any"),
    ("broken/r12_error_findings.md", "error", "R12-error-findings", 5, "### P1: Slow attention"),
    ("broken/r12_error_cause.md", "error", "R12-error-cause", 3, "**Status:** ERROR"),
    ("valid/no_data.md", "standalone", "R12-status-mismatch", None, None),
    ("valid/error.md", "standalone", "R12-status-mismatch", 3, "**Status:** ERROR"),
    ("valid/standalone.md", "error", "R12-error-expected", None, None),
]


@pytest.mark.parametrize(("file", "metrics", "rule", "line", "snippet"), BROKEN)
def test_broken_corpus_fails_with_rule_and_line(
    file: str, metrics: str | None, rule: str, line: int | None, snippet: str | None
) -> None:
    path = CORPUS / file
    if line is not None:
        assert path.read_text().split("\n")[line - 1].startswith(snippet), "corpus file changed: fix the table"
    report = validate_findings_file(path, metrics_of(metrics))
    assert not report.passed
    found = [(e.rule, e.line) for e in report.errors]
    assert (rule, line) in found, found
    hit = next(e for e in report.errors if (e.rule, e.line) == (rule, line))
    assert hit.message and hit.fix and "\n" not in hit.message


def test_every_rule_of_the_spec_has_a_broken_file() -> None:
    numbers = {int(re.match(r"R(\d+)-", rule).group(1)) for _, _, rule, _, _ in BROKEN}
    assert numbers == set(range(13))  # R0 (slots) and the spec's rules 1-12


def test_every_broken_file_is_in_the_table() -> None:
    listed = {file for file, *_ in BROKEN if file.startswith("broken/")}
    on_disk = {f"broken/{p.name}" for p in (CORPUS / "broken").glob("*.md")}
    assert listed == on_disk


def test_missing_file_raises_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        validate_findings_file(tmp_path / "category_findings" / "sdpa_fwd_findings.md", None)
    assert "sdpa_fwd_findings.md" in str(info.value) and "\n" not in str(info.value)


def test_folder_instead_of_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        validate_findings_file(tmp_path, None)


@pytest.mark.parametrize(("tier", "scope"), [("kernel", None), ("compute", "both")])
def test_bad_arguments_raise_value_error(tier: str, scope: str | None) -> None:
    with pytest.raises(ValueError, match="expected one of"):
        validate_findings_text("", None, tier, scope)


def test_scope_comes_from_argument_then_metrics_then_table_header() -> None:
    path = CORPUS / "valid" / "comparative.md"
    assert validate_findings_file(path, None).scope == "comparative"  # header has `Args (T1)`
    assert validate_findings_file(path, metrics_of("comparative")).scope == "comparative"
    forced = validate_findings_file(path, metrics_of("comparative"), comparison_scope="standalone")
    assert forced.scope == "standalone"
    assert ("R5-columns", 20) in [(e.rule, e.line) for e in forced.errors]
    # a scope other than the one the metrics were ranked with is refused (a one-trace folder is never comparative)
    assert any(e.rule == "R5-scope" for e in forced.errors)


def test_without_metrics_only_structure_is_checked() -> None:
    # These files have a wrong Args / Bound cell; without operations[] that cannot be seen.
    for name in ("r6_args.md", "r7_bound.md"):
        report = validate_findings_file(CORPUS / "broken" / name, None)
        assert report.passed and not report.metrics_checked


def test_system_tier_candidates() -> None:
    text = (CORPUS / "valid" / "standalone.md").read_text().replace("tier=compute", "tier=system")
    assert validate_findings_text(text, metrics_of("standalone"), tier="system").passed
    report = validate_findings_text(text, metrics_of("standalone"), tier="compute")
    assert {(e.rule, e.line) for e in report.errors} == {("R3-tier", 28), ("R3-tier", 48)}


def _one_finding_metrics(low: object, mid: object, high: object) -> dict:
    data = load_metrics(CORPUS / "metrics" / "heuristic.json")
    data["category_findings"] = data["category_findings"][:1]
    data["category_findings"][0].update(impact_score_low=low, impact_score=mid, impact_score_high=high)
    return data


def _heuristic_p1_only(mid_text: str, low_text: str = "9.0", high_text: str = "12.0") -> str:
    text = (CORPUS / "valid" / "heuristic.md").read_text()
    text = (
        text[: text.index("### P2:")]
        + text[text.index("## Detailed Analysis") : text.index("<!-- reasoning-candidate tier=compute rank=2 -->")]
    )
    text = text.replace("low=9.0 mid=10.5 high=12.0", f"low={low_text} mid={mid_text} high={high_text}")
    text = text.replace("impact_score: 10.5", f"impact_score: {mid_text}")
    return (
        text.replace("low=9.0 high=12.0", f"low={low_text} high={high_text}")
        .replace("- Low end impact_score: 9.0", f"- Low end impact_score: {low_text}")
        .replace("- High end impact_score: 12.0", f"- High end impact_score: {high_text}")
    )


def test_marker_numbers_compare_the_written_text_exactly() -> None:
    # load_metrics keeps `10.50` as Decimal('10.50'): the marker must say 10.50, not 10.5.
    metrics = _one_finding_metrics(Decimal("9.0"), Decimal("10.50"), Decimal("12.0"))
    assert validate_findings_text(_heuristic_p1_only("10.50"), metrics).passed
    report = validate_findings_text(_heuristic_p1_only("10.5"), metrics)
    assert ("R9-marker-numbers", 8) in [(e.rule, e.line) for e in report.errors]


def test_load_metrics_keeps_trailing_zeros(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"category_findings": [{"rank": 1, "impact_score": 5.960, "impact_score_low": 5}]}')
    finding = load_metrics(path)["category_findings"][0]
    assert str(finding["impact_score"]) == "5.960" and finding["impact_score_low"] == 5


def test_unquantifiable_finding_accepts_the_sentence() -> None:
    metrics = _one_finding_metrics(None, None, None)
    text = _heuristic_p1_only("null", "null", "null").replace(
        "**Impact**: impact_score: null", "**Impact**: impact not quantifiable from trace data"
    )
    text = re.sub(
        r"<!-- impact-begin kind=detail_estimate.*?<!-- impact-end -->",
        "Impact not quantifiable from trace data.",
        text,
        flags=re.S,
    )
    report = validate_findings_text(text, metrics)
    assert report.errors == []


def test_code_fences_are_not_structure() -> None:
    text = (CORPUS / "valid" / "standalone.md").read_text()
    fenced = text.replace(
        "# SDPA forward findings\n",
        "# SDPA forward findings\n\n```markdown\n## Recommendations\n"
        "### P9: example\n<!-- impact-begin kind=p_item low=1 mid=2 high=3 -->\n```\n",
        1,
    )
    assert validate_findings_text(fenced, metrics_of("standalone")).passed


def test_find_metrics_for(tmp_path: Path) -> None:
    findings = tmp_path / "out" / "category_findings" / "sdpa_bwd_findings.md"
    findings.parent.mkdir(parents=True)
    assert find_metrics_for(findings) is None
    metrics = tmp_path / "out" / "category_data" / "sdpa_bwd_metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text("{}")
    assert find_metrics_for(findings) == metrics
    assert find_metrics_for(tmp_path / "out" / "category_findings" / "notes.md") is None


def test_report_text_lists_rule_line_and_fix() -> None:
    report = validate_findings_file(CORPUS / "broken" / "r7_bound.md", metrics_of("standalone"))
    assert isinstance(report, ValidationReport)
    assert "[R7-bound] line 36:" in report.text() and "Fix: Write `compute-bound`." in report.text()
    assert str(FindingError(rule="R1-sections", line=None, message="m.", fix="f.")) == "[R1-sections] file: m. Fix: f."


def _mutations(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 6)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        choice = rng.randrange(6)
        if choice == 0:
            del lines[i]
        elif choice == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif choice == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif choice == 3:
            k = rng.randrange(len(lines[i]) + 1)
            lines[i] = (
                lines[i][:k]
                + rng.choice(["|", "**", "-->", "<!--", "#", "{{FILL:", "`", "\\|", "=", " "])
                + lines[i][k:]
            )
        elif choice == 4:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        else:
            lines.insert(i, "".join(rng.choice("#|*<>!-=: abcP1\t`") for _ in range(rng.randrange(40))))
    return "\n".join(lines)


def test_fuzz_never_raises() -> None:
    rng = random.Random(20240607)
    sources = [(p.read_text(), p.stem) for p in (CORPUS / "valid").glob("*.md")]
    names = ["standalone", "heuristic", "comparative", "empty", "error", None]
    alphabet = "#|*<>!-=:/ \n\tabcdefP0123456789`{}()[]—%."
    for round_ in range(400):
        if round_ % 4 == 0:
            text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(600)))
        else:
            text = _mutations(rng, rng.choice(sources)[0])
        metrics = metrics_of(rng.choice(names))
        report = validate_findings_text(
            text, metrics, rng.choice(["compute", "system"]), rng.choice([None, "standalone", "comparative"])
        )
        assert isinstance(report, ValidationReport)
        assert all(e.line is None or 1 <= e.line <= max(1, len(text.splitlines())) for e in report.errors)


def test_binary_garbage_file(tmp_path: Path) -> None:
    path = tmp_path / "sdpa_fwd_findings.md"
    path.write_bytes(bytes(range(256)) * 4)
    report = validate_findings_file(path, metrics_of("standalone"))
    assert not report.passed and report.errors[0].rule == "R1-sections"


def test_no_data_status_metrics() -> None:
    # findings_service passes {"status": "NO_DATA"} when the analysis folder has no <cat>_ops.csv.
    metrics = {"category": "sdpa_fwd", "status": "NO_DATA"}
    assert validate_findings_file(CORPUS / "valid" / "no_data.md", metrics).passed
    report = validate_findings_file(CORPUS / "valid" / "standalone.md", metrics)
    assert [(e.rule, e.line) for e in report.errors] == [("R12-status-mismatch", None)]


@pytest.mark.parametrize("missing", ["N/A", "null", "-"])
def test_missing_values_must_be_em_dash(missing: str) -> None:
    text = (CORPUS / "valid" / "heuristic.md").read_text()
    text = text.replace("| 5.0 | 25.0 | 16 | — |", f"| 5.0 | 25.0 | 16 | {missing} |")
    report = validate_findings_text(text, metrics_of("heuristic"))
    assert ("R5-empty-cell", 50) in [(e.rule, e.line) for e in report.errors]


def test_a_changed_number_is_an_error_and_a_foreign_row_a_warning() -> None:
    text = (CORPUS / "valid" / "standalone.md").read_text()
    # Time 6.4 -> 6.5 in the P1 row (line 36); the cuDNN op (in operations[], in no finding) added to P1.
    text = text.replace("| 6.4 | 16.0 | 12 |", "| 6.5 | 16.0 | 12 |")
    cudnn = (
        "| aten::_scaled_dot_product_cudnn_attention | (1,8,256,64) bf16<br>(1,8,256,64) bf16<br>(1,8,256,64) bf16"
        " | Not found | cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x128x1... | 0.02 | 0.05"
        " | 4 | 512.0 | 95.00% of 989.5 TFLOPS | compute-bound |"
    )
    lines = text.split("\n")
    lines.insert(36, cudnn)
    report = validate_findings_text("\n".join(lines), metrics_of("standalone"))
    assert not report.passed
    assert [(e.rule, e.line) for e in report.errors] == [("R6-number", 36)]
    assert "6.5" in report.errors[0].message and "`6.4`" in report.errors[0].fix
    assert {(w.rule, w.line) for w in report.warnings} == {("R6-foreign-row", 34)}
