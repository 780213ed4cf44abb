"""The one reader of a `<cat>_metrics.json` (rank_findings writes it; the template, the validator, the report and
the chart read it): `metrics_document` streams `operations[]` when the file allows it and falls back to the caller's
whole-document read otherwise. Streamed, the rest of the document is read whole and each operation parsed when it is
asked for.

rank_findings writes the list one operation a line (server.writers.json_columns; docs/formats.md). One pass over the
file keeps, per operation, where its line is and the few fields the member lookup and the report read of every
operation (`name`, `args`, `time_ms`, `efficiency.efficiency_percent`, `difference_ms`), decoded by msgspec, which
skips every other field in C without building it. An operation itself is parsed again from its line, by the same
parser the whole-document read uses (json with Decimal numbers for the validator: rule 9 compares spellings, and
msgspec gives the same values; orjson for the template and the report), so what a caller gets is what the whole
document would have given it. The pass is made once per file and parser in a process (the file's inode, mtime and
size key it, as server.folder.cache keys a category): a server's agent validates the same file up to three times.

The streamed read vouches only for what it can: a file of another layout (another tool's, an older compact one, a
pretty-printed one) and anything unusual (not UTF-8, nesting near the depth limit, a line that is not one JSON
value, a second top-level `operations` key however its name is escaped: keys are compared decoded) give None, and
the caller reads the document whole as before, with its own errors word for word. One leniency, as in the trace
reader: a number beyond the double range (`1e400`) in a field of an operation the caller never reads is skipped where
the whole-document orjson parse rejects the file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, Literal, overload

import msgspec
import numpy as np
import orjson

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder.lru import Lru
from sdpa_analyzer.server.folder.roofline_rows import RooflineRows, open_rows, read_at
from sdpa_analyzer.server.roots import DataRoots

Numbers = Literal["decimal", "float"]  # how numbers are parsed: Decimal (the validator) or float (template, report)

OPERATIONS_HEAD = b'"operations":[\n'  # how rank_findings' first line ends: the list follows, one operation a line
MAX_HEAD_BYTES = 1 << 20  # the top-level fields before the list are a few hundred bytes
MAX_OPEN_BRACKETS = 60  # `{` + `[` in one line (in strings too): nesting stays below the validator's limit of 64
MAX_DEPTH = 64  # nesting of a metrics JSON; ours is 5 deep
READ_BLOCK_BYTES = 8 << 20
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{")
# operations kept parsed (~20 KB each: ~40 MB): a finding's members are read by four or five checks in turn, in one
# order; once full, the entry parsed last gives its slot to the next, so a pass over more members than the cache
# holds still finds its first ~2,000 parsed (an LRU, dropping the oldest, would find none of them)
CACHED_OPERATIONS = 2048
CACHED_LISTINGS = 4  # files whose pass is kept (server.folder.lru.Lru)
CACHED_LISTING_ROWS = 100_000  # their operations, all together (~0.7 KB each); one larger file is still kept, alone


_ESCAPE = re.compile(rb"\\.", re.S)
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_STEP = np.zeros(256, dtype=np.int32)  # +1 opens a container, -1 closes one
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1


def json_depth(data: bytes) -> int:
    """The deepest bracket nesting of a JSON text, brackets inside strings skipped, in linear time and without
    recursion (json.loads recurses once per level, and so do == and repr on what it returns: a hostile file
    nests thousands deep). Escapes go first (an escaped quote is never structure), then everything but quotes
    and brackets; a running xor of the quotes marks what lies inside strings."""
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    marks = np.frombuffer(data.translate(None, _NOT_STRUCTURE), dtype=np.uint8)
    quote = marks == ord('"')
    inside = np.bitwise_xor.accumulate(quote)
    steps = _STEP[marks[~(inside | quote)]]
    return max(0, int(np.cumsum(steps).max())) if len(steps) else 0


class _Efficiency(msgspec.Struct):
    efficiency_percent: Any = None


class _Keys(msgspec.Struct):
    """The fields of every operation the findings tools read; msgspec skips the others without building them (an
    `efficiency` that is neither an object nor null fails the decode: the line is then parsed whole)."""

    name: Any = None
    args: Any = None
    time_ms: Any = None
    efficiency: _Efficiency | None = None
    difference_ms: Any = None


@dataclass
class OperationKeys:
    """Per operation: whether it is a JSON object, and its name, args, time_ms, efficiency.efficiency_percent and
    difference_ms as the caller's parser gives them (None for a missing field or an entry that is not an object)."""

    objects: list[bool] = field(default_factory=list)
    names: list[Any] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    times: list[Any] = field(default_factory=list)
    efficiencies: list[Any] = field(default_factory=list)
    differences: list[Any] = field(default_factory=list)

    def add(self, op: Any) -> None:
        """One parsed operation (a dict, or any other JSON value)."""
        if not isinstance(op, dict):
            self._add(False, None, None, None, None, None)
            return
        efficiency = op.get("efficiency")
        eff = efficiency.get("efficiency_percent") if isinstance(efficiency, dict) else None
        self._add(True, op.get("name"), op.get("args"), op.get("time_ms"), eff, op.get("difference_ms"))

    def _add(self, is_object: bool, name: Any, args: Any, time: Any, eff: Any, difference: Any) -> None:
        self.objects.append(is_object)
        self.names.append(name)
        self.args.append(args)
        self.times.append(time)
        self.efficiencies.append(eff)
        self.differences.append(difference)

    @classmethod
    def of(cls, operations: Sequence[Any]) -> OperationKeys:
        keys = cls()
        for op in operations:
            keys.add(op)
        return keys


