"""Integer-nanosecond time and the integer helpers the writer shares.

Times are kept as integer nanoseconds and written as ``ns / 1000`` µs. Every time the writer picks itself
is a multiple of ``QUANTUM_NS`` (1/8 µs), so the written microseconds are exact binary floats.
"""

from __future__ import annotations

QUANTUM_NS = 125  # ns quantum of every generated time: multiples of 1/8 µs are exact binary floats


def to_ns(us: float) -> int:
    """A spec duration in µs as integer nanoseconds."""
    return round(us * 1000)


def cdiv(a: int, b: int) -> int:
    """Ceiling division: tiles, blocks and pages covering ``a`` items of ``b`` each."""
    return -(-a // b)
