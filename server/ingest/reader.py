"""Read a Kineto / Chrome-trace JSON file (plain or gzip) once, as a stream of parsed event chunks.

Parsing a whole 500 MB trace with one `orjson.loads` builds every event object at once (3-5x the
file size in memory) and spends most of its time in the allocator. Instead we decompress in blocks,
cut the `traceEvents` array at event boundaries every few MB and hand each piece to orjson. A cut is
proven right by the parse itself: a piece that starts at a true element boundary parses as a JSON
array only if it also ends at one, so a separator-looking `},{` inside a string or a nested object is
rejected by orjson and the next candidate is tried. Only a few candidates are tried that way (each try
parses the whole piece): when they all fail (a string full of `},{` or `}]`, an event orjson refuses), a
token scan walks the events one by one, strings skipped and brackets counted, so the time stays linear
in the input whatever it holds, and an event that is not valid JSON is named with orjson's reason. Top-level
keys before and after the array (`deviceProperties`, `distributedInfo`, ...) are parsed once the stream ends.

Anything that is not a readable trace raises TraceError with one line.
"""

from __future__ import annotations

import re
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from server.ingest.errors import TraceError
from server.roots import UNRESTRICTED, DataRoots

CHUNK_BYTES = 4 << 20  # parse granularity: big enough to amortise, small enough to stay in cache/RAM
READ_BYTES = 8 << 20  # compressed (or plain) bytes read per block
_MAX_OUT = 16 << 20  # decompressed bytes produced per zlib call

