"""The tool declaration: one `ToolSpec` per tool, from which the MCP server and the CLI are both derived.

A tool is one function `run(ctx, args) -> result` with one pydantic input model (every parameter, its type,
default, constraints and description, written once) and one pydantic result model. `execute` is the one
error wrapper every caller goes through, MCP and CLI alike: it validates the arguments, runs the tool, and
turns every failure into a `ToolFailure` whose message is one line naming the cause and the fix (an
unexpected exception is logged with its traceback and reported as an internal error, never shown).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.server.errors import (
    MESSAGE_LIMIT,
    InputError,
    format_validation_error,
    os_error_message,
    printable,
    shorten_message,
)
from sdpa_analyzer.server.gc_pause import gc_paused
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.roots import DataRoots

log = logging.getLogger("sdpa_analyzer")

ProgressFn = Callable[[float, float, str], None]


def _no_progress(done: float, total: float, message: str) -> None:
    return None


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use besides its arguments: the data roots, a progress callback (MCP progress
    notifications or the CLI's bar), and the settings of whoever started the CLI or the server (`Setting`): what
    must never be a tool argument, such as where code runs."""

    roots: DataRoots
    progress: ProgressFn = _no_progress
    dask_address: str | None = None  # the Dask scheduler analyze_ranks runs on (None: a private LocalCluster)


@dataclass(frozen=True)
class Setting:
    """A ToolContext field chosen by the person starting the CLI or the server, never by an MCP client: the tool
    command and `serve` take it as `flag` (or, read once at start, the environment variable `env`). Declared once,
    in the tool's CliSpec; the MCP schema never shows it."""

    field: str
    flag: str
    env: str | None
    help: str
    metavar: str = "VALUE"


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown arguments are refused (a typo is not silently ignored). The validator
    is built on first use (`defer_build`): the CLI reads every model's fields to build its parser, validates one."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


In = TypeVar("In", bound=ToolInput)
Out = TypeVar("Out", bound=BaseModel)


@dataclass(frozen=True)
class CliSpec:
    """How the tool appears on the command line. Only spellings live here; the parameters are the input model's.

    `positional`: input fields given as positional arguments, in order. `flags`: extra spellings of a field's
    option (e.g. `{"batch": ("-b",)}`); every non-positional field is also `--field-name`. `settings`: the
    context settings the command (and `serve`) takes beside the input model (see `Setting`).
    """

    command: str
    positional: tuple[str, ...] = ()
    flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    settings: tuple[Setting, ...] = ()


@dataclass(frozen=True)
class ToolSpec(Generic[In, Out]):
    """One tool: its name and description (as the MCP client and `--help` show them), its input and result
    models, the function, and what it does to files (MCP annotations)."""

    name: str
    title: str
    description: str
    input_model: type[In]
    result_model: type[Out]
    run: Callable[[ToolContext, In], Out]
    cli: CliSpec
    writes: bool = False  # writes files into the analysis folder (never deletes or overwrites findings)
    mcp: bool = True  # False: a CLI-only command
    image: bool = False  # the result carries a PNG (`png` private attribute) shown as image content over MCP
    # On the subagent's allowlist (agent.md) only when declared: the line the subagent's instructions give the tool
    # (its row of the tool table in prompts/sdpa_analysis.md). None (the default): for people or orchestrators only.
    agent: str | None = None


class ToolFailure(Exception):
    """A tool failed. `str()` is one line for the caller; `internal` marks a bug (logged with its traceback)."""

    def __init__(self, message: str, *, internal: bool = False) -> None:
        super().__init__(message)
        self.internal = internal


def capped(items: list[str], limit: int) -> list[str]:
    """At most `limit` messages; the last one says how many were left out (results must stay small)."""
    if len(items) <= limit:
        return items
    return [*items[: limit - 1], f"... and {len(items) - limit + 1} more"]


def parse_input(spec: ToolSpec[In, Out], args: Mapping[str, Any] | In) -> In:
    """The tool's input model from raw arguments; a bad argument is a one-line ToolFailure."""
    if isinstance(args, spec.input_model):
        return args
    try:
        return spec.input_model.model_validate(dict(args))
    except ValidationError as exc:
        message = format_validation_error(exc, model=spec.input_model)
        raise ToolFailure(shorten_message(f"{spec.name}: {message}")) from None


def execute(spec: ToolSpec[In, Out], ctx: ToolContext, args: Mapping[str, Any] | In) -> Out:
    """Validate, run, and report every failure the same way (see the module docstring)."""
    parsed = parse_input(spec, args)
    try:
        with gc_paused():
            result = spec.run(ctx, parsed)
        return checked_result(spec, result)
    except ToolFailure:
        raise
    except (InputError, PerfModelError, FileNotFoundError) as exc:
        raise ToolFailure(shorten_message(str(exc))) from None
    except OSError as exc:
        raise ToolFailure(shorten_message(os_error_message(exc))) from None
    except Exception as exc:  # a bug: the traceback goes to the log, the caller gets one clear line
        log.exception("tool %s failed", spec.name)
        raise ToolFailure(
            f"internal error in {spec.name} ({type(exc).__name__}); see the server log", internal=True
        ) from None
    finally:
        release_free_heap()  # what the call freed goes back to the OS, so an idle server stays small


_TEXT_LISTS = ("warnings", "notes")  # free-text fields that quote the input: each entry kept to one short line


def checked_result(spec: ToolSpec[In, Out], result: Out) -> Out:
    """The result with every warning or note one line of at most MESSAGE_LIMIT characters, and no string that a
    terminal or a reader would act on (control characters, bidi overrides: escaped, see server.errors.printable; op
    names and paths come from untrusted traces). Finite numbers and valid fields are the result models' own checks
    (server.results.ResultModel)."""
    _escape_strings(result)
    _shorten_text_lists(result)
    return result


def _escape_strings(model: BaseModel) -> None:
    """Every string of the result (any depth) through `printable`, line breaks kept; changed in place."""
    for name in type(model).model_fields:
        value = getattr(model, name, None)
        escaped = _escaped(value)
        if escaped is not value:
            model.__dict__[name] = escaped  # skips validate_assignment: an escaped string is as valid as the original


def _escaped(value: Any) -> Any:
    """`value` with its strings escaped: the same object when nothing changed (a list or dict is copied otherwise,
    never edited: it may be a cached table's)."""
    if isinstance(value, str):
        return printable(value, keep_lines=True)
    if isinstance(value, BaseModel):
        _escape_strings(value)
        return value
    if isinstance(value, list | tuple):
        items = [_escaped(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else type(value)(items)
    if isinstance(value, dict):
        pairs = [(_escaped(k), _escaped(v)) for k, v in value.items()]
        same = all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    return value


def _shorten_text_lists(model: BaseModel) -> None:
    for name in _TEXT_LISTS:
        items = getattr(model, name, None)
        if isinstance(items, list) and any(isinstance(x, str) and len(x) > MESSAGE_LIMIT for x in items):
            setattr(model, name, [shorten_message(x) if isinstance(x, str) else x for x in items])
