"""The tool declaration: one `ToolSpec` per tool, from which the MCP server and the CLI are both derived.

A tool is one function `run(ctx, args) -> result` with one pydantic input model (every parameter, its type,
default, constraints and description, written once) and one pydantic result model. `execute` is the one
error wrapper every caller goes through, MCP and CLI alike: it validates the arguments, runs the tool, and
turns every failure into a `ToolFailure` whose message is one line naming the cause and the fix (an
unexpected exception is logged with its traceback and reported as an internal error, never shown).
"""

from __future__ import annotations

import logging
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from perf_models.errors import PerfModelError
from server.errors import MESSAGE_LIMIT, InputError, os_error_message, shorten_message
from server.gc_pause import gc_paused
from server.memory import release_free_heap
from server.roots import DataRoots

log = logging.getLogger("sdpa_analyzer")

ProgressFn = Callable[[float, float, str], None]


def _no_progress(done: float, total: float, message: str) -> None:
    return None


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use besides its arguments: the data roots, and a progress callback (MCP progress
    notifications or the CLI's bar)."""

    roots: DataRoots
    progress: ProgressFn = _no_progress


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown arguments are refused (a typo is not silently ignored)."""

    model_config = ConfigDict(extra="forbid")


In = TypeVar("In", bound=ToolInput)
Out = TypeVar("Out", bound=BaseModel)


@dataclass(frozen=True)
class CliSpec:
    """How the tool appears on the command line. Only spellings live here; the parameters are the input model's.

    `positional`: input fields given as positional arguments, in order. `flags`: extra spellings of a field's
    option (e.g. `{"batch": ("-b",)}`); every non-positional field is also `--field-name`.
    """

    command: str
    positional: tuple[str, ...] = ()
    flags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


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
    agent: bool = True  # on the subagent's allowlist (agent.md); False: for people or orchestrators only


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


def literal_choices(annotation: Any) -> list[Any]:
    """The values of the Literal types in an annotation (through Annotated, unions and Optional), in order."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return literal_choices(typing.get_args(annotation)[0])
    if origin is Literal:
        return list(typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return [v for a in typing.get_args(annotation) for v in literal_choices(a)]
    return []


def _merge_choice_errors(errors: list[Any], model: type[BaseModel] | None) -> list[Any]:
    """A value outside a field's closed set fails once per branch of its union (`category`: a category or
    `all`): those errors become one, naming every choice."""
    if model is None:
        return errors
    merged: list[Any] = []
    done: set[str] = set()
    for err in errors:
        loc = err.get("loc", ())
        name = loc[0] if loc and isinstance(loc[0], str) else None
        field = model.model_fields.get(name) if name is not None else None
        choices = literal_choices(field.annotation) if field is not None else []
        same = [e for e in errors if e.get("loc", ())[:1] == (name,)]
        if not choices or not all(e.get("type") == "literal_error" for e in same):
            merged.append(err)
            continue
        if name not in done:
            done.add(name)
            merged.append({"loc": (name,), "type": "choice", "input": err.get("input"), "choices": choices})
    return merged


def format_validation_error(exc: ValidationError, limit: int = 3, model: type[BaseModel] | None = None) -> str:
    """A pydantic error as one line: `field=value is invalid: reason` for each error (at most `limit`); a value
    outside a closed set names the choices once."""
    parts = []
    errors = _merge_choice_errors(exc.errors(include_url=False), model)
    for err in errors[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "arguments"
        kind = err.get("type", "")
        value = repr(err.get("input"))
        value = value if len(value) <= 60 else value[:57] + "..."
        if kind == "missing":
            parts.append(f"{loc} is required")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument {loc!r}")
        elif kind == "choice":
            parts.append(f"{loc}={value} is invalid: pass one of {', '.join(map(str, err['choices']))}")
        else:
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"{loc}={value} is invalid: {msg}")
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)


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
    """The result with every warning or note one line of at most MESSAGE_LIMIT characters. Finite numbers and valid
    fields are the result models' own checks (server.results.ResultModel)."""
    _shorten_text_lists(result)
    return result


def _shorten_text_lists(model: BaseModel) -> None:
    for name in _TEXT_LISTS:
        items = getattr(model, name, None)
        if isinstance(items, list) and any(isinstance(x, str) and len(x) > MESSAGE_LIMIT for x in items):
            setattr(model, name, [shorten_message(x) if isinstance(x, str) else x for x in items])
