"""Our per-operation model, read from the roofline CSV where it is written once, for the readers of a metrics JSON.

rank_findings writes each operation's roofline row once, into `<cat>_roofline.csv`, and declares it in the metrics
JSON's `sdpa_analyzer.roofline_rows` (docs/formats.md, "Where each of our fields lives"):

    {"file": "sdpa_fwd_roofline.csv", "rows": 12, "bytes": 20480, "crc32": "1f2e3d4c",
     "fields": {"shape": "text", "mean_us": "float", "gqa_ratio": "int", "has_model": "bool", ...},
     "document_fields": ["bytes_model"]}

Operation i is the CSV's data row i. The readers (the template, the validator, the report) get an operation with its
`roofline` object as the metrics JSON used to carry it: the declared fields from its row, each as the JSON would
have spelled it (the CSV's floats are the JSON's digits, one rounding: server.numbers), and `document_fields` copied
from `sdpa_analyzer` (one value per file). A row is parsed when its operation is, so a validator that reads a
finding's members reads only their rows.

The CSV is checked against the declaration before a row is read: its size, its crc32 (a compute_roofline with other
options since rank_findings rewrites it) and its row count; a mismatch is one line naming both files and the fix.
The pass that checks it also finds each line, and is made once per file in a process (keyed by the file's inode,
mtime and size, as the metrics reader keys its listing). A line break inside a quoted cell (an op name can hold one)
does not end a row: the pass counts the quotes before each line break.
"""

from __future__ import annotations

import csv
import math
import os
import re
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, BinaryIO

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.folder.lru import Lru
from sdpa_analyzer.server.roots import DataRoots

ROWS_KEY = "roofline_rows"  # sdpa_analyzer.roofline_rows: where the per-operation rows are
KINDS = ("float", "int", "bool", "text")
READ_BLOCK_BYTES = 8 << 20
CACHED_FILES = 4
CACHED_ROWS = 4_000_000  # rows indexed, all files together (8 bytes each: 32 MB); one larger file is still kept, alone
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,200}\.csv")
_PREAD = getattr(os, "pread", None)  # POSIX; elsewhere a seek and a read


@dataclass(frozen=True)
class RowsDeclared:
    """`sdpa_analyzer.roofline_rows` as rank_findings writes it."""

    file: str
    rows: int
    bytes: int
    crc32: str
    fields: dict[str, str]
    document_fields: tuple[str, ...]


def declared_rows(doc: dict[str, Any], metrics_path: Path) -> RowsDeclared | None:
    """The declaration of where the operations' rows are, or None when the document has none (another writer's
    file, or one that carries its `roofline` objects inline). A malformed declaration is one line naming the field."""
    ours = doc.get("sdpa_analyzer")
    value = ours.get(ROWS_KEY) if isinstance(ours, dict) else None
    if value is None:
        return None

    def bad(what: str) -> InputError:
        return InputError(f"{metrics_path}: sdpa_analyzer.{ROWS_KEY}.{what} — rewrite the file with rank_findings")

    if not isinstance(value, dict):
        raise bad("is not an object")
    file, rows, size, crc = (value.get(k) for k in ("file", "rows", "bytes", "crc32"))
    if not isinstance(file, str) or not _PLAIN_NAME.fullmatch(file) or file.startswith("."):
        raise bad("file must be a plain .csv name in the same folder")
    for name, number in (("rows", rows), ("bytes", size)):
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise bad(f"{name} must be a whole number")
    if not isinstance(crc, str) or not re.fullmatch(r"[0-9a-f]{8}", crc):
        raise bad("crc32 must be 8 hex digits")
    fields, document_fields = value.get("fields"), value.get("document_fields", [])
    if not isinstance(fields, dict) or not all(isinstance(k, str) and v in KINDS for k, v in fields.items()):
        raise bad(f"fields must map each field to one of {', '.join(KINDS)}")
    if not isinstance(document_fields, list) or not all(isinstance(k, str) for k in document_fields):
        raise bad("document_fields must be a list of names")
    return RowsDeclared(file, rows, size, crc, dict(fields), tuple(document_fields))


@dataclass(frozen=True)
class _Index:
    """What the pass over a CSV found: its header, and where each row starts (`starts[i]` is data row i's,
    `starts[-1]` the end of the file)."""

    header: tuple[str, ...]
    starts: array  # of int64 ("q"): 8 bytes a row

    @property
    def rows(self) -> int:
        return len(self.starts) - 1


_INDEXES = Lru(CACHED_FILES, lambda index: index.rows, max_rows=CACHED_ROWS)


class RooflineRows:
    """The declared rows of one open roofline CSV: `row(i)` is operation i's `roofline` object. Close when done."""

    def __init__(self, fh: BinaryIO, path: Path, index: _Index, declared: RowsDeclared, document: dict[str, Any],
                 decimal: bool) -> None:  # fmt: skip
        self._fh = fh
        self._path = path
        self._index = index
        at = {name: k for k, name in enumerate(index.header)}
        convert = _DECIMAL if decimal else _FLOAT
        self._fields = [(name, at[name], convert[kind]) for name, kind in declared.fields.items()]
        self._constants = {name: document.get(name) for name in declared.document_fields}
        self._width = len(index.header)

    @property
    def count(self) -> int:
        return self._index.rows

    def row(self, i: int) -> dict[str, Any]:
        try:
            cells = self._cells(i)
        except (csv.Error, UnicodeDecodeError, StopIteration) as exc:
            raise InputError(f"{self._path}: row {i} is not a CSV line of UTF-8 text ({exc}) — run rank_findings "
                             "again") from None  # fmt: skip
        if len(cells) != self._width:
            raise InputError(f"{self._path}: row {i} has {len(cells)} cells, the header {self._width} — run "
                             "rank_findings again")  # fmt: skip
        out = {name: fn(cells[k]) for name, k, fn in self._fields}
        out.update(self._constants)
        return out

    def _cells(self, i: int) -> list[str]:
        start, end = self._index.starts[i], self._index.starts[i + 1]
        data = read_at(self._fh, start, end - start)
        return next(csv.reader(data.decode("utf-8").splitlines(keepends=True)))

    def close(self) -> None:
        self._fh.close()


