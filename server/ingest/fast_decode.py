"""Typed decoding of one piece of the `traceEvents` array: only the fields analyze_trace reads become Python objects.

A generic parser (orjson) builds every key, string, number and nested list of every event: most of a Kineto trace's
bytes are `args` nobody reads (grids, blocks, Python ids, the shapes of ops we do not model). msgspec decodes the piece
into small typed structs instead: the C parser skips every other field without allocating it, and the four shape
fields stay raw bytes (`msgspec.Raw`, parsed only for the op families whose shapes we read, once per distinct value).

The fast path must read exactly what the orjson path reads, or step aside. So the field types are strict: a value of
any other JSON type (a string time, a float id, a list as a name) fails the typed decode and the piece is parsed by
orjson and the lenient event builder instead, which decides what it means (a NaN time, a bad id, a one-line error).
msgspec and orjson accept the same JSON with three exceptions, handled so: invalid UTF-8 in a field msgspec skips
(checked here: bytes.isascii, else a strict decode), nesting deeper than msgspec's recursion limit (RecursionError:
orjson decides), and a number beyond the double range in a field we never read (orjson rejects the whole trace;
msgspec skips it, so such a trace is read — documented in docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import orjson

_NULL = msgspec.Raw(b"null")


class EventArgs(msgspec.Struct, gc=False):
    """The `args` keys analyze_trace reads (defaults: what events.py reads for a missing key)."""

    ext: int | None = msgspec.field(default=-1, name="External id")
    seq: int | None = msgspec.field(default=-1, name="Sequence number")
    fwd_tid: int | None = msgspec.field(default=-1, name="Fwd thread id")
    corr: int | None = msgspec.field(default=-1, name="correlation")
    stream: int | None = -1
    device: int | None = -1
    grid: tuple[int, int, int] | None = None  # a kernel's launch grid (events.pack_grids)
    kernel: str | None = None  # the kernel a runtime launch names (ROCm graph captures)
    name: str | None = ""  # process_name / thread_name metadata
    labels: str | None = ""  # process_labels metadata
    dims: msgspec.Raw = msgspec.field(default=_NULL, name="Input Dims")
    types: msgspec.Raw = msgspec.field(default=_NULL, name="Input type")
    strides: msgspec.Raw = msgspec.field(default=_NULL, name="Input Strides")
    concrete: msgspec.Raw = msgspec.field(default=_NULL, name="Concrete Inputs")


class Event(msgspec.Struct, gc=False):
    """One trace event, as far as analyze_trace reads it (a missing key reads as the default)."""

    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    id: int | str | None = -1
    args: EventArgs | None = None


NO_ARGS = EventArgs()
_DECODER = msgspec.json.Decoder(list[Event])

Signature = tuple[Any, Any, Any, Any]


@dataclass
class PreparedSignature:
    """The shape fields of one raw spelling, parsed once: the interning key the event builder uses, the values, and
    whether they nested too deep to keep (then the values are Nones)."""

    key: bytes
    fields: Signature
    deep: bool


@dataclass
class FastPiece:
    """The typed events of one piece, and the prepared shape fields of the ops whose shapes are kept (by position)."""

    events: list[Event]
    codes: Any  # numpy int16 per event: the event builder's (ph, cat) code
    signatures: dict[int, PreparedSignature]

    def __len__(self) -> int:
        return len(self.events)


def _raw_value(raw: msgspec.Raw) -> Any:
    return None if raw is _NULL else orjson.loads(memoryview(raw))


class PieceDecoder:
    """`decode(span)`: a FastPiece, orjson's list of event dicts (when the typed decode cannot vouch for the piece),
    or None when the span is not a JSON array (the reader then tries another cut)."""

    _CACHE_LIMIT = 200_000  # distinct raw shape spellings remembered (each is also a distinct signature)

    def __init__(
        self,
        keep_args: Callable[[str], bool],
        prepare: Callable[[Signature], PreparedSignature],
        pair_codes: Mapping[tuple[Any, Any], int],
        cpu_code: int,
    ) -> None:
        self._keep_args = keep_args
        self._prepare = prepare
        self._pair_codes = pair_codes  # (ph, cat) -> the event builder's family code
        self._cpu_code = cpu_code
        self._raw_cache: dict[bytes, PreparedSignature] = {}

    def __call__(self, span: Any) -> Any:
        data = bytes(span)  # msgspec.Raw values point into it: never into the reader's growing buffer
        if not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return _orjson_or_none(data)  # msgspec skips strings it does not read without checking them
        try:
            events = _DECODER.decode(data)
        except (msgspec.ValidationError, RecursionError):
            return _orjson_or_none(data)
        except msgspec.DecodeError:
            return None
        pair = self._pair_codes
        codes = np.array([pair[e.ph, e.cat] for e in events], dtype=np.int16)
        try:
            signatures = self._signatures(events, np.flatnonzero(codes == self._cpu_code).tolist())
        except orjson.JSONDecodeError:  # a raw shape field orjson refuses: orjson decides for the whole piece
            return _orjson_or_none(data)
        return FastPiece(events, codes, signatures)

    def _signatures(self, events: list[Event], cpu_at: list[int]) -> dict[int, PreparedSignature]:
        out: dict[int, PreparedSignature] = {}
        keep, cache = self._keep_args, self._raw_cache
        for i in cpu_at:
            e = events[i]
            if e.ts is None or not keep(e.name if e.name is not None else ""):
                continue
            a = e.args or NO_ARGS
            raws = (a.dims, a.types, a.strides, a.concrete)
            key = b"\x00".join(bytes(r) for r in raws)  # NUL never occurs in a JSON value's text
            got = cache.get(key)
            if got is None:
                got = self._prepare(tuple(_raw_value(r) for r in raws))  # type: ignore[arg-type]
                if len(cache) >= self._CACHE_LIMIT:
                    cache.clear()
                cache[key] = got
            out[i] = got
        return out


def _orjson_or_none(data: bytes) -> list[Any] | None:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
