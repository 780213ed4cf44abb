"""Atomic writes of large files in pieces: the guarantees of `server.writers.atomic`, without the whole file in memory.

A temp file in the target folder is written piece by piece, fsynced, then renamed over the target (the
same `atomic_file` as the whole-file writes: checked under the data roots, no link followed, the umask's
mode), so a reader never sees a half-written file and a failure (an exception while producing the pieces
included) leaves the old file, or none, in place.

The pieces are written by a background thread: the write system calls release the GIL, so on a
multi-core machine producing the next piece overlaps with copying the previous one to the kernel (a
10^5-row metrics file is ~350 MB). At most a few pieces wait in the queue.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots
from sdpa_analyzer.server.writers.atomic import atomic_file

_QUEUED_PIECES = 3
_STOP = object()  # ends the writer thread
_WRITEBACK_BYTES = 32 << 20  # start the kernel's writeback every this many bytes, so the final fsync is short


class PieceWriter:
    """`write(piece)` hands a piece to the writer thread; errors from the thread surface on the next call."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._queue: queue.Queue[object] = queue.Queue(maxsize=_QUEUED_PIECES)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="atomic-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        written = synced = 0
        while True:
            piece = self._queue.get()
            if piece is _STOP:
                return
            if self._error is None:
                try:
                    written += self._fh.write(piece)  # type: ignore[arg-type]
                    if written - synced >= _WRITEBACK_BYTES:
                        self._start_writeback(synced, written - synced)
                        synced = written
                except BaseException as exc:  # reported to the producer; keep draining so it never blocks
                    self._error = exc

    def _start_writeback(self, offset: int, length: int) -> None:
        """Ask the kernel to start writing a range to disk now (and not keep it cached): without this, the
        whole file would be flushed by the final fsync, after the last piece."""
        if hasattr(os, "posix_fadvise"):
            self._fh.flush()
            try:
                os.posix_fadvise(self._fh.fileno(), offset, length, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass  # only a hint; some file systems do not take it

    def write(self, piece: bytes) -> None:
        if self._error is not None:
            raise self._error
        if piece:
            self._queue.put(piece)

    def close(self) -> None:
        """Wait for every queued piece to be written; raise the writer's error if there was one."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        if self._error is not None:
            raise self._error

    def finish(self) -> None:
        """Every piece written and synced to disk, before the block ends: the rename that puts the file in place is
        all that is left (a caller that writes a second file inside the block makes both land, or neither)."""
        self.close()
        self._fh.flush()
        os.fsync(self._fh.fileno())


@contextmanager
def atomic_writer(path: Path, *, roots: DataRoots = UNRESTRICTED) -> Iterator[PieceWriter]:
    """`with atomic_writer(p) as w: w.write(...)`; the file appears at `p` only when the block succeeds."""
    with atomic_file(path, roots=roots, buffering=1 << 20) as fh:
        writer = PieceWriter(fh)
        try:
            yield writer
        finally:
            writer.close()
