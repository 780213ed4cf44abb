"""The kernel advisor and the seed's patterns through rank_findings and the template (issue 24), against numbers
worked out here from the rows: in-band ops are not findings, the band-edge lever, copies and KV-cache writes with
their shares, attention kernels outside every op, backward vs forward, and a wrong folder as an error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client

from sdpa_analyzer.perf_models.config import AttentionConfig, Mask
from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.perf_models.model_attention import Band, model_attention
from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.advice import MATCH_REFERENCE
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FLASH_ROW, OPS_HEADER, make_folder

# FLASH_ROW's op at B8 H8 N1024 d64 causal bf16 (enough query tiles to fill an H100: smaller calls get no band),
# 10 calls, 1000 µs in all (100 µs each), E2E 10 ms in make_folder
FLOPS = 4.0 * 8 * 8 * (1024 * 1025 // 2) * 64
TENSOR_PCT = 100.0 * FLOPS / 100e-6 / 989.4e12  # achieved / H100 datasheet bf16, the compute band's metric


def _band(b: int, h: int, hd: int) -> Band:
    """The expected band of a causal bf16 forward at N = 1024 on an H100 SXM (from the band table)."""
    band = model_attention(AttentionConfig(b, h, h, 1024, 1024, hd, hd, dtype_q="bf16", mask=Mask("causal")),
                           get_gpu("h100-sxm")).band
    assert band is not None
    return band


def _row(name_dims: str, calls: int, total_us: float) -> str:
    """FLASH_ROW with other dims, calls and time."""
    row = FLASH_ROW.replace("(2, 8, 1024, 64)", name_dims).replace(",10,1000.0,100.0,", f",{calls},{total_us},"
                                                                  f"{total_us / calls},")
    return row.replace("'count': 10, 'total_duration_us': np.float64(1000.0)",
                       f"'count': {calls}, 'total_duration_us': np.float64({total_us})")


BASE_ROW = _row("(8, 8, 1024, 64)", 10, 1000.0)


def _rank(tmp_path: Path, folder: Path, category: str = "sdpa_fwd") -> dict:
    roots = DataRoots([tmp_path])
    call("rank_findings", roots, output_dir=str(folder), category=category, arch="h100-sxm")
    return json.loads((folder / "category_data" / f"{category}_metrics.json").read_text())


def test_the_band_edge_lever_is_the_rows_time_scaled_to_the_band(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [BASE_ROW])
    metrics = _rank(tmp_path, folder)
    (finding,) = metrics["category_findings"]
    levers = {x["change"]: x for x in finding["advice"]["levers"]}
    band = _band(8, 8, 64)
    assert TENSOR_PCT < band.low_pct  # the row is below its band: a finding
    edge = levers[MATCH_REFERENCE]
    assert edge["time_ms"] == 1.0
    assert edge["time_after_ms"] == pytest.approx(1.0 * TENSOR_PCT / band.reference_pct, abs=6e-4)
    assert edge["saved_ms"] == pytest.approx(1.0 - 1.0 * TENSOR_PCT / band.reference_pct, abs=6e-4)
    assert edge["saved_pct_e2e"] == pytest.approx(100.0 * edge["saved_ms"] / 10.0, abs=6e-3)
    ref = finding["advice"]["reference"]
    assert ref["band_value"] == pytest.approx(TENSOR_PCT, abs=0.006) and ref["band_high"] == round(band.high_pct, 1)
    assert ref["source"] and ref["kernel"] == band.reference_kernel
    # head dim 128 at the same hidden size (H8 d64 -> H4 d128): at the best published d128 kernel's efficiency
    alt = levers["head dim 128 at the same hidden size, at the best published kernel for it"]
    alt_us = FLOPS / (989.4e12 * _band(8, 4, 128).reference_pct / 100.0) * 1e6
    assert alt["time_after_ms"] == pytest.approx(10 * alt_us / 1000.0, abs=6e-4)


def test_an_in_band_op_is_listed_not_ranked(tmp_path: Path) -> None:
    # the same shape at a time that puts it inside its band: its tensor % lands mid-band
    band = _band(8, 8, 64)
    band_mid = (band.low_pct + band.high_pct) / 2
    per_call = FLOPS / (989.4e12 * band_mid / 100.0) * 1e6
    fast = _row("(8, 8, 1024, 64)", 10, round(10 * per_call, 3))
    slow = _row("(16, 8, 1024, 64)", 10, 4000.0)
    folder = make_folder(tmp_path, [fast, slow], e2e_ms=20.0)
    metrics = _rank(tmp_path, folder)
    ours = metrics["sdpa_analyzer"]
    assert [x["row"] for x in ours["in_band"]] == [0] and ours["in_band"][0]["band_status"] == "within"
    members = [m for f in metrics["category_findings"] for m in f["members"]]
    assert [m["row"] for m in members] == [1]
    assert all(e["row"] != 0 for e in metrics["impact_estimates"])
    roots = DataRoots([tmp_path])
    tpl = call("render_findings_template", roots, output_dir=str(folder), category="sdpa_fwd")
    text = Path(tpl.findings_file).read_text()
    head, _, recommendations = text.partition("## Recommendations")
    assert "## Within the expected band" in head and "vs band" in head
    assert "### P1" in recommendations and "### P2" not in recommendations


def test_copies_and_kv_writes_with_their_shares(tmp_path: Path) -> None:
    header = OPS_HEADER + ",copy_overhead_us_sum,kv_cache_write_us_sum"
    folder = make_folder(tmp_path, [FLASH_ROW + ",1016.0,125.0"], header=header)
    metrics = _rank(tmp_path, folder)
    facts = metrics["category_findings"][0]["facts"]
    assert facts["copy_overhead"] == {"time_ms": 1.016, "attention_time_ms": 1.0, "percent_of_attention": 101.6,
                                      "percent_of_e2e": 10.16, "rows": 1}  # fmt: skip
    kv = facts["kv_cache_write"]
    assert kv["percent_of_op"] == pytest.approx(round(100 * 0.125 / 1.125, 2)) and kv["over_threshold"]
    levers = {x["change"].split(" (")[0]: x for x in metrics["category_findings"][0]["advice"]["levers"]}
    assert levers["drop the layout copies of Q/K/V/output around the calls"]["saved_ms"] == 1.016


def test_attention_kernels_outside_every_op_reach_the_facts(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    meta_path = folder / "metadata" / "sdpa_fwd_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["attention_outside_rows"] = {"trace1": {"kernels": 3, "time_us": 150.0, "percent_of_e2e": 1.5,
                                                 "kernel_names": 1, "longest": [{"name": "attn_fwd", "count": 3,
                                                                                 "time_us": 150.0}]}}  # fmt: skip
    meta_path.write_text(json.dumps(meta))
    metrics = _rank(tmp_path, folder)
    assert metrics["sdpa_analyzer"]["facts"]["attention_outside_rows"]["trace1"]["time_us"] == 150.0
    tpl = call("render_findings_template", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd")
    text = Path(tpl.findings_file).read_text()
    row = "| 3 attention kernels outside every op (the trace), in no finding; longest: `attn_fwd` | 150.0 µs | — "
    row += "| 1.5 |"
    assert row in text
    assert "{{cat.outside.trace1.time_us}} = 150.0 µs" in text  # and the prose writes it by reference


def test_backward_against_its_forward(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    bwd = (
        "aten::_scaled_dot_product_flash_attention_backward,SDPA_bwd,"
        '"((2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024), '
        '(), (), (), (), (), (), (), ())",'
        "\"('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'float', '', '', "
        "'Scalar', 'Scalar', 'Scalar', '', '', 'Scalar')\","
        "\"('', '', '', '', '', '', '', '', '1024', '1024', '0.', 'True', '', '0.125')\",10,3000.0,300.0,"
        "\"[{'name': 'void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, "
        "128, 128, 8> >(Flash_bwd_params)', 'stream': 7, 'count': 10, 'total_duration_us': np.float64(3000.0)}]\","
        "model.py(10): forward"
    )
    (folder / "category_data" / "sdpa_bwd_ops.csv").write_text(OPS_HEADER + "\n" + bwd + "\n")
    meta = json.loads((folder / "metadata" / "sdpa_fwd_metadata.json").read_text())
    (folder / "metadata" / "sdpa_bwd_metadata.json").write_text(json.dumps({**meta, "category_name": "sdpa_bwd"}))
    metrics = _rank(tmp_path, folder, "sdpa_bwd")
    (pair,) = metrics["sdpa_analyzer"]["facts"]["backward_vs_forward"]
    assert pair["backward_us_per_call"] == 300.0 and pair["forward_us_per_call"] == 100.0
    assert pair["time_ratio"] == 3.0 and pair["flops_ratio"] == 2.5  # 5-GEMM backward at equal head dims


@pytest.mark.anyio
async def test_a_folder_that_is_not_an_analysis_folder_is_an_error(tmp_path: Path) -> None:
    inner = make_folder(tmp_path / "runs", [FLASH_ROW], name="analysis")
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "rank0.json.gz").write_bytes(b"")
    empty = tmp_path / "empty"
    empty.mkdir()
    async with Client(create_server([tmp_path])) as c:
        for folder, says in ((inner.parent, str(inner)), (traces, "analyze_trace"), (empty, "empty")):
            for tool in ("load_category_data", "compute_roofline", "rank_findings", "render_findings_template"):
                r = await c.call_tool(tool, {"output_dir": str(folder), "category": "sdpa_fwd"})
                text = r.content[0].text
                assert r.is_error and "is not an analysis folder" in text and says in text, (tool, text)
                assert "\n" not in text
    assert not (inner.parent / "category_findings").exists() and not (empty / "category_findings").exists()


def test_the_template_refuses_another_tools_metrics(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    (folder / "category_data" / "sdpa_fwd_metrics.json").write_text(json.dumps(
        {"category": "sdpa_fwd", "status": "OK", "operations": [], "category_findings": []}))
    with pytest.raises(ToolFailure, match="not written by sdpa-analyzer"):
        call("render_findings_template", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd")


def test_an_orchestrators_no_data_metrics_renders_the_one_line_file(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    (folder / "category_data" / "sdpa_fwd_metrics.json").write_text(json.dumps(
        {"category": "sdpa_fwd", "status": "NO_DATA", "operations": [], "category_findings": []}))
    tpl = call("render_findings_template", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd")
    assert Path(tpl.findings_file).read_text() == "# SDPA findings: sdpa_fwd\n\nNo SDPA operations found in trace\n"


def test_the_lever_table_declares_every_lever_once_and_orders_them_by_ms_saved(tmp_path: Path) -> None:
    from sdpa_analyzer.server.scoring.advice import LEVERS

    ids = [lever.id for lever in LEVERS]
    assert len(ids) == len(set(ids)) and all(lever.label and lever.gate and lever.compared_with for lever in LEVERS)
    header = OPS_HEADER + ",copy_overhead_us_sum,kv_cache_write_us_sum"
    folder = make_folder(tmp_path, [FLASH_ROW + ",1016.0,125.0"], header=header)
    levers = _rank(tmp_path, folder)["category_findings"][0]["advice"]["levers"]
    saved = [x["saved_ms"] for x in levers]
    assert saved == sorted(saved, reverse=True) and len(levers) >= 3
    copies = next(x for x in levers if x["id"] == "drop_copies")
    assert copies["saved_ms"] == 1.016 and copies["upper_bound"] is True  # every copy gone: the most it can give
    roof = next(x for x in levers if x["id"] == "reach_roofline")
    assert roof["upper_bound"] is True


def test_the_category_facts_have_a_slot_written_by_reference(tmp_path: Path) -> None:
    from sdpa_analyzer.server.findings import load_metrics, validate_findings_text
    from tests.support import fill_findings

    header = OPS_HEADER + ",copy_overhead_us_sum,kv_cache_write_us_sum"
    folder = make_folder(tmp_path, [FLASH_ROW + ",1016.0,125.0"], header=header)
    _rank(tmp_path, folder)
    tpl = call("render_findings_template", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd")
    text = Path(tpl.findings_file).read_text()
    assert "{{FILL: Category facts" in text
    text = re.sub(r"\{\{FILL: Category facts[^}]*\}\}",
                  "The KV-cache writes take {{cat.kv_write.share}} of the op, {{cat.kv_write.rule}}.", text)
    metrics = load_metrics(folder / "category_data" / "sdpa_fwd_metrics.json")
    report = validate_findings_text(fill_findings(text, metrics), metrics)
    assert report.passed, [str(e) for e in report.errors]
    # 125 µs of writes beside 1000 µs of attention: 100 × 0.125 / 1.125 = 11.11 % of the op, over the 10 % rule
    assert "The KV-cache writes take 11.11 % of the op, above the KV-write rule." in (report.resolved_text or "")
