"""The CLI's words for what the tools call by their MCP names: a hint that says "re-run rank_findings with
arch=mi300x" reaches a terminal as "re-run sdpa-analyzer rank with --arch mi300x".

The tools write their messages once, in the MCP surface's terms (tool names, `argument=value`), since an LLM
calling them over MCP reads the same text. Both vocabularies come from the tool declarations (server.tools.TOOLS:
each tool's CLI command, each input field's flag), so a renamed tool or field renames its hints too.
"""

from __future__ import annotations

import re
from functools import cache

from sdpa_analyzer.server.tools import TOOLS

PROG = "sdpa-analyzer"


def flag(name: str) -> str:
    """The long option of an input field (every non-positional field is one: `bytes_model` → `--bytes-model`)."""
    return "--" + name.replace("_", "-")


@cache
def _patterns() -> tuple[re.Pattern[str], dict[str, str], re.Pattern[str] | None]:
    commands = {spec.name: f"{PROG} {spec.cli.command}" for spec in TOOLS}
    positional = {name for spec in TOOLS for name in spec.cli.positional}
    options = sorted(
        {name for spec in TOOLS for name in spec.input_model.model_fields} - positional, key=len, reverse=True
    )
    tools = re.compile(r"(?<![\w/.-])(" + "|".join(sorted(commands, key=len, reverse=True)) + r")(?![\w/-])")
    # `arch=mi300x` → `--arch mi300x`; a bare `arch=` (before a space or the end) → `--arch`
    args = re.compile(r"(?<![\w/.-])(" + "|".join(options) + r")=(?=(\S?))") if options else None
    return tools, commands, args


def cli_words(text: str) -> str:
    """`text` with tool names as CLI commands and `field=value` as `--field value` (fields that are positional
    in some command are left as they are: their spelling differs from command to command)."""
    tools, commands, args = _patterns()
    text = tools.sub(lambda m: commands[m.group(1)], text)
    if args is not None:
        text = args.sub(lambda m: flag(m.group(1)) + (" " if m.group(2) else ""), text)
    return text


__all__ = ["PROG", "cli_words", "flag"]
