"""`DataFrame.to_csv(index=False)` bytes, column-wise and in pieces: the same text, ~10x faster on wide tables.

pandas formats a float column with `astype(str)` and hands every row to the csv module; on 10^5 rows x 60
columns that is seconds. Here float64 columns are formatted by orjson (whose text equals numpy's for
1e-4 <= |x| < 1e16 and zero; other values take numpy's own formatting), repeated strings are formatted and
quoted once, and rows are joined a chunk at a time. Quoting follows the csv module's QUOTE_MINIMAL (fields
that need it are quoted by the csv module itself). tests/server/writers/test_server_csv_columns.py compares the
bytes with pandas on every kind of column.

Kept hand-written for bench/bench_server.py (compute_roofline + rank_findings on 100,000 rows, target ≤ 3.5× a
bare read_csv): on 50,000 roofline records `DataFrame.to_csv` took 17.2 s where this took 2.9 s, same bytes
(2-core machine, 2026-12-01); pyarrow's CSV writer would add a large dependency and quotes differently.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import orjson
import pandas as pd

from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.writers.runs import Coded, Combined, coded_numbers, combine_runs, few

CHUNK_ROWS = 2048
CodesOf = Callable[[str], tuple[np.ndarray, list[Any]]]
_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def _csv_field(text: str) -> str:
    """The csv module's rendering of one field among several, as pandas' writer (QUOTE_MINIMAL, '\\n')."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([text, ""])
    return buf.getvalue()[:-2]  # drop the empty second field's separator and the line end


# the characters that make this Python's csv module quote a field ('\r' did not before 3.12)
_QUOTED_CHARS = "".join(c for c in map(chr, range(128)) if _csv_field(f"a{c}b").startswith('"'))
_NEEDS_QUOTES = re.compile("[" + re.escape(_QUOTED_CHARS) + "]")


def _field(text: str) -> str:
    """A field as the csv module writes it: quoted, with quotes doubled, when it holds a special character."""
    return '"' + text.replace('"', '""') + '"' if _NEEDS_QUOTES.search(text) else text


def _fields(texts: list[str]) -> list[bytes]:
    """_field(t).encode() of many strings, with C-level passes over all of them where possible."""
    if not texts:
        return []
    joined = "\x00".join(texts)
    if joined.count("\x00") != len(texts) - 1:  # a NUL inside a value: one by one
        return [_field(t).encode() for t in texts]
    quoted = list(map(_NEEDS_QUOTES.search, texts))
    if all(quoted):  # quote them all at once: the NULs between values become `"\x00"`
        joined = '"' + joined.replace('"', '""').replace("\x00", '"\x00"') + '"'
    elif any(quoted):
        joined = "\x00".join([_field(t) if q else t for t, q in zip(texts, quoted, strict=True)])
    return joined.encode().split(b"\x00")


class _Formatter:
    def texts(self, start: int, stop: int) -> list[bytes]:
        raise NotImplementedError

    def coded(self) -> Coded | None:
        """Every row's code (>= 0) and each code's text, when the column has few distinct values."""
        return None


class _Combined(_Formatter):
    def __init__(self, combined: Combined) -> None:
        self.combined = combined

    def texts(self, start: int, stop: int) -> list[bytes]:
        return self.combined.texts(start, stop)


def _combine(formatters: list[_Formatter], n: int) -> list[_Formatter]:
    return combine_runs(formatters, n, coded=lambda f: f.coded(), constant=lambda f: None, wrap=_Combined, sep=b",")


class _Floats(_Formatter):
    def __init__(self, values: np.ndarray, digits: int | None = None) -> None:
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        # np.round each chunk as it is written: rounded copies of the columns, all held at once, were ~36 MB at 10^5
        # roofline rows (0.8 MB a column), the peak of compute_roofline
        self.digits = digits

    def texts(self, start: int, stop: int) -> list[bytes]:
        x = self.values[start:stop]
        if len(x) == 0:
            return []
        if self.digits is not None:
            x = np.round(x, self.digits)
        out = orjson.dumps(x, option=_NUMPY)[1:-1].split(b",")
        with np.errstate(invalid="ignore"):
            ax = np.abs(x)
            odd = ~(((ax >= 1e-4) & (ax < 1e16)) | (x == 0))  # NaN and inf are odd too
        if odd.any():
            sel = np.flatnonzero(odd)
            vals = x[sel]
            nan = np.isnan(vals)
            texts = np.full(len(sel), b"", dtype=object)  # pandas' na_rep for NaN
            texts[~nan] = [t.encode() for t in vals[~nan].astype(str).tolist()]
            arr = np.array(out, dtype=object)
            arr[sel] = texts
            out = arr.tolist()
        return out

    def coded(self) -> Coded | None:
        return coded_numbers(self.values, lambda u: _Floats(u, self.digits).texts(0, len(u)))


