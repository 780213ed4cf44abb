"""Write a compact JSON document whose one big list of objects is built column by column, in pieces.

Kept hand-written for bench/bench_server.py (the 100,000-row path's memory and time targets). Why: a metrics
document holds one object of ~70 values per op row; on 10^5 rows with real call stacks that is ~500 MB of JSON.
Building the 10^5 nested dicts and handing them to orjson (the fastest JSON library) takes ~2.3 s and holds every
dict and the whole output in memory at once; no library writes a list of records from columns. Here each field of
the per-row object is a column of ready JSON texts (numbers formatted by orjson from numpy arrays, each distinct
string or list encoded once) and rows are joined a chunk at a time with C-level joins, streamed to the file. The
bytes are exactly those of `orjson.dumps(doc, option=OPT_SERIALIZE_NUMPY | OPT_NON_STR_KEYS) + b"\\n"` with the list
in place, but for a newline before each item and before the closing `]` (one item a line, so the findings tools read
the list an item at a time: docs/formats.md); tests/server/writers/test_server_json_columns.py checks it against
orjson on every kind of field.

An item is an `Obj` of `Field`s; a field's value is a nested `Obj` or a `Column` that gives the JSON text of
rows [start, stop). Runs of consecutive fields whose columns have few distinct values are pre-rendered once per
distinct combination, so a row is joined from a few dozen pieces rather than a hundred and more.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Protocol, overload

import numpy as np
import orjson
import pandas as pd

from sdpa_analyzer.server.writers.runs import SAMPLE_ROWS, Coded, coded_numbers, combine_runs, few, maybe_few

DUMPS_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
_NUMPY = orjson.OPT_SERIALIZE_NUMPY
CHUNK_ROWS = 256  # rows rendered per piece: ~2 MB of a 10^5-row metrics JSON (1024 held ~20 MB more in flight)


class Sink(Protocol):
    def write(self, data: bytes, /) -> Any: ...




class Column:
    """JSON texts of a column's rows [start, stop)."""

    def texts(self, start: int, stop: int) -> list[bytes]:
        raise NotImplementedError

    def coded(self) -> Coded | None:
        """Every row's code and the texts of the codes, when the column has few distinct values."""
        return None


@dataclass
class Field:
    key: str
    value: Obj | Column
    optional: bool = False  # the column gives None where the row has no such key; never the first field


@dataclass
class Obj:
    fields: list[Field] = field(default_factory=list)


# ---------------------------------------------------------------- columns
class Numbers(Column):
    """Floats (rounded with np.round when `ndigits` is given, as the dict version did); NaN/inf → null.

    Rounded a chunk at a time: a rounded copy of every column at once was ~25 MB of a 10^5-row document."""

    def __init__(self, values: Any, ndigits: int | None = None) -> None:
        self.raw = np.asarray(values, dtype=float)
        self.ndigits = ndigits

    def _rounded(self, arr: np.ndarray) -> np.ndarray:
        return np.round(arr, self.ndigits) if self.ndigits is not None else arr

    @property
    def values(self) -> np.ndarray:
        return self._rounded(self.raw)

    def texts(self, start: int, stop: int) -> list[bytes]:
        return _split_array(self._rounded(self.raw[start:stop]))

    def coded(self) -> Coded | None:
        if not maybe_few(self._rounded(self.raw[:SAMPLE_ROWS]), len(self.raw)):
            return None  # decided on a sample, before rounding the whole column
        return coded_numbers(self.values, _split_array)


class Ints(Column):
    """Integers; `valid` False (or a non-finite float) gives null."""

    def __init__(self, values: Any, valid: Any = None) -> None:
        arr = np.asarray(values)
        ok = np.ones(len(arr), dtype=bool) if valid is None else np.asarray(valid, dtype=bool).copy()
        if arr.dtype.kind == "f":
            ok &= np.isfinite(arr)
            arr = np.where(ok, arr, 0)
        self.values = arr.astype(np.int64)
        self.ok = ok
        self.all_ok = bool(ok.all())

    def texts(self, start: int, stop: int) -> list[bytes]:
        out = _split_array(self.values[start:stop])
        if not self.all_ok:
            for j in np.flatnonzero(~self.ok[start:stop]).tolist():
                out[j] = b"null"
        return out

    def coded(self) -> Coded | None:
        if not maybe_few(self.values):
            return None
        codes, uniques = pd.factorize(self.values)
        if not few(len(uniques) + 1, len(codes)):
            return None
        return np.where(self.ok, codes, len(uniques)), [*_split_array(np.asarray(uniques)), b"null"]


