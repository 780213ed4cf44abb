"""The shape numbers of Input Dims as int64 matrices, one per block of rows with equal entry lengths:
from parsed lists, or for raw CSV strings straight from the text's bytes."""

from __future__ import annotations

from functools import reduce
from operator import iadd
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.literals import PLAIN_INT_NEST, parse_literal, parse_plain_int_nest
from sdpa_analyzer.perf_models.ops.batch.cells import Rows
from sdpa_analyzer.perf_models.ops.batch.groups import split_rows, split_values
from sdpa_analyzer.perf_models.ops.batch.results import Results

_CHUNK = 2048  # rows whose Input Dims are read together (cache-sized)
_DIGITS_ONLY = bytes(c if 48 <= c <= 57 else 32 for c in range(256))  # bytes.translate tables
_DIGITS_TO_ZERO = bytes(48 if 48 <= c <= 57 else c for c in range(256))
_TEMPLATE_BYTES = frozenset(b"()[], 0")


def dims_blocks(
    members: NDArray[np.intp], rows: Rows, res: Results
) -> list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]]:
    """Split rows by the length of every Input Dims entry; each block's numbers as one (m, L) matrix.

    Rows with an entry that is not a flat list/tuple of Python ints >= 0 (Tensor[] lists, None or ''
    entries, bools, floats, negative or huge numbers) are parsed one by one: Row.parse refuses or
    reshapes them. Rows are read in chunks so that the several passes over a chunk's cell objects hit
    the CPU cache (the cells of 10^5 rows are tens of MB of scattered objects).
    """
    by_pattern: dict[tuple[int, ...], list[tuple[NDArray[np.intp], NDArray[np.int64]]]] = {}
    for start in range(0, len(members), _CHUNK):
        for sub, mat, pattern in _dims_chunk(members[start : start + _CHUNK], rows, res):
            by_pattern.setdefault(pattern, []).append((sub, mat))
    return [
        (np.concatenate([s for s, _ in parts]), np.concatenate([m for _, m in parts]), pattern)
        for pattern, parts in by_pattern.items()
    ]


def _dims_chunk(
    members: NDArray[np.intp], rows: Rows, res: Results
) -> list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]]:
    cells = [rows.dims[i] for i in members.tolist()]
    n_entries = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
    blocks = []
    for e_rows in split_values(n_entries):
        width = int(n_entries[e_rows[0]])
        sub = cells if len(e_rows) == len(cells) else [cells[j] for j in e_rows.tolist()]
        entries: list[Any] = reduce(iadd, sub, [])  # list += list: the fastest flattening in CPython
        cols = [entries[j::width] for j in range(width)]  # entry j of every row
        ok, lens = _entry_lengths(cols, len(sub))
        res.one_by_one(members[e_rows[~ok]], rows)
        for part in split_rows(lens, ok):
            pattern = tuple(int(x) for x in lens[part[0]])
            picked = None if len(part) == len(sub) else part.tolist()
            mat, good = _int_matrix(cols, pattern, picked, len(part))
            res.one_by_one(members[e_rows[part[~good]]], rows)
            if good.any():
                blocks.append((members[e_rows[part[good]]], mat[good], pattern))
    return blocks


