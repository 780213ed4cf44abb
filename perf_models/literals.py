"""Safe parsing of the Python-literal strings found in trace args and ops CSV cells.

A trace is untrusted input (docs/perf-model.md, pitfall 10): nothing from it is ever evaluated. Cells such as
`Input Dims`, `Concrete Inputs`, `perf_params` and `kernel_details_summary` are Python literals, except
that numbers may be wrapped as `np.float64(12.5)` / `np.int64(3)` and booleans written `np.True_`.
Those wrappers are rewritten to plain literals by a regex, then `ast.literal_eval` does the rest; a
call, name or attribute access anywhere else raises `LiteralParseError`.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from typing import Any

from sdpa_analyzer.perf_models.errors import PerfModelError

__all__ = [
    "PLAIN_INT_NEST",
    "LiteralParseError",
    "is_missing",
    "parse_bool_str",
    "parse_float_str",
    "parse_int_str",
    "parse_literal",
    "parse_plain_int_nest",
]

# Longer cells exist (kernel_details_summary with many kernels) but nothing legitimate is this big;
# the cap keeps a hostile cell from making literal_eval build a huge AST.
MAX_LITERAL_CHARS = 2_000_000
# Real cells nest at most 4 deep (a list of kernel dicts, shapes of a Tensor[] input); literal_eval, the
# consumers and repr() all recurse once per level, so a deeper cell is refused before any of them runs.
MAX_NESTING = 32
_SNIPPET = 60

# np.float64(1.5), np.int64(-3), np.bool_(True), np.str_('x'), np.float32(nan): keep the inner literal.
# The inner part may not contain parentheses, so a nested call can never be unwrapped into code.
_NP_WRAPPED = re.compile(r"\bnp\.(?:float|int|uint|bool|complex|str|bytes)_?\d*\(\s*([^()]*?)\s*\)")
_NP_BOOL = re.compile(r"\bnp\.(True|False)_\b")
_NAN_INF_NAMES = {"nan": "None", "inf": "1e999"}
# a cell made of ints, brackets and commas only (Input Dims, strides): parsed without the AST
PLAIN_INT_NEST = re.compile(r"[\s\d,\-\[\]()]*")
_TRAILING_COMMA = re.compile(r",\s*([\])])")

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_NOT_BRACKET = {ord(c): None for c in map(chr, range(128)) if c not in "()[]{}"}
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INT = re.compile(r"[+-]?\d+")


class LiteralParseError(PerfModelError):
    """A trace/CSV string is not a plain Python literal (or not the scalar kind a slot needs)."""


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."


def is_missing(value: Any) -> bool:
    """A cell with no value: None, NaN, or a blank / 'nan' / 'none' / 'null' string."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, str) and value.strip().lower() in ("", "nan", "none", "null"):
        return True
    return False


def nesting_depth(text: str) -> int:
    """How deep the brackets of a literal's text nest, quoted strings skipped (linear, no recursion)."""
    brackets = _QUOTED.sub("", text).translate(_NOT_BRACKET)
    depth = deepest = 0
    for ch in brackets:
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in ")]}":
            depth -= 1
    return deepest


_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its strings replaced by U+FFFD (depth is bounded by MAX_NESTING)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list | tuple | set):
        return type(value)(_no_surrogates(v) for v in value)
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def _tuplify(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuplify(v) for v in value)
    return value


def parse_plain_int_nest(text: str) -> Any:
    """`((1, 2), (3,), ())` or `[[1, 2], []]` -> nested tuples, without building a Python AST."""
    body = text.replace("(", "[").replace(")", "]")
    body = _TRAILING_COMMA.sub(r"\1", body)
    stack: list[list[Any]] = []
    root: list[Any] | None = None
    num = ""
    for ch in body:
        if ch.isdigit() or ch == "-":
            num += ch
            continue
        if num:
            if not stack:
                raise ValueError("number outside brackets")
            stack[-1].append(int(num))
            num = ""
        if ch == "[":
            new: list[Any] = []
            if stack:
                stack[-1].append(new)
            elif root is None:
                root = new
            else:
                raise ValueError("two top-level values")
            stack.append(new)
        elif ch == "]":
            if not stack:
                raise ValueError("unbalanced ']'")
            stack.pop()
        elif ch not in ", \t\r\n":
            raise ValueError(f"unexpected {ch!r}")
    if num:
        if stack or root is not None:
            raise ValueError("trailing number")
        return int(num)
    if stack or root is None:
        raise ValueError("unbalanced '['")
    return _tuplify(root)


def _normalise(text: str) -> str:
    text = _NP_BOOL.sub(r"\1", text)
    return _NP_WRAPPED.sub(r"\1", text)


def _replace_nan_inf(text: str) -> str:
    """literal_eval has no nan/inf: bare `nan` becomes None (a missing number), `inf` a float overflow.

    Done on tokens, so the letters inside a quoted string (a kernel name) are never touched.
    """
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    if not any(t.type == tokenize.NAME and t.string in _NAN_INF_NAMES for t in toks):
        return text
    out = [
        (t.type, _NAN_INF_NAMES[t.string])
        if t.type == tokenize.NAME and t.string in _NAN_INF_NAMES
        else (t.type, t.string)
        for t in toks
    ]
    return tokenize.untokenize(out)


