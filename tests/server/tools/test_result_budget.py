"""Every tool result fits an LLM's context whatever the category size: at most RESULT_BUDGET characters of text
content plus structured content, on a 500-row category, through the real MCP client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from tests.support import make_large_folder

pytestmark = pytest.mark.anyio
RESULT_BUDGET = 32_000  # characters: ~8k tokens (Claude Code warns at 10k tokens and refuses 25k by default)


def _size(result) -> int:
    text = sum(len(getattr(block, "text", "") or "") for block in result.content)
    return text + (len(json.dumps(result.structured_content)) if result.structured_content is not None else 0)


async def test_every_tool_stays_within_the_budget_on_a_500_row_category(tmp_path: Path) -> None:
    folder = make_large_folder(tmp_path, 500)
    base = {"output_dir": str(folder), "category": "sdpa_fwd"}
    calls = [
        ("load_category_data", base),
        ("compute_roofline", {**base, "arch": "h100-sxm", "limit": 50}),
        ("compute_roofline", {**base, "arch": "h100-sxm", "limit": 50, "offset": 450}),
        ("rank_findings", {**base, "arch": "h100-sxm"}),
        ("render_findings_template", base),
        ("plot_roofline", {**base, "arch": "h100-sxm"}),
        ("list_architectures", {}),
        ("list_architectures", {"gpu": "mi300x"}),
        ("model_attention", {"batch": 1, "heads_q": 8, "seq_q": 1024, "head_dim": 128}),
        ("render_report", {"output_dir": str(folder), "arch": "h100-sxm"}),
    ]
    sizes = {}
    async with Client(create_server([tmp_path])) as c:
        for name, args in calls:
            r = await c.call_tool(name, args)
            assert not r.is_error, (name, r.content[0].text)
            sizes[f"{name}{args.get('offset', '')}{args.get('gpu', '')}"] = _size(r)
        roof = (await c.call_tool("compute_roofline", {**base, "arch": "h100-sxm", "limit": 50})).structured_content
        # a broken file with an error on every line still gives a result that fits
        findings = folder / "category_findings" / "sdpa_fwd_findings.md"
        # (a malformed heading on every line: an invented P-item would be one error, its derived ones suppressed)
        findings.write_text("## Recommendations\n" + "### P9 - x\n" * 3000 + "## Detailed Analysis\n")
        r = await c.call_tool("validate_findings", {"findings_path": str(findings)})
        sizes["validate_findings"] = _size(r)
        report = r.structured_content
    print(sizes)  # shown with -s: the measured sizes
    assert max(sizes.values()) <= RESULT_BUDGET, sizes
    # the page stops at the budget and says where the next one starts
    assert 0 < len(roof["rows"]) <= 50 and roof["next_offset"] == len(roof["rows"]) and roof["total_rows"] == 500
    assert not report["passed"] and report["error_count"] > len(report["errors"])

