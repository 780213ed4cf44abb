"""The top-level keys a trace writes before `traceEvents`, read without parsing the events.

Kineto writes `distributedInfo` (rank, world size) and `deviceProperties` ahead of the event array, so the
ranks of a thousand traces are known from their first kilobytes (decompressed block by block for .gz)
before any worker starts. A trace whose header cannot be read here yields None: its rank then comes from the
file name, and the real error, if any, is reported when its worker parses it. The file is opened through the
data roots like every other (a link out of them reads as unreadable here and is refused by the worker).
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.roots import DataRoots

PEEK_LIMIT = 8 << 20  # decompressed bytes searched for the event array; headers are a few KB
_BLOCK = 64 << 10
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


def read_header_prefix(path: Path, roots: DataRoots) -> dict[str, Any] | None:
    """The keys before `traceEvents` as a dict ({} when the array comes first), or None when unreadable."""
    buf = bytearray()
    try:
        with roots.open_read(path, what="rank trace") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
            fh.seek(0)
            inflate = zlib.decompressobj(wbits=31) if gz else None
            while len(buf) < PEEK_LIMIT:
                raw = fh.read(_BLOCK)
                if not raw:
                    return None
                start = max(0, len(buf) - 32)  # the key may straddle two blocks
                buf += inflate.decompress(raw, PEEK_LIMIT) if inflate is not None else raw
                m = _EVENTS_KEY.search(buf, start)
                if m is not None:
                    return _parse_prefix(bytes(buf[: m.start()]))
    except (OSError, InputError, zlib.error):
        return None
    return None


def _parse_prefix(prefix: bytes) -> dict[str, Any] | None:
    """`{"a": 1, ` + an empty event array closes the object: the prefix's keys, parsed by orjson."""
    try:
        doc = orjson.loads(prefix + b'"traceEvents":[]}')
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    doc.pop("traceEvents", None)
    return doc


def distributed_info(header: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """(rank, world size) from a header's `distributedInfo`; None where absent or not a non-negative integer."""
    info = header.get("distributedInfo") if isinstance(header, dict) else None
    if not isinstance(info, dict):
        return None, None
    return _count(info.get("rank"), 0), _count(info.get("world_size"), 1)


def _count(value: Any, minimum: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return None
    return value
