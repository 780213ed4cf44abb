"""The `arch` (and `gpu`) argument: what the listed schema lets a schema-validating client send is what the server
takes, and the other way round. Names come from the GPU table (perf_models/data/gpus), never restated here."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from sdpa_analyzer.perf_models.hardware import known_keys, list_gpus
from sdpa_analyzer.server.mcp_server import create_server

pytestmark = pytest.mark.anyio


def _spellings() -> list[tuple[str, str]]:
    """(spelling, key) for every GPU: its key, the key upper-cased, its display name and its device names."""
    out = []
    for g in list_gpus():
        out += [(g.key, g.key), (g.key.upper(), g.key), (g.name, g.key)]
        out += [(d, g.key) for d in g.device_names]
    return out


async def test_every_spelling_the_server_takes_passes_the_listed_schema(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        schemas = {t.name: t.input_schema for t in (await c.list_tools()).tools}
        with_arch = {name: s["properties"]["arch"] for name, s in schemas.items() if "arch" in s["properties"]}
        assert set(with_arch) >= {"compute_roofline", "rank_findings", "model_attention", "plot_roofline"}
        spellings = _spellings()
        for prop in with_arch.values():
            for text, _ in spellings:
                jsonschema.validate(text, prop)  # a schema-validating client sends it ...
            jsonschema.validate("gpus/custom.json", prop)  # ... and an arch JSON path
        # ... and the server takes every one of them, as the key
        for text, key in spellings:
            r = await c.call_tool("model_attention", {"batch": 1, "heads_q": 8, "seq_q": 128, "head_dim": 64,
                                                      "arch": text})  # fmt: skip
            assert not r.is_error, (text, r.content[0].text)
            assert r.structured_content["peaks"]["gpu_key"] == key
        r = await c.call_tool("list_architectures", {"gpu": "MI300X"})
        assert not r.is_error and r.structured_content["details"]["key"] == "mi300x"
        jsonschema.validate("MI300X", schemas["list_architectures"]["properties"]["gpu"])


async def test_a_name_the_table_lacks_is_one_line_naming_every_key(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        for tool, args in (("model_attention", {"batch": 1, "heads_q": 8, "seq_q": 128, "head_dim": 64,
                                                "arch": "H900X"}),
                           ("list_architectures", {"gpu": "gpus/custom.json"})):  # fmt: skip
            r = await c.call_tool(tool, args)
            assert r.is_error
            text = r.content[0].text
            assert "\n" not in text and "unknown GPU" in text
            # every key when they fit in one line; else the nearest ones (each a key arch= accepts) and where
            # the rest are
            listed = [k for k in known_keys() if k in text]
            assert listed and ("list_architectures shows all" in text or len(listed) == len(known_keys()))
