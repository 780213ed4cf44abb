"""The prompt sends each part only when it applies (issue 35, item 2): the sections and `when` blocks a run gets,
per situation, named here by hand; the prompt file's structure against the declarations in prompts/render.py.

Run with -s to see the size of the rendered prompt per situation beside agent.md (every part)."""

from __future__ import annotations

import re

import pytest

from sdpa_analyzer.prompts.render import (
    CONDITIONS,
    SECTIONS,
    load_prompt_text,
    render_agent_md,
    render_analysis_prompt,
    select_parts,
)

ALL_SECTIONS = list(SECTIONS)
EVERY_RUN = [s for s in ALL_SECTIONS if s not in ("Many ranks", "Remote data (`prefix`)")]
# One line of each `when` block, to see whether the block was sent.
BLOCK_LINES = {
    "paged_class": "| paged | a serving engine's attention",
    "paged_profile": "- Workload profile (paged):",
    "paged_actions": "| memory | paged |",
    "paged_patterns": "- Decode-heavy (`ctx_ratio` < 0.2):",
    "paged_unknown": "| per-request KV-cache hit rate (paged) |",
    "backward": "- Backward (`sdpa_bwd`):",
    "comparative": "| any (comparative) | any |",
    "unfilled": "If a value below still reads `<output_dir>`",
}
PAGED = {"paged_class", "paged_profile", "paged_actions", "paged_patterns", "paged_unknown"}

# (output_dir, category, scope, prefix) -> the sections and blocks that run must get, and nothing else
SITUATIONS = [
    (("/data/run1", "sdpa_fwd", "standalone", None), EVERY_RUN, set()),
    (("/data/run1", "sdpa_bwd", "standalone", None), EVERY_RUN, {"backward"}),
    (("/data/run1", "inferenceattention", "standalone", None), EVERY_RUN, PAGED),
    (("/data/run1", "sdpa_fwd", "comparative", None), EVERY_RUN, {"comparative"}),
    (("/data/job/rank_3", "sdpa_fwd", "standalone", None), [*EVERY_RUN[:3], "Many ranks", *EVERY_RUN[3:]], set()),
    (("/data/job/rank_12/", "sdpa_bwd", "comparative", None), [*EVERY_RUN[:3], "Many ranks", *EVERY_RUN[3:]],
     {"backward", "comparative"}),
    (("/data/rank_3_notes", "sdpa_fwd", "standalone", None), EVERY_RUN, set()),  # not a rank folder's name
    (("/srv/run", "inferenceattention", "comparative", "ssh gpu-box {CMD}"), [*EVERY_RUN, "Remote data (`prefix`)"],
     PAGED | {"comparative"}),
]  # fmt: skip


def _headings(text: str) -> list[str]:
    return [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]


# ids from the arguments alone: a set's text order changes with the hash seed, and xdist workers must agree
@pytest.mark.parametrize(("args", "sections", "blocks"), SITUATIONS,
                         ids=[f"{a[1]}-{a[2]}-{a[0]}-prefix={bool(a[3])}" for a, _, _ in SITUATIONS])
def test_each_run_gets_the_parts_that_apply_to_it(args: tuple, sections: list[str], blocks: set[str]) -> None:
    text = render_analysis_prompt(*args[:3], prefix=args[3])
    assert _headings(text) == sections
    assert {name for name, line in BLOCK_LINES.items() if line in text} == blocks
    assert "<!--" not in text


def test_agent_md_holds_every_part() -> None:
    text = render_agent_md()
    assert _headings(text) == ALL_SECTIONS
    assert all(line in text for line in BLOCK_LINES.values())
    assert not re.search(r"<!-- (when \w+|end) -->", text)


def test_the_prompt_file_matches_the_declarations() -> None:
    text = load_prompt_text()
    assert _headings(text) == list(SECTIONS)  # a new section must say when it is sent
    used = set(re.findall(r"<!-- when (\w+) -->", text)) | {c for c in SECTIONS.values() if c}
    assert used == set(CONDITIONS)  # every condition used, none undeclared
    assert text.count("<!-- end -->") == len(re.findall(r"<!-- when \w+ -->", text))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("## Inputs\n\n## A new section\n", "has no condition"),
        ("## Inputs\n<!-- when sometimes -->\nx\n<!-- end -->\n", "unknown condition"),
        ("## Inputs\n<!-- when paged -->\nx\n", "never closed"),
        ("## Inputs\n<!-- end -->\n", "without a `when` block"),
        ("## Inputs\n<!-- when paged -->\n<!-- when backward -->\n", "nested"),
        ("## Inputs\n<!-- when paged -->\n## Tools\n", "runs into section"),
    ],
)
def test_a_malformed_prompt_is_refused_by_name(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        select_parts(text, None)


def test_sizes_per_situation() -> None:
    """Not asserted (bytes change with every edit): printed for the issue note and the report."""
    whole = len(render_agent_md().encode())
    print(f"\nagent.md (every part): {whole:,} bytes")
    for args, _, _ in SITUATIONS:
        size = len(render_analysis_prompt(*args[:3], prefix=args[3]).encode())
        print(f"  {args[1]:18s} {args[2]:11s} {args[0]:22s} prefix={bool(args[3])!s:5s} {size:6,} bytes")


def test_a_tool_joins_the_subagent_only_when_it_says_so() -> None:
    """ToolSpec.agent defaults to off; the tool table (and so agent.md's allowlist) is exactly the declared ones."""
    from sdpa_analyzer.server.results import ResultModel
    from sdpa_analyzer.server.tools import TOOLS
    from sdpa_analyzer.server.tools.base import CliSpec, ToolInput, ToolSpec

    plain = ToolSpec(name="x", title="X", description="d", input_model=ToolInput, result_model=ResultModel,
                     run=lambda ctx, args: ResultModel(), cli=CliSpec("x"))  # fmt: skip
    assert plain.agent is None
    rows = [line for line in render_agent_md().splitlines() if line.startswith("| `mcp__sdpa__")]
    assert [r.split("`")[1].removeprefix("mcp__sdpa__") for r in rows] == [t.name for t in TOOLS if t.agent]
    assert {"analyze_ranks", "render_report"}.isdisjoint(r.split("`")[1].removeprefix("mcp__sdpa__") for r in rows)
