"""The server as clients really run it: `sdpa-analyzer serve` over stdio, every tool called once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from sdpa_analyzer.server.tools import TOOLS
from tests.support import FLASH_ROW, make_folder

pytestmark = pytest.mark.anyio


async def test_every_tool_over_stdio(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sdpa_analyzer.server.cli.main", "serve", "--root", str(tmp_path)]
    )
    async with Client(params) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == {spec.name for spec in TOOLS if spec.mcp}
        out = str(folder)
        loaded = await c.call_tool("load_category_data", {"output_dir": out, "category": "sdpa_fwd"})
        assert loaded.structured_content["status"] == "OK" and loaded.structured_content["instances"] == 10
        roof = await c.call_tool("compute_roofline", {"output_dir": out, "category": "sdpa_fwd", "arch": "h100-sxm"})
        assert roof.structured_content["rows"][0]["flops_useful"] == 2 * 2 * 8 * (1024 * 1025 // 2) * 128
        ranked = await c.call_tool("rank_findings", {"output_dir": out, "category": "sdpa_fwd", "arch": "h100-sxm"})
        assert Path(ranked.structured_content["metrics_file"]).is_file()
        tpl = await c.call_tool("render_findings_template", {"output_dir": out, "category": "sdpa_fwd"})
        assert tpl.structured_content["slots"] > 0
        val = await c.call_tool("validate_findings", {"findings_path": tpl.structured_content["findings_file"]})
        assert val.structured_content["passed"] is False  # unfilled slots
        assert any(e["rule"].startswith("R0") for e in val.structured_content["errors"])
        model = await c.call_tool("model_attention", {"batch": 1, "heads_q": 8, "seq_q": 128, "head_dim": 64})
        assert model.structured_content["flops_useful"] == 4 * 8 * 128 * 128 * 64
        archs = await c.call_tool("list_architectures", {})
        assert archs.structured_content["count"] >= 9
        plot = await c.call_tool("plot_roofline", {"output_dir": out, "category": "sdpa_fwd", "arch": "h100-sxm"})
        assert not plot.is_error and plot.content[0].type == "image"
        bad = await c.call_tool("analyze_trace", {"trace_path": str(tmp_path / "missing.json"), "output_dir": out})
        assert bad.is_error and "missing.json" in bad.content[0].text