class Bools(Column):
    def __init__(self, values: Any) -> None:
        self.values = np.asarray(values, dtype=bool)

    def texts(self, start: int, stop: int) -> list[bytes]:
        return _BOOL_TEXT[self.values[start:stop].view(np.uint8)].tolist()

    def coded(self) -> Coded | None:
        return self.values.astype(np.int64), [b"false", b"true"]


_BOOL_TEXT = np.array([b"false", b"true"], dtype=object)


class Const(Column):
    """The same value on every row."""

    def __init__(self, value: Any, rows: int) -> None:
        self.value = value
        self.rows = rows

    def texts(self, start: int, stop: int) -> list[bytes]:
        return [_encode(self.value)] * (stop - start)

    def coded(self) -> Coded | None:
        return np.zeros(self.rows, dtype=np.int64), [_encode(self.value)]


class Values(Column):
    """Any JSON-able Python values, one per row; each distinct value is encoded once.

    Values are told apart by type as well as by value (1, 1.0 and True are different JSON); unhashable
    values (lists, dicts) are told apart by identity (rows that share one object are encoded once).
    """

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values if isinstance(values, list) else list(values)
        self._coded: tuple[np.ndarray, list[bytes]] | None = None

    def coded(self) -> Coded:
        if self._coded is None:
            keys = _keys(self.values)
            index: dict[Any, Any] = dict.fromkeys(keys)
            for k, key in enumerate(index):
                index[key] = k
            codes = np.fromiter(map(index.__getitem__, keys), dtype=np.int64, count=len(keys))
            firsts = np.unique(codes, return_index=True)[1] if len(codes) else np.zeros(0, dtype=np.int64)
            texts = [_encode(self.values[i]) for i in firsts.tolist()]
            self._coded = (codes, texts)
        return self._coded

    def texts(self, start: int, stop: int) -> list[bytes]:
        codes, texts = self.coded()
        return np.array(texts, dtype=object)[codes[start:stop]].tolist() if stop > start else []


_UNHASHABLE = (list, dict, set)


def _keys(values: list[Any]) -> list[Any]:
    """A key per value that tells the values apart as Values does: (type, value), or the identity of an unhashable
    value. A column of one type takes C-level passes: its ids (lists, dicts, sets) or the values themselves (one
    type, or text and None, which never compare equal: the type adds nothing); others a key per row in Python
    (10^5 rows of 2,000 call-chain lists: 5 ms against 13 ms)."""
    types = set(map(type, values))
    if len(types) == 1 and next(iter(types)) in _UNHASHABLE:
        return list(map(id, values))
    if types <= {str, type(None)} or (len(types) == 1 and next(iter(types)) in (int, float, bool)):
        return values
    return [(id(v),) if type(v) in _UNHASHABLE or not _hashable(v) else (type(v), v) for v in values]


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


class Texts(Column):
    """Strings (or None → null) given as codes (-1: null) into a list of distinct values."""

    def __init__(self, codes: np.ndarray, uniques: Sequence[Any]) -> None:
        self.codes = np.asarray(codes, dtype=np.int64)
        self.uniques = uniques
        self._encoded: np.ndarray | None = None

    def _table(self) -> np.ndarray:
        if self._encoded is None:
            self._encoded = np.empty(len(self.uniques) + 1, dtype=object)
            self._encoded[:-1] = encode_strings(self.uniques)
            self._encoded[-1] = b"null"  # code -1
        return self._encoded

    def texts(self, start: int, stop: int) -> list[bytes]:
        if few(len(self.uniques), len(self.codes)):
            return self._table()[self.codes[start:stop]].tolist()
        # mostly distinct values (whole cells of the CSV): encoded chunk by chunk, never all held at once
        codes = self.codes[start:stop]
        if codes.min(initial=0) >= 0:
            return encode_strings(list(map(self.uniques.__getitem__, codes.tolist())))
        return encode_strings([None if c < 0 else self.uniques[c] for c in codes.tolist()])

    def coded(self) -> Coded | None:
        if not few(len(self.uniques) + 1, len(self.codes)):
            return None
        table = self._table()
        return np.where(self.codes < 0, len(table) - 1, self.codes), table.tolist()


def encode_strings(values: Sequence[Any]) -> list[bytes]:
    """orjson's text of each value (strings in one orjson call, anything else one by one).

    The strings are dumped as one indented list and split at the `,\\n  ` between elements (a JSON string
    cannot hold a raw newline). orjson.dumps of a single value would return a bytes object with ~4 KB of
    spare capacity: 10^5 calls would hold 400 MB.
    """
    values = list(values)
    if set(map(type, values)) == {str}:
        strings = values
    else:
        strings = [i for i, v in enumerate(values) if type(v) is str]
    out: list[bytes] = [b"null"] * len(values)
    if strings:
        texts = values if strings is values else [values[i] for i in strings]
        body = orjson.dumps(texts, option=orjson.OPT_INDENT_2)  # a JSON string holds no raw newline: split on them
        parts = body[4:-2].split(b",\n  ")
        if len(parts) != len(strings):  # cannot happen for valid JSON; stay correct regardless
            parts = [orjson.dumps([t])[1:-1] for t in texts]
        if strings is values:
            return parts
        for i, text in zip(strings, parts, strict=True):
            out[i] = text
    for i, v in enumerate(values):
        if type(v) is not str and v is not None:
            out[i] = _encode(v)
    return out


