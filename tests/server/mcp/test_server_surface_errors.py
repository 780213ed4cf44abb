"""What a client gets for a name the server does not have, now that the handlers are ours (the SDK's low-level
server): an unknown tool is an isError result naming the tools; an unknown or incomplete prompt, and an unknown
resource, are JSON-RPC invalid-params errors of one line naming what to pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from sdpa_analyzer.server.mcp_server import create_server

pytestmark = pytest.mark.anyio


async def test_an_unknown_tool_is_a_tool_error_naming_the_tools(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path], preload=None)) as c:
        r = await c.call_tool("compute_rooflines", {})
    text = r.content[0].text
    assert r.is_error and "compute_rooflines" in text and "compute_roofline," in text and "\n" not in text


@pytest.mark.parametrize(
    ("name", "arguments", "needles"),
    [
        ("sdpa_analysis", {"output_dir": "x"}, ("missing category", "output_dir and category required")),
        ("sdpa_analysis", {"output_dir": "x", "category": "sdpa_fwd", "scope": "a"}, ("unknown argument(s) scope",)),
        ("sdpa_analysys", {"output_dir": "x", "category": "sdpa_fwd"}, ("unknown prompt", "pass sdpa_analysis")),
    ],
)
async def test_a_bad_prompt_request_is_one_invalid_params_line(
    tmp_path: Path, name: str, arguments: dict[str, str], needles: tuple[str, ...]
) -> None:
    async with Client(create_server([tmp_path], preload=None)) as c:
        with pytest.raises(MCPError) as exc:
            await c.get_prompt(name, arguments)
    assert exc.value.error.code == INVALID_PARAMS and "\n" not in exc.value.error.message
    for needle in needles:
        assert needle in exc.value.error.message


@pytest.mark.parametrize(
    "uri", ["sdpa://nothing", "sdpa://architectures/", "sdpa://architectures/../findings-format", "sdpa://schemas/a/b"]
)
async def test_an_unknown_resource_is_invalid_params(tmp_path: Path, uri: str) -> None:
    async with Client(create_server([tmp_path], preload=None)) as c:
        with pytest.raises(MCPError) as exc:
            await c.read_resource(uri)
    assert exc.value.error.code == INVALID_PARAMS and "\n" not in exc.value.error.message


async def test_a_template_resource_reads_its_one_value(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path], preload=None)) as c:
        schema = await c.read_resource("sdpa://schemas/validate_findings")
        bad = None
        try:
            await c.read_resource("sdpa://schemas/no_such_tool")
        except MCPError as exc:
            bad = exc.error.message
    assert '"passed"' in schema.contents[0].text
    assert bad is not None and "no such tool" in bad and "validate_findings" in bad
