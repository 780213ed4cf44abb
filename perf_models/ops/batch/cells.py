"""The input columns of parse_ops_table, and each cell read the way `Row.parse` reads it."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.literals import LiteralParseError, is_missing, parse_literal
from sdpa_analyzer.perf_models.ops.registry import ParsedOp, parse_op
from sdpa_analyzer.perf_models.ops.row import sequence_cell
from sdpa_analyzer.perf_models.ops.types import RowError

# ('', '0.', 'True'): a tuple (empty, one element with its comma, or several) of plain single-quoted
# strings (no escapes, quotes, line breaks or NULs inside), which literal_eval reads as exactly the
# quoted texts; read with a regex, 10x faster than literal_eval
_Q = r"'[^'\\\n\r\x00]*'"
_QUOTED_TUPLE = re.compile(rf"\([ ]*(?:|{_Q}[ ]*,|{_Q}(?:[ ]*,[ ]*{_Q})+[ ]*,?)[ ]*\)")
_QUOTED = re.compile(r"'([^'\\\n\r\x00]*)'")


class _Bad:
    """A cell parse_op refuses (unparseable literal, wrong container): its rows are parsed one by one."""

    def __repr__(self) -> str:
        return "<bad cell>"


BAD = _Bad()
RAW = object()  # Input Dims given as strings


class Rows:
    """The input columns, plus normalized copies of the cells that needed it (strings parsed, lists tupled)."""

    def __init__(self, names: Any, dims: Any, types: Any, concrete: Any, perf_params: Any) -> None:
        self.names_in, self.dims_in, self.types_in, self.conc_in = names, dims, types, concrete
        self.pp_in = perf_params
        self.names = names if set(map(type, names)) <= {str} else [str(name) for name in names]
        self.dims = dims  # copied before the first write (see writable)
        self.part = np.zeros(0, dtype=np.int64)  # per row: its identity group (rows sharing cell objects)
        self.part_concrete: list[Any] = []  # per identity group: Concrete Inputs as a tuple / None / BAD

    def writable(self) -> None:
        """An own copy of Input Dims, so normalizing a cell never changes the caller's list."""
        if self.dims is self.dims_in:
            self.dims = list(self.dims)

    def concrete(self, i: int) -> Any:
        return self.part_concrete[self.part[i]]

    def parse(self, i: int) -> ParsedOp:
        params = None if self.pp_in is None else self.pp_in[i]
        return parse_op(self.names_in[i], self.dims_in[i], self.types_in[i], self.conc_in[i], params)

    def parse_without_params(self, i: int) -> ParsedOp:
        return parse_op(self.names_in[i], self.dims_in[i], self.types_in[i], self.conc_in[i], None)

    def pp_absent(self, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        if self.pp_in is None:
            return np.ones(len(rows), dtype=bool)
        # missing cells are the perf_params that as_mapping reads as None (no fallback, no error)
        return np.fromiter((is_missing(self.pp_in[i]) for i in rows), dtype=bool, count=len(rows))


def seq_cell(value: Any, cache: dict[str, Any], field_name: str) -> Any:
    """An Input type / Concrete Inputs cell as Row.parse reads it: a tuple, None (missing) or BAD."""
    if isinstance(value, str):
        seen = cache.setdefault(field_name, {})
        if value not in seen:
            quoted = _QUOTED_TUPLE.fullmatch(value) if "np." not in value else None
            try:
                parsed = tuple(_QUOTED.findall(value)) if quoted else parse_literal(value, field_name)
                seen[value] = _container(parsed, tuple, field_name)
            except LiteralParseError:
                seen[value] = BAD
        return seen[value]
    return _container(value, tuple, field_name)


def dims_cell(value: Any, cache: dict[str, Any]) -> Any:
    """An Input Dims cell: a list/tuple of entries, None (missing) or BAD."""
    if isinstance(value, str):
        seen = cache.setdefault("Input Dims", {})
        if value not in seen:
            try:
                seen[value] = _container(parse_literal(value, "Input Dims"), None, "Input Dims")
            except LiteralParseError:
                seen[value] = BAD
        return seen[value]
    return _container(value, None, "Input Dims")


def _container(parsed: Any, convert: Any, field_name: str) -> Any:
    """Row.parse's reading of a parsed cell (`sequence_cell`): None when missing, the sequence, or BAD
    when Row.parse refuses it. `convert` makes the sequence hashable."""
    if type(parsed) is tuple:
        return parsed
    try:
        cell = sequence_cell(parsed, field_name)
    except RowError:
        return BAD
    if cell is None:
        return None
    if convert is None:
        return cell if type(cell) is list or type(cell) is tuple else tuple(cell)
    return cell if type(cell) is tuple else convert(cell)
