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

from pathlib import Path
from typing import Any

from sdpa_analyzer.server.folder.lru import FileStamp, Lru, file_stamp
from sdpa_analyzer.server.folder.read import CategoryData, category_input_files, load_category
from sdpa_analyzer.server.memory import release_free_heap
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots

MAX_CATEGORIES = 4

__all__ = ["FileStamp", "Lru", "cached_load", "clear", "file_stamp"]

def _data_rows(data: CategoryData) -> int:
    return len(data.df) if data.df is not None else 0


_categories = Lru(MAX_CATEGORIES, _data_rows)  # a category's rows take ~1 KB each


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
