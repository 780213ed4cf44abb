"""Render the subagent instructions: as the MCP prompt `sdpa_analysis` and as the Claude Code `agent.md`.

`prompts/sdpa_analysis.md` is the only copy of the instructions. It names the run's inputs with the
placeholders `{output_dir}`, `{category}`, `{comparison_scope}` and `{prefix}`, and the tool table, generated from
the tool declarations (`ToolSpec.agent`), with `{tool_table}`; every other brace in it (`{CMD}`, `{{FILL: ...}}`)
is literal text for the reader, so substitution is by name, not `str.format`.

A run gets only the parts that apply to it (the prompt is sent once per category of every run): each `## ` section
has a declared condition in `SECTIONS`, and a block inside a section between `<!-- when NAME -->` and `<!-- end -->`
is sent when the condition NAME of `CONDITIONS` holds for the run. `agent.md` serves every run, so it holds all of
them (each says when it applies).

    python -m sdpa_analyzer.prompts.render --write-agent-md   # regenerate agent.md after editing the prompt
    python -m sdpa_analyzer.prompts.render --check            # exit 1 when agent.md is stale
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath

from sdpa_analyzer.server.tools import TOOLS
from sdpa_analyzer.server.vocab import CATEGORIES, SCOPES

PROMPT_FILE = "sdpa_analysis.md"
FINDINGS_FORMAT_FILE = "findings_format.md"
PLACEHOLDERS = ("output_dir", "category", "comparison_scope", "prefix")
TOOL_TABLE = "tool_table"
CMD_SLOT = "{CMD}"
NO_PREFIX = "none (the analysis folder is on this host)"
AGENT_MD_PATH = Path(__file__).resolve().parents[1] / "agent.md"

# The server's tools the subagent may call, in TOOLS' order (ToolSpec.agent). Claude Code exposes a tool of
# server key `sdpa` as `mcp__sdpa__<tool>`.
SERVER_KEY = "sdpa"
AGENT_TOOLS = tuple(spec.name for spec in TOOLS if spec.mcp and spec.agent)
FILE_TOOLS = ("Read", "Edit", "Write")
AGENT_NAME = "sdpa-analyzer"
# No ": " and no " #" inside: the front matter must stay a plain-scalar YAML mapping.
AGENT_DESCRIPTION = (
    "Explains why the attention (SDPA) ops of one category (sdpa_fwd, sdpa_bwd or inferenceattention) "
    "in an analysis folder are slow and writes category_findings/<category>_findings.md. All numbers "
    "come from the sdpa MCP tools. Start one per attention category with output_dir, category, "
    "comparison_scope and an optional command prefix."
)
AGENT_MODEL = "inherit"
GENERATED_NOTE = (
    "<!-- Generated from prompts/sdpa_analysis.md by `python -m sdpa_analyzer.prompts.render --write-agent-md`; "
    "edit the prompt, not this file. -->"
)

_PLACEHOLDER_RE = re.compile(r"\{(" + "|".join((*PLACEHOLDERS, TOOL_TABLE)) + r")\}")


@dataclass(frozen=True)
class Run:
    """One run's inputs, as far as they decide which parts of the instructions it gets."""

    output_dir: str
    category: str
    comparison_scope: str
    prefix: str | None


def _is_rank_folder(run: Run) -> bool:
    from sdpa_analyzer.server.ranks.summary import (
        RANK_FOLDER,  # the layout's one name for it (imported when a prompt is rendered)
    )

    name = PureWindowsPath(run.output_dir).name if "\\" in run.output_dir else PurePosixPath(run.output_dir).name
    return RANK_FOLDER.fullmatch(name) is not None


