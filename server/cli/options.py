"""Command-line options derived from the tool declarations: each input field becomes an option (name, type,
choices, description, default) once, for every command that takes it; the `--root` option and the tools'
settings are declared here once too.

Arguments not given are left out of the tool's arguments, so the input model's defaults apply.
"""

from __future__ import annotations

import argparse
import os
import types
import typing
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo

from sdpa_analyzer.server.cli.wording import cli_words, flag
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import TOOLS
from sdpa_analyzer.server.tools.base import Setting, ToolSpec
from sdpa_analyzer.server.vocab import CATEGORIES

ALL_CATEGORIES = "all"  # a category positional's value meaning "each category in turn"


def _members(annotation: Any) -> list[Any]:
    """The types of a union (X | None included), Annotated wrappers removed; a plain type as a list of one."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _choices(field: FieldInfo) -> list[Any]:
    members = [m for m in _members(field.annotation) if m is not type(None)]
    if not members or not all(typing.get_origin(m) is Literal for m in members):
        return []
    return [v for m in members for v in typing.get_args(m)]


def option_keywords(field: FieldInfo) -> dict[str, Any]:
    """argparse keywords for one field: type, nargs, a metavar listing the choices, help with the default."""
    members = [m for m in _members(field.annotation) if m is not type(None)]
    choices = _choices(field)
    kw: dict[str, Any] = {}
    if members == [bool]:
        kw["action"] = argparse.BooleanOptionalAction
    elif len(members) == 1 and typing.get_origin(members[0]) is list:
        (item,) = typing.get_args(members[0]) or (str,)
        kw.update(nargs="+", type=_members(item)[0] if _members(item)[0] in (int, float) else str)
    elif members and all(m in (int,) for m in members):
        kw["type"] = int
    elif members and all(m in (int, float) for m in members):
        kw["type"] = float
    if choices:
        kw["metavar"] = "{" + ",".join(map(str, choices)) + "}"
    help_text = field.description or ""
    if not field.is_required() and field.default is not None and not isinstance(field.default, bool):
        help_text += f" (default: {field.default})"
    kw["help"] = cli_words(help_text).replace("%", "%%")
    return kw


def category_positional(spec: ToolSpec[Any, Any]) -> str | None:
    """The positional field that names one category (exactly our categories, required), if the command has one:
    the CLI also takes `all` there and runs the tool for each category in turn."""
    fields = spec.input_model.model_fields
    for name in spec.cli.positional:
        if fields[name].is_required() and set(_choices(fields[name])) == set(CATEGORIES):
            return name
    return None


def add_positionals(p: argparse.ArgumentParser, spec: ToolSpec[Any, Any]) -> None:
    fields = spec.input_model.model_fields
    per_category = category_positional(spec)
    for name in spec.cli.positional:
        field = fields[name]
        kw = option_keywords(field)
        kw.pop("action", None)
        many = kw.pop("nargs", None) == "+"  # a list field: one or more values (`analyze-ranks TRACE...`)
        nargs = ("+" if field.is_required() else "*") if many else (None if field.is_required() else "?")
        if name == per_category:
            kw["metavar"] = "{" + ",".join((*CATEGORIES, ALL_CATEGORIES)) + "}"
            kw["help"] += f"; {ALL_CATEGORIES}: each category in turn"
        p.add_argument(name, nargs=nargs, default=argparse.SUPPRESS, **kw)


def add_field_options(
    p: argparse.ArgumentParser, spec: ToolSpec[Any, Any], skip: Collection[str] = ()
) -> list[str]:
    """An option for each non-positional input field of `spec` not in `skip` (`--field-name`, the name clients
    send, plus the command's extra spellings); returns the fields added."""
    added = []
    for name, field in spec.input_model.model_fields.items():
        if name in spec.cli.positional or name in skip:
            continue
        spellings = (*spec.cli.flags.get(name, ()), flag(field.alias or name))
        kw = option_keywords(field)
        if field.is_required():
            kw["required"] = True
        p.add_argument(*spellings, dest=name, default=argparse.SUPPRESS, **kw)
        added.append(name)
    return added


def add_root_option(p: argparse.ArgumentParser, default: str) -> None:
    """`--root DIR`, one folder per flag, repeatable: a flag taking several values would take the positional
    argument after it too (`analyze --root /data trace.json` read the trace as a second root)."""
    p.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help=f"a folder the command may read and write under (repeat for several; default: {default})",
    )


def cli_roots(args: argparse.Namespace) -> DataRoots:
    # the CLI runs with the user's own permissions: no restriction unless asked for (--root). Relative paths are
    # taken against the working directory, as a shell user expects, with or without --root (the MCP server takes
    # them against its first root: its working directory is not the client's)
    return DataRoots([Path(r) for r in args.root] if args.root else [Path.cwd(), Path("/")], cwd_relative=True)


def tool_arguments(args: argparse.Namespace, spec: ToolSpec[Any, Any]) -> dict[str, Any]:
    """The arguments given on the command line for `spec`'s input fields, by the name clients send."""
    fields = spec.input_model.model_fields
    return {(f.alias or name): getattr(args, name) for name, f in fields.items() if hasattr(args, name)}


def add_settings(p: argparse.ArgumentParser, settings: Sequence[Setting]) -> None:
    for setting in settings:
        env = f" (default: ${setting.env})" if setting.env else ""
        p.add_argument(setting.flag, dest=f"setting_{setting.field}", metavar=setting.metavar,
                       help=(setting.help + env).replace("%", "%%"))  # fmt: skip


def all_settings() -> list[Setting]:
    """Every tool's settings, once each (what `serve` takes for the tools it serves)."""
    return list({s.field: s for spec in TOOLS if spec.mcp for s in spec.cli.settings}.values())


def settings_from(args: argparse.Namespace, settings: Sequence[Setting]) -> dict[str, Any]:
    """The ToolContext settings: the flag, else the environment variable (read now, at start)."""
    out = {}
    for setting in settings:
        value = getattr(args, f"setting_{setting.field}", None)
        if value is None and setting.env:
            value = os.environ.get(setting.env) or None
        out[setting.field] = value
    return out


__all__ = [
    "ALL_CATEGORIES",
    "add_field_options",
    "add_positionals",
    "add_root_option",
    "add_settings",
    "all_settings",
    "category_positional",
    "cli_roots",
    "option_keywords",
    "settings_from",
    "tool_arguments",
]
