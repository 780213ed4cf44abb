"""User-facing input errors: one line naming the file, the field and the fix."""

from __future__ import annotations

import errno
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

MESSAGE_LIMIT = 300  # characters of an error line (an LLM and a terminal read it whole)
_WORD_LIMIT = 150  # a longer word (a whole CSV cell, a very deep path) is shortened in its middle
_URL_LIMIT = 400  # ... but a URL only past this (the sources of our data files are shorter)


_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str, *, keep_lines: bool = False) -> str:
    """`text` with every character a terminal or a reader would not show as itself escaped the way Python's repr
    writes it (`\\x1b`, `\\u202e`): control characters (ESC sequences that clear a screen or set a window
    title, carriage returns that overwrite a line), bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069) that
    reorder what is shown, zero-width and other format characters, unassigned code points and surrogates.
    `keep_lines`: line breaks and tabs stay (multi-line result text); else they are escaped too. Everything we
    print or return goes through here once: error lines (InputError, shorten_message), tool results
    (server.tools.base.checked_result), the CLI's tables."""
    if text.isprintable():  # the common case, at C speed
        return text
    out = []
    for ch in text:
        if ch.isprintable() or (keep_lines and ch in "\n\t"):
            out.append(ch)
            continue
        code = ord(ch)
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
            continue
        out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    escaped = "".join(out)
    return text if escaped == text else escaped  # only kept line breaks: the same string (callers compare by `is`)


class InputError(ValueError):
    """Bad input the user can fix. str(err) is the whole message: one line, no traceback, nothing a terminal would
    act on (control characters and bidi overrides quoted from a path or a trace are escaped)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(" ".join(str(message).split())))


class PathOutsideRootsError(InputError):
    """A path resolves outside every configured data root."""


def shorten_middle(text: str, limit: int) -> str:
    """`text` cut to `limit` characters by replacing its middle with an ellipsis (both ends stay readable)."""
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 2)
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def _is_url(word: str) -> bool:
    return "://" in word[:16]


def shorten_message(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """One line of at most `limit` characters: whitespace collapsed, overlong words (cells, paths) shortened in
    the middle, then whole words dropped from the middle of the line if it is still too long, so the cause at
    the start and the fix at the end both survive, and no word is cut; non-printable characters are escaped. A
    URL is kept whole (up to `_URL_LIMIT`): a cut one leads nowhere."""
    words = [shorten_middle(printable(w), _URL_LIMIT if _is_url(w) else _WORD_LIMIT) for w in str(message).split()]
    text = " ".join(words)
    if len(text) <= limit:
        return text
    budget = limit - 2  # " …" joins the two halves
    head: list[str] = []
    tail: list[str] = []
    head_len = tail_len = 0
    i, j = 0, len(words) - 1
    while i <= j:  # the shorter half takes the next word; when neither half's next word fits, stop
        for take_head in (True, False) if head_len <= tail_len else (False, True):
            w = words[i] if take_head else words[j]
            if head_len + tail_len + len(w) + 1 > budget:
                continue
            if take_head:
                head.append(w)
                head_len += len(w) + 1
                i += 1
            else:
                tail.append(w)
                tail_len += len(w) + 1
                j -= 1
            break
        else:
            break
    if not head and not tail:  # one word longer than the whole line
        return shorten_middle(text, limit)
    return " ".join([*head, "…", *reversed(tail)])


_OS_FIXES = {
    errno.ENOSPC: "free space on that disk (or pass another output_dir) and run the tool again",
    errno.EDQUOT: "free space within your disk quota (or pass another output_dir) and run the tool again",
    errno.EROFS: "the file system is read-only: pass an output_dir on a writable one",
    errno.EACCES: "check the permissions of the file and its folder",
    errno.EPERM: "check the permissions of the file and its folder",
    errno.ENAMETOOLONG: "pass a shorter path",
    errno.EISDIR: "a folder stands where a file is expected: pass a file path, or move the folder",
}


def os_error_message(exc: OSError) -> str:
    """One line for a file-system failure: which path, what went wrong, what to do about that cause."""
    where = exc.filename if exc.filename is not None else "a file"
    fix = _OS_FIXES.get(exc.errno or 0, "check the path and that its folder is writable")
    return f"{where}: {exc.strerror or type(exc).__name__} — {fix}"


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
