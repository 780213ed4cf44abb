"""agent.md: generated from prompts/, valid Claude Code front matter, only our tools, our own words."""

from __future__ import annotations

import json
import re

import pytest

from sdpa_analyzer.prompts.render import load_findings_format, load_prompt_text, render_agent_md
from sdpa_analyzer.server.tools import TOOLS
from tests.support import REPO, SHARED, need

AGENT_MD = REPO / "agent.md"
SEED = SHARED / "seeds" / "000_40aeee92f64f468b.txt"

# The tools agent.md must list: those the tool declarations mark for the subagent (ToolSpec.agent).
EXPECTED_TOOLS = frozenset(spec.name for spec in TOOLS if spec.mcp and spec.agent)
FILE_TOOLS = frozenset({"Read", "Write", "Edit"})
_PLAIN_SCALAR_START = tuple("&*!|>'\"%@`{[#,?-:")


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """The tiny YAML subset Claude Code agent files use: `key: plain scalar` lines between `---` fences."""
    lines = text.split("\n")
    assert lines[0] == "---", "agent.md must start with a '---' front matter fence"
    end = lines.index("---", 1)
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:end], start=2):
        match = re.fullmatch(r"([A-Za-z][A-Za-z0-9_-]*): (\S.*)", line)
        assert match, f"agent.md line {number}: expected 'key: value', got {line!r}"
        key, value = match.groups()
        # These would change the meaning of a plain YAML scalar (mapping, comment, flow/anchor syntax).
        assert ": " not in value and " #" not in value, f"agent.md line {number}: quote-needing value"
        assert not value.startswith(_PLAIN_SCALAR_START), f"agent.md line {number}: value starts specially"
        assert key not in fields, f"agent.md line {number}: duplicate key {key}"
        fields[key] = value
    return fields, "\n".join(lines[end + 1 :])


def agent_text() -> str:
    assert AGENT_MD.is_file(), "agent.md is missing: run `python -m sdpa_analyzer.prompts.render --write-agent-md`"
    return AGENT_MD.read_text(encoding="utf-8")


def test_agent_md_is_generated_from_the_prompt() -> None:
    assert agent_text() == render_agent_md(), (
        "agent.md differs from prompts/sdpa_analysis.md: run `python -m sdpa_analyzer.prompts.render --write-agent-md`"
    )


def test_front_matter_has_the_required_keys() -> None:
    fields, _ = parse_front_matter(agent_text())
    assert fields["name"] == "sdpa-analyzer"
    assert len(fields["description"]) > 40
    assert set(fields) <= {"name", "description", "tools", "model"}
    assert fields.get("model", "inherit") in {"sonnet", "opus", "haiku", "inherit"}


def test_tools_allowlist_is_exactly_our_tools_plus_file_access() -> None:
    fields, _ = parse_front_matter(agent_text())
    listed = [t.strip() for t in fields["tools"].split(",")]
    assert len(listed) == len(set(listed)), "duplicate entry in tools:"
    expected = {f"mcp__sdpa__{name}" for name in EXPECTED_TOOLS} | FILE_TOOLS
    assert set(listed) == expected


def test_body_names_only_our_tools() -> None:
    _, body = parse_front_matter(agent_text())
    mentioned = re.findall(r"mcp__([A-Za-z0-9-]+?)__([A-Za-z0-9_]+)", body)
    assert {server for server, _ in mentioned} == {"sdpa"}
    assert {tool for _, tool in mentioned} == EXPECTED_TOOLS  # every tool introduced, none invented
    # Calls written as `name(...)` must be tools too, so a renamed tool cannot survive in the prose.
    called = set(re.findall(r"`([a-z_][a-z0-9_]*)\(", body))
    assert called and called <= EXPECTED_TOOLS, called - EXPECTED_TOOLS


def test_body_is_the_prompt_with_inputs_left_for_the_orchestrator() -> None:
    _, body = parse_front_matter(agent_text())
    expected = re.sub(r"<!-- (when \w+|end) -->\n", "", load_prompt_text())  # every part: agent.md serves any run
    for name in ("output_dir", "category", "comparison_scope", "prefix"):
        expected = expected.replace("{" + name + "}", f"<{name}>")
    rows = "".join(f"| `mcp__sdpa__{t.name}` | {t.agent} |\n" for t in TOOLS if t.mcp and t.agent)
    expected = expected.replace("{tool_table}", "| tool | use |\n|---|---|\n" + rows.rstrip("\n"))
    assert body.endswith(expected)
    for name in ("output_dir", "category", "comparison_scope", "prefix"):
        assert "{" + name + "}" not in body


