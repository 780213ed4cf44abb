"""Bad input through the MCP client: one-line errors naming the file/field/fix, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from tests.support import FLASH_ROW, OPS_HEADER, make_folder

pytestmark = pytest.mark.anyio


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def tool_error(tmp_path: Path, tool: str, args: dict) -> str:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        r = await c.call_tool(tool, args)
    assert r.is_error, f"{tool} should have failed: {r.structured_content}"
    text = r.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    return text


async def roofline_error(tmp_path: Path, folder: Path) -> str:
    before = snapshot(folder)
    msg = await tool_error(
        tmp_path, "rank_findings", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
    )
    assert snapshot(folder) == before, "a failed call must not write anything"
    return msg


async def test_missing_folder(tmp_path: Path) -> None:
    msg = await tool_error(tmp_path, "compute_roofline", {"output_dir": str(tmp_path / "nope"), "category": "sdpa_fwd"})
    assert "output_dir not found" in msg and "nope" in msg


async def test_missing_csv_is_no_data(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    (folder / "category_data").mkdir(parents=True)
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        r = await c.call_tool("load_category_data", {"output_dir": str(folder), "category": "sdpa_bwd"})
        roof = await c.call_tool("compute_roofline", {"output_dir": str(folder), "category": "sdpa_bwd"})
    assert r.structured_content["status"] == "NO_DATA"
    assert "No SDPA operations found in trace" in r.structured_content["message"]
    assert roof.structured_content["status"] == "NO_DATA"


async def test_csv_missing_columns(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, ["aten::x,SDPA_fwd,3"], header="name,op category,operation_count")
    msg = await roofline_error(tmp_path, folder)
    assert "sdpa_fwd_ops.csv" in msg and "Kernel Time (µs)_sum" in msg


async def test_unparseable_shape_string(tmp_path: Path) -> None:
    row = FLASH_ROW.replace('"((2, 8, 1024, 64), (2, 8, 1024, 64)', '"((2, 8, 1024, 64), (2, 8, 1024')
    folder = make_folder(tmp_path, [row])
    msg = await roofline_error(tmp_path, folder)
    assert "Input Dims" in msg and "row 2" in msg


async def test_eval_bait_in_concrete_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "pwned"
    bait = f"__import__('os').system('touch {marker}')"
    row = FLASH_ROW.replace("\"('', '', '', '0.', 'True', 'False', '0.125')\"", f'"{bait}"')
    folder = make_folder(tmp_path, [row])
    msg = await roofline_error(tmp_path, folder)
    assert "Concrete Inputs" in msg and not marker.exists()


@pytest.mark.parametrize("bad", ["nan", "-5.0"])
async def test_nan_or_negative_kernel_time(tmp_path: Path, bad: str) -> None:
    row = FLASH_ROW.replace(",10,1000.0,100.0,", f",10,{bad},100.0,")
    folder = make_folder(tmp_path, [row])
    msg = await roofline_error(tmp_path, folder)
    assert "Kernel Time (µs)_sum" in msg and "row 2" in msg


async def test_zero_e2e_baseline(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=0.0)
    msg = await roofline_error(tmp_path, folder)
    assert "total_time_ms" in msg and "positive" in msg


async def test_unknown_arch(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    msg = await tool_error(
        tmp_path, "compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "rtx-9999"}
    )
    # the nearest keys, and where all are
    assert "rtx-9999" in msg and "rtx-4090" in msg and "list_architectures" in msg


@pytest.mark.parametrize("path", ["../outside", "/etc", "link"])
async def test_path_outside_roots(tmp_path: Path, path: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to("/etc")
    async with Client(create_server([root]), raise_exceptions=True) as c:
        r = await c.call_tool("load_category_data", {"output_dir": path, "category": "sdpa_fwd"})
        roof = await c.call_tool("compute_roofline", {"output_dir": path, "category": "sdpa_fwd"})
    assert r.is_error and "outside the allowed data roots" in r.content[0].text  # a tool error, like every tool
    assert roof.is_error and "outside the allowed data roots" in roof.content[0].text


async def test_findings_file_not_found(tmp_path: Path) -> None:
    msg = await tool_error(
        tmp_path, "validate_findings", {"findings_path": str(tmp_path / "x" / "sdpa_fwd_findings.md")}
    )
    assert "findings file not found" in msg


async def test_bad_category_name(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    msg = await tool_error(tmp_path, "compute_roofline", {"output_dir": str(folder), "category": "../../etc"})
    assert "category=" in msg


async def test_unknown_op_gets_a_reason_not_a_crash(tmp_path: Path) -> None:
    row = FLASH_ROW.replace("aten::_scaled_dot_product_flash_attention", "mylib::secret_attention", 1)
    folder = make_folder(tmp_path, [row], header=OPS_HEADER)
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        roof = await c.call_tool(
            "compute_roofline", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
        )
        ranked = await c.call_tool(
            "rank_findings", {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
        )
    row0 = roof.structured_content["rows"][0]
    assert row0["efficiency_pct"] is None and any("mylib::secret_attention" in w for w in row0["warnings"])
    f = ranked.structured_content["findings"][0]
    # heuristic: 0.30/0.15/0.45 × %E2E, with 1 ms of 10 ms = 10 %
    assert (f["impact_score_low"], f["impact_score"], f["impact_score_high"]) == (1.5, 3.0, 4.5)
    assert f["bound_type"] == "unmodeled" and f["estimate_method"] == "heuristic"
