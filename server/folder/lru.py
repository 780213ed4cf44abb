"""A small thread-safe LRU map bounded in entries and rows, and the stamp that keys a cached file: the process-level
caches of a long-lived server (server.folder.cache, server.scoring.cache, the metrics reader's listings) share them.
Light on purpose: the metrics reader imports it, and the findings tools must not import pandas through it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

FileStamp = tuple[int, int, int] | None
MAX_ROWS = 250_000  # per map, all entries together, unless a map says otherwise; one larger entry is still kept, alone


def file_stamp(path: Path, roots: DataRoots = UNRESTRICTED) -> FileStamp:
    """(inode, mtime_ns, size), or None when the file is missing or unreachable: any rewrite changes it."""
    try:
        st = roots.stat(path)
    except (OSError, ValueError):  # outside the roots, unresolvable: no stamp (loading then says why)
        return None
    if st is None:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class Lru:
    """A small thread-safe LRU map; values report their row count for the row budget."""

    def __init__(self, max_entries: int, rows_of: Callable[[Any], int], max_rows: int = MAX_ROWS) -> None:
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._max = max_entries
        self._rows_of = rows_of
        self._max_rows = max_rows
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > 1 and (
                len(self._items) > self._max or sum(map(self._rows_of, self._items.values())) > self._max_rows
            ):
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