def raw_dims_blocks(
    members: NDArray[np.intp], rows: Rows
) -> tuple[list[tuple[NDArray[np.intp], NDArray[np.int64], tuple[int, ...]]], NDArray[np.intp]]:
    """Input Dims strings read as bytes with numpy: no Python object per number.

    Every digit run becomes one '0' in a row's template; rows with the same template parse alike (the
    literal reader's plain int-nest path depends only on the brackets, commas and spaces), so one row's
    parse_literal gives every row's entry lengths, and the numbers of all rows come from one
    np.fromstring. Rows whose template holds anything else (signs, letters, tabs, non-ASCII), a number
    of more than 18 digits, or a structure that is not flat shapes are returned for the literal reader.
    """
    texts = [rows.dims[i] for i in members.tolist()]
    m = len(texts)
    joined = "\n".join(texts)
    if joined.count("\n") != m - 1 or not joined.isascii():
        return [], members
    data = joined.encode("ascii")
    zeroed = np.frombuffer(data.translate(_DIGITS_TO_ZERO), dtype=np.uint8)
    zeros = zeroed == 48
    keep = np.ones(len(zeros), dtype=bool)
    keep[1:] = ~(zeros[1:] & zeros[:-1])  # the first digit of each run
    marked = zeroed[keep].tobytes()  # each number -> "0"
    first = marked.split(b"\n", 1)[0]
    if marked == b"\n".join([first] * m):
        template_of, templates = np.zeros(m, dtype=np.int64), [first]
    else:
        codes: dict[bytes, int] = {}
        template_of = np.fromiter((codes.setdefault(t, len(codes)) for t in marked.split(b"\n")), np.int64, m)
        templates = list(codes)
    runs = np.asarray([t.count(b"0") for t in templates], dtype=np.int64)[template_of]
    offsets = np.concatenate([[0], np.cumsum(runs)])
    numbers = np.fromstring(data.translate(_DIGITS_ONLY), dtype=np.int64, sep=" ") if offsets[-1] else None
    if numbers is not None and len(numbers) != offsets[-1]:
        return [], members
    odd = np.zeros(m, dtype=bool)  # a number of 19+ digits may not fit int64 (fromstring saturates)
    if numbers is not None:
        suspect = np.flatnonzero((numbers >= 10**18) | (numbers < 0))
        odd[np.searchsorted(offsets, suspect, side="right") - 1] = True
    blocks, rest = [], [np.flatnonzero(odd)]
    for code in split_values(template_of):
        code = code[~odd[code]]
        if not len(code):
            continue
        lens = _template_lengths(templates[int(template_of[code[0]])], texts[int(code[0])])
        if lens is None:
            rest.append(code)
            continue
        width = sum(lens)
        if numbers is None or not width:
            mat = np.zeros((len(code), width), dtype=np.int64)
        else:
            mat = numbers[offsets[code][:, None] + np.arange(width)]
        blocks.append((members[code], mat, lens))
    return blocks, members[np.sort(np.concatenate(rest))]


def _template_lengths(template: bytes, text: str) -> tuple[int, ...] | None:
    """Entry lengths of every Input Dims string with this template, from one of them; None when the
    strings are not plain flat shapes (a Tensor[] entry, a bare number, a path the plain reader refuses)."""
    if not set(template) <= _TEMPLATE_BYTES or not PLAIN_INT_NEST.fullmatch(text.strip()):
        return None
    try:
        parsed = parse_plain_int_nest(text.strip())
    except ValueError:
        return None
    if not isinstance(parsed, tuple) or parse_literal(text) != parsed:
        return None
    lens = []
    for entry in parsed:
        if not isinstance(entry, tuple) or not all(type(x) is int for x in entry):
            return None
        lens.append(len(entry))
    if sum(lens) != template.count(b"0"):
        return None
    return tuple(lens)


def _entry_lengths(cols: list[list[Any]], m: int) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Per row: are all entries lists/tuples, and the length of each."""
    ok = np.ones(m, dtype=bool)
    lens = np.zeros((m, len(cols)), dtype=np.int64)
    for j, col in enumerate(cols):
        try:
            if col[0] in ([], ()) and (col.count([]) == m or col.count([]) + col.count(()) == m):
                continue  # an argument that is never a tensor
        except (TypeError, ValueError):  # an entry with an odd __eq__ (an array): checked below
            pass
        if not set(map(type, col)) <= {list, tuple}:
            flags = np.fromiter((type(x) is list or type(x) is tuple for x in col), dtype=bool, count=m)
            ok &= flags
            col = cols[j] = [x if f else () for x, f in zip(col, flags.tolist(), strict=True)]
        lens[:, j] = np.fromiter(map(len, col), dtype=np.int64, count=m)
    return ok, lens


def _int_matrix(
    cols: list[list[Any]], pattern: tuple[int, ...], picked: list[int] | None, m: int
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """The numbers of m rows as an (m, sum(pattern)) matrix, and which rows hold only ints >= 0."""
    good = np.ones(m, dtype=bool)
    parts = []
    for col, width in zip(cols, pattern, strict=True):
        if not width:
            continue
        if picked is not None:
            col = [col[r] for r in picked]
        flat: list[Any] = reduce(iadd, col, [])
        kinds = list(map(type, flat))
        if kinds.count(int) != len(flat):
            bad = [k for k, t in enumerate(kinds) if t is not int]
            good[np.asarray(bad) // width] = False
            flat = [x if t is int else 0 for x, t in zip(flat, kinds, strict=True)]
        try:
            values = np.fromiter(flat, dtype=np.int64, count=len(flat))
        except OverflowError:
            huge = np.fromiter((not -(2**63) <= x < 2**63 for x in flat), dtype=bool, count=len(flat))
            good &= ~huge.reshape(m, width).any(axis=1)
            values = np.fromiter((0 if h else x for x, h in zip(flat, huge, strict=True)), np.int64, len(flat))
        parts.append(values.reshape(m, width))
    mat = np.hstack(parts) if parts else np.zeros((m, 0), dtype=np.int64)
    good &= ~(mat < 0).any(axis=1)
    return mat, good
