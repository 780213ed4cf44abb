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

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"arch={name!r} is unknown: expected one of {', '.join(known)} (or an arch JSON file)")