_KEY_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_SEP_RE = re.compile(rb"\}\s*,\s*\{")
_END_RE = re.compile(rb"\}\s*\]")
# a complete string, or a lone quote (a string the buffer cuts), or a bracket: what the token scan looks at
_TOKEN_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|["{}\[\]]', re.S)
_WS = frozenset(b" \t\r\n")
_FAST_TRIES = 4  # boundary candidates tried by parsing before the token scan takes over
_KEY_TRIES = 16  # nested "traceEvents" keys skipped before the whole document is parsed instead
_FIX = "re-export it with torch.profiler (export_chrome_trace) or pass the right file"

Progress = Callable[[float], None]


class TraceReader:
    """Iterate `chunks()` to get the events; `header` (top-level keys except traceEvents) is set after."""

    def __init__(self, path: Path, progress: Progress | None = None, roots: DataRoots = UNRESTRICTED) -> None:
        self.path = Path(path)
        self.progress = progress
        self.roots = roots
        self.header: dict[str, Any] = {}
        self.n_events = 0
        self.bytes_in = 0  # uncompressed size
        self.compressed = False
        st = roots.stat(self.path, what="trace_path")
        if st is None:
            raise TraceError(
                f"trace file not found: {self.path} — pass the path of a torch.profiler JSON (.json or .json.gz)"
            )
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(f"{self.path} is not a file — pass the path of a torch.profiler JSON (.json or .json.gz)")
        self.size = st.st_size
        if self.size == 0:
            raise TraceError(f"{self.path} is empty (0 bytes) — {_FIX}")

    # ---- byte source -------------------------------------------------------------------------
    def _blocks(self) -> Iterator[bytes]:
        try:
            fh = self.roots.open_read(self.path, what="trace_path")
        except OSError as exc:
            raise TraceError(f"cannot read {self.path} ({exc.strerror}) — check the path and its permissions") from None
        try:
            self.compressed = fh.read(2) == b"\x1f\x8b"
            fh.seek(0)
            if self.compressed:
                yield from self._gunzip(fh)
            else:
                while block := fh.read(READ_BYTES):
                    self.bytes_in += len(block)
                    self._report(fh.tell())
                    yield block
        finally:
            fh.close()

    def _gunzip(self, fh: Any) -> Iterator[bytes]:
        d = zlib.decompressobj(wbits=31)
        try:
            while raw := fh.read(READ_BYTES):
                self._report(fh.tell())
                while raw:
                    out = d.decompress(raw, _MAX_OUT)
                    if out:
                        self.bytes_in += len(out)
                        yield out
                    if d.eof:  # a concatenated gzip member may follow
                        raw = d.unused_data
                        if raw:
                            d = zlib.decompressobj(wbits=31)
                        continue
                    raw = d.unconsumed_tail
            tail = d.flush()
            if tail:
                self.bytes_in += len(tail)
                yield tail
        except zlib.error as exc:
            raise TraceError(f"{self.path}: corrupt gzip data ({exc}) — {_FIX}") from None
        if not d.eof:
            raise TraceError(
                f"{self.path}: truncated gzip file (the compressed stream ends early) — "
                f"copy the complete file or {_FIX}"
            )

    def _report(self, done: int) -> None:
        if self.progress is not None and self.size:
            self.progress(min(1.0, done / self.size))

    # ---- structure ---------------------------------------------------------------------------
    def chunks(self) -> Iterator[list[Any]]:
        """Yield lists of raw event objects; afterwards `self.header` holds the other top-level keys."""
        s = _Buffer(self._blocks())

        # 1. the prefix up to `"traceEvents": [`
        search_from = 0
        tries = 0
        while True:
            m = _KEY_RE.search(s.buf, search_from)
            if m is not None and tries >= _KEY_TRIES:  # each check parses the prefix: stay linear
                while s.more():
                    pass
                yield from self._full_parse(s.buf)
                return
            if m is not None:
                prefix = bytes(s.buf[: m.start()])
                tries += 1
                if _prefix_is_object_start(prefix):
                    s.pos = m.end()  # s.buf[pos - 1] is the '[' : kept by every compaction
                    break
                search_from = m.end()  # the key of a nested object: keep looking
                continue
            search_from = max(0, len(s.buf) - 64)
            if not s.more():
                yield from self._full_parse(s.buf)
                return

        # 2. the events array, in pieces of about CHUNK_BYTES
        while True:
            s.skip_ws()
            if s.pos >= len(s.buf):
                if not s.more():
                    raise self._truncated("inside traceEvents")
                continue
            c = s.buf[s.pos]
            if c == 0x5D:  # ']' : end of the array
                s.pos += 1
                break
            if c != 0x7B:  # '{'
                raise TraceError(
                    f"{self.path}: traceEvents[{self.n_events}] is not a JSON object (found {chr(c)!r}) — {_FIX}"
                )
            if len(s.buf) - s.pos < CHUNK_BYTES and s.more():
                continue
            events = self._cut(s, _SEP_RE, min(s.pos + CHUNK_BYTES, len(s.buf)), 1)
            ended = False
            if events is None:
                if s.more():
                    continue
                events = self._cut(s, _END_RE, s.pos, 0)  # the last element, followed by ']'
                if events is None:
                    events = _SCAN
                ended = events is not _SCAN
            if events is _SCAN:
                events, ended = self._scan_events(s)
            self.n_events += len(events)
            yield events
            if ended:
                break

        # 3. the rest of the top-level object
        while s.more():
            pass
        suffix = bytes(s.buf[s.pos :])
        del s.buf[:]
        try:
            header = orjson.loads(prefix + b'"traceEvents":[]' + suffix)
        except orjson.JSONDecodeError as exc:
            raise TraceError(
                f"{self.path}: not valid JSON after the traceEvents array ({exc.msg}) — "
                f"the file is truncated or corrupt; {_FIX}"
            ) from None
        header.pop("traceEvents", None)
        self.header = header

    @staticmethod
    def _cut(s: _Buffer, pattern: re.Pattern[bytes], search_from: int, resume_back: int) -> Any:
        """Parse from s.pos to the first candidate boundary at/after `search_from` that parses: the events, None
        when the buffer holds no candidate, or _SCAN after _FAST_TRIES candidates that did not parse."""
        for tries, m in enumerate(pattern.finditer(s.buf, search_from)):
            if tries == _FAST_TRIES:
                return _SCAN
            events = _parse_span(s.buf, s.pos, m.start() + 1)
            if events is not None:
                s.pos = m.end() - resume_back  # at the next '{' (or just past ']')
                return events
        return None

    def _scan_events(self, s: _Buffer) -> tuple[list[Any], bool]:
        """The slow, linear path: events one at a time, each found by the token scan and parsed alone, up to
        about CHUNK_BYTES. Returns them and whether the array's closing ']' was reached."""
        events: list[Any] = []
        taken = 0
        while True:
            end = self._element_end(s)
            try:
                with memoryview(s.buf) as mv, mv[s.pos : end] as span:
                    events.append(orjson.loads(span))
            except orjson.JSONDecodeError as exc:
                raise TraceError(
                    f"{self.path}: traceEvents[{self.n_events + len(events)}] is not valid JSON ({exc.msg}) — "
                    f"{_FIX}"
                ) from None
            taken += end - s.pos
            s.pos = end
            c = self._next_structural(s)
            s.pos += 1
            if c == 0x5D:  # ']'
                return events, True
            if c != 0x2C:  # ','
                raise TraceError(
                    f"{self.path}: traceEvents[{self.n_events + len(events) - 1}] is followed by {chr(c)!r}, not "
                    f"',' or ']' — {_FIX}"
                )
            if self._next_structural(s) != 0x7B:
                raise TraceError(
                    f"{self.path}: traceEvents[{self.n_events + len(events)}] is not a JSON object — {_FIX}"
                )
            if taken >= CHUNK_BYTES:
                return events, False

    def _next_structural(self, s: _Buffer) -> int:
        """The next non-whitespace byte (s.pos left on it), reading more input as needed."""
        while True:
            s.skip_ws()
            if s.pos < len(s.buf):
                return s.buf[s.pos]
            if not s.more():
                raise self._truncated("inside traceEvents")

    def _element_end(self, s: _Buffer) -> int:
        """The index just past the object that starts at s.pos: strings skipped, brackets counted, the scan
        resumed (never restarted) when more input is needed, so every byte is looked at about once."""
        offset, depth = 0, 0  # the scan's progress, relative to s.pos (a compaction moves s.pos)
        while True:
            for m in _TOKEN_RE.finditer(s.buf, s.pos + offset):
                c = s.buf[m.start()]
                if c == 0x22:  # '"'
                    if m.end() - m.start() == 1:  # a string that runs past the buffer: wait for more
                        offset = m.start() - s.pos
                        break
                    continue
                if c in (0x7B, 0x5B):  # '{' '['
                    depth += 1
                    continue
                depth -= 1
                if depth == 0:
                    return m.end()
                if depth < 0:
                    raise TraceError(f"{self.path}: unbalanced brackets in traceEvents[{self.n_events}] — {_FIX}")
            else:
                offset = len(s.buf) - s.pos
            if not s.more():
                raise self._truncated("inside traceEvents")

    def _full_parse(self, buf: bytearray) -> Iterator[list[Any]]:
        """No top-level `"traceEvents": [` key found by the scanner: parse the document whole."""
        try:
            doc = orjson.loads(buf)
        except orjson.JSONDecodeError as exc:
            stripped = bytes(buf[:64]).lstrip()
            if not stripped:
                raise TraceError(f"{self.path} holds only whitespace — {_FIX}") from None
            raise TraceError(f"{self.path}: not valid JSON ({exc.msg} at byte {exc.pos}) — {_FIX}") from None
        del buf[:]
        if not isinstance(doc, dict):
            raise TraceError(
                f"{self.path}: the JSON is a {type(doc).__name__}, not a trace object with 'traceEvents' — {_FIX}"
            )
        events = doc.pop("traceEvents", None)
        if events is None:
            keys = ", ".join(list(doc)[:6]) or "none"
            raise TraceError(f"{self.path}: JSON without 'traceEvents' (top-level keys: {keys}) — {_FIX}")
        if not isinstance(events, list):
            raise TraceError(f"{self.path}: 'traceEvents' is a {type(events).__name__}, expected a list — {_FIX}")
        self.header = doc
        step = 65536
        for i in range(0, len(events), step):
            piece = events[i : i + step]
            self.n_events += len(piece)
            yield piece

    def _truncated(self, where: str) -> TraceError:
        return TraceError(f"{self.path}: the JSON ends {where} (truncated file?) — copy the complete file or {_FIX}")


_SCAN = object()  # _cut's answer when the token scan must take over


class _Buffer:
    """A growing byte buffer with a read position; compaction keeps one byte before `pos`."""

    def __init__(self, src: Iterator[bytes]) -> None:
        self.src = src
        self.buf = bytearray()
        self.pos = 0
        self.eof = False

    def more(self) -> bool:
        if self.eof:
            return False
        block = next(self.src, None)
        if block is None:
            self.eof = True
            return False
        if self.pos > 1:
            del self.buf[: self.pos - 1]
            self.pos = 1
        self.buf.extend(block)
        return True

    def skip_ws(self) -> None:
        buf, pos, n = self.buf, self.pos, len(self.buf)
        while pos < n and buf[pos] in _WS:
            pos += 1
        self.pos = pos


def _prefix_is_object_start(prefix: bytes) -> bool:
    """True when `prefix` + the traceEvents member is a complete top-level object start (not a nested key)."""
    try:
        return isinstance(orjson.loads(prefix + b'"traceEvents":[]}'), dict)
    except orjson.JSONDecodeError:
        return False


def _parse_span(buf: bytearray, start: int, end: int) -> list[Any] | None:
    """Parse buf[start:end] (comma-separated events) as a JSON array without copying it.

    The bytes just before and after the span are separators or whitespace that we own: overwrite them
    with '[' and ']' for the parse and put them back.
    """
    before, after = buf[start - 1], buf[end]
    buf[start - 1] = 0x5B
    buf[end] = 0x5D
    try:
        with memoryview(buf) as mv, mv[start - 1 : end + 1] as span:
            return orjson.loads(span)
    except orjson.JSONDecodeError:
        return None
    finally:
        buf[start - 1] = before
        buf[end] = after
