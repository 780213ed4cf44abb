"""analyze_trace's `model_config` argument through a real in-process MCP client: listed in the schema under that name,
read through the data roots, and a bad file is one tool error naming the field, with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, write_serving_run

pytestmark = pytest.mark.anyio

MI300X = "AMD Instinct MI300X"


def _layer(kernel_us: float) -> SyntheticAttentionCall:
    # 32 decodes of 4096 keys, Hq 64, Hkv 8, d 64; full layer bytes 268,959,744 (test_model_config.py)
    return SyntheticAttentionCall(flavour="vllm_unified", batch=32, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1,) * 32, seqlens_kv=(4096,) * 32, causal=True, kernel_us=kernel_us,
                                  aux_kernel_us=2.0, gpu=MI300X)


async def test_model_config_over_mcp(tmp_path: Path) -> None:
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_layer(8.0), _layer(78.0)])
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"num_hidden_layers": 2, "sliding_window": 128,
                               "layer_types": ["sliding_attention", "full_attention"]}))
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "model_config" in tools["analyze_trace"].input_schema["properties"]
        args = {"trace_path": str(replay), "output_dir": str(tmp_path / "out"), "capture_dir": str(capture),
                "model_config": str(cfg)}
        r = await c.call_tool("analyze_trace", args)
        assert not r.is_error, r.content[0].text
        assert r.structured_content["config_json"] == str(cfg)
        roof = await c.call_tool("compute_roofline", {"output_dir": str(tmp_path / "out"),
                                                      "category": "inferenceattention"})
        rows = roof.structured_content["rows"]
        # the sliding layer (10 µs) and the full one (80 µs) are two rows; the full one exact at 268,959,744 B
        assert sorted(row["mean_us"] for row in rows) == [10.0, 80.0]
        full = next(row for row in rows if row["mean_us"] == 80.0)
        assert full["work_bound"] == "exact"
        assert full["efficiency_pct"] == pytest.approx(100 * 268_959_744 / 5.3e12 / 80e-6, rel=1e-4)

        cfg.write_text(json.dumps({"num_hidden_layers": 2, "sliding_window": "128"}))
        bad = await c.call_tool("analyze_trace", {**args, "output_dir": str(tmp_path / "bad")})
        assert bad.is_error
        text = bad.content[0].text
        assert "field 'sliding_window'" in text and "\n" not in text
        outside = await c.call_tool("analyze_trace", {**args, "output_dir": str(tmp_path / "bad"),
                                                      "model_config": "/etc/hostname"})
        assert outside.is_error and "model_config" in outside.content[0].text
    assert not (tmp_path / "bad").exists()
