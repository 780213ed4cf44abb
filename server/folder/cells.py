"""Columns of CSV text cells: the separator used to work on a whole column at once, and a packed column.

`CELL_SEP` joins a column's cells into one string for C-speed passes (regexes, translate, split); a cell
that holds it is handled on its own. `PackedTexts` keeps a large, rarely read column (kernel_details_summary:
~700 bytes a row, ~70 MB on 10^5 rows, read again only to copy it into the metrics JSON) as zlib-compressed
blocks, ~3% of its size on real summaries, which repeat the same kernel names row after row.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

CELL_SEP = "\x00"
BLOCK_CELLS = 4096
_LEVEL = 1  # the fastest level already packs repeated kernel names ~30x; higher levels cost time, not memory


class _Block:
    """BLOCK_CELLS cells: the text cells joined and compressed, the others (None, NaN, numbers) as they are."""

    __slots__ = ("n", "others", "packed", "raw")

    def __init__(self, cells: list[Any]) -> None:
        self.n = len(cells)
        texts = [c for c in cells if type(c) is str]
        joined = CELL_SEP.join(texts)
        self.others = {i: c for i, c in enumerate(cells) if type(c) is not str}
        self.packed: bytes | None = None
        self.raw: list[Any] | None = None
        if joined.count(CELL_SEP) == max(len(texts) - 1, 0):
            self.packed = zlib.compress(joined.encode("utf-8", "surrogatepass"), _LEVEL)
        else:  # a cell holds the separator: this block is kept as it is
            self.raw = list(cells)

    def cells(self) -> list[Any]:
        if self.raw is not None:
            return list(self.raw)
        assert self.packed is not None
        texts = zlib.decompress(self.packed).decode("utf-8", "surrogatepass").split(CELL_SEP)
        if not self.others:
            return texts
        it = iter(texts)  # one text per cell that is not in `others`, in order
        return [self.others[i] if i in self.others else next(it) for i in range(self.n)]


class PackedTexts(Sequence[Any]):
    """A column of cells (text, None, NaN) in compressed blocks; read back a block at a time.

    Safe to share between threads: reads never change it (the last block read is kept under a lock)."""

    def __init__(self, cells: Iterable[Any]) -> None:
        values = list(cells)
        self._n = len(values)
        self._blocks = [_Block(values[s : s + BLOCK_CELLS]) for s in range(0, self._n, BLOCK_CELLS)]
        self._lock = threading.Lock()
        self._last: tuple[int, list[Any]] | None = None

    def __len__(self) -> int:
        return self._n

    def _block(self, b: int) -> list[Any]:
        with self._lock:
            if self._last is not None and self._last[0] == b:
                return self._last[1]
        cells = self._blocks[b].cells()
        with self._lock:
            self._last = (b, cells)
        return cells

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            return self.slice(start, stop) if step == 1 else self.rows(range(start, stop, step))
        j = int(i) + (self._n if i < 0 else 0)
        if not 0 <= j < self._n:
            raise IndexError(i)
        return self._block(j // BLOCK_CELLS)[j % BLOCK_CELLS]

    def slice(self, start: int, stop: int) -> list[Any]:
        """Cells [start, stop), each block decompressed once."""
        out: list[Any] = []
        for b in range(start // BLOCK_CELLS, (max(stop, start) + BLOCK_CELLS - 1) // BLOCK_CELLS):
            lo = b * BLOCK_CELLS
            cells = self._block(b)
            out.extend(cells[max(start - lo, 0) : min(stop - lo, len(cells))])
        return out

    def rows(self, indices: Iterable[int]) -> list[Any]:
        """The cells of `indices` (in that order), each needed block decompressed once."""
        wanted = [int(i) for i in indices]
        by_block: dict[int, list[Any]] = {}
        for b in sorted({i // BLOCK_CELLS for i in wanted}):
            by_block[b] = self._blocks[b].cells()
        return [by_block[i // BLOCK_CELLS][i % BLOCK_CELLS] for i in wanted]

    def __iter__(self) -> Iterator[Any]:
        for b in range(len(self._blocks)):
            yield from self._blocks[b].cells()

    def tolist(self) -> list[Any]:
        return list(self)

    @property
    def packed_bytes(self) -> int:
        """Memory the cells take packed (compressed text; blocks kept raw count their text length)."""
        return sum(
            len(b.packed) if b.packed is not None else sum(len(c) for c in b.raw or () if type(c) is str)
            for b in self._blocks
        )
