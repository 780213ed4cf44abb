"""Pause Python's cyclic garbage collector while building many objects at once; hand freed heap back after.

Parsing a 10^5-row category allocates millions of lists, dicts and strings, none of them in reference
cycles; every 700 allocations the collector walks the young objects and, as they survive, ever larger
generations, which made bulk steps (orjson.loads of every shape cell, building records) several times
slower. Reference counting still frees everything; collection resumes when the outermost pause ends.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def _malloc_trim() -> object:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


_TRIM = _malloc_trim()


def release_freed_heap() -> None:
    """Return the C heap's free pages to the system (glibc's malloc_trim; nothing elsewhere). A streamed parse frees
    a few MB of short-lived blocks per piece, which glibc keeps mapped once its adaptive mmap threshold has grown:
    tens of MB of resident memory that nothing uses while the analysis that follows allocates its own."""
    if _TRIM is not None:
        _TRIM(0)  # type: ignore[operator]
