"""What the LLM sees, through the real MCP client: closed sets are enums, every parameter is described, a
mistyped category or prompt argument is one line (never NO_DATA), and no rendered number can change without
the validator naming the rule, the line and the fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from sdpa_analyzer.server.mcp_server import create_server
from tests.support import FLASH_ROW, make_folder

pytestmark = pytest.mark.anyio
SLOT = re.compile(r"\{\{FILL:[^}]*\}\}")


async def _tools(tmp_path: Path) -> dict[str, dict]:
    async with Client(create_server([tmp_path])) as c:
        return {t.name: t.input_schema for t in (await c.list_tools()).tools}


def _enum(schema: dict, name: str) -> list:
    """The closed values a parameter's schema offers (enum members and consts of its options, in order)."""
    prop = schema["properties"][name]
    values = [v for option in [prop, *prop.get("anyOf", [])] for v in option.get("enum", [])]
    values += [option["const"] for option in prop.get("anyOf", []) if "const" in option]
    assert values, f"{name} has no enum: {prop}"
    return values


async def test_closed_sets_are_enums_and_every_parameter_is_described(tmp_path: Path) -> None:
    tools = await _tools(tmp_path)
    for name in ("load_category_data", "compute_roofline", "rank_findings", "render_findings_template"):
        assert _enum(tools[name], "category") == ["sdpa_fwd", "sdpa_bwd", "inferenceattention"]
    assert _enum(tools["plot_roofline"], "category") == ["sdpa_fwd", "sdpa_bwd", "inferenceattention", "all"]
    assert _enum(tools["rank_findings"], "comparison_scope") == ["standalone", "comparative"]
    assert _enum(tools["compute_roofline"], "bytes_model") == ["compulsory", "tiled"]
    model = tools["model_attention"]
    assert "fp8_e4m3" in _enum(model, "dtype") and "bf16" in _enum(model, "kv_cache_dtype")
    assert _enum(model, "direction") == ["fwd", "bwd"] and _enum(model, "mask") == ["none", "causal", "sliding_window"]
    # arch is a plain string: the server takes any spelling the GPU table knows (tests/server/mcp/test_arch_schema.py)
    assert model["properties"]["arch"]["type"] == "string" and "enum" not in model["properties"]["arch"]
    for tool, schema in tools.items():
        for param, prop in schema["properties"].items():
            text = prop.get("description", "")
            assert len(text) >= 8, f"{tool}.{param} has no description"
            assert "\n" not in text and "  " not in text, f"{tool}.{param}: description not on one clean line"
    assert "-1 = unbounded" in model["properties"]["window_left"]["description"]
    assert "µs" in model["properties"]["measured_us"]["description"]