def open_rows(doc: dict[str, Any], metrics_path: Path, roots: DataRoots, decimal: bool) -> RooflineRows | None:
    """The rows the metrics document declares, checked against the CSV (None when it declares none)."""
    declared = declared_rows(doc, metrics_path)
    if declared is None:
        return None
    path = metrics_path.parent / declared.file
    again = f"run rank_findings for {doc.get('category') or 'this category'} again"
    try:
        fh = roots.open_read(path, what="roofline CSV")
    except FileNotFoundError:
        raise InputError(f"{metrics_path}: its operations' roofline rows are in {path}, which is missing — "
                         f"{again}") from None  # fmt: skip
    try:
        st = os.fstat(fh.fileno())
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if st.st_size != declared.bytes:
            raise InputError(f"{path} is {st.st_size} bytes, and {metrics_path.name} was ranked against "
                             f"{declared.bytes} (compute_roofline rewrote it since?) — {again}")  # fmt: skip
        key = (roots, str(path), stamp, declared.crc32)
        index = _INDEXES.get(key)
        if index is None:
            index = _scan(fh, path, declared, again, metrics_path.name)
            _INDEXES.put(key, index)
        if index.rows != declared.rows:
            raise InputError(f"{path} holds {index.rows} rows, and {metrics_path.name} has {declared.rows} "
                             f"operations — {again}")  # fmt: skip
        missing = [name for name in declared.fields if name not in index.header]
        if missing:
            raise InputError(f"{path} has no column {missing[0]!r}, which {metrics_path.name} reads — {again}")
        ours = doc.get("sdpa_analyzer")
        return RooflineRows(fh, path, index, declared, ours if isinstance(ours, dict) else {}, decimal)
    except BaseException:
        fh.close()
        raise


def clear_indexes() -> None:
    """Forget every indexed CSV (tests; or to free memory)."""
    _INDEXES.clear()


def _scan(fh: BinaryIO, path: Path, declared: RowsDeclared, again: str, metrics_name: str) -> _Index:
    """One pass: the crc32 of the bytes, and where each row starts (a line break ends a row where the quotes since the
    row began are balanced: inside a quoted cell they are not)."""
    crc, pos, starts, quotes = 0, 0, [0], 0
    while block := fh.read(READ_BLOCK_BYTES):
        crc = zlib.crc32(block, crc)
        find, count = block.find, block.count
        last, at = 0, block.find(b"\n")
        while at >= 0:
            quotes += count(b'"', last, at)
            if not quotes & 1:
                starts.append(pos + at + 1)
                quotes = 0
            last, at = at + 1, find(b"\n", at + 1)
        quotes += count(b'"', last)
        pos += len(block)
    if f"{crc:08x}" != declared.crc32:
        raise InputError(f"{path} is not the file {metrics_name} was ranked against (crc32 {crc:08x}, not "
                         f"{declared.crc32}: compute_roofline rewrote it since?) — {again}")  # fmt: skip
    if starts[-1] != pos:  # a last row without a line break
        starts.append(pos)
    fh.seek(0)
    try:
        header = tuple(next(csv.reader(fh.read(starts[1] - starts[0] if len(starts) > 1 else 0).decode("utf-8")
                                       .splitlines(keepends=True)), []))  # fmt: skip
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: its header is not a CSV line of UTF-8 text ({exc}) — {again}") from None
    return _Index(header, array("q", starts[1:] or [pos]))


def read_at(fh: BinaryIO, offset: int, length: int) -> bytes:
    """`length` bytes of an open file from `offset`: one pread (no seek, no buffer to fill and copy from)."""
    if _PREAD is not None:
        return _PREAD(fh.fileno(), length, offset)
    fh.seek(offset)
    return fh.read(length)


def _decimal_number(cell: str) -> Any:
    if not cell:
        return None
    try:
        value = Decimal(cell)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None  # inf and nan: the JSON's null


def _float_number(cell: str) -> Any:
    if not cell:
        return None
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _integer(cell: str) -> int | None:
    """A whole number; a float column of whole numbers (`128.0`: pandas writes an int column with gaps so) too."""
    if not cell:
        return None
    try:
        return int(cell)
    except ValueError:
        pass
    value = _float_number(cell)
    return int(value) if value is not None and value == int(value) else None


def _text(cell: str) -> str | None:
    return cell or None  # an empty cell: the JSON's null


def _bool(cell: str) -> bool | None:
    return {"True": True, "False": False}.get(cell)


_DECIMAL: dict[str, Callable[[str], Any]] = {"float": _decimal_number, "int": _integer, "bool": _bool, "text": _text}
_FLOAT: dict[str, Callable[[str], Any]] = {"float": _float_number, "int": _integer, "bool": _bool, "text": _text}
