"""Process-level cache of loaded categories (the scored records have theirs in server.scoring.cache).

The MCP server is long-lived and an agent calls load_category_data → compute_roofline → rank_findings on
the same folder; reading a 10^5-row category takes about a second, so each category is loaded once for as
long as its files are unchanged. Entries are keyed by the
(inode, mtime_ns, size) of every file that feeds them, so an edited, replaced or deleted file is never
served stale. Few entries are kept (least recently used go first) and each is bounded in rows, so a server
that looks at many folders holds at most a few categories.

Cached objects are shared between callers: treat them as read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdpa_analyzer.server.folder.read import CategoryData, category_input_files, load_category
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

MAX_CATEGORIES = 4
MAX_ROWS = 250_000  # per map, all entries together (~1 KB a row each); one larger category is still cached, alone

FileStamp = tuple[int, int, int] | None


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

    def __init__(self, max_entries: int, rows_of: Callable[[Any], int]) -> None:
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._max = max_entries
        self._rows_of = rows_of
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
                len(self._items) > self._max or sum(map(self._rows_of, self._items.values())) > MAX_ROWS
            ):
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _data_rows(data: CategoryData) -> int:
    return len(data.df) if data.df is not None else 0


_categories = Lru(MAX_CATEGORIES, _data_rows)


def _category_key(output_dir: Path, category: str, roots: DataRoots) -> tuple[Any, ...]:
    files = category_input_files(output_dir, category)
    # the roots are part of the key: what one server's roots allowed is never served to another's
    return (roots, str(output_dir), category, *(file_stamp(p, roots) for p in files))


def cached_load(output_dir: Path, category: str, roots: DataRoots = UNRESTRICTED) -> CategoryData:
    """load_category, reused while none of the category's input files changed."""
    key = _category_key(output_dir, category, roots)
    data = _categories.get(key)
    if data is None:
        data = load_category(output_dir, category, roots)
        release_free_heap()  # reading freed far more than it kept
        # a file replaced while it was read gives a key that no longer matches: store under the key seen
        # before reading only when it still holds
        if _category_key(output_dir, category, roots) == key:
            _categories.put(key, data)
    return data


def clear() -> None:
    """Forget every loaded category (tests; or to free memory)."""
    _categories.clear()