async def test_a_mistyped_category_is_one_line_not_no_data(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    async with Client(create_server([tmp_path])) as c:
        r = await c.call_tool("load_category_data", {"output_dir": str(folder), "category": "sdpa_fwdd"})
        t = await c.call_tool("render_findings_template", {"output_dir": str(folder), "category": "sdpa_forward"})
        nowhere = {"output_dir": str(tmp_path / "nope"), "category": "sdpa_fwd"}
        missing = await c.call_tool("load_category_data", nowhere)
    for res in (r, t):
        text = res.content[0].text
        assert res.is_error and res.structured_content is None
        assert "\n" not in text and "category=" in text and "sdpa_fwd" in text and "NO_DATA" not in text
    assert not (folder / "category_findings" / "sdpa_forward_findings.md").exists()
    assert missing.is_error and "not found" in missing.content[0].text  # a missing folder: an error, not NO_DATA


async def test_prompt_arguments_are_checked_in_one_line(tmp_path: Path) -> None:
    async with Client(create_server([tmp_path])) as c:
        prompts = (await c.list_prompts()).prompts
        args = {a.name: a for a in prompts[0].arguments}
        assert all(a.description for a in args.values()) and args["category"].required
        for bad in ({"output_dir": "x", "category": "sdpa_fwdd"},
                    {"output_dir": "x", "category": "sdpa_fwd", "comparison_scope": "both"}):
            with pytest.raises(MCPError) as exc:
                await c.get_prompt("sdpa_analysis", bad)
            assert "\n" not in exc.value.error.message and "pass one of" in exc.value.error.message
        resources = (await c.list_resources()).resources
    assert all(r.description for r in resources)


async def test_comparative_scope_on_a_one_trace_folder_is_refused(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    base = {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
    async with Client(create_server([tmp_path])) as c:
        r = await c.call_tool("rank_findings", {**base, "comparison_scope": "comparative"})
        assert r.is_error and "one trace" in r.content[0].text and "standalone" in r.content[0].text
        ok = await c.call_tool("rank_findings", base)
        assert not ok.is_error
        await c.call_tool("render_findings_template", {"output_dir": str(folder), "category": "sdpa_fwd"})
        path = folder / "category_findings" / "sdpa_fwd_findings.md"
        path.write_text(SLOT.sub("Prose.", path.read_text()))
        v = await c.call_tool("validate_findings", {"findings_path": str(path), "comparison_scope": "comparative"})
    assert not v.structured_content["passed"]
    assert "R5-scope" in {e["rule"] for e in v.structured_content["errors"]}


def _data_row(text: str) -> tuple[int, list[str], list[str]]:
    lines = text.split("\n")
    header_at = next(i for i, line in enumerate(lines) if line.startswith("| Operation |"))
    header = [c.strip() for c in lines[header_at].strip("|").split("|")]
    cells = [c.strip() for c in lines[header_at + 2].strip("|").split("|")]
    return header_at + 2, header, cells


@pytest.mark.parametrize(
    ("column", "rule"),
    [("Time (ms)", "R6-number"), ("%E2E", "R6-number"), ("Count", "R6-number"), ("FLOPS/Byte", "R6-number"),
     ("Efficiency", "R7-efficiency"), ("Bound", "R7-bound"), ("Compute %", "R7-verdict"), ("Memory %", "R7-verdict"),
     ("Regime", "R7-verdict"), ("Expected Band (% of datasheet)", "R7-verdict")],
)
async def test_every_rendered_number_is_checked(tmp_path: Path, column: str, rule: str) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    base = {"output_dir": str(folder), "category": "sdpa_fwd", "arch": "h100-sxm"}
    async with Client(create_server([tmp_path])) as c:
        await c.call_tool("rank_findings", base)
        await c.call_tool("render_findings_template", {"output_dir": str(folder), "category": "sdpa_fwd"})
        path = folder / "category_findings" / "sdpa_fwd_findings.md"
        text = SLOT.sub("Prose from the tools.", path.read_text())
        path.write_text(text)
        clean = (await c.call_tool("validate_findings", {"findings_path": str(path)})).structured_content
        assert clean["passed"], clean["errors"]
        index, header, cells = _data_row(text)
        k = header.index(column)
        flips = {"compute-bound": "memory-bound", "memory-bound": "compute-bound", "balanced": "compute",
                 "compute": "balanced", "memory": "balanced"}
        changed = flips.get(cells[k], {"Efficiency": "99.00% of 989.4 TFLOPS",
                                       "Expected Band (% of datasheet)": "10–20 % (within)"}.get(column, "123.45"))
        assert changed != cells[k]
        cells[k] = changed
        lines = text.split("\n")
        lines[index] = "| " + " | ".join(cells) + " |"
        path.write_text("\n".join(lines))
        report = (await c.call_tool("validate_findings", {"findings_path": str(path)})).structured_content
    assert not report["passed"]
    hits = [e for e in report["errors"] if e["rule"] == rule]
    assert hits and hits[0]["line"] == index + 1 and hits[0]["fix"], json.dumps(report["errors"])
