"""The trace's `deviceProperties` without parsing the trace: Kineto writes them at the start or at the very end,
so the decompressed text is scanned in blocks for the key and the array after it is cut out and parsed alone.

The array is small (a few hundred bytes per GPU); a scan gives up after `_MAX_ARRAY` bytes of it, so a hostile
file cannot make this hold more than that in memory.
"""

from __future__ import annotations

import gzip
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

_KEY = b'"deviceProperties"'
_BLOCK = 1 << 20
_MAX_ARRAY = 1 << 20


def _array_end(buf: bytes, start: int) -> int | None:
    """Index just past the `]` closing the array that opens at buf[start] (== b'['), None if not in buf."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(buf)):
        c = buf[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
        elif c in (0x5D, 0x7D):
            depth -= 1
            if depth == 0:
                return i + 1
    return None


@lru_cache(maxsize=64)
def _scan(path: str, mtime_ns: int, size: int, roots: DataRoots) -> tuple[dict[str, Any], ...] | None:
    tail = b""
    try:
        with roots.open_read(path, what="trace_path") as raw:
            fh: Any = gzip.GzipFile(fileobj=raw, mode="rb") if raw.read(2) == b"\x1f\x8b" else raw
            raw.seek(0)
            while True:
                block = fh.read(_BLOCK)
                if not block:
                    return None
                buf = tail + block
                at = buf.find(_KEY)
                if at < 0:
                    tail = buf[-len(_KEY) :]
                    continue
                buf = buf[at + len(_KEY) :]
                while True:
                    start = buf.find(b"[")
                    end = _array_end(buf, start) if start >= 0 else None
                    if end is not None:
                        break
                    more = fh.read(_BLOCK)
                    if not more or len(buf) > _MAX_ARRAY:
                        return None
                    buf += more
                try:
                    props = orjson.loads(buf[start:end])
                except orjson.JSONDecodeError:
                    return None
                if not isinstance(props, list):
                    return None
                return tuple(p for p in props if isinstance(p, dict))
    except (OSError, EOFError, zlib.error, InputError):
        return None


def device_properties(path: Path, roots: DataRoots = UNRESTRICTED) -> tuple[dict[str, Any], ...] | None:
    """The trace's deviceProperties entries (one per GPU), None when it has none or cannot be read.

    Opened through `roots` (no link out followed at any depth); gzip is told by its magic bytes."""
    try:
        st = roots.stat(path, what="trace_path")
    except (OSError, InputError):
        return None
    if st is None:
        return None
    return _scan(str(path), st.st_mtime_ns, st.st_size, roots)
