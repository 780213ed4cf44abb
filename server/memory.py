"""Give the C heap's free pages back to the operating system after a large step (glibc only).

Loading a 100,000-row category creates and frees hundreds of MB of short-lived strings (CSV cells, joined
columns). glibc keeps the freed pages of its heap mapped, so the server went on holding ~100 MB it no longer
used, and the next step (the metrics JSON) grew from there: measured on bench/bench_server.py's category,
485 MB resident after scoring, 388 MB after `malloc_trim(0)`. A streamed parse likewise frees a few MB of
short-lived blocks per piece, which glibc keeps mapped once its adaptive mmap threshold has grown: tens of MB that
nothing uses while the analysis that follows allocates its own. Where the C library has no such call (musl,
macOS, Windows) this does nothing. The C library is found without `ctypes.util.find_library` (which imports
subprocess and may run ldconfig): every command's start imports this module.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the symbols already loaded into this process, its C library among them
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_heap() -> None:
    """Return the heap's free pages to the OS (a few ms); call it after a step that freed a lot."""
    if _TRIM is not None:
        _TRIM(0)
