"""The running server agrees with agent.md: same tools, same prompt text, the format spec as a resource.

Skipped until server/app.py exists (it exposes `create_server()`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from sdpa_analyzer.prompts.render import load_findings_format, render_analysis_prompt, server_launch_command
from sdpa_analyzer.server import mcp_server as server_app
from sdpa_analyzer.server.tools import TOOLS

pytestmark = pytest.mark.anyio


def _tool_names(result) -> set[str]:
    return {tool.name for tool in result.tools}


def _message_texts(prompt_result) -> list[str]:
    return [m.content.text for m in prompt_result.messages if getattr(m.content, "type", "") == "text"]


# What the declarations say (server.tools.TOOLS): the server must register every MCP tool, the agent gets those
# marked for it.
EXPECTED_TOOLS = frozenset(spec.name for spec in TOOLS if spec.mcp and spec.agent)
NOT_FOR_THE_AGENT = frozenset(spec.name for spec in TOOLS if spec.mcp and not spec.agent)


async def test_server_tools_equal_the_agent_allowlist() -> None:
    async with Client(server_app.create_server(), raise_exceptions=True) as client:
        tools = (await client.list_tools()).tools
    assert {tool.name for tool in tools} == EXPECTED_TOOLS | NOT_FOR_THE_AGENT


@pytest.mark.parametrize(
    ("output_dir", "category", "scope"),
    [("demo-out", "sdpa_fwd", "standalone"), ("/data/run 2", "inferenceattention", "comparative")],
)
async def test_sdpa_analysis_prompt_is_the_rendered_instructions(output_dir: str, category: str, scope: str) -> None:
    args = {"output_dir": output_dir, "category": category, "comparison_scope": scope}
    async with Client(server_app.create_server(), raise_exceptions=True) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert "sdpa_analysis" in listed
        arguments = listed["sdpa_analysis"].arguments or []
        assert {"output_dir", "category", "comparison_scope"} <= {a.name for a in arguments}
        # comparison_scope may default to standalone; the other two have no sensible default.
        assert {"output_dir", "category"} <= {a.name for a in arguments if a.required}
        result = await client.get_prompt("sdpa_analysis", args)
    assert render_analysis_prompt(output_dir, category, scope) in _message_texts(result)


async def test_findings_format_is_served_as_a_resource() -> None:
    expected = load_findings_format()
    async with Client(server_app.create_server(), raise_exceptions=True) as client:
        resources = (await client.list_resources()).resources
        texts = []
        for resource in resources:
            contents = (await client.read_resource(resource.uri)).contents
            texts.extend(getattr(c, "text", None) for c in contents)
    assert expected in texts, f"no resource serves prompts/findings_format.md among {[r.uri for r in resources]}"


def _console_script() -> Path:
    script = Path(sys.executable).parent / "sdpa-analyzer"
    if not script.is_file():
        pytest.skip(f"console script not installed next to {sys.executable}")
    return script


@pytest.mark.parametrize(
    "prefix",
    [
        "env SDPA_PREFIX_STAND_IN=1 {CMD}",  # argv-style, like `docker exec -i <container> {CMD}`
        "sh -c '{CMD}'",  # the command re-parsed by a shell, like `ssh <host> {CMD}`
    ],
)
async def test_server_starts_through_a_prefix(prefix: str, tmp_path: Path) -> None:
    argv = server_launch_command(prefix, str(tmp_path), server_cmd=str(_console_script()))
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    with anyio.fail_after(60):
        async with Client(params) as client:
            names = _tool_names(await client.list_tools())
    assert names == EXPECTED_TOOLS | NOT_FOR_THE_AGENT
