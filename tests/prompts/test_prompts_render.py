"""prompts.render: placeholder substitution, argument checks, the prefix launch command."""

from __future__ import annotations

import re

import pytest

from sdpa_analyzer.prompts import render
from sdpa_analyzer.prompts.render import (
    NO_PREFIX,
    PromptArgumentError,
    load_findings_format,
    load_prompt_text,
    render_analysis_prompt,
    server_launch_command,
)
from sdpa_analyzer.server.tools import TOOLS

NAMED_PLACEHOLDERS = ("{output_dir}", "{category}", "{comparison_scope}", "{prefix}")
# Braces the prompt keeps on purpose: the prefix's command slot and the template's prose slots.
LITERAL_BRACES = {"{CMD}", "{FILL: ...}"}


def test_raw_prompt_uses_every_placeholder() -> None:
    text = load_prompt_text()
    for placeholder in NAMED_PLACEHOLDERS:
        assert placeholder in text, f"{placeholder} missing from prompts/sdpa_analysis.md"


def test_render_substitutes_every_placeholder_and_leaves_none() -> None:
    text = render_analysis_prompt("/data/run-7", "sdpa_bwd", "comparative", prefix="ssh gpu-box {CMD}")
    for placeholder in NAMED_PLACEHOLDERS:
        assert placeholder not in text
    # Any other single-brace token left over would be a placeholder nobody fills.
    leftovers = set(re.findall(r"(?<!\{)\{[^{}\n]*\}(?!\})", text)) - LITERAL_BRACES
    assert leftovers == set()
    assert "| `output_dir` | `/data/run-7` |" in text
    assert "| `category` | `sdpa_bwd` |" in text
    assert "| `comparison_scope` | `comparative` |" in text
    assert "| `prefix` | `ssh gpu-box {CMD}` |" in text
    assert "`/data/run-7/category_findings/sdpa_bwd_findings.md`" in text
    assert "`sdpa-analyzer serve --root /data/run-7`" in text
    assert "{{FILL: ...}}" in text  # the template's slot syntax is described, not substituted


def _independent_tool_table() -> str:
    rows = "".join(f"| `mcp__sdpa__{t.name}` | {t.agent} |\n" for t in TOOLS if t.mcp and t.agent)
    return "| tool | use |\n|---|---|\n" + rows.rstrip("\n")


def test_render_matches_an_independent_substitution() -> None:
    # The same result by plain str.replace (fine here: the values hold no braces) after cutting, with regexes, what
    # this run does not get: "Many ranks" (not a rank folder), "Remote data" (no prefix), the backward, comparative
    # and unfilled-input blocks; the paged blocks stay (inferenceattention), their markers go.
    values = {"output_dir": "out", "category": "inferenceattention", "comparison_scope": "standalone"}
    expected = load_prompt_text()
    expected = re.sub(r"\n## Many ranks\n.*?(?=\n## )", "", expected, flags=re.S)
    expected = re.sub(r"\n## Remote data \(`prefix`\)\n.*\Z", "", expected, flags=re.S)
    expected = re.sub(r"<!-- when (backward|comparative|unfilled) -->\n.*?<!-- end -->\n", "", expected, flags=re.S)
    expected = re.sub(r"<!-- (when paged|end) -->\n", "", expected)
    for name, value in values.items():
        expected = expected.replace("{" + name + "}", value)
    expected = expected.replace("{prefix}", NO_PREFIX).replace("{tool_table}", _independent_tool_table())
    assert render_analysis_prompt(**values) == expected


def test_values_are_substituted_once() -> None:
    # A folder literally named "{category}" must stay as written, not become "sdpa_fwd".
    text = render_analysis_prompt("/x/{category}", "sdpa_fwd")
    assert "| `output_dir` | `/x/{category}` |" in text


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"output_dir": "o", "category": "gemm"}, "category='gemm'"),
        ({"output_dir": "o", "category": "sdpa_fwd", "comparison_scope": "both"}, "comparison_scope='both'"),
        ({"output_dir": "  ", "category": "sdpa_fwd"}, "output_dir is empty"),
        ({"output_dir": "a\nb", "category": "sdpa_fwd"}, "output_dir contains a line break"),
        ({"output_dir": "o", "category": "sdpa_fwd", "prefix": "ssh host"}, "{CMD} exactly once"),
        ({"output_dir": "o", "category": "sdpa_fwd", "prefix": "{CMD} {CMD}"}, "{CMD} exactly once"),
    ],
)
def test_bad_arguments_raise_one_line_errors(kwargs: dict[str, str], needle: str) -> None:
    with pytest.raises(PromptArgumentError) as err:
        render_analysis_prompt(**kwargs)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


def test_blank_prefix_means_local() -> None:
    assert "| `prefix` | `" + NO_PREFIX + "` |" in render_analysis_prompt("o", "sdpa_fwd", prefix="  ")


@pytest.mark.parametrize(
    ("prefix", "root", "expected"),
    [
        (None, "/data/out", ["sdpa-analyzer", "serve", "--root", "/data/out"]),
        (
            "docker exec -i box {CMD}",
            "/data/out",
            ["docker", "exec", "-i", "box", "sdpa-analyzer", "serve", "--root", "/data/out"],
        ),
        # A root with a space stays one argument after the template is split.
        ("ssh gpu {CMD}", "/data/my out", ["ssh", "gpu", "sdpa-analyzer", "serve", "--root", "/data/my out"]),
        # A template that hands the command to a shell as one string.
        ("sh -c '{CMD}'", "/d", ["sh", "-c", "sdpa-analyzer serve --root /d"]),
    ],
)
def test_server_launch_command(prefix: str | None, root: str, expected: list[str]) -> None:
    assert server_launch_command(prefix, root) == expected


def test_server_launch_command_custom_server() -> None:
    assert server_launch_command("env A=1 {CMD}", "/r", server_cmd="/venv/bin/sdpa-analyzer") == [
        "env", "A=1", "/venv/bin/sdpa-analyzer", "serve", "--root", "/r",
    ]


def test_findings_format_resource_states_the_contract() -> None:
    text = load_findings_format()
    for needle in (
        "## Recommendations",
        "## Detailed Analysis",
        "No SDPA operations found in trace",
        "Status: ERROR",
        "Operation | Args | Kernel Path | Kernel Name | Time (ms) | %E2E | Count | FLOPS/Byte | Efficiency | Bound",
        "Operation | Args (T1) | Kernel Path | Kernel Name | Trace 1 Time (ms) | Trace 2 Time (ms) | "
        "Count (T1/T2) | Difference (ms) | FLOPS/Byte (T1) | Bound (T1)",
        "kind=p_item",
        "kind=detail_estimate",
        "not quantifiable from trace data",
        "{{FILL: ...}}",
    ):
        assert needle in text, needle


def test_main_check_and_write(tmp_path) -> None:
    target = tmp_path / "agent.md"
    assert render.main(["--check", "--path", str(target)]) == 1  # missing counts as stale
    assert render.main(["--write-agent-md", "--path", str(target)]) == 0
    assert render.main(["--check", "--path", str(target)]) == 0
    target.write_text(target.read_text() + "edited by hand\n")
    assert render.main(["--check", "--path", str(target)]) == 1