_DECIMAL_DECODER = msgspec.json.Decoder(float_hook=Decimal)


def _decimal_loads(data: bytes) -> Any:
    """JSON with each float a Decimal of its spelling, as `json.loads(parse_float=Decimal)` gives it: msgspec decodes
    the same values (keys in order, the last of a duplicated key, big integers exact, the spelling handed to Decimal)
    in a fraction of the time; what it refuses and json accepts (NaN, a lone surrogate) goes to json."""
    try:
        return _DECIMAL_DECODER.decode(data)
    except msgspec.DecodeError:
        return json.loads(data.decode("utf-8"), parse_float=Decimal)


_PARSERS: dict[str, Callable[[bytes], Any]] = {"decimal": _decimal_loads, "float": orjson.loads}
_KEY_DECODERS = {
    "decimal": msgspec.json.Decoder(_Keys, float_hook=Decimal),
    "float": msgspec.json.Decoder(_Keys),
}


class StreamedOperations(Sequence[Any]):
    """`operations[]` of an open metrics JSON: `ops[i]` parses entry i from its line (CACHED_OPERATIONS kept parsed);
    `keys` holds the fields read of every entry. Holds the file open until `close()`."""

    def __init__(self, fh: BinaryIO, offsets: list[int], lengths: list[int], keys: OperationKeys, numbers: Numbers):
        self._fh = fh
        self._offsets = offsets
        self._lengths = lengths
        self._parse = _PARSERS[numbers]
        self._cache: dict[int, Any] = {}  # in the order parsed
        self.keys = keys
        # each operation's `roofline` object, joined when it is parsed: the CSV is opened (and checked) on the
        # first, so a caller's own checks of the document (its run) come before the CSV's
        self._open_rows: Callable[[], RooflineRows | None] | None = None
        self._rows: RooflineRows | None = None

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("operations index out of range")
        hit = self._cache.get(index)
        if hit is not None:
            return hit
        # read and checked whole by the first pass
        op = self._parse(self._read_at(self._offsets[index], self._lengths[index]))
        if self._open_rows is not None and isinstance(op, dict) and "roofline" not in op:
            if self._rows is None:
                self._rows = self._open_rows()
            if self._rows is not None:
                op["roofline"] = self._rows.row(index)
            else:
                self._open_rows = None  # the document declares no rows
        if len(self._cache) >= CACHED_OPERATIONS:
            self._cache.popitem()  # the entry parsed last
        self._cache[index] = op
        return op

    def _read_at(self, offset: int, length: int) -> bytes:
        return read_at(self._fh, offset, length)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def close(self) -> None:
        self._cache.clear()
        self._fh.close()
        if self._rows is not None:
            self._rows.close()

    def join_rows(self, open_rows: Callable[[], RooflineRows | None]) -> None:
        """Give each operation its `roofline` object from the rows `open_rows()` opens, when the first is parsed."""
        self._open_rows = open_rows