class _FloatBlock(_Formatter):
    """Adjacent float columns written together: one orjson pass over the chunk's (rows x columns) block gives each
    row's `a,b,c` at once (one piece a row instead of one a column). Rows holding a value orjson does not write as
    numpy does (see _Floats; NaN aside) are rendered column by column."""

    def __init__(self, columns: list[_Floats]) -> None:
        self.columns = columns

    def texts(self, start: int, stop: int) -> list[bytes]:
        if stop <= start:
            return []
        block = np.empty((stop - start, len(self.columns)))
        for j, f in enumerate(self.columns):
            x = f.values[start:stop]
            block[:, j] = np.round(x, f.digits) if f.digits is not None else x
        with np.errstate(invalid="ignore"):
            ax = np.abs(block)
            odd = ~(((ax >= 1e-4) & (ax < 1e16)) | (block == 0) | np.isnan(block))  # inf is odd
        # orjson writes NaN (and inf, taken apart above) as null, pandas as an empty field: `null` is no number's text
        out = orjson.dumps(block, option=_NUMPY)[2:-2].replace(b"null", b"").split(b"],[")
        rows = np.flatnonzero(odd.any(axis=1))
        if len(rows):
            cols = [_Floats(block[rows, j]).texts(0, len(rows)) for j in range(len(self.columns))]
            for r, text in zip(rows.tolist(), map(b",".join, zip(*cols, strict=True)), strict=True):
                out[r] = text
        return out


def _float_blocks(formatters: list[_Formatter]) -> list[_Formatter]:
    """Runs of two or more adjacent float columns as one _FloatBlock each."""
    out: list[_Formatter] = []
    run: list[_Floats] = []
    for f in [*formatters, None]:
        if isinstance(f, _Floats):
            run.append(f)
            continue
        out.extend([_FloatBlock(run)] if len(run) > 1 else run)
        run = []
        if f is not None:
            out.append(f)
    return out


class _Ints(_Formatter):
    def __init__(self, values: np.ndarray) -> None:
        self.values = np.ascontiguousarray(values)

    def texts(self, start: int, stop: int) -> list[bytes]:
        x = self.values[start:stop]
        return orjson.dumps(x, option=_NUMPY)[1:-1].split(b",") if len(x) else []

    def coded(self) -> Coded | None:
        return coded_numbers(self.values, lambda u: _Ints(u).texts(0, len(u)))


class _Bools(_Formatter):
    _TEXT = np.array([b"False", b"True"], dtype=object)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values.astype(bool).view(np.uint8)

    def texts(self, start: int, stop: int) -> list[bytes]:
        return self._TEXT[self.values[start:stop]].tolist()

    def coded(self) -> Coded | None:
        return self.values.astype(np.int64), [b"False", b"True"]