# The conditions a part of the instructions can be sent on: the name a `<!-- when NAME -->` block or a section uses.
CONDITIONS: dict[str, Callable[[Run], bool]] = {
    "ranks": _is_rank_folder,  # output_dir is one rank's folder of a distributed job (analyze_ranks' rank_<r>/)
    "remote": lambda run: run.prefix is not None,  # the folder is reached through a command prefix
    "paged": lambda run: run.category == "inferenceattention",  # serving-engine attention: paged KV cache
    "backward": lambda run: run.category == "sdpa_bwd",
    "comparative": lambda run: run.comparison_scope == "comparative",
    "unfilled": lambda run: False,  # what to do with `<input>` left unfilled: agent.md only (a run's are filled)
}
# Every `## ` section of the prompt, in order, with the condition it is sent on (None: every run).
SECTIONS: dict[str, str | None] = {
    "Inputs": None,
    "Tools": None,
    "Workflow": None,
    "Many ranks": "ranks",
    "Where the numbers come from": None,
    "Writing each slot": None,
    "Language": None,
    "Reading the classification": None,
    "Action guidance": None,
    "Expected bands": None,
    "Common patterns": None,
    "What a trace cannot show": None,
    "Remote data (`prefix`)": "remote",
}
_WHEN = re.compile(r"<!-- when (\w+) -->")
_END = "<!-- end -->"


class PromptArgumentError(ValueError):
    """A prompt argument the caller can fix; the message is one line naming the argument and the fix."""


def _read_packaged(name: str) -> str:
    try:
        return resources.files("prompts").joinpath(name).read_text(encoding="utf-8")
    except NotADirectoryError:
        # An editable install made before prompts/__init__.py existed registers `prompts` as a namespace
        # package whose path holds a non-directory hook entry; the file still sits next to this module.
        return (Path(__file__).resolve().parent / name).read_text(encoding="utf-8")


def load_prompt_text() -> str:
    """The raw subagent instructions, placeholders unfilled."""
    return _read_packaged(PROMPT_FILE)


def load_findings_format() -> str:
    """Our statement of the findings file contract (served as the MCP resource `sdpa://findings-format`)."""
    return _read_packaged(FINDINGS_FORMAT_FILE)


def mcp_tool_names() -> list[str]:
    """The server's tools as Claude Code names them."""
    return [f"mcp__{SERVER_KEY}__{tool}" for tool in AGENT_TOOLS]


def tool_table() -> str:
    """The instructions' tool table: one row per tool declared for the subagent (`ToolSpec.agent`), in TOOLS'
    order."""
    rows = [f"| `mcp__{SERVER_KEY}__{spec.name}` | {spec.agent} |" for spec in TOOLS if spec.mcp and spec.agent]
    return "\n".join(["| tool | use |", "|---|---|", *rows])


def select_parts(text: str, run: Run | None) -> str:
    """`text` with the sections and blocks whose condition fails for `run` left out, and the markers removed
    (`run` None: every part, for agent.md). A heading missing from SECTIONS, a condition missing from CONDITIONS
    or an unbalanced marker is a ValueError naming it (tests/prompts check the prompt file against them)."""

    def holds(condition: str | None) -> bool:
        if condition is not None and condition not in CONDITIONS:
            raise ValueError(f"{PROMPT_FILE}: unknown condition {condition!r}: declare it in CONDITIONS")
        return run is None or condition is None or CONDITIONS[condition](run)

    out: list[str] = []
    section_on, block = True, None  # block: the open `when` block's condition holds (None: no block open)
    for line in text.split("\n"):
        if line.startswith("## "):
            heading = line[3:].strip()
            if heading not in SECTIONS:
                raise ValueError(f"{PROMPT_FILE}: section {heading!r} has no condition: add it to SECTIONS")
            if block is not None:
                raise ValueError(f"{PROMPT_FILE}: a `when` block runs into section {heading!r}: close it")
            section_on = holds(SECTIONS[heading])
        elif (when := _WHEN.fullmatch(line.strip())) is not None:
            if block is not None:
                raise ValueError(f"{PROMPT_FILE}: nested `when` block {line.strip()!r}: close the one before")
            block = holds(when.group(1))
            continue
        elif line.strip() == _END:
            if block is None:
                raise ValueError(f"{PROMPT_FILE}: {_END} without a `when` block")
            block = None
            continue
        if section_on and block is not False:
            out.append(line)
    if block is not None:
        raise ValueError(f"{PROMPT_FILE}: a `when` block is never closed")
    return "\n".join(out)


def _fill(text: str, values: dict[str, str]) -> str:
    # One pass, so a value that itself contains "{category}" is never substituted again.
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], text)


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    cleaned = str(value).strip()
    if cleaned not in allowed:
        raise PromptArgumentError(f"{name}={value!r} is not supported: pass one of {', '.join(allowed)}")
    return cleaned


