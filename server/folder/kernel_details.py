"""The `kernel_details_summary` column: each row's kernel names and dominant kernel, read column-wise.

A cell is the repr of a list of dicts, one per kernel (`{'name': '...', 'stream': 7, 'count': 9,
'total_duration_us': np.float64(13.5), ...}`). Nothing is evaluated: regexes read the three fields we need.
Rows whose cells differ only in their numbers share their kernel names, so the numbers are blanked from a
block of cells at once and each distinct skeleton is parsed once; the dominant kernel of a group of rows comes
from one regex pass over their durations. The cells themselves are kept packed (server.folder.cells): they
are read again only for the metrics JSON, which copies them, and for the few rows whose dicts are needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from sdpa_analyzer.perf_models.literals import is_missing
from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.folder.cells import CELL_SEP, PackedTexts

_KD_NAME_RE = re.compile(r"'name':\s*'((?:[^'\\]|\\.)*)'")
_KD_DUR_RE = re.compile(r"'total_duration_us':\s*(?:np\.float64\()?\s*([-+0-9.eE]+|nan)\)?")
_KD_COUNT_RE = re.compile(r"'count':\s*(?:np\.int64\()?\s*(\d+)")
# a kernel dict's unquoted values (numbers, np.float64(...), nan), blanked to leave the names' skeleton
_KD_VALUE_RE = re.compile(r"': (?!')[^,{}']*(?=[,}]|$)")  # replaced by "': " (anchored on the literal: fast)
_KD_DUR_KEY = "'total_duration_us'"
BLOCK_ROWS = 8192  # cells joined per pass: bounds the transient text (~6 MB) whatever the column's size


def parse_kernel_details(cell: Any) -> list[dict[str, Any]]:
    """Kernel names, counts and total durations from a `kernel_details_summary` cell.

    The cells are large dict reprs with `np.float64(...)` numbers; a regex pulls out the three fields
    we need without evaluating anything, which is also much faster than literal_eval on 100k rows.
    """
    if is_missing(cell):
        return []
    s = str(cell)
    out: list[dict[str, Any]] = []
    for chunk in s.split("{")[1:]:
        m = _KD_NAME_RE.search(chunk)
        if not m:
            continue
        d = _KD_DUR_RE.search(chunk)
        c = _KD_COUNT_RE.search(chunk)
        dur = float(d.group(1)) if d else float("nan")
        out.append(
            {
                "name": m.group(1).replace("\\'", "'"),
                "count": int(c.group(1)) if c else None,
                "total_duration_us": dur if np.isfinite(dur) else None,
            }
        )
    return out


@dataclass(eq=False)
class KernelDetails(Sequence[list[dict[str, Any]]]):
    """The `kernel_details_summary` column, read column-wise.

    Per row: which distinct list of kernel names it has (`codes` into `name_sets`) and which kernel has the
    largest total duration (`dominant`, np.argmax over the durations with missing ones as 0; -1 for no
    kernel). `cells` are the cells as they were (packed); indexing a row gives parse_kernel_details' dicts.
    """

    cells: Sequence[Any]
    name_sets: list[tuple[str, ...]]
    codes: np.ndarray
    dominant: np.ndarray

    @classmethod
    def empty(cls, n: int) -> KernelDetails:
        return cls([None] * n, [()], np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.cells)

    @overload
    def __getitem__(self, i: int) -> list[dict[str, Any]]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[dict[str, Any]]]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [parse_kernel_details(c) for c in self.cells[i]]
        return parse_kernel_details(self.cells[i])

    def __iter__(self) -> Iterator[list[dict[str, Any]]]:
        return map(parse_kernel_details, self.cells)

    def rows(self, indices: Iterable[int]) -> list[list[dict[str, Any]]]:
        """parse_kernel_details of the rows `indices`, in that order (packed cells unpacked once per block)."""
        wanted = [int(i) for i in indices]
        cells = self.cells.rows(wanted) if isinstance(self.cells, PackedTexts) else [self.cells[i] for i in wanted]
        return [parse_kernel_details(c) for c in cells]

    def names(self, i: int) -> tuple[str, ...]:
        return self.name_sets[int(self.codes[i])]


def read_kernel_details(cells: list[Any]) -> KernelDetails:
    """parse_kernel_details' names and dominant kernel for every row, without parsing every row.

    A block of cells at a time: the numbers are blanked from the block's joined text, rows are grouped by the
    skeleton left (sorted, so any number of distinct skeletons costs n log n), and each distinct skeleton is
    parsed once for the whole column. Cells with quotes or backslashes inside (escaped names) or the separator
    are parsed one by one.
    """
    n = len(cells)
    codes = np.zeros(n, dtype=np.int64)
    dominant = np.full(n, -1, dtype=np.int64)
    name_sets: list[tuple[str, ...]] = [()]
    index: dict[tuple[str, ...], int] = {(): 0}
    known: dict[str, tuple[int, list[dict[str, Any]]]] = {}  # skeleton → (names code, its first cell's kernels)

    def code_of(names: tuple[str, ...]) -> int:
        if names not in index:
            index[names] = len(name_sets)
            name_sets.append(names)
        return index[names]

    for start in range(0, n, BLOCK_ROWS):
        block = range(start, min(n, start + BLOCK_ROWS))
        text_rows = [i for i in block if type(cells[i]) is str]
        texts = [cells[i] for i in text_rows]
        joined = CELL_SEP.join(texts)
        slow = [i for i in block if type(cells[i]) is not str and not is_missing(cells[i])]
        if '"' in joined or "\\" in joined or joined.count(CELL_SEP) != max(len(texts) - 1, 0):
            odd = [('"' in t) or ("\\" in t) or (CELL_SEP in t) for t in texts]
            slow += [i for i, o in zip(text_rows, odd, strict=True) if o]
            text_rows = [i for i, o in zip(text_rows, odd, strict=True) if not o]
            texts = [cells[i] for i in text_rows]
            joined = CELL_SEP.join(texts)
        for i in slow:
            ks = parse_kernel_details(cells[i])
            codes[i] = code_of(tuple(k["name"] for k in ks))
            durs = [float(k["total_duration_us"] or 0.0) for k in ks]
            dominant[i] = int(np.argmax(durs)) if durs else -1
        if not texts:
            continue
        rows = np.asarray(text_rows, dtype=np.int64)
        sk_codes, sk_uniques = factorize(_KD_VALUE_RE.sub("': ", joined).split(CELL_SEP))
        del joined
        order = np.argsort(sk_codes, kind="stable")
        bounds = np.flatnonzero(np.diff(sk_codes[order])) + 1
        for members_at in np.split(order, bounds):
            skeleton = sk_uniques[int(sk_codes[members_at[0]])]
            members = rows[members_at]
            if skeleton not in known:
                ks = parse_kernel_details(cells[members[0]])
                known[skeleton] = (code_of(tuple(k["name"] for k in ks)), ks)
            code, ks = known[skeleton]
            codes[members] = code
            dominant[members] = _dominant(ks, skeleton, [cells[i] for i in members.tolist()])
    return KernelDetails(PackedTexts(cells), name_sets, codes, dominant)


def _dominant(kernels: list[dict[str, Any]], skeleton: str, cells: list[str]) -> np.ndarray | int:
    """np.argmax of each cell's kernel durations; the cells share one skeleton (`kernels` is the first's)."""
    k = len(kernels)
    if k <= 1:
        return k - 1
    chunks = skeleton.split("{")[1:]
    named = [bool(_KD_NAME_RE.search(c)) for c in chunks]
    one_each = all(c.count(_KD_DUR_KEY) == (1 if m else 0) for c, m in zip(chunks, named, strict=True))
    found = _KD_DUR_RE.findall(CELL_SEP.join(cells)) if one_each else []
    if len(found) == k * len(cells):
        # every kernel dict of every cell has exactly one readable duration, in order
        durs = np.fromiter(map(float, found), dtype=float, count=len(found)).reshape(len(cells), k)
        return np.argmax(np.where(np.isfinite(durs), durs, 0.0), axis=1)
    out = np.empty(len(cells), dtype=np.int64)
    for j, cell in enumerate(cells):
        out[j] = int(np.argmax([float(x["total_duration_us"] or 0.0) for x in parse_kernel_details(cell)]))
    return out