class _Objects(_Formatter):
    """str(value) of each distinct value once (missing values → ''), quoted as the csv module does."""

    def __init__(self, values: np.ndarray, codes: tuple[np.ndarray, list[Any]] | None = None) -> None:
        self.values = values
        self.codes: np.ndarray | None = None
        self.distinct: np.ndarray | None = None  # the uniques as an object array, made on first use
        if codes is None:
            try:
                codes = factorize(values)
            except TypeError:  # unhashable cells: formatted per row, per chunk
                return
        self.codes, self.uniques = codes
        self.texts_of: np.ndarray | None = None
        self.few = few(len(self.uniques) + 1, len(self.codes))
        # each distinct value formatted once when rows repeat them (a list of warnings: ~8 rows a value); mostly
        # distinct values (shapes) are formatted a chunk at a time instead, never all held at once
        if self.few or 2 * len(self.uniques) <= len(self.codes):
            texts = _fields([u if type(u) is str else str(u) for u in self.uniques])
            self.texts_of = np.fromiter([*texts, b""], dtype=object, count=len(texts) + 1)  # last: code -1, missing

    def coded(self) -> Coded | None:
        if self.codes is None or self.texts_of is None or not self.few:
            return None
        return np.where(self.codes < 0, len(self.texts_of) - 1, self.codes), self.texts_of.tolist()

    def texts(self, start: int, stop: int) -> list[bytes]:
        if self.codes is not None and self.texts_of is not None:
            return self.texts_of[self.codes[start:stop]].tolist()
        if self.codes is not None:  # mostly distinct: the chunk's values taken and formatted as whole arrays
            if self.distinct is None:
                self.distinct = np.fromiter(self.uniques, dtype=object, count=len(self.uniques))  # never unpacks
            codes = self.codes[start:stop]
            present = codes >= 0
            values = self.distinct[codes[present]].tolist()
            if set(map(type, values)) - {str}:
                values = [u if type(u) is str else str(u) for u in values]
            texts = _fields(values)
            if len(texts) == len(codes):
                return texts
            out = np.full(len(codes), b"", dtype=object)  # code -1: a missing value
            out[present] = np.fromiter(texts, dtype=object, count=len(texts))
            return out.tolist()
        part = self.values[start:stop]
        na = pd.isna(part)
        return [b"" if m else _field(str(v)).encode() for v, m in zip(part.tolist(), na.tolist(), strict=True)]


def _formatter(
    series: pd.Series, convert: Callable[[Any], Any] | None, codes: CodesOf | None, digits: int | None = None
) -> _Formatter | None:
    if digits is not None:  # a float column rounded as it is written (np.round: the metrics JSON's rounding)
        return _Floats(series.to_numpy(dtype=float), digits)
    if convert is not None:
        return _Objects(np.fromiter(map(convert, series.to_numpy(dtype=object)), dtype=object, count=len(series)))
    dtype = series.dtype
    if codes is not None and ((isinstance(dtype, np.dtype) and dtype.kind == "O") or isinstance(dtype, pd.StringDtype)):
        return _Objects(series.to_numpy(dtype=object), codes(str(series.name)))
    if isinstance(dtype, np.dtype):
        if dtype == np.float64:
            return _Floats(series.to_numpy())
        if dtype.kind in "iu":
            return _Ints(series.to_numpy())
        if dtype.kind == "b":
            return _Bools(series.to_numpy())
        if dtype.kind == "O":
            return _Objects(series.to_numpy())
        return None
    if isinstance(dtype, pd.StringDtype):
        return _Objects(series.to_numpy(dtype=object))
    return None


def frame_csv_chunks(
    df: pd.DataFrame,
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
    codes: CodesOf | None = None,
    chunk_rows: int = CHUNK_ROWS,
    digits: Mapping[str, int] | None = None,
) -> Iterator[bytes]:
    """UTF-8 pieces whose concatenation equals `df.to_csv(index=False)` (with `convert[col]` mapped over
    those columns first, and `digits[col]` float columns rounded with np.round), line ends '\\n'. `codes(col)`, when
    given, is factorize(df[col]) of text columns, already computed. Rounding here, column by column, spares the
    copy of the whole frame a rounded `assign` makes (~36 MB at 10^5 roofline rows)."""
    convert, digits = convert or {}, digits or {}
    columns = [str(c) for c in df.columns]
    formatters = [_formatter(df[c], convert.get(c), codes, digits.get(str(c))) for c in df.columns]
    if len(columns) < 2 or df.columns.duplicated().any() or any(f is None for f in formatters):
        # one column (the csv module quotes a lone empty field), duplicate names or an unusual dtype: pandas
        frame = df.assign(**{c: np.round(df[c].to_numpy(dtype=float), d) for c, d in digits.items() if c in df})
        frame = frame.assign(**{c: frame[c].map(fn) for c, fn in convert.items() if c in frame}) if convert else frame
        yield frame.to_csv(index=False).encode("utf-8")
        return
    yield (",".join(map(_field, columns)) + "\n").encode("utf-8")
    n = len(df)
    combined = _float_blocks(_combine([f for f in formatters if f is not None], n))
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        cols = [f.texts(start, stop) for f in combined]
        yield b"\n".join(map(b",".join, zip(*cols, strict=True))) + b"\n"