class Cells(Column):
    """A column of strings (None/NaN → null) read a chunk at a time from a sequence that slices, such as a
    packed column (server.folder.cells): never all encoded, or all unpacked, at once."""

    def __init__(self, cells: Sequence[Any]) -> None:
        self.cells = cells

    def texts(self, start: int, stop: int) -> list[bytes]:
        return encode_strings(self.cells[start:stop]) if stop > start else []


class Sparse(Column):
    """Values on a few rows, None (the key is absent: for optional fields) everywhere else."""

    def __init__(self, values: dict[int, Any]) -> None:
        self.values = values

    def texts(self, start: int, stop: int) -> list[bytes]:
        out: list[Any] = [None] * (stop - start)
        for i, v in self.values.items():
            if start <= i < stop:
                out[i - start] = _encode(v)
        return out


class Pair(Column):
    """A two-number list (`[lo,hi]`) from two columns."""

    def __init__(self, first: Column, second: Column) -> None:
        self.first, self.second = first, second

    def texts(self, start: int, stop: int) -> list[bytes]:
        lo, hi = self.first.texts(start, stop), self.second.texts(start, stop)
        return [b"[" + a + b"," + b + b"]" for a, b in zip(lo, hi, strict=True)]

    def coded(self) -> Coded | None:
        a, b = self.first.coded(), self.second.coded()
        if a is None or b is None:
            return None
        joint, _ = pd.factorize(a[0] * len(b[1]) + b[0])
        firsts = np.unique(joint, return_index=True)[1].tolist()
        return joint, [b"[" + a[1][a[0][i]] + b"," + b[1][b[0][i]] + b"]" for i in firsts]


def _split_array(arr: np.ndarray) -> list[bytes]:
    if len(arr) == 0:
        return []
    return orjson.dumps(np.ascontiguousarray(arr), option=_NUMPY)[1:-1].split(b",")


def _encode(value: Any) -> bytes:
    """orjson's text of a value, as a new exactly sized bytes object (orjson's own result keeps kilobytes of spare
    capacity, which 10^5 held values would turn into hundreds of MB)."""
    return orjson.dumps([value], option=DUMPS_OPTIONS)[1:-1]


# ---------------------------------------------------------------- rendering
Part = bytes | tuple[Column] | tuple[Column, bytes]


def _plan(obj: Obj) -> list[Part]:
    """An object as constant bytes and (column[, the prefix an optional field writes before its value])."""
    if not obj.fields:
        return [b"{}"]
    parts: list[Part] = [b"{"]
    for k, f in enumerate(obj.fields):
        key = orjson.dumps(f.key) + b":"
        if f.optional:
            if k == 0:
                raise ValueError(f"optional field {f.key!r} cannot be an object's first field")
            if isinstance(f.value, Obj):
                raise ValueError(f"optional field {f.key!r} must be a Column")
            parts.append((f.value, b"," + key))
            continue
        parts.append((b"," if k else b"") + key)
        if isinstance(f.value, Obj):
            parts.extend(_plan(f.value))
        else:
            parts.append((f.value,))
    parts.append(b"}")
    return _merge(parts)