def operation_keys(operations: Sequence[Any]) -> OperationKeys:
    """The fields read of every operation: kept by a streamed list, else read once from a whole one."""
    return operations.keys if isinstance(operations, StreamedOperations) else OperationKeys.of(operations)


@contextmanager
def metrics_document(
    path: Path, roots: DataRoots, numbers: Numbers, whole: Callable[[], dict[str, Any]], *, roofline_rows: bool = True
) -> Iterator[dict[str, Any]]:
    """The metrics JSON at `path` as a dict whose `operations` is a StreamedOperations (the file kept open until the
    block ends), or, when the streamed read cannot vouch for the file, `whole()`: the caller's whole-document read,
    with its own errors. With `roofline_rows`, each operation comes with its `roofline` object from the roofline CSV
    the document declares (server.folder.roofline_rows): joined as it is parsed, or, read whole, all at once."""
    doc = open_streamed(path, roots, numbers)
    if doc is None:
        doc = whole()
        if roofline_rows and isinstance(doc, dict):
            join_roofline_rows(doc, path, roots, numbers)
        yield doc
        return
    operations = doc["operations"]
    try:
        if roofline_rows:
            operations.join_rows(partial(_rows_for, doc, len(operations), path, roots, numbers))
        yield doc
    finally:
        operations.close()


def _rows_for(doc: dict[str, Any], count: int, path: Path, roots: DataRoots, numbers: Numbers) -> RooflineRows | None:
    rows = open_rows(doc, path, roots, decimal=numbers == "decimal")
    if rows is not None and rows.count != count:
        rows.close()
        raise InputError(f"{path} has {count} operations and declares {rows.count} roofline rows — rewrite it with "
                         "rank_findings")  # fmt: skip
    return rows


def join_roofline_rows(doc: dict[str, Any], path: Path, roots: DataRoots, numbers: Numbers) -> None:
    """Every operation of a metrics document read whole (from `path`) gets its `roofline` object from the roofline
    CSV the document declares, in place; nothing when it declares none or every operation already has one."""
    operations = doc.get("operations")
    if not isinstance(operations, list) or all(not isinstance(op, dict) or "roofline" in op for op in operations):
        return
    rows = _rows_for(doc, len(operations), path, roots, numbers)
    if rows is None:
        return
    try:
        for i, op in enumerate(operations):
            if isinstance(op, dict) and "roofline" not in op:
                op["roofline"] = rows.row(i)
    finally:
        rows.close()


@dataclass(frozen=True)
class _Listing:
    """What the one pass over a metrics JSON found: each operation's line, the lookup fields of every operation, and
    the document without its list (read-only once cached: shared by every caller of the same file)."""

    offsets: list[int]
    lengths: list[int]
    keys: OperationKeys
    top_bytes: bytes


# A server's agent renders the template, then validates up to three times: the pass over a 10^5-row file is made
# once per file (its inode, mtime and size: a rewrite is a new file) and per parser.
_LISTINGS = Lru(CACHED_LISTINGS, lambda listing: len(listing.offsets), max_rows=CACHED_LISTING_ROWS)


def open_streamed(path: Path, roots: DataRoots, numbers: Numbers) -> dict[str, Any] | None:
    """The document with its operations streamed (close `doc["operations"]` when done), or None (read it whole)."""
    try:
        fh = roots.open_read(path, what="metrics JSON")
    except (OSError, InputError):  # the whole-document read says it, in its words
        return None
    try:
        key = (roots, str(path), numbers, _stamp(fh))
        listing, top = _LISTINGS.get(key), None
        if listing is None:
            read = _read(fh, numbers)
            if read is not None:
                listing, top = read
                if _stamp(fh) == key[-1]:  # unchanged while it was read
                    _LISTINGS.put(key, listing)
        doc = None if listing is None else _document(fh, listing, numbers, top)
    except BaseException:
        fh.close()
        raise
    if doc is None:
        fh.close()
    return doc


