"""What a command prints: a tool's result as its human table, or as the structured result the MCP tool returns."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from sdpa_analyzer.server.cli.human import render
from sdpa_analyzer.server.cli.human_ranks import RANK_RENDERERS
from sdpa_analyzer.server.cli.wording import cli_words
from sdpa_analyzer.server.errors import printable


def human_text(tool_name: str, result: BaseModel) -> str:
    """The table a person reads, in the CLI's words (commands and flags for the tools' MCP names)."""
    rank_renderer = RANK_RENDERERS.get(tool_name)
    return cli_words(rank_renderer(result) if rank_renderer is not None else render(tool_name, result))


def print_text(text: str) -> None:
    print(printable(text, keep_lines=True))  # the tables quote op names and paths from untrusted files


def print_json(value: Any) -> None:
    """`value` (a result model, or a dict or list of them) as JSON: the MCP tools' structured results, word for word."""
    print(json.dumps(_dumped(value), indent=2, ensure_ascii=False))


def _dumped(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dumped(v) for v in value]
    return value


__all__ = ["human_text", "print_json", "print_text"]