def _merge(parts: list[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if isinstance(p, bytes) and out and isinstance(out[-1], bytes):
            out[-1] += p
        else:
            out.append(p)
    return out


def _combine(parts: list[Part], n: int) -> list[Part]:
    """Runs of constants and few-valued columns (two columns or more) as one pre-rendered column each."""
    combined = combine_runs(
        parts,
        n,
        coded=lambda p: p[0].coded() if isinstance(p, tuple) and len(p) == 1 else None,
        constant=lambda p: p if isinstance(p, bytes) else None,
        wrap=lambda c: (c,),
    )
    return _merge(combined)


def render_rows(parts: list[Part], start: int, stop: int) -> list[bytes]:
    """Each row's object text from a (combined) plan."""
    if stop <= start:
        return []
    iterables: list[Any] = []
    for p in parts:
        if isinstance(p, bytes):
            iterables.append(repeat(p))
        elif len(p) == 1:
            iterables.append(p[0].texts(start, stop))
        else:
            raw = p[0].texts(start, stop)
            iterables.append([b"" if t is None else p[1] + t for t in raw])
    if all(isinstance(it, repeat) for it in iterables):  # no column: zip would never stop
        return [b"".join(next(it) for it in iterables)] * (stop - start)
    return list(map(b"".join, zip(*iterables, strict=False)))


class RowList(Sequence[dict[str, Any]]):
    """A list of n objects given column-wise (an Obj), for a list nested in a document's other values: written by
    write_document (as orjson would write the dicts, compact) without a dict per row; `rows[i]` or a slice gives the
    dicts, read back from their JSON text (for a tool result that shows the first few)."""

    def __init__(self, item: Obj, n: int) -> None:
        self.item, self.n = item, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.n)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return [orjson.loads(t) for t in render_rows(_plan(self.item), start, max(start, stop))]
        if index < 0:
            index += self.n
        if not 0 <= index < self.n:
            raise IndexError("RowList index out of range")
        return orjson.loads(render_rows(_plan(self.item), index, index + 1)[0])

    def write(self, fh: Sink, chunk_rows: int = CHUNK_ROWS) -> None:
        """`[{...},{...}]`, compact (the bytes of orjson.dumps(list(self))), a chunk of rows at a time."""
        fh.write(b"[")
        if self.n:
            parts = _combine(_plan(self.item), self.n)
            for start in range(0, self.n, chunk_rows):
                rows = render_rows(parts, start, min(self.n, start + chunk_rows))
                fh.write((b"," if start else b"") + b",".join(rows))
        fh.write(b"]")

    def json(self) -> bytes:
        buf = io.BytesIO()
        self.write(buf)
        return buf.getvalue()


_ROW_LIST_MARK = b"\x00row list\x00"  # never in orjson's output (it escapes NUL): where a RowList goes


def _write_value(fh: Sink, value: Any) -> None:
    """orjson's bytes of `value`, with each RowList inside it written in pieces where orjson would have put it."""
    row_lists: list[RowList] = []

    def mark(v: Any) -> orjson.Fragment:
        if isinstance(v, RowList):
            row_lists.append(v)
            return orjson.Fragment(_ROW_LIST_MARK)
        raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")

    text = orjson.dumps(value, option=DUMPS_OPTIONS, default=mark)
    if not row_lists:
        fh.write(text)
        return
    pieces = text.split(_ROW_LIST_MARK)
    for piece, rows in zip(pieces, row_lists, strict=False):
        fh.write(piece)
        rows.write(fh)
    fh.write(pieces[-1])


def write_document(
    fh: Sink, doc: dict[str, Any], list_key: str, item: Obj, n: int, chunk_rows: int = CHUNK_ROWS
) -> None:
    """Write `doc` with doc[list_key] = the n rendered items: orjson.dumps(doc, DUMPS_OPTIONS) + b"\\n", except that
    the list has one item a line (`[\\n{...},\\n{...}\\n]`; the same JSON value).

    The other values are dumped one top-level key (one list item) at a time, so no more than one of them is
    held as text at once (the impact estimates and the findings' members are tens of MB each at 10^5 rows)."""
    if list_key not in doc:
        raise KeyError(f"the document has no {list_key!r} key")
    fh.write(b"{")
    for k, key in enumerate(doc):
        fh.write((b"," if k else b"") + orjson.dumps(key, option=DUMPS_OPTIONS) + b":")
        if key == list_key:
            _write_items(fh, item, n, chunk_rows)
        elif isinstance(doc[key], list):
            values = doc[key]
            fh.write(b"[")
            for start in range(0, len(values), chunk_rows):  # a write per chunk: each write is a queue hand-off
                if start:
                    fh.write(b",")
                chunk = io.BytesIO()
                for j, v in enumerate(values[start : start + chunk_rows]):
                    if j:
                        chunk.write(b",")
                    _write_value(chunk, v)
                fh.write(chunk.getvalue())
            fh.write(b"]")
        else:
            _write_value(fh, doc[key])  # RowLists inside it written in pieces
    fh.write(b"}\n")


def _write_items(fh: Sink, item: Obj, n: int, chunk_rows: int) -> None:
    """The list one item a line: `[`, a newline, the items joined by `,` + newline, a newline, `]` (JSON whitespace:
    the value is orjson's; a reader splits the items at the newlines, server.folder.metrics_file)."""
    fh.write(b"[")
    if n:
        fh.write(b"\n")
        parts = _combine(_plan(item), n)
        for start in range(0, n, chunk_rows):
            if start:
                fh.write(b",\n")
            fh.write(b",\n".join(render_rows(parts, start, min(n, start + chunk_rows))))
        fh.write(b"\n")
    fh.write(b"]")