@pytest.mark.parametrize(
    "needle",
    [
        "No SDPA operations found in trace",
        "Status: ERROR",
        "{{FILL: ...}}",
        'tier="compute"',
        "Two retries at most",
        "ctx_ratio",
        "Above 0.8",
        "below 0.2",
        "gqa_ratio",
        "5–15 %",
        "20–40 %",
        "40–60 %",
        "50–70 %",
        "5-GEMM",
        "about 10 %",
        "memory-efficient",
        "cuDNN",
        "unfused",
        "paged",
        "GPU kernels",
        "optimized attention kernel",
        "docker exec -i <container> {CMD}",
        "sdpa-analyzer serve --root <output_dir>",
    ],
)
def test_body_carries_the_required_guidance(needle: str) -> None:
    assert needle in agent_text()


def test_every_unobservable_property_has_a_fallback_sentence() -> None:
    body = agent_text()
    section = body.split("## What a trace cannot show", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| not in")]
    properties = ("tile or block sizes", "cache hit rates", "occupancy", "bank conflicts", "KV-cache hit rate")
    for prop in properties:
        row = next((r for r in rows if prop in r), None)
        assert row is not None, f"no row for {prop}"
        assert re.search(r'\| "[^"]+\." \|$', row), f"row for {prop} lacks a quoted fallback sentence"


def test_never_recommends_migrating_fused_backends_to_flash() -> None:
    # The only "migrate to flash" in the text is the prohibition.
    text = agent_text().lower()
    for match in re.finditer(r"migrat\w* to flash", text):
        window = text[max(0, match.start() - 120) : match.start()]
        assert "never" in window, text[match.start() - 120 : match.end()]


# Distinctive sentences of the seed prompt; ours must say the same things in other words.
SEED_SENTENCES = (
    "Renders P-items from the per-category findings the analyzer script has already grouped and gated",
    "Short sequences naturally show lower efficiency",
    "SDPA backends are already fused",
    "Framework SDPA wrapper unconditionally calls",
    "GQA reduces KV-cache memory but may slightly lower kernel efficiency",
    "Tile selection is internal to the Flash backend",
    "Cache hits/misses are not surfaced as kernel events",
    "typically a major opportunity to migrate to Flash Attention",
    "Confirm efficiency falls in the Expected Efficiency band",
)
OUR_TEXTS = {
    "prompts/sdpa_analysis.md": load_prompt_text,
    "prompts/findings_format.md": load_findings_format,
    "docs/claude-code.md": lambda: (REPO / "docs" / "claude-code.md").read_text(encoding="utf-8"),
}
# Word runs the contract fixes verbatim, or that merely name a property.
ALLOWED_SHARED_RUNS = {
    ("no", "sdpa", "operations", "found", "in", "trace"),
    ("per", "request", "kv", "cache", "hit", "rate"),
}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


@pytest.mark.parametrize("name", sorted(OUR_TEXTS))
def test_seed_sentences_are_not_copied(name: str) -> None:
    ours = " ".join(_words(OUR_TEXTS[name]()))
    for sentence in SEED_SENTENCES:
        assert " ".join(_words(sentence)) not in ours, f"{name} copies the seed: {sentence!r}"


@pytest.mark.parametrize("name", sorted(OUR_TEXTS))
def test_no_six_word_run_shared_with_the_seed(name: str) -> None:
    seed = _words(need(SEED).read_text(encoding="utf-8"))
    seed_runs = {tuple(seed[i : i + 6]) for i in range(len(seed) - 5)}
    ours = _words(OUR_TEXTS[name]())
    shared = {tuple(ours[i : i + 6]) for i in range(len(ours) - 5)} & seed_runs
    assert shared <= ALLOWED_SHARED_RUNS, sorted(" ".join(run) for run in shared - ALLOWED_SHARED_RUNS)


def test_mcp_json_example_registers_the_sdpa_server() -> None:
    config = json.loads((REPO / ".mcp.json.example").read_text(encoding="utf-8"))
    assert set(config["mcpServers"]) == {"sdpa"}
    server = config["mcpServers"]["sdpa"]
    assert server["type"] == "stdio"
    # an absolute path (Claude Code's environment does not have the venv on PATH), overridable by SDPA_ANALYZER
    command = server["command"]
    assert command.startswith("${SDPA_ANALYZER:-/") and command.endswith("/.venv/bin/sdpa-analyzer}")
    assert server["args"][:2] == ["serve", "--root"]
