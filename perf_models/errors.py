"""Errors raised by the performance models. Each names the field, the value and what is allowed."""

from __future__ import annotations


class PerfModelError(ValueError):
    """Base class for every error the perf models raise on bad input."""


class ConfigError(PerfModelError):
    """An attention config (or one of its fields) is invalid."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is invalid: expected {allowed}")


class UnknownArchError(PerfModelError):
    """An architecture name matches no entry of the GPU table."""

    def __init__(self, name: str, known: list[str], total: int | None = None) -> None:
        """`known`: every key, or (with `total`, the table's size) the keys nearest the name when every key does not
        fit in one message line."""
        self.name = name
        self.known = known
        if total is None or total <= len(known):
            expected = f"expected one of {', '.join(known)}"
        else:
            expected = f"the nearest of the {total} known GPUs: {', '.join(known)}; list_architectures shows all"
        self.hint = expected  # the keys to pass, for a caller that words the error its own way
        super().__init__(f"arch={name!r} is unknown: {expected} (or an arch JSON file)")