def _stamp(fh: BinaryIO) -> tuple[int, int, int]:
    st = os.fstat(fh.fileno())
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _document(fh: BinaryIO, listing: _Listing, numbers: Numbers, top: dict[str, Any] | None) -> dict[str, Any]:
    if top is None:  # a cached listing: parsed again for each caller, whose dict is its own
        top = _PARSERS[numbers](listing.top_bytes)
    # in place: the key keeps its position
    top["operations"] = StreamedOperations(fh, listing.offsets, listing.lengths, listing.keys, numbers)
    return top


def clear_listings() -> None:
    """Forget every cached listing (tests; or to free memory)."""
    _LISTINGS.clear()


def _utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """The file's lines from where `fh` stands (without their newline), each with whether a newline ended it; read
    a block at a time (one C-level split per block, no copy of a line per call)."""
    rest = b""
    while block := fh.read(READ_BLOCK_BYTES):
        parts = (rest + block).split(b"\n")
        rest = parts.pop()
        for line in parts:
            yield line, True
    if rest:
        yield rest, False


def _top_level_keys(text: bytes) -> list[str]:
    """The outermost object's keys as a JSON parser decodes them (`"operation\\u0073"` is `operations`), duplicates
    kept: a parser keeps the last of a duplicated key, so a second `operations` anywhere, however spelled, would make
    the whole read see another list than the one streamed. (`text` is valid JSON of bounded depth.)"""
    outer: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> None:
        outer[:] = [k for k, _ in items]  # the outermost object closes last

    json.loads(text.decode("utf-8"), object_pairs_hook=pairs)
    return outer


def _read(fh: BinaryIO, numbers: Numbers) -> tuple[_Listing, dict[str, Any]] | None:
    """The pass over the file: its listing and its document without the list, or None (not rank_findings' layout,
    or nothing this reader can vouch for)."""
    head = fh.readline(MAX_HEAD_BYTES)
    if not head.endswith(OPERATIONS_HEAD) or head.count(b'"operations"') != 1:
        return None
    parse, decode_keys = _PARSERS[numbers], _KEY_DECODERS[numbers].decode
    keys = OperationKeys()
    offsets: list[int] = []
    lengths: list[int] = []
    pos = len(head)
    more = True  # the previous line ended with a comma: another operation follows
    suffix = None
    lines = _lines(fh)
    for line, ended in lines:
        if line.startswith(b"]"):
            if more:  # `[\n]` or a trailing comma: not rank_findings' layout
                return None
            suffix = b"\n".join([line, *(text for text, _ in lines)]) + (b"\n" if ended else b"")
            break
        if not more or not ended:
            return None
        more = line.endswith(b",")
        body = memoryview(line)[:-1] if more else line  # no copy
        # nesting stays below the limit (brackets in strings counted too); the whole read measures the rest
        if not _utf8(line) or len(line.translate(None, _NOT_OPENING)) > MAX_OPEN_BRACKETS:
            return None
        try:
            k = decode_keys(body)
        except (msgspec.DecodeError, msgspec.ValidationError):  # stricter than the caller's parser, or no object
            try:
                keys.add(parse(bytes(body)))
            except ValueError:  # not JSON (json's and orjson's errors are ValueErrors): the whole read says where
                return None
        else:
            eff = k.efficiency.efficiency_percent if k.efficiency is not None else None
            keys._add(True, k.name, k.args, k.time_ms, eff, k.difference_ms)
        offsets.append(pos)
        lengths.append(len(body))
        pos += len(line) + 1
    if suffix is None or not offsets or b'"operations"' in suffix:
        return None
    top_bytes = head[: -len(b"\n")] + suffix  # the document with an empty list
    if not _utf8(top_bytes) or json_depth(top_bytes) > MAX_DEPTH:
        return None
    try:
        top = parse(top_bytes)
    except (ValueError, RecursionError):
        return None
    if not isinstance(top, dict) or top.get("operations") != []:
        return None
    # without an escape every key is spelled as it decodes: the one `"operations"` of the bytes is then the only one
    if b"\\" in top_bytes and _top_level_keys(top_bytes).count("operations") != 1:
        return None
    return _Listing(offsets, lengths, keys, top_bytes), top
