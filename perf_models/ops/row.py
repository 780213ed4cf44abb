"""Typed access to one op row's `Input Dims` / `Input type` / `Concrete Inputs`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sdpa_analyzer.perf_models.dtypes import try_normalize_dtype
from sdpa_analyzer.perf_models.literals import (
    LiteralParseError,
    parse_bool_str,
    parse_float_str,
    parse_int_str,
    parse_literal,
)
from sdpa_analyzer.perf_models.ops.types import RowError

Dims = tuple[int, ...]


def _as_tuple(value: Any, field: str) -> tuple[Any, ...] | None:
    """A cell (string or already-parsed sequence) as a tuple; None when missing."""
    try:
        parsed = parse_literal(value, field) if isinstance(value, str) or value is None else value
    except LiteralParseError as exc:
        raise RowError(f"unparseable {field}: {exc}") from None
    cell = sequence_cell(parsed, field)
    return None if cell is None else tuple(cell)


def sequence_cell(parsed: Any, field: str) -> Sequence[Any] | None:
    """A parsed cell as Row.parse takes it: None when missing (None, or a NaN float from pandas), else a
    list/tuple-like sequence; RowError naming `field` for anything else (a string, a number, a dict)."""
    if parsed is None or isinstance(parsed, float):
        return None
    if isinstance(parsed, str) or not isinstance(parsed, Sequence):
        raise RowError(
            f"unparseable {field}: expected a tuple/list, got {type(parsed).__name__} {parsed!r:.60}"
        )
    return parsed


def _dims_entry(entry: Any, slot: int) -> Dims:
    if entry is None or entry == "":
        return ()
    if not isinstance(entry, Sequence) or isinstance(entry, str):
        raise RowError(f"unparseable Input Dims: slot {slot} is {entry!r:.40}, expected a shape tuple")
    if entry and all(isinstance(d, Sequence) and not isinstance(d, str) for d in entry):
        return ()  # a Tensor[] argument (list of shapes): never q/k/v, so no shape of its own
    dims: list[int] = []
    for d in entry:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise RowError(
                f"unparseable Input Dims: slot {slot} has dimension {d!r:.20}, expected integers >= 0"
            )
        dims.append(d)
    return tuple(dims)


@dataclass(frozen=True, slots=True)
class Row:
    """One op row, cells parsed; every accessor names the slot and field in its error."""

    dims: tuple[Dims, ...] | None
    types: tuple[str, ...] | None
    concrete: tuple[Any, ...] | None

    @classmethod
    def parse(cls, input_dims: Any, input_types: Any, concrete_inputs: Any) -> Row:
        raw_dims = _as_tuple(input_dims, "Input Dims")
        dims = None if raw_dims is None else tuple(_dims_entry(e, i) for i, e in enumerate(raw_dims))
        raw_types = _as_tuple(input_types, "Input type")
        types = None if raw_types is None else tuple("" if t is None else str(t) for t in raw_types)
        concrete = _as_tuple(concrete_inputs, "Concrete Inputs")
        return cls(dims=dims, types=types, concrete=concrete)

    @property
    def n_args(self) -> int | None:
        if self.dims is not None:
            return len(self.dims)
        if self.concrete is not None:
            return len(self.concrete)
        return None

    # --- tensors -------------------------------------------------------------------------------------
    def tensor_dims(self, slot: int | None) -> Dims:
        """Shape at `slot`; () for an absent optional tensor (None argument) or a missing slot."""
        if slot is None or self.dims is None or slot >= len(self.dims):
            return ()
        return self.dims[slot]

    def require_dims(self, slot: int, what: str, ndims: tuple[int, ...]) -> Dims:
        dims = self.tensor_dims(slot)
        if len(dims) not in ndims:
            want = " or ".join(f"{n}-D" for n in ndims)
            raise RowError(f"unparseable Input Dims: {what} (slot {slot}) has shape {dims}, expected {want}")
        if any(d == 0 for d in dims):
            raise RowError(f"unparseable Input Dims: {what} (slot {slot}) has an empty dimension {dims}")
        return dims

    def type_at(self, slot: int | None) -> str | None:
        if slot is None or self.types is None or slot >= len(self.types):
            return None
        return self.types[slot]

    def dtype(self, slot: int, what: str) -> str:
        """Canonical dtype of the tensor at `slot` (from `Input type`)."""
        if self.types is None:
            raise RowError(f"missing Input type for {what} (slot {slot})")
        raw = self.type_at(slot)
        canon = try_normalize_dtype(raw) if raw is not None else None
        if canon is None:
            raise RowError(f"Input type for {what} (slot {slot}) is {raw!r}, not a tensor dtype")
        return canon

    def optional_dtype(self, slot: int | None) -> str | None:
        raw = self.type_at(slot)
        return try_normalize_dtype(raw) if raw else None

    # --- scalars -------------------------------------------------------------------------------------
    def raw(self, slot: int | None) -> Any:
        if slot is None or self.concrete is None or slot >= len(self.concrete):
            return None
        return self.concrete[slot]

    def bool_at(self, slot: int, name: str) -> bool:
        value = self._scalar(slot, name, parse_bool_str, "True/False")
        if not isinstance(value, bool):  # an explicit check, not an assert: `python -O` must not read None as False
            raise RowError(f"Concrete Inputs slot {slot} ({name}) is {value!r:.40}, expected True/False")
        return value

    def float_at(self, slot: int | None, name: str, default: float | None = None) -> float | None:
        if slot is None:
            return default
        value = self._scalar(slot, name, parse_float_str, "a number", optional=True)
        return default if value is None else float(value)

    def int_at(self, slot: int | None, name: str, default: int | None = None) -> int | None:
        if slot is None:
            return default
        value = self._scalar(slot, name, parse_int_str, "an integer", optional=True)
        return default if value is None else int(value)

    def required_int(self, slot: int, name: str) -> int:
        value = self._scalar(slot, name, parse_int_str, "an integer")
        if not isinstance(value, int):
            raise RowError(f"Concrete Inputs slot {slot} ({name}) is {value!r:.40}, expected an integer")
        return value

    def list_at(self, slot: int | None, name: str) -> tuple[int, ...] | None:
        if slot is None:
            return None
        raw = self.raw(slot)
        if is_blank(raw):
            return None
        try:
            value = parse_literal(raw, f"Concrete Inputs slot {slot} ({name})")
        except LiteralParseError as exc:
            raise RowError(str(exc)) from None
        if not isinstance(value, list | tuple) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in value
        ):
            raise RowError(
                f"Concrete Inputs slot {slot} ({name}) is {raw!r:.40}, expected a list of integers"
            )
        return tuple(value)

    def str_at(self, slot: int | None) -> str | None:
        raw = self.raw(slot)
        if is_blank(raw):
            return None
        text = str(raw).strip().strip("'\"")
        return text or None

    def _scalar(self, slot: int, name: str, parser: Any, kind: str, optional: bool = False) -> Any:
        if self.concrete is None:
            raise RowError(f"missing Concrete Inputs for {name} (slot {slot})")
        if slot >= len(self.concrete):
            if optional:
                return None
            raise RowError(
                f"missing Concrete Inputs for {name} (slot {slot}; the row has {len(self.concrete)})"
            )
        raw = self.concrete[slot]
        if is_blank(raw) and not optional:
            raise RowError(f"missing Concrete Inputs for {name} (slot {slot} is empty)")
        try:
            value = parser(raw, f"Concrete Inputs slot {slot} ({name})")
        except LiteralParseError:
            raise RowError(f"Concrete Inputs slot {slot} ({name}) is {raw!r:.40}, expected {kind}") from None
        if value is None and not optional:  # 'None', 'nan', 'null': a missing value where one is required
            raise RowError(f"Concrete Inputs slot {slot} ({name}) is {raw!r:.40}, expected {kind}")
        return value


def is_blank(value: Any) -> bool:
    """An empty Concrete Inputs value (None, a blank string, NaN): the argument's value was not recorded."""
    return (
        value is None
        or (isinstance(value, str) and value.strip() == "")
        or (isinstance(value, float) and value != value)
    )
