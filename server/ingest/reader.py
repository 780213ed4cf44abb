"""Read a Kineto / Chrome-trace JSON file (plain or gzip) once, as a stream of parsed event chunks.

Parsing a whole 500 MB trace with one `orjson.loads` builds every event object at once (3-5x the
file size in memory) and spends most of its time in the allocator. Instead we decompress in blocks,
cut the `traceEvents` array at event boundaries every few MB and hand each piece to a decoder (the
event builder's typed one, server.ingest.fast_decode, or plain orjson). A cut is proven right by the
parse itself: a piece that starts at a true element boundary parses as a JSON array only if it also
ends at one, so a separator-looking `},{` inside a string or a nested object is rejected and the next
candidate is tried. Only a few candidates are tried that way (each try parses the whole piece): when
they all fail (a string full of `},{` or `}]`, an event orjson refuses), a token scan walks the events
one by one, strings skipped and brackets counted, and an event that is not valid JSON is named with orjson's
reason. The search for a candidate resumes where the last block left it (never restarting over the buffer), so
the time stays linear in the input whatever it holds.

The bytes around the array are never held whole: before it, the top-level object is walked at C speed
(bytes.find, bytes.translate, one regex per string), its whitespace outside strings dropped and its
depth counted, so the top-level `"traceEvents": [` is recognised where it stands (a nested key or a
string holding those bytes is not) and megabytes of padding cost neither memory nor a Python loop;
the other top-level keys (`deviceProperties`, ...) before and after the array are parsed once, when
the stream ends.

Two limits, each a one-line error naming it and its environment variable: the uncompressed size (MAX_BYTES_ENV,
default 16 GiB: 4x the largest trace we have met, 4 GB, and about five minutes of parsing) and the JSON held
whole at once (MAX_HELD_ENV, default 16 MiB): one event, or the trace's header (its top-level keys other than
traceEvents, kept whitespace-free). Events are hundreds of bytes and a header is kilobytes, so only a bomb meets
the second; it bounds the reader's memory by what it needs (a piece, one event, the header) whatever the input,
a gzip'd string of gigabytes included. (The parse that proves a cut does not look inside a piece: an event up to
CHUNK_BYTES over the held limit may pass there; the token scan checks each event exactly.)

Anything that is not a readable trace raises TraceError with one line.
"""

from __future__ import annotations

import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

CHUNK_BYTES = 2 << 20  # parse granularity: big enough to amortise, small enough that a piece's objects stay small
READ_BYTES = 4 << 20  # compressed (or plain) bytes read per block
_MAX_OUT = 4 << 20  # decompressed bytes produced per zlib call

MAX_BYTES_ENV = "SDPA_ANALYZER_MAX_TRACE_BYTES"  # the uncompressed-size limit: bytes, or with K/M/G/T (binary)
DEFAULT_MAX_BYTES = 16 << 30
MAX_HELD_ENV = "SDPA_ANALYZER_MAX_EVENT_BYTES"  # the JSON held whole: one event, or the header; same spellings
DEFAULT_MAX_HELD = 16 << 20
_SIZE_RE = re.compile(r"\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*", re.I)

_BOUNDARY_RE = re.compile(rb"\}\s*(?:,\s*\{|\])")  # between two events, or after the last one
_END_RE = re.compile(rb"\}\s*\]")
_OPEN_BOUNDARY = re.compile(rb"\}[ \t\r\n]*(?:,[ \t\r\n]*)?")  # a boundary the buffer's end may cut
# a complete string, or a lone quote (a string the buffer cuts), or a bracket: what the token scan looks at
_TOKEN_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|["{}\[\]]', re.S)
_WS = b" \t\r\n"
_WS_RUN = re.compile(rb"[ \t\r\n]*+")
_SPACE_RUN = re.compile(rb" *+")  # a single-byte repeat: sre's tightest loop, ~2.5x the class above on padding
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.S)  # up to a string's closing quote (or the block's end)
_KEY = b'"traceEvents"'
_FAST_TRIES = 4  # boundary candidates tried by parsing before the token scan takes over
_FIX = "re-export it with torch.profiler (export_chrome_trace) or pass the right file"

Progress = Callable[[float], None]
Decode = Callable[[Any], Any]  # a piece's JSON array text -> its events (any form the consumer reads), None: no array


def max_trace_bytes() -> int:
    """The uncompressed-size limit: MAX_BYTES_ENV when set (bytes, or a number with K, M, G or T), else 16 GiB."""
    return _env_size(MAX_BYTES_ENV, DEFAULT_MAX_BYTES)


def max_held_bytes() -> int:
    """The JSON held whole (one event, or the header): MAX_HELD_ENV when set, else 16 MiB."""
    return _env_size(MAX_HELD_ENV, DEFAULT_MAX_HELD)


