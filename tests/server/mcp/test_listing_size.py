"""What a client pays to connect, through the real in-process client: the size of `tools/list` and of every
resource (run with -s to see the numbers), and that the small listing still describes valid results.

Limits (issue 22): `tools/list` at most 30,000 characters for all the tools, each resource at most 20,000 by
default, details on request (one GPU in full, one tool's full result schema)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from mcp import Client

from sdpa_analyzer.perf_models.hardware import known_keys, list_gpus
from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.tools import TOOLS
from tests.support import FLASH_ROW, make_folder

pytestmark = pytest.mark.anyio

TOOLS_LIST_LIMIT = 30_000
RESOURCE_LIMIT = 20_000


def _text(contents: list) -> str:
    return "".join(c.text for c in contents)


async def test_tools_list_and_resources_stay_small(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        listing = await c.list_tools()
        # what the server sends: the result object as JSON, the way the SDK serializes it
        wire = listing.model_dump_json(by_alias=True, exclude_none=True)
        per_tool = {t.name: len(t.model_dump_json(by_alias=True, exclude_none=True)) for t in listing.tools}
        resources = {str(r.uri): len(_text((await c.read_resource(r.uri)).contents))
                     for r in (await c.list_resources()).resources}  # fmt: skip
        gpus = {k: len(_text((await c.read_resource(f"sdpa://architectures/{k}")).contents)) for k in known_keys()}
        schemas = {t.name: len(_text((await c.read_resource(f"sdpa://schemas/{t.name}")).contents))
                   for t in TOOLS if t.mcp}  # fmt: skip
    print(f"\ntools/list: {len(wire):,} characters for {len(listing.tools)} tools")
    for name, n in sorted(per_tool.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28s} {n:6,}")
    for uri, n in resources.items():
        print(f"resource {uri}: {n:,}")
    print(f"sdpa://architectures/{{gpu}}: largest {max(gpus.values()):,} ({max(gpus, key=gpus.__getitem__)})")
    print(f"sdpa://schemas/{{tool}}: largest {max(schemas.values()):,} ({max(schemas, key=schemas.__getitem__)})")
    assert len(wire) <= TOOLS_LIST_LIMIT
    assert set(resources) == {"sdpa://findings-format", "sdpa://architectures"}
    for what, sizes in (("resource", resources), ("GPU", gpus), ("result schema", schemas)):
        over = {k: n for k, n in sizes.items() if n > RESOURCE_LIMIT}
        assert not over, f"{what} over {RESOURCE_LIMIT:,} characters: {over}"


async def test_the_short_gpu_table_and_one_gpu_in_full(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        table = json.loads(_text((await c.read_resource("sdpa://architectures")).contents))
        h100 = json.loads(_text((await c.read_resource("sdpa://architectures/H100")).contents))
        templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
    assert templates == {"sdpa://architectures/{gpu}", "sdpa://schemas/{tool}"}
    # every GPU of the table, by key, in the short table; the details on request, in any spelling
    gpus = list_gpus()
    assert [a["key"] for a in table["architectures"]] == [g.key for g in gpus] and table["count"] == len(gpus)
    spec = next(g for g in gpus if g.key == "h100-sxm")
    assert h100["key"] == "h100-sxm" and h100["tflops_datasheet"] == dict(spec.tflops_datasheet)
    assert h100["sources"] == dict(spec.sources)


async def test_the_listed_output_schemas_accept_what_the_tools_return(tmp_path: Path) -> None:
    """The client validates structuredContent against the listed output schema; the full schema (a resource)
    agrees with the listed shape on every field the listing keeps."""
    folder = make_folder(tmp_path, [FLASH_ROW])
    calls = {
        "compute_roofline": {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"},
        "rank_findings": {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"},
        "model_attention": {"batch": 1, "heads_q": 8, "seq_q": 1024, "head_dim": 64, "measured_us": 100.0},
        "list_architectures": {"gpu": "MI300X"},
    }
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        listed = {t.name: t.output_schema for t in (await c.list_tools()).tools}
        full = {n: json.loads(_text((await c.read_resource(f"sdpa://schemas/{n}")).contents)) for n in listed}
        results = {}
        for name, args in calls.items():
            r = await c.call_tool(name, args)
            assert not r.is_error, r.content[0].text
            results[name] = r.structured_content
    for name, schema in listed.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["properties"], name
        assert set(schema["properties"]) <= set(full[name]["properties"]), name
        assert set(schema.get("required", [])) == set(full[name].get("required", [])), name
    for name, result in results.items():
        jsonschema.validate(result, listed[name])  # what the client checked, checked again here
        jsonschema.validate(result, full[name])  # and the full schema holds too
    # a result that breaks the listed shape is refused by it: the check can fail
    broken = dict(results["compute_roofline"], rows="not a list")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, listed["compute_roofline"])
