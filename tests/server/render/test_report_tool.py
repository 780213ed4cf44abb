"""render_report and plot_roofline on real folders: findings ranked on another GPU or bytes model are flagged,
every "no findings" says why, and the page carries the prose, kernel names, module chains, the impact unit and a
comparative folder's trace-2 columns. Expected values come from the rows written here, not from the code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdpa_analyzer.server.cli.main import main
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.ranked import BELOW_THRESHOLD, NOT_RANKED, TRACE2_NOT_FASTER, no_findings_reason
from sdpa_analyzer.server.tools import call
from tests.support import FLASH_ROW, OPS_HEADER, make_folder
from tests.support import parse_html as parse

STACK = repr([
    "model.py(10): forward", "nn.Module: LlamaModel", "nn.Module: LlamaAttention",
    "aten::_scaled_dot_product_flash_attention", "void pytorch_flash::flash_fwd_kernel<...>",
])  # fmt: skip
FLASH_KERNEL = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4> >(Flash_fwd_params)"
CMP_HEADER = OPS_HEADER + ",call_stack_full,delta_us (trace2 - trace1),lca_count_trace2"


def _row(delta_us: float | None = None, count2: int | None = None) -> str:
    row = FLASH_ROW + ',"' + STACK.replace('"', '""') + '"'
    if delta_us is not None:
        row += f",{delta_us},{count2}"
    return row


def folder(tmp_path: Path, *, e2e_ms: float = 10.0, delta_us: float | None = None, count2: int = 12) -> Path:
    if delta_us is None:
        return make_folder(tmp_path, [_row()], e2e_ms=e2e_ms, header=OPS_HEADER + ",call_stack_full")
    return make_folder(tmp_path, [_row(delta_us, count2)], e2e_ms=e2e_ms, header=CMP_HEADER)


def report(tmp_path: Path, out: Path, **kw: object):
    res = call("render_report", DataRoots([tmp_path]), output_dir=str(out), **kw)
    return res, Path(res.report_file).read_text(encoding="utf-8")


def rank(tmp_path: Path, out: Path, **kw: object):
    return call("rank_findings", DataRoots([tmp_path]), output_dir=str(out), category="sdpa_fwd", **kw)


def text_of(page: str) -> str:
    return "".join(parse(page).text)


# ---------------------------------------------------------------- 1. consistency
def test_findings_ranked_on_another_gpu_are_flagged_in_the_report(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    res, page = report(tmp_path, out, arch="mi300x")
    (w,) = res.warnings
    assert w.startswith("sdpa_fwd: findings were ranked on NVIDIA H100")
    assert "(h100-sxm)" in w and "MI300X (mi300x)" in w
    assert "re-run rank_findings with arch=mi300x" in w.lower() and "pass arch=h100-sxm to render_report" in w
    assert 'id="mismatch-sdpa_fwd"' in page and 'role="alert"' in page
    text = text_of(page)
    assert "The findings below do not match this roofline." in text
    assert "Ranked with NVIDIA H100" in text  # and the findings table says what they were ranked with


def test_no_warning_when_the_report_uses_the_ranking_gpu(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    res, page = report(tmp_path, out, arch="h100-sxm")
    assert res.warnings == []
    assert "mismatch-sdpa_fwd" not in page and "do not match this roofline" not in text_of(page)


def test_another_bytes_model_is_flagged(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm", bytes_model="tiled")
    res, _ = report(tmp_path, out, arch="h100-sxm")
    (w,) = res.warnings
    assert "with tiled bytes" in w and "with compulsory bytes" in w
    assert "bytes_model=compulsory" in w and "pass bytes_model=tiled to render_report" in w
    assert "arch=" not in w  # the GPU agrees: the fix names only what differs


def test_the_plot_result_and_chart_carry_the_mismatch(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    roots = DataRoots([tmp_path])
    bad = call("plot_roofline", roots, output_dir=str(out), category="sdpa_fwd", arch="mi300x")
    good = call("plot_roofline", roots, output_dir=str(out), category="sdpa_fwd", arch="h100-sxm")
    (w,) = bad.warnings
    assert "H100" in w and "MI300X" in w and "pass arch=h100-sxm to plot_roofline" in w
    assert good.warnings == []
    assert bad.png != good.png


def test_a_metrics_file_without_our_block_is_flagged(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    path = out / "category_data" / "sdpa_fwd_metrics.json"
    doc = json.loads(path.read_text())
    del doc["sdpa_analyzer"]  # as another tool (TraceLens) writes it
    path.write_text(json.dumps(doc))
    res, _ = report(tmp_path, out, arch="h100-sxm")
    (w,) = res.warnings
    assert "does not record the GPU or bytes model" in w


# ---------------------------------------------------------------- 2. why no findings
def test_not_ranked_yet_says_so(tmp_path: Path) -> None:
    out = folder(tmp_path)
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert f"No findings: {NOT_RANKED}." in text_of(page)
    assert NOT_RANKED == "rank_findings has not been run for this category: no ranked findings yet"
    rank(tmp_path, out, arch="h100-sxm")
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert NOT_RANKED not in text_of(page)
    assert "findings-sdpa_fwd" in parse(page).tables  # ranked: the findings table is there


def test_below_threshold_in_the_result_the_report_and_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1 ms of kernel time in a 100 s window: the whole op is 0.001 % of E2E, under the 0.5 % group threshold
    out = folder(tmp_path, e2e_ms=100_000.0)
    res = rank(tmp_path, out, arch="h100-sxm")
    assert res.findings_total == 0
    assert res.no_findings_reason == BELOW_THRESHOLD
    assert "groups under 0.5 % of E2E are dropped" in BELOW_THRESHOLD
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert f"No findings: {BELOW_THRESHOLD}." in text_of(page)
    assert main(["rank", str(out), "sdpa_fwd", "--arch", "h100-sxm"]) == 0
    assert f"(no findings: {BELOW_THRESHOLD})" in capsys.readouterr().out


def test_findings_have_no_reason(tmp_path: Path) -> None:
    res = rank(tmp_path, folder(tmp_path), arch="h100-sxm")
    assert res.findings_total >= 1 and res.no_findings_reason is None


def test_comparative_trace2_slower_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = folder(tmp_path, delta_us=250.0)  # trace 2 took 0.25 ms longer: trace 1 is faster, nothing to win back
    res = rank(tmp_path, out, arch="h100-sxm", comparison_scope="comparative")
    assert res.findings_total == 0 and res.no_findings_reason == TRACE2_NOT_FASTER
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert TRACE2_NOT_FASTER in text_of(page)
    assert main(["rank", str(out), "sdpa_fwd", "--arch", "h100-sxm", "--scope", "comparative"]) == 0
    assert "trace 2 is not faster than trace 1 for any op" in capsys.readouterr().out


def test_comparative_trace2_faster_gives_findings(tmp_path: Path) -> None:
    out = folder(tmp_path, delta_us=-600.0)  # trace 2: 0.4 ms for trace 1's 1 ms
    res = rank(tmp_path, out, arch="h100-sxm", comparison_scope="comparative")
    assert res.findings_total == 1 and res.no_findings_reason is None


def test_no_findings_rule() -> None:
    assert no_findings_reason(2, "comparative", [0.5]) is None
    assert no_findings_reason(0, "standalone", [0.5]) == BELOW_THRESHOLD  # differences only count in comparative
    assert no_findings_reason(0, "comparative", [0.0, 0.2]) == TRACE2_NOT_FASTER
    assert no_findings_reason(0, "comparative", [0.2, -0.01]) == BELOW_THRESHOLD  # one op was faster in trace 2
    assert no_findings_reason(0, "comparative", [None, None]) == BELOW_THRESHOLD  # nothing matched in trace 2
    mixed = no_findings_reason(0, "comparative", [0.2, None])
    assert mixed is not None and mixed.startswith(TRACE2_NOT_FASTER) and "1 op(s) without a trace-2 time" in mixed


# ---------------------------------------------------------------- 3. what the page holds
def test_prose_is_included_and_escaped(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    (out / "category_findings").mkdir()
    (out / "category_findings" / "sdpa_fwd_findings.md").write_text(
        "# SDPA findings: sdpa_fwd\n\n### P1: Flash below its band\n**Insight**: slow.\n\n"
        "| Operation | Time (ms) |\n|---|---|\n| aten::flash | 1.0 |\n\n"
        '- one\n- two\n\n<script>alert("pwned")</script>\n',
        encoding="utf-8",
    )
    _, page = report(tmp_path, out, arch="h100-sxm")
    p = parse(page)
    assert "script" not in p.start_tags and "<script" not in page.lower()
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    text = text_of(page)
    assert "SDPA findings: sdpa_fwd" in text and "P1: Flash below its band" in text
    assert "<h5>P1: Flash below its band</h5>" in page
    prose_tables = [t for t in p.tables.values() if t and t[0] == ["Operation", "Time (ms)"]]
    assert prose_tables == [[["Operation", "Time (ms)"], ["aten::flash", "1.0"]]]
    assert "<li>one</li><li>two</li>" in page
    assert "prose-sdpa_fwd" in page
    assert "written before the category was last ranked" not in text


def test_prose_older_than_the_ranking_is_noted(tmp_path: Path) -> None:
    out = folder(tmp_path)
    (out / "category_findings").mkdir()
    prose = out / "category_findings" / "sdpa_fwd_findings.md"
    prose.write_text("# old prose\n", encoding="utf-8")
    rank(tmp_path, out, arch="h100-sxm")
    metrics = out / "category_data" / "sdpa_fwd_metrics.json"
    os.utime(prose, ns=(metrics.stat().st_mtime_ns - 10**9,) * 2)
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert "written before the category was last ranked" in text_of(page)


def test_no_prose_says_so(tmp_path: Path) -> None:
    out = folder(tmp_path)
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert "No findings prose yet" in text_of(page)


def test_kernel_module_chain_utilizations_and_impact_unit(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    _, page = report(tmp_path, out, arch="h100-sxm")
    p = parse(page)
    ops = p.tables["ops-sdpa_fwd"]
    head, row = ops[0], ops[1]
    cell = dict(zip(head, row, strict=True))
    assert cell["module"] == "LlamaModel > LlamaAttention"
    assert cell["kernel"].split("\n") == [FLASH_KERNEL[:59] + "…", FLASH_KERNEL]  # cut, then in full below
    assert FLASH_KERNEL in [v for t, k, v in p.attrs if t == "summary" and k == "title"]
    assert {"compute %", "memory %", "regime", "expected band"} <= set(head)
    assert cell["regime"] in ("compute", "memory", "balanced")
    assert float(cell["compute %"]) > 0 and float(cell["memory %"]) > 0
    assert "T2 time ms" not in head  # one trace: no trace-2 columns
    findings = p.tables["findings-sdpa_fwd"]
    impact_heads = [h for h in findings[0] if h.startswith(("impact", "to band"))]
    assert len(impact_heads) == 4 and all(h.endswith("(% of E2E)") for h in impact_heads)


def test_comparative_folder_shows_trace2_columns(tmp_path: Path) -> None:
    # trace 1: 10 calls, 1000 µs in all (FLASH_ROW); trace 2: 250 µs more, 12 calls
    out = folder(tmp_path, delta_us=250.0, count2=12)
    _, page = report(tmp_path, out, arch="h100-sxm")
    ops = parse(page).tables["ops-sdpa_fwd"]
    cell = dict(zip(ops[0], ops[1], strict=True))
    # trace 2's columns come after the key columns (op, shape, …, verdict) that fit the screen
    assert ops[0][7:11] == ["verdict", "T2 time ms", "T2 count", "Δ ms (T2 − T1)"]
    assert cell["time ms"] == "1.000"
    assert cell["T2 time ms"] == "1.250" and cell["T2 count"] == "12" and cell["Δ ms (T2 − T1)"] == "+0.250"


def test_prose_with_unresolved_references_is_noted(tmp_path: Path) -> None:
    out = folder(tmp_path)
    rank(tmp_path, out, arch="h100-sxm")
    (out / "category_findings").mkdir()
    (out / "category_findings" / "sdpa_fwd_findings.md").write_text(
        "# prose\n\nIt takes {{P1.op1.time_ms}}.\n", encoding="utf-8")
    _, page = report(tmp_path, out, arch="h100-sxm")
    assert "has not passed validate_findings yet" in text_of(page)