def _env_size(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    m = _SIZE_RE.fullmatch(raw)
    if m is None or int(m.group(1)) == 0:
        raise TraceError(
            f"{name}={raw[:40]!r} is invalid: expected a positive size such as {_size_label(default).replace(' ', '')}"
            f" or {default} (bytes)"
        )
    return int(m.group(1)) << (10 * "_KMGT".index(m.group(2).upper() or "_"))


def _orjson_array(span: Any) -> list[Any] | None:
    try:
        return orjson.loads(span)
    except orjson.JSONDecodeError:
        return None


class TraceReader:
    """Iterate `chunks()` to get the events; `header` (top-level keys except traceEvents) is set after.

    `decode` turns each piece of the array (a JSON array text) into what `chunks()` yields (default: orjson's list of
    event dicts); the token scan and the whole-document parse always yield lists of dicts. `stream=False` parses the
    document whole (the reference the streamed read is tested against). `max_bytes`: the uncompressed-size limit
    (default: max_trace_bytes()); `max_held`: the JSON held whole, one event or the header (default:
    max_held_bytes())."""

    def __init__(
        self,
        path: Path,
        progress: Progress | None = None,
        roots: DataRoots = UNRESTRICTED,
        *,
        decode: Decode | None = None,
        stream: bool = True,
        max_bytes: int | None = None,
        max_held: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.progress = progress
        self.roots = roots
        self.decode = decode or _orjson_array
        self.stream = stream
        self.max_bytes = max_trace_bytes() if max_bytes is None else max_bytes
        self.max_held = max_held_bytes() if max_held is None else max_held
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

    def _too_big(self) -> TraceError:
        return TraceError(
            f"{self.path}: more than {_size_label(self.max_bytes)} of uncompressed JSON, the trace size limit — if the "
            f"trace is real, raise the limit with the environment variable {MAX_BYTES_ENV} (e.g. "
            f"{MAX_BYTES_ENV}={_size_label(4 * self.max_bytes).replace(' ', '')})"
        )

    def _held_too_big(self, what: str) -> TraceError:
        return TraceError(
            f"{self.path}: {what} is over {_size_label(self.max_held)}, the limit for JSON held whole "
            f"— {_FIX}; if it is real, raise it with {MAX_HELD_ENV}={_size_label(4 * self.max_held).replace(' ', '')}"
        )

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
                if self.size > self.max_bytes:
                    raise self._too_big()
                while block := fh.read(READ_BYTES):
                    self.bytes_in += len(block)
                    if self.bytes_in > self.max_bytes:  # the file grew while we read it
                        raise self._too_big()
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
                        if self.bytes_in > self.max_bytes:
                            raise self._too_big()
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
                if self.bytes_in > self.max_bytes:
                    raise self._too_big()
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
    def chunks(self) -> Iterator[Any]:
        """Yield the events piece by piece (see `decode`); afterwards `self.header` holds the other top-level keys."""
        blocks = self._blocks()
        if not self.stream:
            whole = bytearray()
            for block in blocks:
                whole += block
            yield from self._full_parse(whole, exact=True)
            return

        # 1. the prefix up to the top-level `"traceEvents": [`, whitespace dropped
        head = _Compactor(find_key=True)
        for block in blocks:
            at = head.feed(block)
            if at is not None:
                break
            if head.size > self.max_held:
                raise self._held_too_big("the JSON before the traceEvents array")
        else:
            yield from self._full_parse(head.text(), exact=not head.removed)
            return
        prefix = head.text()[: head.key_start]
        del head
        try:
            orjson.loads(prefix + b'"traceEvents":[]}')
        except orjson.JSONDecodeError as exc:
            raise TraceError(f"{self.path}: not valid JSON before the traceEvents array ({exc.msg}) — {_FIX}") from None
        s = _Buffer(blocks, block[at - 1 :])  # s.buf[0] is the '[' : kept by every compaction
        s.pos = 1

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
            events, ended = self._piece(s)
            self.n_events += len(events)
            yield events
            if ended:
                break

        # 3. the rest of the top-level object, whitespace dropped
        tail = _Compactor(find_key=False)
        tail.feed(s.buf, s.pos)
        del s.buf[:]
        for block in blocks:
            if tail.size > self.max_held:
                raise self._held_too_big("the JSON after the traceEvents array")
            tail.feed(block)
        if prefix and len(prefix) + tail.size > self.max_held:
            raise self._held_too_big("the trace header (the top-level keys besides traceEvents)")
        suffix = tail.text()
        del tail
        try:
            header = orjson.loads(prefix + b'"traceEvents":[]' + suffix)
        except orjson.JSONDecodeError as exc:
            raise TraceError(
                f"{self.path}: not valid JSON after the traceEvents array ({exc.msg}) — "
                f"the file is truncated or corrupt; {_FIX}"
            ) from None
        header.pop("traceEvents", None)
        self.header = header

    def _piece(self, s: _Buffer) -> tuple[Any, bool]:
        """The events from s.pos up to the first boundary at least CHUNK_BYTES on that parses, and whether the array's
        ']' ends them. The search resumes where the last block left it (a boundary the buffer's end may cut is looked
        at again, nothing else), and _FAST_TRIES failed parses, or more than the held limit past CHUNK_BYTES without a
        boundary (an event that long, or what follows the array), hand over to the token scan."""
        at = CHUNK_BYTES  # where the search resumes, relative to s.pos (a compaction moves s.pos, not this)
        tries = 0
        while True:
            start = min(s.pos + at, len(s.buf))
            for m in _BOUNDARY_RE.finditer(s.buf, start):  # (the iterator holds the buffer: no resize inside)
                if tries == _FAST_TRIES:
                    break
                tries += 1
                events = _parse_span(s.buf, s.pos, m.start() + 1, self.decode)
                if events is not None:
                    ended = s.buf[m.end() - 1] == 0x5D  # ']'
                    s.pos = m.end() if ended else m.end() - 1  # past the ']', or at the next '{'
                    return events, ended
                start = m.end()
            if tries == _FAST_TRIES:
                return self._scan_events(s)
            brace = s.buf.rfind(b"}", start)
            open_end = brace >= 0 and _OPEN_BOUNDARY.fullmatch(s.buf, brace) is not None
            at = (brace if open_end else len(s.buf)) - s.pos
            if not s.more():
                break
            if len(s.buf) - s.pos > CHUNK_BYTES + self.max_held:
                return self._scan_events(s)
        # the input ended: the array's last piece, shorter than CHUNK_BYTES, ends at the first '}]' that parses
        for tries, m in enumerate(_END_RE.finditer(s.buf, s.pos)):
            if tries == _FAST_TRIES:
                break
            events = _parse_span(s.buf, s.pos, m.start() + 1, self.decode)
            if events is not None:
                s.pos = m.end()
                return events, True
        return self._scan_events(s)

    def _scan_events(self, s: _Buffer) -> tuple[list[Any], bool]:
        """The slow, linear path: events one at a time, each found by the token scan and parsed alone, up to
        about CHUNK_BYTES. Returns them and whether the array's closing ']' was reached."""
        events: list[Any] = []
        taken = 0
        while True:
            end = self._element_end(s, self.n_events + len(events))
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

    def _element_end(self, s: _Buffer, index: int) -> int:
        """The index just past the object that starts at s.pos (traceEvents[index]): strings skipped, brackets
        counted, the scan resumed (never restarted) when more input is needed, inside a string too, so every byte is
        looked at about once; an object longer than the held limit is refused as soon as it is."""
        offset, depth = 0, 0  # the scan's progress, relative to s.pos (a compaction moves s.pos)
        in_string = False  # the last block ended inside a string: its body goes on from `offset`
        while True:
            if in_string:  # the body stops at its closing quote, or at the buffer's end (a lone backslash kept)
                body_end = _STRING_BODY.match(s.buf, s.pos + offset).end()  # type: ignore[union-attr]
                offset = body_end - s.pos
                if body_end < len(s.buf) and s.buf[body_end] == 0x22:
                    in_string = False
                    offset += 1
            if not in_string:
                for m in _TOKEN_RE.finditer(s.buf, s.pos + offset):
                    c = s.buf[m.start()]
                    if c == 0x22:  # '"'
                        if m.end() - m.start() == 1:  # a string that runs past the buffer: its body, block by block
                            offset, in_string = m.end() - s.pos, True
                            break
                        continue
                    if c in (0x7B, 0x5B):  # '{' '['
                        depth += 1
                        continue
                    depth -= 1
                    if depth == 0:
                        if m.end() - s.pos > self.max_held:
                            raise self._held_too_big(f"traceEvents[{index}]")
                        return m.end()
                    if depth < 0:
                        raise TraceError(f"{self.path}: unbalanced brackets in traceEvents[{index}] — {_FIX}")
                else:
                    offset = len(s.buf) - s.pos
                if in_string:
                    continue  # its body, in what the buffer holds
            if len(s.buf) - s.pos > self.max_held:
                raise self._held_too_big(f"traceEvents[{index}]")
            if not s.more():
                raise self._truncated("inside traceEvents")

    def _full_parse(self, buf: bytearray, exact: bool) -> Iterator[list[Any]]:
        """Parse the document whole: no top-level `"traceEvents": [` found (or stream=False). `exact`: `buf` is the
        file's text as it is (not with its whitespace dropped), so orjson's byte offsets are the file's."""
        try:
            doc = orjson.loads(buf)
        except orjson.JSONDecodeError as exc:
            if not bytes(buf[:64]).lstrip(_WS):
                raise TraceError(f"{self.path} holds only whitespace — {_FIX}") from None
            where = f" at byte {exc.pos}" if exact else ""
            raise TraceError(f"{self.path}: not valid JSON ({exc.msg}{where}) — {_FIX}") from None
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


class _Buffer:
    """A growing byte buffer with a read position; compaction keeps one byte before `pos`."""

    def __init__(self, src: Iterator[bytes], start: bytes = b"") -> None:
        self.src = src
        self.buf = bytearray(start)
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
        pos = _SPACE_RUN.match(self.buf, self.pos).end()  # C speed: megabytes of padding in one call
        self.pos = _WS_RUN.match(self.buf, pos).end()  # type: ignore[union-attr]


class _Compactor:
    """JSON text fed block by block and kept with the whitespace outside strings dropped, its nesting depth counted,
    at C speed (bytes.find and bytes.translate between strings, one regex per string). With `find_key`, `feed`
    stops at the top-level `"traceEvents"` key followed by `:` and `[` (a nested key or a string holding those bytes
    does not count) and returns the block offset just past the `[`; `key_start` is where the key starts in `text()`."""

    def __init__(self, find_key: bool) -> None:
        self.find_key = find_key
        self.parts: list[bytes] = []
        self.size = 0
        self.removed = 0  # whitespace bytes dropped
        self.depth = 0
        self.in_string = False
        self.escaped = False  # inside a string, the next byte is escaped (the backslash ended the last block)
        self.string_start = 0  # where the current (or last) string starts in text()
        self.string_head = b""  # the current string's first bytes (enough to tell the key)
        self.key_state = 0  # 1: a top-level "traceEvents" string just closed; 2: and its ':' followed
        self.key_start = -1

    def _keep(self, piece: bytes) -> None:
        if piece:
            self.parts.append(piece)
            self.size += len(piece)

    def text(self) -> bytearray:
        out = bytearray().join(self.parts)
        self.parts = [bytes(out)] if out else []
        return out

    def feed(self, block: bytes | bytearray, pos: int = 0) -> int | None:
        n = len(block)
        while pos < n:
            if self.in_string:
                pos = self._string(block, pos, n)
                continue
            if self.key_state:
                end = _WS_RUN.match(block, _SPACE_RUN.match(block, pos).end()).end()  # type: ignore[union-attr]
                self.removed += end - pos
                pos = end
                if pos == n:
                    break
                c = block[pos]
                if self.key_state == 1 and c == 0x3A:  # ':'
                    self.key_state = 2
                    self._keep(b":")
                    pos += 1
                    continue
                if self.key_state == 2 and c == 0x5B:  # '[' : the events array starts
                    return pos + 1
                self.key_state = 0  # some other member: keep walking
            q = block.find(b'"', pos)
            end = n if q < 0 else q
            seg = bytes(block[pos:end]).translate(None, _WS)
            self.removed += end - pos - len(seg)
            self.depth += seg.count(b"{") + seg.count(b"[") - seg.count(b"}") - seg.count(b"]")
            self._keep(seg)
            if q < 0:
                break
            self._keep(b'"')
            self.in_string = True
            self.string_start = self.size - 1
            self.string_head = b'"'
            pos = q + 1
        return None

    def _string(self, block: bytes | bytearray, pos: int, n: int) -> int:
        """Walk a string's body from `pos` (where the last block left it, or just past its opening quote); returns the
        new position (past the closing quote, or the block's end)."""
        start = pos
        if self.escaped:  # a backslash ended the last block: this byte is the one it escapes
            self.escaped = False
            pos += 1
        m = _STRING_BODY.match(block, pos)
        end = m.end() if m is not None else pos
        closed = end < n and block[end] == 0x22
        if not closed and end < n:  # a lone backslash at the block's end
            self.escaped = True
        stop = end + 1 if closed else n
        piece = bytes(block[start:stop])
        if len(self.string_head) <= len(_KEY):
            self.string_head += piece[: len(_KEY) + 1]
        self._keep(piece)
        if not closed:
            return n
        self.in_string = False
        if self.find_key and self.depth == 1 and self.string_head == _KEY:
            self.key_state = 1
            self.key_start = self.string_start
        return stop


def _size_label(n: int) -> str:
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _parse_span(buf: bytearray, start: int, end: int, decode: Decode) -> Any:
    """Decode buf[start:end] (comma-separated events) as a JSON array without copying it.

    The bytes just before and after the span are separators or whitespace that we own: overwrite them
    with '[' and ']' for the parse and put them back.
    """
    before, after = buf[start - 1], buf[end]
    buf[start - 1] = 0x5B
    buf[end] = 0x5D
    try:
        with memoryview(buf) as mv, mv[start - 1 : end + 1] as span:
            return decode(span)
    finally:
        buf[start - 1] = before
        buf[end] = after
