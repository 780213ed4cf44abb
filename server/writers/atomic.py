"""Atomic file writes through the data roots: a temp file in the target folder, fsync, then a rename over the target.

A reader never sees a half-written file, and a crash leaves the old file (or none) in place. The target's folder
is opened through `DataRoots.directory` (checked under the roots, no link followed at any depth, missing folders
made on the way); the temp file is created in that folder by name (O_EXCL, O_NOFOLLOW) and renamed within it,
so nothing is ever written through a link, and a link standing at the target's name is replaced, not followed.

Modes follow the umask: the temp file is created with mode 0o666 and the kernel applies the umask (and any
default ACL) as it would for any file the user creates; the rename keeps that mode.

Stale temp files: a writer holds an exclusive flock on its temp file until the rename, so a temp file that
nobody holds and that has not changed for STALE_SECONDS was left by a killed run; each write sweeps those of
its folder (names `.<target>.<8 characters>.tmp`, the pattern of this module and of its mkstemp predecessor).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import string
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from sdpa_analyzer.server.roots import FD_WALK, UNRESTRICTED, DataRoots

if os.name == "posix":
    import fcntl
else:  # pragma: no cover - no cross-process locks elsewhere: stale files are judged by age alone
    fcntl = None

STALE_SECONDS = 60.0  # an unlocked temp file untouched this long belongs to a dead writer
_TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
_TOKEN_CHARS = string.ascii_lowercase + string.digits + "_"
# a replaced file at least this large is freed after the rename, off the caller's thread (_hold_replaced)
BACKGROUND_FREE_BYTES = 16 << 20
# opening an entry only to hold it (a lock, a replaced file): never through a link, never blocking on a FIFO
_OPEN_TO_HOLD = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def temp_name(target: str) -> str:
    return f".{target}.{''.join(secrets.choice(_TOKEN_CHARS) for _ in range(8))}.tmp"


@contextmanager
def atomic_file(
    path: str | Path, *, roots: DataRoots = UNRESTRICTED, overwrite: bool = True, buffering: int = -1
) -> Iterator[BinaryIO]:
    """`with atomic_file(p) as fh: fh.write(...)`: the file appears at `p` only when the block succeeds.

    With `overwrite=False` an existing file (or link) at `p` is never replaced: FileExistsError, also when it
    appears while the block runs. Failures are OSErrors naming the target (not the temp file)."""
    target = roots.write_target(path, what="output file")
    with roots.directory(target.parent, what="output folder", create=True) as dfd:
        if not overwrite and _lexists(target.name, dfd, target):
            raise FileExistsError(f"{target} already exists; refusing to overwrite it")
        sweep_stale_temps(dfd, target.parent)
        tmp = temp_name(target.name)
        try:
            fd = _open_temp(tmp, dfd, target)
        except OSError as exc:
            raise _named(exc, target) from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # live: the sweep of another writer leaves it alone
            with os.fdopen(fd, "wb", buffering=buffering, closefd=False) as fh:
                yield fh
                fh.flush()
            os.fsync(fd)
            _commit(tmp, target, dfd, overwrite)
        except BaseException as exc:
            with suppress(OSError):
                _unlink(tmp, dfd, target)
            if isinstance(exc, OSError):
                raise _named(exc, target) from None
            raise
        finally:
            os.close(fd)


def write_bytes_atomic(
    path: str | Path, data: bytes, *, roots: DataRoots = UNRESTRICTED, overwrite: bool = True
) -> Path:
    with atomic_file(path, roots=roots, overwrite=overwrite) as fh:
        fh.write(data)
    return roots.write_target(path)


def write_text_atomic(path: str | Path, text: str, *, roots: DataRoots = UNRESTRICTED, overwrite: bool = True) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), roots=roots, overwrite=overwrite)


def write_json_atomic(path: str | Path, obj: Any, *, roots: DataRoots = UNRESTRICTED, overwrite: bool = True) -> Path:
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return write_bytes_atomic(path, data + b"\n", roots=roots, overwrite=overwrite)


def sweep_stale_temps(dfd: int, folder: Path) -> int:
    """Remove the temp files of dead writers in the folder open as `dfd`; returns how many went."""
    return sweep_stale(dfd, folder, lambda name: _TEMP_NAME.match(name) is not None, directories=False)


def sweep_stale(dfd: int, folder: Path, ours: Callable[[str], bool], *, directories: bool) -> int:
    """Remove what dead runs of ours left in the folder open as `dfd`: the entries `ours` recognizes by name
    (temp files, or stage folders with `directories`) that nobody holds a lock on and that have not changed
    for STALE_SECONDS. Never follows a link; returns how many went."""
    removed = 0
    try:
        names = os.listdir(dfd) if FD_WALK else os.listdir(folder)
    except OSError:
        return 0
    now = time.time()
    for name in names:
        if not ours(name):
            continue
        try:
            st = _lstat(name, dfd, folder / name)
            kind_ok = stat.S_ISDIR(st.st_mode) if directories else stat.S_ISREG(st.st_mode)
            if not kind_ok or now - st.st_mtime < STALE_SECONDS or not _unheld(name, dfd, folder, directories):
                continue
            if directories:
                remove_tree(dfd, folder, name)
            else:
                _unlink(name, dfd, folder / name)
            removed += 1
        except OSError:
            continue  # gone meanwhile, or not ours to judge
    return removed


def remove_tree(dfd: int, folder: Path, name: str) -> None:
    """Remove the folder `name` (one of ours) inside the folder open as `dfd`, never following a link."""
    if FD_WALK and shutil.rmtree.avoids_symlink_attacks:
        shutil.rmtree(name, dir_fd=dfd)
    else:
        shutil.rmtree(folder / name)


def _unheld(name: str, dfd: int, folder: Path, directory: bool = False) -> bool:
    """True when no process holds the entry's lock (the run that made it is gone)."""
    if fcntl is None:
        return True
    flags = _OPEN_TO_HOLD
    if directory:
        flags |= getattr(os, "O_DIRECTORY", 0)
    fd = os.open(name, flags, dir_fd=dfd) if FD_WALK else os.open(folder / name, flags)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # also drops the lock just taken
    return True


