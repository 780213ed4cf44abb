"""render_findings_template: skeleton content checked against hand-written expectations, then the
round trip render -> fill slots -> validate, on the corpus metrics and on the shared fixtures."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from sdpa_analyzer.server.findings import (
    MetricsFormatError,
    load_metrics,
    render_findings_template,
    render_no_data_file,
    validate_findings_text,
)
from tests.support import FINDINGS_CORPUS, fill_findings

CORPUS = FINDINGS_CORPUS
SLOT = re.compile(r"\{\{FILL:[^}]*\}\}")


def metrics_of(name: str) -> dict:
    return load_metrics(CORPUS / "metrics" / f"{name}.json")


def fill(text: str, metrics: dict) -> str:
    """A correct fill: sentences built from the metrics JSON's own numbers and names (tests.support)."""
    return fill_findings(text, metrics)


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle."""
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


@pytest.mark.parametrize("name", ["standalone", "heuristic", "comparative", "empty", "error"])
def test_filled_template_passes(name: str) -> None:
    text = fill(render_findings_template(metrics_of(name), "sdpa_fwd"), metrics_of(name))
    report = validate_findings_text(text, metrics_of(name))
    assert report.errors == [] and report.warnings == []


@pytest.mark.parametrize(("name", "slots"), [("standalone", 14), ("heuristic", 14), ("comparative", 7), ("empty", 0)])
def test_unfilled_template_fails_only_on_its_slots(name: str, slots: int) -> None:
    # 7 slots per finding: P title, Insight, Action, candidate title, Identification, Reasoning, Resolution.
    report = validate_findings_text(render_findings_template(metrics_of(name), "sdpa_fwd"), metrics_of(name))
    assert {e.rule for e in report.errors} <= {"R0-unfilled-slot"}
    assert len(report.errors) == slots


def test_standalone_skeleton_numbers_and_cells() -> None:
    text = render_findings_template(metrics_of("standalone"), "sdpa_fwd")
    lines = text.split("\n")
    # Values typed from tests/server/findings/findings_corpus/metrics/standalone.json (see its README).
    assert "<!-- impact-begin kind=p_item low=9.3 mid=10.85 high=12.4 -->" in lines
    assert "**Impact**: impact_score: 10.85 (% of E2E)" in lines
    assert "<!-- impact-begin kind=detail_estimate low=3.42 high=4.56 -->" in lines
    assert "- High end impact_score: 4.56 (% of E2E)" in lines
    assert lines.index("## Recommendations") < lines.index("## Detailed Analysis")
    p_headings = [line for line in lines if line.startswith("### P")]
    assert p_headings[0].startswith("### P1: {{FILL:") and p_headings[0].endswith("}} (PyTorch Native)")
    assert p_headings[1].startswith("### P2: {{FILL:") and p_headings[1].endswith("}}")  # Unknown: no suffix
    row_a = (
        "| aten::_scaled_dot_product_flash_attention | (8,16,2048,128) bf16<br>(8,16,2048,128) bf16<br>"
        "(8,16,2048,128) bf16 | transformers/integrations/sdpa_attention.py(18): sdpa_attention_forward | "
        "Kernel 1: void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<i...<br>Kernel 2: "
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits... | 6.4 | 16.0 | 12 | "
        "1024.0 | 22.50% of 989.5 TFLOPS | compute-bound |"
    )
    # the verdict columns follow the mandatory ones; this corpus file predates operations[].roofline
    assert row_a + " — | — | — | no reference band |" in lines
    # P2 groups the two efficient-attention signatures; the cuDNN op (no finding) gets no row.
    assert sum("| aten::_scaled_dot_product_efficient_attention |" in line for line in lines) == 2
    assert "12.00% of 3.35 TB/s | memory-bound |" in text and "4.00% of 3.35 TB/s | memory-bound |" in text
    assert "cudnn" not in text


def test_heuristic_skeleton_warning_and_dashes() -> None:
    text = render_findings_template(metrics_of("heuristic"), "sdpa_fwd")
    warning = (
        "> **Warning — estimated:** No performance model for this op; impact is derived from its E2E "
        "GPU-time share (25.0%), not a gap projection."
    )
    lines = text.split("\n")
    assert lines[lines.index(warning) - 1] == "<!-- impact-end -->"
    assert lines[lines.index(warning) - 3] == "<!-- impact-begin kind=p_item low=3.75 mid=7.5 high=11.25 -->"
    assert text.count("> **Warning") == 1
    assert "| 5.0 | 25.0 | 16 | — | — | — |" in text


def test_comparative_skeleton_row() -> None:
    text = render_findings_template(metrics_of("comparative"), "sdpa_fwd")
    assert (
        "| Operation | Args (T1) | Kernel Path | Kernel Name | Trace 1 Time (ms) | Trace 2 Time (ms) | "
        "Count (T1/T2) | Difference (ms) | FLOPS/Byte (T1) | Bound (T1) |"
    ) in text
    assert "| 2.0 | 1.2 | 8/8 | -0.8 | 2048.0 | compute-bound |" in text
    assert "### P1: {{FILL: P-item title — 3 to 8 words naming the problem}} (cuDNN)" in text


def test_empty_error_and_no_data_files() -> None:
    empty = render_findings_template(metrics_of("empty"), "sdpa_fwd")
    assert empty.endswith("## Recommendations\n\n## Detailed Analysis\n")
    error = render_findings_template(metrics_of("error"), "sdpa_fwd")
    assert "Status: ERROR" in error and "column 'Input Dims' is missing" in error and "### P" not in error
    no_ops = {"category": "sdpa_fwd", "status": "OK", "operations": [], "category_findings": []}
    assert render_findings_template(no_ops, "sdpa_fwd") == render_no_data_file("sdpa_fwd")
    assert validate_findings_text(render_no_data_file("sdpa_bwd"), None).passed


def test_written_number_spelling_is_kept(tmp_path: Path) -> None:
    raw = json.loads((CORPUS / "metrics" / "comparative.json").read_text())
    text = json.dumps(raw).replace('"impact_score": 7.0', '"impact_score": 7.000')
    path = tmp_path / "sdpa_fwd_metrics.json"
    path.write_text(text)
    rendered = render_findings_template(load_metrics(path), "sdpa_fwd")
    assert "low=6.0 mid=7.000 high=8.0" in rendered and "**Impact**: impact_score: 7.000" in rendered
    assert validate_findings_text(fill(rendered, load_metrics(path)), load_metrics(path)).passed


def test_pipe_in_a_cell_is_escaped_and_still_verbatim() -> None:
    metrics = metrics_of("comparative")
    metrics["operations"][0]["kernel_name_trunc"] = "kernel<a|b>"
    text = fill(render_findings_template(metrics, "sdpa_fwd"), metrics)
    assert "| kernel<a\\|b> |" in text
    assert validate_findings_text(text, metrics).passed


def test_unquantifiable_finding_renders_the_sentence() -> None:
    metrics = metrics_of("heuristic")
    metrics["category_findings"][0].update(impact_score=None, impact_score_low=None, impact_score_high=None)
    text = render_findings_template(metrics, "sdpa_fwd")
    assert "<!-- impact-begin kind=p_item low=null mid=null high=null -->" in text
    assert "Impact not quantifiable from trace data." in text
    assert validate_findings_text(fill(text, metrics), metrics).passed


def test_paged_ops_get_breakdown_columns() -> None:
    metrics = metrics_of("standalone")
    op = metrics["operations"][0]
    op["classification"].update(
        is_paged_attention=True, kernel_breakdown={"reshape_and_cache": 12.5, "kernel_paged_attention_2d": 80.0}
    )
    op["classification"]["workload_profile"].update(workload_type="decode_heavy")
    text = fill(render_findings_template(metrics, "sdpa_fwd"), metrics)
    header = (
        "| Bound | Compute % | Memory % | Regime | Expected Band (% of datasheet) | Dominant Kernel Component | "
        "Workload Type | Attention Pattern |"
    )
    assert header in text
    cells = "| compute-bound | — | — | — | no reference band | kernel_paged_attention_2d (80.0%) | decode_heavy | MHA |"
    assert cells in text
    assert validate_findings_text(text, metrics).passed


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="not 'sdpa_bwd'"):
        render_findings_template(metrics_of("standalone"), "sdpa_bwd")
    broken = metrics_of("standalone")
    broken["category_findings"][0]["members"][0]["operation"] = "aten::nothing"
    with pytest.raises(MetricsFormatError, match="rank 1"):
        render_findings_template(broken, "sdpa_fwd")
    broken = metrics_of("standalone")
    broken["category_findings"][0]["rank"] = "1"
    with pytest.raises(MetricsFormatError, match=r"category_findings\[0\]\.rank"):
        render_findings_template(broken, "sdpa_fwd")


# --- shared fixtures: every metrics JSON of /work/shared/analysis-folders -------------------------


def _drop_column(text: str, header_line: int, column: int) -> str:
    """Delete one column from the table whose header is on header_line (1-based)."""
    lines = text.split("\n")
    index = header_line - 1
    while index < len(lines) and lines[index].startswith("|"):
        cells = lines[index].strip().strip("|").split("|")
        del cells[column]
        lines[index] = "|" + "|".join(cells) + "|"
        index += 1
    return "\n".join(lines)


def _fixture_mutations(text: str) -> list[tuple[str, str, int]]:
    """(mutated text, rule id, 1-based line) for a marker number, an Args cell and a dropped column."""
    marker_line = line_of(text, "<!-- impact-begin kind=p_item")
    mid = re.search(r"mid=(\S+)", text.split("\n")[marker_line - 1]).group(1)
    longer = mid + "0" if "." in mid else mid + ".0"  # same value, different spelling
    marker = text.replace(f"mid={mid} ", f"mid={longer} ", 1)
    header_line = line_of(text, "| Operation |")
    row = text.split("\n")[header_line + 1]
    args = row.split(" | ")[1]
    changed_args = args.replace("<br>", ", ") if "<br>" in args else args + " fp64"
    args_text = text.replace(row, row.replace(f" | {args} | ", f" | {changed_args} | ", 1), 1)
    dropped = _drop_column(text, header_line, 5)  # %E2E / Trace 2 Time (ms)
    return [
        (marker, "R9-marker-numbers", marker_line),
        (args_text, "R6-args", header_line + 2),
        (dropped, "R5-columns", header_line),
    ]


def test_shared_fixtures_round_trip(analysis_folders_dir: Path) -> None:
    paths = sorted(analysis_folders_dir.glob("*/category_data/*_metrics.json"))
    assert paths, "no metrics JSON in the shared analysis folders"
    checked_mutations = 0
    for path in paths:
        category = path.name.removesuffix("_metrics.json")
        for metrics in (load_metrics(path), json.loads(path.read_text())):
            text = fill(render_findings_template(metrics, category), metrics)
            report = validate_findings_text(text, metrics)
            assert report.errors == [], (path, [str(e) for e in report.errors])
            if not metrics.get("category_findings"):
                continue
            for mutated, rule, line in _fixture_mutations(text):
                found = [(e.rule, e.line) for e in validate_findings_text(mutated, copy.deepcopy(metrics)).errors]
                assert (rule, line) in found, (path, rule, line, found)
                checked_mutations += 1
    assert checked_mutations >= 3


def test_identification_glosses_each_regime_on_its_own() -> None:
    """The hint once read "regime: compute (balanced: …)", which a reader took as compute = balanced."""
    metrics = copy.deepcopy(metrics_of("standalone"))
    for regime, gloss in (("compute", "the compute roof limits it"), ("balanced", "neither roof alone limits it")):
        for op in metrics["operations"]:
            op["roofline"] = {"regime": regime}
        text = render_findings_template(metrics, "sdpa_fwd")
        hint = next(line for line in text.split("\n") if "regime: " in line)
        glossed = hint[hint.index("regime: ") : hint.index("}}")]
        assert glossed == f"regime: {regime} = {gloss}"  # only the regime present, glossed on its own
