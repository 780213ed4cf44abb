"""Pause Python's cyclic garbage collector while building many objects at once (handing freed heap back to the OS
after is the server's `release_free_heap`).

Parsing a 10^5-row category allocates millions of lists, dicts and strings, none of them in reference
cycles; every 700 allocations the collector walks the young objects and, as they survive, ever larger
generations, which made bulk steps (orjson.loads of every shape cell, building records) several times
slower. Reference counting still frees everything; collection resumes when the outermost pause ends, whichever
thread it is on (a server runs calls on several threads; the batch op parser pauses inside a tool's pause).
"""

from __future__ import annotations

import gc
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


__all__ = ["gc_paused"]
