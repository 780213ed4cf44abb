"""One value, one rounding per fact: the same fact reads as the same string on every surface that shows it.

The tools run on a trace (a synthetic one, always; the H100 Qwen trace of ../shared when present) and each fact is
collected from every surface that carries it: the tool results (load_category_data, compute_roofline, rank_findings),
the roofline CSV, the metrics JSON, the findings template's reference list, the HTML report's text and what the CLI
prints (`sdpa-analyzer load / roofline / rank`: their header lines and table cells). Each surface is read as text (the
CSV cell, the JSON token, the template's `{{ref}} = digits unit`, the report's words, the terminal's cell), so a
surface that rounds on its own (`2.7227` beside `2.723`, `34.892` beside `34.8924`, `7.80` beside `7.8`, an unrounded
CSV cell) fails here.
"""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.findings import load_metrics
from sdpa_analyzer.server.findings.spec import number_text
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace
from sdpa_analyzer.server.tools import call
from tests.support import SHARED_SKIP_REASON, TRACES, parse_html, run_cli

QWEN = TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _template_refs(text: str) -> dict[str, str]:
    """`{{name}} = 2.723 ms : …` lines of the template's reference list → name: its digits (the unit dropped)."""
    out = {}
    for m in re.finditer(r"^\s*\{\{([\w.]+)\}\} = (-?[0-9][0-9.e+-]*)", text, flags=re.M):
        out[m.group(1)] = m.group(2)
    return out


