"""The MCP server through a real in-process client: tool list, the load → roofline → rank flow on every
shared fixture folder, metrics-JSON compatibility, arch resolution, and numbers checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.tools import TOOLS
from tests.support import FIXTURES_WITH_OPS, FLASH_ROW, copy_fixture, make_folder, roots_for

pytestmark = pytest.mark.anyio

EXPECTED_TOOLS = {spec.name for spec in TOOLS if spec.mcp}


async def call(client: Client, tool: str, args: dict) -> dict:
    r = await client.call_tool(tool, args)
    assert not r.is_error, r.content[0].text if r.content else r
    return r.structured_content


async def test_lists_every_tool_with_schemas(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == EXPECTED_TOOLS
    for t in tools.values():
        assert t.input_schema["type"] == "object"
        assert t.output_schema is not None, f"{t.name} has no output schema"
        assert t.description
    assert tools["load_category_data"].annotations.read_only_hint is True
    assert tools["rank_findings"].annotations.read_only_hint is False
    assert set(tools["compute_roofline"].input_schema["required"]) == {"output_dir", "category"}


def _shape(v: object) -> str:
    """JSON type name; numbers are one type (an int 708 and a float 708.0 are the same kind of field)."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def _assert_superset(ours: object, theirs: object, path: str) -> None:
    """Every field of the fixture (recursively in dicts, first element of lists) exists in ours with the same type."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{path}: expected an object"
        for k, v in theirs.items():
            assert k in ours, f"{path}.{k} missing from our metrics JSON"
            if v is None or ours[k] is None:
                continue  # null in one of them: the field exists; its type is not comparable
            _assert_superset(ours[k], v, f"{path}.{k}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list), f"{path}: expected a list"
        if theirs and ours:
            _assert_superset(ours[0], theirs[0], f"{path}[0]")
    else:
        assert _shape(ours) == _shape(theirs), f"{path}: {_shape(ours)} != {_shape(theirs)}"


@pytest.mark.parametrize("name", FIXTURES_WITH_OPS)
async def test_fixture_flow_and_metrics_compatibility(name: str, tmp_path: Path) -> None:
    folder = copy_fixture(name, tmp_path)
    cats = sorted(p.name[: -len("_ops.csv")] for p in (folder / "category_data").glob("*_ops.csv"))
    scope = "comparative" if "comparative" in name else "standalone"
    async with Client(create_server(roots_for(tmp_path)), raise_exceptions=True) as c:
        for cat in cats:
            loaded = await call(c, "load_category_data", {"output_dir": str(folder), "category": cat})
            assert loaded["status"] == "OK" and loaded["rows"] >= 1
            roof = await call(c, "compute_roofline", {"output_dir": str(folder), "category": cat})
            assert roof["status"] == "OK" and Path(roof["roofline_file"]).is_file()
            ranked = await call(
                c, "rank_findings", {"output_dir": str(folder), "category": cat, "comparison_scope": scope}
            )
            ours = json.loads(Path(ranked["metrics_file"]).read_text())
            theirs = json.loads((copy_fixture_src(name) / "category_data" / f"{cat}_metrics.json").read_text())
            _assert_superset(ours, theirs, f"{name}/{cat}")
            assert [f["rank"] for f in ours["category_findings"]] == list(range(1, len(ours["category_findings"]) + 1))


def copy_fixture_src(name: str) -> Path:
    from tests.support import ANALYSIS_FOLDERS

    return ANALYSIS_FOLDERS / name


@pytest.mark.parametrize("name", ["h100_qwen1.5-0.5b", "h100_bert-small"])
async def test_h100_folders_use_h100_peaks_not_the_metadata_mi300x(name: str, tmp_path: Path) -> None:
    folder = copy_fixture(name, tmp_path)
    async with Client(create_server(roots_for(tmp_path)), raise_exceptions=True) as c:
        roof = await call(c, "compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd"})
        assert roof["peaks"]["gpu_key"].startswith("h100"), roof["peaks"]
        assert roof["peaks"]["source"] == "trace"
        assert any("disagrees" in w for w in roof["warnings"]), roof["warnings"]
        forced = await call(
            c, "compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "mi300x"}
        )
        assert forced["peaks"]["gpu_key"] == "mi300x" and forced["peaks"]["source"] == "argument"


async def test_synthetic_gqa_backward_is_non_causal(tmp_path: Path) -> None:
    folder = copy_fixture("synthetic_flash_attn_fwd_bwd_gqa_noncausal", tmp_path)
    async with Client(create_server(roots_for(tmp_path)), raise_exceptions=True) as c:
        roof = await call(c, "compute_roofline", {"output_dir": str(folder), "category": "sdpa_bwd", "arch": "mi300x"})
    row = roof["rows"][0]
    assert row["mask"] == "none" and row["direction"] == "bwd" and row["gqa_ratio"] == 4
    # 5-GEMM backward, no mask: 2·B·Hq·Nq·Nkv·(3·d + 2·d) = 2·2·32·4096·4096·640
    assert row["flops_useful"] == 2 * 2 * 32 * 4096 * 4096 * 640
    # measured: 10680 µs over 4 calls = 2670 µs; MI300X bf16 peak from the table
    archs = {a["key"]: a for a in (await _archs(tmp_path))}
    peak = archs["mi300x"]["tflops"]["matrix_bf16"]
    flops = 2 * 2 * 32 * 4096 * 4096 * 640
    expected_eff = 100 * (flops / (peak * 1e12)) / 2670e-6
    assert row["efficiency_pct"] == pytest.approx(expected_eff, abs=0.01)


async def _archs(tmp_path: Path) -> list[dict]:
    """Every GPU in full: list_architectures(gpu=key) for each key of the short table."""
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        keys = [a["key"] for a in (await call(c, "list_architectures", {}))["architectures"]]
        return [(await call(c, "list_architectures", {"gpu": k}))["details"] for k in keys]


async def test_hand_made_row_numbers_and_ranking(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        roof = await call(
            c, "compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
        )
        ranked = await call(c, "rank_findings", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"})
        archs = {"h100-sxm": (await call(c, "list_architectures", {"gpu": "h100-sxm"}))["details"]}
    row = roof["rows"][0]
    # aten flash, causal, Nq = Nkv = 1024: kept pairs 1024·1025/2 = 524,800 per (batch, head)
    pairs = 1024 * 1025 // 2
    flops = 2 * 2 * 8 * pairs * (64 + 64)  # 2·B·H·P·(dqk + dv)
    assert row["flops_useful"] == flops
    # compulsory bytes: Q, K, V read + O written (bf16, 2 B) + fp32 LSE [B, H, N]
    tensor = 2 * 8 * 1024 * 64
    assert row["bytes_compulsory"] == 4 * tensor * 2 + 2 * 8 * 1024 * 4
    peak = archs["h100-sxm"]["tflops"]["matrix_bf16"]
    bw = archs["h100-sxm"]["hbm_tbs"]
    ideal_s = max(flops / (peak * 1e12), row["bytes_compulsory"] / (bw * 1e12))
    assert row["efficiency_pct"] == pytest.approx(100 * ideal_s / 100e-6, abs=0.01)
    assert row["library"] != "Unknown" and row["attention_type"] == "flash"
    # impact: high = (1 - eff)·time/E2E·100 with time 1 ms, E2E 10 ms; mid = 0.875·high; low = 0.75·high
    eff = 100 * ideal_s / 100e-6
    high = (1 - eff / 100) * 1.0 / 10.0 * 100
    f = ranked["findings"][0]
    assert f["impact_score_high"] == round(high, 2)
    assert f["impact_score"] == round(0.875 * high, 2)
    assert f["impact_score_low"] == round(0.75 * high, 2)
    assert f["rank"] == 1 and f["bound_type"] == row["bound"]


async def test_paging_keeps_results_small(tmp_path: Path) -> None:
    rows = [FLASH_ROW.replace(",10,1000.0,100.0,", f",10,{1000.0 + i},{100.0 + i / 10},") for i in range(30)]
    folder = make_folder(tmp_path, rows, e2e_ms=100.0)
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        first = await call(
            c, "compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm", "limit": 5}
        )
        second = await call(
            c,
            "compute_roofline",
            {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm", "limit": 5, "offset": 5},
        )
    assert first["total_rows"] == 30 and len(first["rows"]) == 5 and len(second["rows"]) == 5
    times = [r["time_ms"] for r in first["rows"] + second["rows"]]
    assert times == sorted(times, reverse=True)
    assert {r["row"] for r in first["rows"]}.isdisjoint({r["row"] for r in second["rows"]})
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        ranked = await call(c, "rank_findings", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"})
    # 30 rows of one op in one group: the result names the op once and counts every row
    f = ranked["findings"][0]
    assert f["members"] == ["aten::_scaled_dot_product_flash_attention"] and f["member_count"] == 30


async def test_model_attention_and_prompt_and_resources(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        m = await call(
            c,
            "model_attention",
            {
                "batch": 1,
                "heads_q": 32,
                "seq_q": 512,
                "seq_kv": 2048,
                "head_dim": 128,
                "mask": "causal",
                "alignment": "top_left",
                "arch": "h100-sxm",
            },
        )
        # top-left causal, Nq=512 <= Nkv: P = 512·513/2 = 131,328 per head
        assert m["kept_pairs"] == 131_328
        assert m["flops_useful"] == 2 * 32 * 131_328 * 256
        prompt = await c.get_prompt(
            "sdpa_analysis", {"output_dir": "/data/run1", "category": "sdpa_bwd", "comparison_scope": "standalone"}
        )
        text = prompt.messages[0].content.text
        assert "/data/run1" in text and "sdpa_bwd" in text
        res = await c.list_resources()
        uris = {str(r.uri) for r in res.resources}
        assert {"sdpa://findings-format", "sdpa://architectures"} <= uris
