"""Inputs for the fuzz tests (tests/test_fuzz.py): valid seeds and the mutations applied to them.

Seeds are real-looking inputs the tools accept (a Kineto trace of a few attention calls, an ops CSV row, the
findings corpus with its metrics JSON); mutations replace values with hostile ones (wrong types, NaN/inf,
numbers beyond 64 bits, deep nests, strings full of JSON or markdown syntax), and cut, repeat or splice the
serialized bytes. `Budget` bounds the whole suite's time; `checked_call` runs one tool call and sorts the
outcome into an accepted result, one of our own one-line errors, or a failure of the test.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from server.roots import DataRoots
from server.tools import call
from server.tools.base import ToolFailure

# Scale for a long campaign (SDPA_FUZZ_SCALE=50 runs 50x the examples); CI runs the default, about a minute.
SCALE = float(os.environ.get("SDPA_FUZZ_SCALE", "1"))
CALL_SECONDS = 10.0  # any one call on these small inputs; the former quadratic paths took 46-163 s


def fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        derandomize=True,  # the same cases on every run: a failure in CI reproduces locally
        deadline=None,  # time is bounded per call below, not by hypothesis' per-example deadline
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@dataclass
class Tally:
    """What a fuzz target met: cases, accepted results, our errors, crashes (internal errors) and hangs."""

    cases: int = 0
    accepted: int = 0
    refused: int = 0
    crashes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    slowest: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)  # refusals by their first words

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.cases} cases, {self.accepted} accepted, {self.refused} refused with our error, "
            f"{len(self.crashes)} crashes, {len(self.hangs)} hangs, slowest {self.slowest:.2f} s"
        )


TALLIES: dict[str, Tally] = {}


def checked_call(target: str, roots: DataRoots, tool: str, **args: Any) -> Any:
    """Run one tool call: its result, or None when it failed with one of our one-line errors. A crash (an
    internal error), a message that is not one line of at most 300 characters, or a call over CALL_SECONDS
    fails the test."""
    tally = TALLIES.setdefault(target, Tally())
    tally.cases += 1
    start = time.perf_counter()
    try:
        result = call(tool, roots, **args)
    except ToolFailure as exc:
        elapsed = time.perf_counter() - start
        tally.slowest = max(tally.slowest, elapsed)
        text = str(exc)
        if exc.internal:
            tally.crashes.append(text)
            raise AssertionError(f"{tool} crashed: {text}") from None
        assert "\n" not in text and 0 < len(text) <= 300, f"{tool} error is not one short line: {text!r}"
        assert elapsed < CALL_SECONDS, f"{tool} took {elapsed:.1f} s to refuse its input"
        tally.refused += 1
        key = " ".join(text.split(": ", 1)[-1].split()[:6])
        tally.reasons[key] = tally.reasons.get(key, 0) + 1
        return None
    elapsed = time.perf_counter() - start
    tally.slowest = max(tally.slowest, elapsed)
    if elapsed >= CALL_SECONDS:
        tally.hangs.append(f"{tool} {elapsed:.1f} s")
        raise AssertionError(f"{tool} took {elapsed:.1f} s")
    tally.accepted += 1
    return result


# ---- values -----------------------------------------------------------------------------------------
HOSTILE_TEXT = [
    "}]", "},{", '"', "\\", "[[[[[[", "]]]]", "nan", "NaN", "inf", "-inf", "None", "null", "True", "1e400",
    "9" * 400, str(2**64), str(-(2**63) - 1), "np.float64(", "np.float64(1.5)", "__import__('os')", "()",
    "((", "{'a': ", "'", "<!--", "-->", "|", "\n", "\x00", "é", "\u2028", "\ud7ff", "" ,
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e30, -900.0, 1e300, 5e-324, -0.0]),
    st.text(max_size=12),
    st.sampled_from(HOSTILE_TEXT),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


def deep(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def dumps(value: Any) -> str:
    """JSON text, NaN/Infinity written as Python's json writes them (tokens orjson refuses), never failing on
    a non-string key or a deep nest."""
    try:
        return json.dumps(value, allow_nan=True, default=repr)
    except (ValueError, RecursionError):
        return repr(value)


@st.composite
def byte_mutations(draw: Any, data: bytes) -> bytes:
    """Cut, splice, repeat or overwrite pieces of serialized bytes."""
    out = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["cut", "insert", "repeat", "overwrite", "deep"]))
        pos = draw(st.integers(0, max(0, len(out) - 1)))
        if op == "cut":
            del out[pos:]
        elif op == "insert":
            out[pos:pos] = draw(st.sampled_from(HOSTILE_TEXT)).encode("utf-8", "surrogatepass")
        elif op == "repeat":
            piece = draw(st.sampled_from(["}]", "},{", '"', "[", "{", "<!--", ",", "9"])).encode()
            out[pos:pos] = piece * draw(st.integers(1, 20000))
        elif op == "overwrite":
            out[pos : pos + 1] = bytes([draw(st.integers(0, 255))])
        else:
            out[pos:pos] = deep(draw(st.integers(30, 3000))).encode()
    return bytes(out)


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path