def _report_text(page: str) -> str:
    page = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _one(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not found in the report"
    return m.group(1)


def _cli_table(printed: str, first_header: str) -> list[dict[str, str]]:
    """The terminal table whose header line starts with `first_header`: its rows as {header: cell}, the columns
    cut where the dashes under the headers run (cells hold spaces; the headers too)."""
    lines = printed.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    spans = [m.span() for m in re.finditer(r"-+", lines[at + 1])]
    heads = [lines[at][a:b].strip() for a, b in spans]
    rows = []
    for line in lines[at + 2 :]:
        if not line.strip() or len(line) < spans[-1][0]:
            break
        rows.append({h: line[a:b].strip().lstrip("≥≤~") for h, (a, b) in zip(heads, spans, strict=True)})
    return rows


def _cli_surfaces(out_dir: Path, name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    """fact → {surface: its text}, from what `sdpa-analyzer load / roofline / rank` print for sdpa_fwd."""
    printed = {}
    for command in ("load", "roofline", "rank"):
        rc, out, err = run_cli(capsys, command, str(out_dir), "sdpa_fwd", *(() if command == "load" else
                                                                           ("--arch", "h100-sxm")))  # fmt: skip
        assert rc == 0, err
        printed[command] = out
    load_head = re.search(r"kernel time (\S+) ms = (\S+)% of E2E \((\S+) ms\)", printed["load"])
    roof_head = re.search(r"modeled\), (\S+) ms, time-weighted", printed["roofline"])
    rank_head = re.search(r"instances?, (\S+) ms, (\S+)% of E2E;", printed["rank"])
    assert load_head and roof_head and rank_head, printed
    top = next(r for r in _cli_table(printed["load"], "op ") if r["op"] == name)
    row = next(r for r in _cli_table(printed["roofline"], "op ") if name.endswith(r["op"]))
    band = re.match(r"(\S+)-(\S+) ", row["band % (datasheet)"])
    assert band, row
    return {
        "op time_ms": {"CLI load table": top["time ms"], "CLI roofline table": row["time ms"]},
        "op band_low": {"CLI roofline table": band.group(1)},
        "op band_high": {"CLI roofline table": band.group(2)},
        "op efficiency": {"CLI roofline table": row["eff %"]},
        "op achieved TFLOPS": {"CLI roofline table": row["TFLOP/s"]},
        "op compute_pct": {"CLI roofline table": row["tensor %"]},
        "category time_ms": {"CLI load": load_head.group(1), "CLI roofline": roof_head.group(1),
                             "CLI rank": rank_head.group(1)},
        "category share of E2E": {"CLI load": load_head.group(2), "CLI rank": rank_head.group(2)},
        "E2E baseline": {"CLI load": load_head.group(3)},
    }  # fmt: skip


def _surfaces(
    trace: Path, tmp_path: Path, roots: DataRoots, capsys: pytest.CaptureFixture[str]
) -> dict[str, dict[str, str]]:
    """fact → {surface: the fact's text there}, for the longest op of sdpa_fwd and its category."""
    out_dir = tmp_path / "analysis"
    call("analyze_trace", roots, trace_path=str(trace), output_dir=str(out_dir), arch="h100-sxm")
    load = call("load_category_data", roots, output_dir=str(out_dir), category="sdpa_fwd")
    roof = call("compute_roofline", roots, output_dir=str(out_dir), category="sdpa_fwd", arch="h100-sxm", limit=1)
    call("rank_findings", roots, output_dir=str(out_dir), category="sdpa_fwd", arch="h100-sxm")
    tpl = call("render_findings_template", roots, output_dir=str(out_dir), category="sdpa_fwd")
    report = call("render_report", roots, output_dir=str(out_dir))

    row = roof.rows[0]
    with (out_dir / "category_data" / "sdpa_fwd_roofline.csv").open(newline="", encoding="utf-8") as fh:
        cells = next(r for r in csv.DictReader(fh) if r["row"] == str(row.row))
    metrics: dict[str, Any] = json.loads((out_dir / "category_data" / "sdpa_fwd_metrics.json").read_text())
    op = metrics["operations"][row.row]
    # the operation's `roofline` object as the findings tools read it: joined from the roofline CSV (written once)
    joined = load_metrics(out_dir / "category_data" / "sdpa_fwd_metrics.json")
    op["roofline"] = joined["operations"][row.row]["roofline"]
    block = metrics["sdpa_analyzer"]
    template_text = Path(tpl.findings_file).read_text(encoding="utf-8")
    refs = _template_refs(template_text)
    html_page = Path(report.report_file).read_text(encoding="utf-8")
    page = _report_text(html_page)
    ops_table = parse_html(html_page).tables["ops-sdpa_fwd"]
    ops_row = dict(zip(ops_table[0], next(r for r in ops_table[1:] if r[0] == row.name), strict=True))
    band_cell = re.match(r"([0-9.]+)–([0-9.]+) %", ops_row["expected band"])
    assert band_cell, ops_row["expected band"]
    # the template's op1 of P1 is the longest op of this single-finding category: say so rather than assume it
    assert "`" + row.name + "` (row 1 of P1" in template_text

    facts = {
        "op time_ms": {
            "compute_roofline row": number_text(row.time_ms),
            "roofline CSV": cells["time_ms"],
            "metrics JSON operations[]": number_text(op["time_ms"]),
            "template P1.op1.time_ms": refs["P1.op1.time_ms"],
            "load_category_data top_ops": number_text(load.top_ops[0].time_ms),
            "report ops table": ops_row["time ms"],
        },
        "op band_low": {
            "compute_roofline row": number_text(row.band_low),
            "roofline CSV": cells["band_low"],
            "metrics JSON roofline (joined)": number_text(op["roofline"]["band_low"]),
            "template P1.op1.band_low": refs["P1.op1.band_low"],
            "report ops table": band_cell.group(1),
        },
        "op band_high": {
            "compute_roofline row": number_text(row.band_high),
            "roofline CSV": cells["band_high"],
            "metrics JSON roofline (joined)": number_text(op["roofline"]["band_high"]),
            "template P1.op1.band_high": refs["P1.op1.band_high"],
            "report ops table": band_cell.group(2),
        },
        "op efficiency": {
            "compute_roofline row": number_text(row.efficiency_pct),
            "roofline CSV": cells["efficiency_pct"],
            "metrics JSON efficiency": number_text(op["efficiency"]["efficiency_percent"]),
            "template P1.op1.efficiency": refs["P1.op1.efficiency"],
            "report ops table": ops_row["efficiency %"],
        },
        # one fact under two names: the catalogue's achieved_tbs and TraceLens' efficiency.tb_s_achieved
        "op achieved TB/s": {
            "compute_roofline row": number_text(row.achieved_tbs),
            "roofline CSV": cells["achieved_tbs"],
            "metrics JSON efficiency": number_text(op["efficiency"]["tb_s_achieved"]),
            "template P1.op1.tbs": refs["P1.op1.tbs"],
        },
        "op achieved TFLOPS": {
            "compute_roofline row": number_text(row.achieved_tflops),
            "roofline CSV": cells["achieved_tflops"],
            "metrics JSON efficiency": number_text(op["efficiency"]["tflops_achieved"]),
            "template P1.op1.tflops": refs["P1.op1.tflops"],
        },
        "op compute_pct": {
            "compute_roofline row": number_text(row.compute_pct),
            "roofline CSV": cells["compute_pct"],
            "metrics JSON roofline (joined)": number_text(op["roofline"]["compute_pct"]),
            "template P1.op1.compute_pct": refs["P1.op1.compute_pct"],
            "compute_roofline verdict": _one(r"^([0-9.]+) % of tensor peak", row.verdict),
            "report ops table": ops_row["compute %"],
        },
        "category time_ms": {
            "load_category_data": number_text(load.total_kernel_time_ms),
            "compute_roofline": number_text(roof.total_time_ms),
            "metrics JSON": number_text(metrics["total_time_ms"]),
            "template cat.time_ms": refs["cat.time_ms"],
            "report": _one(r"GPU kernel time ([0-9.]+) ms", page),
        },
        "category share of E2E": {
            "metrics JSON": number_text(metrics["percent_of_compute"]),
            "template cat.share": refs["cat.share"],
            "report": _one(r"GPU kernel time [0-9.]+ ms · ([0-9.]+) % of E2E", page),
        },
        "E2E baseline": {
            "load_category_data": number_text(load.e2e_baseline_ms),
            "metrics JSON": number_text(block["e2e_baseline_ms"]),
            "template cat.e2e_ms": refs["cat.e2e_ms"],
            "report": _one(r"E2E baseline: ([0-9.]+) ms", page),
        },
        "GPU busy": {
            "load_category_data": number_text(load.gpu_busy_ms),
            "metrics JSON": number_text(block["time_base"]["gpu_busy_ms"]),
            "template cat.busy_ms": refs["cat.busy_ms"],
            "report": _one(r"GPU busy ([0-9.]+) ms", page),
        },
    }
    for fact, texts in _cli_surfaces(out_dir, row.name, capsys).items():
        facts[fact].update(texts)
    return facts


def _assert_one_spelling(surfaces: dict[str, dict[str, str]]) -> None:
    split = {fact: texts for fact, texts in surfaces.items() if len(set(texts.values())) != 1}
    assert not split, "a fact reads differently across surfaces: " + json.dumps(split, indent=1, ensure_ascii=False)


def test_one_spelling_per_fact_on_a_synthetic_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # one call (the demo mix's Llama-like causal GQA layer, forward and backward): sdpa_fwd has one row, P1.op1
    trace = write_trace(build_trace(demo_calls()[:1]), tmp_path / "demo_trace.json.gz")
    _assert_one_spelling(_surfaces(trace, tmp_path, DataRoots([tmp_path]), capsys))


@pytest.mark.skipif(not QWEN.is_file(), reason=SHARED_SKIP_REASON)
def test_one_spelling_per_fact_on_the_h100_qwen_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_spelling(_surfaces(QWEN, tmp_path, DataRoots([QWEN.parent, tmp_path]), capsys))
