"""The tools not covered by test_server_mcp, through an in-process client: analyze_trace (with progress
notifications), render_findings_template, validate_findings and plot_roofline."""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace

pytestmark = pytest.mark.anyio


async def test_analyze_render_validate_plot(tmp_path: Path) -> None:
    # one causal GQA call, 3 repeats of a 250 µs forward kernel: everything below is known in advance
    call = SyntheticAttentionCall(
        flavour="aten_flash",
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=2048,
        head_dim_qk=128,
        causal=True,
        kernel_us=250.0,
        repeat=3,
    )
    trace = tmp_path / "t.json.gz"
    write_trace(build_trace([call], gpu_name="NVIDIA H100 80GB HBM3"), trace)
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    out = tmp_path / "analysis"
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        res = await c.call_tool(
            "analyze_trace", {"trace_path": str(trace), "output_dir": str(out)}, progress_callback=on_progress
        )
        assert not res.is_error, res.content[0].text
        cats = {x["name"]: x for x in res.structured_content["categories"]}
        assert cats["sdpa_fwd"]["instances"] == 3 and cats["sdpa_fwd"]["kernel_time_ms"] == pytest.approx(0.75)
        assert res.structured_content["gpu"]["arch"] == "h100-sxm"
        assert progress and progress[-1][0] == progress[-1][1]  # the last notification says "done"

        roof = await c.call_tool("compute_roofline", {"output_dir": str(out), "category": "sdpa_fwd"})
        row = roof.structured_content["rows"][0]
        # bottom-right == top-left for square causal: P = 2048·2049/2 per (batch, head)
        assert row["flops_useful"] == 2 * 2 * 32 * (2048 * 2049 // 2) * 256 and row["mask"].startswith("causal")
        await c.call_tool("rank_findings", {"output_dir": str(out), "category": "sdpa_fwd"})

        tpl = await c.call_tool("render_findings_template", {"output_dir": str(out), "category": "sdpa_fwd"})
        path = Path(tpl.structured_content["findings_file"])
        assert path.name == "sdpa_fwd_findings.md" and tpl.structured_content["slots"] >= 7
        again = await c.call_tool("render_findings_template", {"output_dir": str(out), "category": "sdpa_fwd"})
        assert again.structured_content["wrote_main_file"] is False  # never overwrites a findings file

        bad = await c.call_tool("validate_findings", {"findings_path": str(path)})
        assert bad.structured_content["passed"] is False
        path.write_text(re.sub(r"\{\{FILL:[^}]*\}\}", "A plain sentence.", path.read_text()))
        good = await c.call_tool("validate_findings", {"findings_path": str(path)})
        assert good.structured_content["passed"] is True, good.structured_content["errors"]

        plot = await c.call_tool("plot_roofline", {"output_dir": str(out), "category": "sdpa_fwd"})
        assert not plot.is_error
        png = base64.b64decode(plot.content[0].data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])
        assert (width, height) == (plot.structured_content["width_px"], plot.structured_content["height_px"])
        assert Path(plot.structured_content["files"][0]).read_bytes() == png
        assert plot.structured_content["plotted"] == 1


async def test_analyze_trace_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        r = await c.call_tool(
            "analyze_trace", {"trace_path": str(tmp_path / "bad.json"), "output_dir": str(tmp_path / "o")}
        )
    assert r.is_error and "bad.json" in r.content[0].text and "\n" not in r.content[0].text
    assert not (tmp_path / "o").exists()