def parse_literal(value: Any, field: str = "value") -> Any:
    """Parse one cell/arg into Python values; NaN, None and empty cells give None.

    Lists become tuples only on the fast path for plain int nests (Input Dims); elsewhere the literal's
    own container types are kept. Non-string values (already parsed by a JSON reader) are returned as
    they are, NaN floats as None. Raises `LiteralParseError` naming `field` for anything that is not a
    plain literal, e.g. `__import__('os').system('x')`.
    """
    if is_missing(value):
        return None
    if not isinstance(value, str):
        return value
    text = value.strip()
    if len(text) > MAX_LITERAL_CHARS:
        raise LiteralParseError(
            f"{field}: literal of {len(text)} characters is over the {MAX_LITERAL_CHARS} character limit"
        )
    opening = text.count("(") + text.count("[") + text.count("{")  # C-speed: most cells cannot be too deep
    if opening > MAX_NESTING and (depth := nesting_depth(text)) > MAX_NESTING:
        raise LiteralParseError(f"{field}: literal nested {depth} levels deep (at most {MAX_NESTING})")
    if PLAIN_INT_NEST.fullmatch(text):
        try:
            return parse_plain_int_nest(text)
        except ValueError:
            pass  # let literal_eval produce the error message
    normalised = _normalise(text)
    try:
        value = ast.literal_eval(normalised)
        # a \ud800 escape makes a lone surrogate, which no UTF-8 writer takes: U+FFFD instead
        return _no_surrogates(value) if "\\u" in normalised or "\\U" in normalised else value
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        retried = _replace_nan_inf(normalised) if ("nan" in normalised or "inf" in normalised) else normalised
        if retried != normalised:
            try:
                return ast.literal_eval(retried)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
        why = _why_not_literal(normalised, exc)
        raise LiteralParseError(
            f"{field}: {_snippet(text)!r} is not a plain Python literal ({why}); "
            "only numbers, strings, booleans, None, tuples, lists and dicts are accepted"
        ) from None


_LITERAL_NODES = (
    ast.Expression,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.BinOp,
    ast.USub,
    ast.UAdd,
    ast.Add,
    ast.Sub,
    ast.Load,
)
_NODE_WORDS = {
    "Call": "a function call",
    "Name": "a name",
    "Attribute": "an attribute access",
    "Lambda": "a lambda",
    "Subscript": "a subscript",
    "Compare": "a comparison",
}


def _why_not_literal(text: str, exc: BaseException) -> str:
    """One short phrase saying what made the text not a literal (no AST object reprs)."""
    if isinstance(exc, SyntaxError):
        return f"syntax error: {exc.msg}"
    if isinstance(exc, MemoryError | RecursionError):
        return "nested too deeply"
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return "not parseable"
    for node in ast.walk(tree):
        if not isinstance(node, _LITERAL_NODES):
            kind = type(node).__name__
            code = ast.get_source_segment(text, node) or kind
            return f"contains {_NODE_WORDS.get(kind, kind)} {_snippet(code)!r}"
    return "not a constant expression"


def _scalar_text(value: Any) -> str | None:
    if is_missing(value):
        return None
    return str(value).strip()


def parse_bool_str(value: Any, field: str = "value") -> bool | None:
    """'True' / 'False' (any case) -> bool; '' / None / NaN -> None; anything else raises.

    Numbers are refused on purpose: a float such as softmax_scale 0.088 in a causal slot is exactly the
    misread this parser exists to catch (docs/perf-model.md, pitfall 2).
    """
    if isinstance(value, bool):
        return value
    text = _scalar_text(value)
    if text is None:
        return None
    low = text.lower()
    if low in ("true", "np.true_"):
        return True
    if low in ("false", "np.false_"):
        return False
    raise LiteralParseError(f"{field}: {_snippet(text)!r} is not a boolean (expected True or False)")


def parse_float_str(value: Any, field: str = "value") -> float | None:
    """'0.088', '0.', '-1', '1e-3', 'inf' -> float; '' / None / NaN / 'nan' -> None; others raise."""
    if isinstance(value, bool):
        raise LiteralParseError(f"{field}: {value!r} is a boolean, not a number")
    if isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    text = _scalar_text(value)
    if text is None:
        return None
    m = _NP_WRAPPED.fullmatch(text)
    if m:
        text = m.group(1)
    if _NUMBER.fullmatch(text):
        return float(text)
    if text.lower() in ("inf", "+inf", "-inf"):
        return float(text)
    raise LiteralParseError(f"{field}: {_snippet(text)!r} is not a number")


def parse_int_str(value: Any, field: str = "value") -> int | None:
    """'559', '-1' -> int; '' / None / NaN -> None; '0.5', 'True' and others raise."""
    if isinstance(value, bool):
        raise LiteralParseError(f"{field}: {value!r} is a boolean, not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
        raise LiteralParseError(f"{field}: {value!r} is not an integer")
    text = _scalar_text(value)
    if text is None:
        return None
    m = _NP_WRAPPED.fullmatch(text)
    if m:
        text = m.group(1)
    if _INT.fullmatch(text):
        return int(text)
    raise LiteralParseError(f"{field}: {_snippet(text)!r} is not an integer")