def _open_temp(tmp: str, dfd: int, target: Path) -> int:
    return os.open(tmp, _CREATE, 0o666, dir_fd=dfd) if FD_WALK else os.open(target.parent / tmp, _CREATE, 0o666)


def _commit(tmp: str, target: Path, dfd: int, overwrite: bool) -> None:
    """Rename the finished temp file onto the target (in the same folder), then make the rename durable."""
    if FD_WALK:
        if overwrite:
            replaced = _hold_replaced(target, dfd)
            os.replace(tmp, target.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            if replaced is not None:
                _close_in_background(replaced)
        else:
            os.link(tmp, target.name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)  # EEXIST: never clobber
            os.unlink(tmp, dir_fd=dfd)
        with suppress(OSError):  # some file systems cannot fsync a folder; the data itself is already synced
            os.fsync(dfd)
        return
    src = target.parent / tmp
    if overwrite:
        os.replace(src, target)
    else:
        os.link(src, target)
        os.unlink(src)


def _hold_replaced(target: Path, dfd: int) -> int | None:
    """An open descriptor of the large regular file a rename is about to replace, or None.

    Why: the rename frees the replaced file's blocks and cached pages when it drops the last reference, inside
    the call: 0.1-0.2 s for a 740 MB metrics JSON, every time a tool rewrites its output. Held open across the
    rename, the file is freed when the descriptor is closed, on a background thread (os.close releases the GIL).
    Only a regular file, judged after opening it (what stands there may have changed since any check), and
    never through a link."""
    try:
        st = _lstat(target.name, dfd, target)
        if not stat.S_ISREG(st.st_mode) or st.st_size < BACKGROUND_FREE_BYTES:
            return None
        fd = os.open(target.name, _OPEN_TO_HOLD, dir_fd=dfd)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _close_in_background(fd: int) -> None:
    try:
        threading.Thread(target=_close_quietly, args=(fd,), name="free-replaced-file", daemon=True).start()
    except RuntimeError:  # no thread can start (interpreter shutting down): free it here
        _close_quietly(fd)


def _close_quietly(fd: int) -> None:
    with suppress(OSError):
        os.close(fd)


def _lexists(name: str, dfd: int, path: Path) -> bool:
    try:
        _lstat(name, dfd, path)
    except FileNotFoundError:
        return False
    return True


def _lstat(name: str, dfd: int, path: Path) -> os.stat_result:
    return os.stat(name, dir_fd=dfd, follow_symlinks=False) if FD_WALK else os.lstat(path)


def _unlink(name: str, dfd: int, path: Path) -> None:
    if FD_WALK:
        os.unlink(name, dir_fd=dfd)
    else:
        os.unlink(path)


def _named(exc: OSError, target: Path) -> OSError:
    """The same error, naming the target file (a failed write() names no file at all, a failed create the temp
    file). One named so already is kept: it came from another file written inside this one's block (both land, or
    neither), and names that file."""
    if (isinstance(exc, FileExistsError) and exc.errno is None) or getattr(exc, _NAMED, False):
        return exc
    err = type(exc)(exc.errno, exc.strerror or str(exc), str(target))
    setattr(err, _NAMED, True)
    return err


_NAMED = "sdpa_analyzer_target"  # set on an OSError that names its target file