def _check_single_line(name: str, value: str) -> str:
    cleaned = str(value).strip()
    if not cleaned:
        raise PromptArgumentError(f"{name} is empty: pass the analysis folder path")
    if "\n" in cleaned or "\r" in cleaned or "\x00" in cleaned:
        raise PromptArgumentError(f"{name} contains a line break or NUL byte: pass a single-line value")
    return cleaned


def check_prefix(prefix: str | None) -> str | None:
    """Return the prefix stripped (None when absent or blank); refuse one without exactly one `{CMD}`."""
    if prefix is None or not str(prefix).strip():
        return None
    cleaned = _check_single_line("prefix", prefix)
    if cleaned.count(CMD_SLOT) != 1:
        raise PromptArgumentError(
            f"prefix={prefix!r} must contain {CMD_SLOT} exactly once, where the command goes: "
            "e.g. 'docker exec -i <container> {CMD}' or 'ssh <host> {CMD}'"
        )
    return cleaned


def render_analysis_prompt(
    output_dir: str, category: str, comparison_scope: str = "standalone", prefix: str | None = None
) -> str:
    """The instructions for one run, every placeholder replaced (the MCP prompt `sdpa_analysis`)."""
    checked_prefix = check_prefix(prefix)
    run = Run(
        output_dir=_check_single_line("output_dir", output_dir),
        category=_check_choice("category", category, CATEGORIES),
        comparison_scope=_check_choice("comparison_scope", comparison_scope, SCOPES),
        prefix=checked_prefix,
    )
    values = {
        "output_dir": run.output_dir,
        "category": run.category,
        "comparison_scope": run.comparison_scope,
        "prefix": checked_prefix if checked_prefix is not None else NO_PREFIX,
        TOOL_TABLE: tool_table(),
    }
    return _fill(select_parts(load_prompt_text(), run), values)


def render_agent_md() -> str:
    """agent.md: Claude Code front matter + the instructions, inputs left as `<name>` for the orchestrator."""
    front_matter = "\n".join(
        [
            "---",
            f"name: {AGENT_NAME}",
            f"description: {AGENT_DESCRIPTION}",
            f"tools: {', '.join([*mcp_tool_names(), *FILE_TOOLS])}",
            f"model: {AGENT_MODEL}",
            "---",
        ]
    )
    body = _fill(select_parts(load_prompt_text(), None), {**{name: f"<{name}>" for name in PLACEHOLDERS},
                                                           TOOL_TABLE: tool_table()})
    return f"{front_matter}\n{GENERATED_NOTE}\n\n{body}"


def server_launch_command(prefix: str | None, root: str, server_cmd: str = "sdpa-analyzer") -> list[str]:
    """argv that starts the stdio server for `root`, through the orchestrator's prefix when there is one.

    The prefix is a shell-like template, so the server command is quoted before it replaces `{CMD}`
    and the result is split the way a shell would split it.
    """
    serve = f"{server_cmd} serve --root {shlex.quote(_check_single_line('root', root))}"
    checked = check_prefix(prefix)
    if checked is None:
        return shlex.split(serve)
    return shlex.split(checked.replace(CMD_SLOT, serve))


def write_agent_md(path: Path = AGENT_MD_PATH) -> Path:
    path.write_text(render_agent_md(), encoding="utf-8")
    return path


def agent_md_is_current(path: Path = AGENT_MD_PATH) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == render_agent_md()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sdpa_analyzer.prompts.render", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write-agent-md", action="store_true", help="regenerate agent.md from the prompt")
    mode.add_argument("--check", action="store_true", help="exit 1 when agent.md differs from the prompt")
    parser.add_argument("--path", type=Path, default=AGENT_MD_PATH, help="agent.md path (default: repo root)")
    args = parser.parse_args(argv)
    if args.write_agent_md:
        print(f"wrote {write_agent_md(args.path)}")
        return 0
    if agent_md_is_current(args.path):
        print(f"{args.path} is up to date")
        return 0
    print(f"{args.path} is stale: run `python -m sdpa_analyzer.prompts.render --write-agent-md`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
