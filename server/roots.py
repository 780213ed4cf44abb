"""Data roots: the one sandbox every file the tools read, write or delete goes through.

A path is checked when it is used, not only when a tool receives it: the folder a tool is given, every file
and subfolder under it (category_data/, metadata/, category_findings/, plots/), a `trace_path` found in
metadata and an arch JSON all pass through `DataRoots`:

* `resolve(path)` follows every symbolic link (os.path.realpath) and refuses the result unless it lies
  under a root, so a link anywhere in the path that points out of the roots is refused, at any depth;
* opening then walks the resolved path one component at a time from its root, each `openat` refusing to
  follow a link (O_NOFOLLOW), so a link swapped in between the check and the open is refused too: what is
  opened is exactly the path that was checked;
* reads open regular files only (a FIFO or a device would hang or never end);
* writes (`directory(create=True)` + the atomic writers) resolve the target's folder the same way and never
  follow the target's own name: an atomic rename replaces a link standing there instead of writing
  through it; deletions (`unlink`) remove a name in a checked folder, never what a link points to; `rename`
  moves a name within checked folders (a link is moved as a link); `remove_tree` deletes only folders whose
  name the caller says it made, by folder descriptors (no link followed inside the tree either);
* hard links: a hard link is the file itself under another name, so one standing under a root is read as a
  file of that root (whoever could make it could copy the file there as well); nothing ever writes into an
  existing file (writes are a temp file renamed over the name), so a hard-linked outside file is never changed.

Paths keep their exact characters: nothing is stripped, and a path containing a NUL or a line break is
refused (it is never what a person meant, and it would break the one-line error messages).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sdpa_analyzer.server.errors import InputError, PathOutsideRootsError, shorten_middle

_PATH_SHOWN = 120  # characters of a path quoted in an error (middle elided)
# A configuration file read whole (a model's config.json, an arch JSON): kilobytes in practice (Llama 3 70B's
# config.json is under 1 KiB; an image classifier's 21k-entry id2label about 1 MiB); 4 MiB keeps a trace or a
# weights file passed by mistake from being read into memory.
CONFIG_FILE_MAX_BYTES = 4 << 20
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# openat with O_NOFOLLOW, one component at a time (Linux, macOS, BSD); elsewhere: the realpath check alone
FD_WALK = bool(_O_NOFOLLOW and _O_DIRECTORY and os.open in os.supports_dir_fd)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC


def shown(path: str | Path, limit: int = _PATH_SHOWN) -> str:
    """A path as an error quotes it: its exact characters, the middle elided when long."""
    return shorten_middle(str(path), limit)


@dataclass(frozen=True)
class DataRoots:
    """The folders the server may touch (resolved once, at start). Relative paths are taken against the first.

    Immutable and hashable, so caches can key on it (what one set of roots loaded is never served to another)."""

    roots: Sequence[str | Path] = ()
    cwd_relative: bool = False  # relative paths against the working directory of the moment (UNRESTRICTED)

    def __post_init__(self) -> None:
        given = tuple(self.roots) or (Path.cwd(),)
        object.__setattr__(self, "roots", tuple(Path(os.path.realpath(Path(r).expanduser())) for r in given))

    # ---- checking ---------------------------------------------------------------------------------
    def resolve(self, path: str | Path, *, what: str = "path") -> Path:
        """`path` with every link followed, refused unless it lies under a root. Nothing is opened."""
        raw = self._checked_text(path, what)
        p = Path(raw).expanduser()
        if not p.is_absolute():
            p = (Path.cwd() if self.cwd_relative else self.roots[0]) / p
        try:
            real = Path(os.path.realpath(p))
        except (OSError, ValueError) as exc:  # a path too long for the OS, a link loop on some platforms
            why = getattr(exc, "strerror", None) or type(exc).__name__
            raise InputError(f"{what} {shown(raw)} cannot be resolved ({why}): pass a shorter, plain path") from None
        if self.root_of(real) is None:
            roots = shorten_middle(self.describe(), 100)
            if self.root_of(Path(os.path.abspath(p))) is not None:  # under a root as written: a link leads out
                raise PathOutsideRootsError(  # the link's target is not named: what lies outside is not ours to show
                    f"{what} {shown(raw)} leads through a symbolic link outside the allowed data roots: refused; "
                    "copy the data under a root instead of linking to it"
                )
            raise PathOutsideRootsError(
                f"{what} {shown(raw)} is outside the allowed data roots ({roots}): "
                "pass a path under a root, or start the server with --root <dir>"
            )
        return real

    def resolve_inside(self, folder: Path, relative: str | Path, *, what: str = "path") -> Path:
        """`relative` taken against `folder` (an absolute `relative` stands alone), then resolved and checked."""
        rel = os.fspath(relative)
        return self.resolve(rel if os.path.isabs(rel) else os.path.join(folder, rel), what=what)

    def root_of(self, real: Path) -> Path | None:
        """The most specific root holding an already resolved path, or None."""
        best: Path | None = None
        for root in self.roots:
            if (real == root or real.is_relative_to(root)) and (best is None or len(root.parts) > len(best.parts)):
                best = root
        return best

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)

    # ---- opening ----------------------------------------------------------------------------------
    @contextmanager
    def directory(self, path: str | Path, *, what: str = "folder", create: bool = False) -> Iterator[int]:
        """A file descriptor of the folder `path` (resolved and checked), opened without following a link at
        any component; with `create`, missing components are made on the way (each one checked as it is)."""
        real = self.resolve(path, what=what)
        fd = self._walk(real, what=what, create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    def open_read(self, path: str | Path, *, what: str = "file") -> BinaryIO:
        """The regular file `path` opened for reading (binary). A missing file raises FileNotFoundError naming
        the path; a folder, FIFO or device is refused; a link swapped in since the check is refused."""
        real = self.resolve(path, what=what)
        if not FD_WALK:
            fd = os.open(real, os.O_RDONLY | _O_CLOEXEC | _O_NONBLOCK)
        else:
            with self._parent(real, what) as dfd:
                try:
                    fd = os.open(real.name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, dir_fd=dfd)
                except OSError as exc:
                    raise self._open_error(exc, real, what, dfd) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
                raise InputError(f"{what} {shown(real)} is {kind}: pass a file")
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(
        self, path: str | Path, *, what: str = "file", limit: int | None = None, fix: str = "pass the right file"
    ) -> bytes:
        """The whole file. With `limit`: a file over `limit` bytes is refused from its size, before anything is read
        (one line naming the path as given, the limit and `fix`); one that grows while read is cut at `limit` + 1."""
        with self.open_read(path, what=what) as fh:
            if limit is None:
                return fh.read()
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(limit + 1) if size <= limit else b""
            if size > limit or len(data) > limit:
                raise InputError(
                    f"{what} {shown(path)} is {max(size, len(data))} bytes, over the {limit}-byte limit for a {what} "
                    f"— {fix}"
                )
            return data

    def stat(self, path: str | Path, *, what: str = "path") -> os.stat_result | None:
        """The resolved path's status (links inside the roots followed), or None when nothing is there."""
        real = self.resolve(path, what=what)
        try:
            if not FD_WALK:
                return os.stat(real)
            if self.root_of(real) == real:
                return os.stat(real)
            with self._parent(real, what) as dfd:
                return os.stat(real.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except NotADirectoryError:  # a file where a folder was expected on the way: nothing of that name
            return None

    def lstat(self, path: str | Path, *, what: str = "path") -> os.stat_result | None:
        """The status of the entry named `path` itself (its folder resolved and walked; a link is reported as a
        link, never followed), or None when nothing of that name is there."""
        target = self.write_target(path, what=what)
        try:
            if not FD_WALK:
                return os.lstat(target)
            with self._parent(target, what) as dfd:
                return os.stat(target.name, dir_fd=dfd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def is_file(self, path: str | Path, *, what: str = "file") -> bool:
        st = self.stat(path, what=what)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, path: str | Path, *, what: str = "folder") -> bool:
        st = self.stat(path, what=what)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def exists(self, path: str | Path, *, what: str = "path") -> bool:
        return self.stat(path, what=what) is not None

    def unlink(self, path: str | Path, *, what: str = "file") -> bool:
        """Remove the file named `path` (its folder resolved and checked; the name itself never followed).
        Returns False when there was nothing to remove."""
        target = self.write_target(path, what=what)
        try:
            if not FD_WALK:
                os.unlink(target)
                return True
            with self._parent(target, what) as dfd:
                os.unlink(target.name, dir_fd=dfd)
            return True
        except FileNotFoundError:
            return False

    def list_dir(self, path: str | Path, *, what: str = "folder") -> list[tuple[str, os.stat_result]]:
        """The entries of the folder `path` (opened without following a link at any depth), each with its own
        status: a link is reported as a link, never followed. Sorted by name."""
        with self.directory(path, what=what) as fd:
            names = sorted(os.listdir(fd) if FD_WALK else os.listdir(self.resolve(path, what=what)))
            out = []
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False) if FD_WALK else os.lstat(Path(path) / name)
                except FileNotFoundError:  # gone meanwhile
                    continue
                out.append((name, st))
            return out

    def rename(self, src: str | Path, dst: str | Path, *, what: str = "folder", replace: bool = False) -> None:
        """Rename the entry named `src` to `dst` (each folder resolved, checked and walked without following a link;
        the names themselves are never followed: a link is renamed as a link). Without `replace` an existing `dst`
        is never replaced (FileExistsError)."""
        source, target = self.write_target(src, what=what), self.write_target(dst, what=what)
        if not FD_WALK:
            if not replace and os.path.lexists(target):
                raise FileExistsError(errno.EEXIST, "File exists", str(target))
            os.rename(source, target)
            return
        with self._parent(source, what) as sfd, self._parent(target, what) as tfd:
            if not replace:
                try:
                    os.stat(target.name, dir_fd=tfd, follow_symlinks=False)
                    raise FileExistsError(errno.EEXIST, "File exists", str(target))
                except FileNotFoundError:
                    pass
            try:
                os.rename(source.name, target.name, src_dir_fd=sfd, dst_dir_fd=tfd)
            except OSError as exc:
                exc.filename = str(source)
                raise

    def remove_tree(self, path: str | Path, *, ours: Callable[[str], bool], what: str = "folder") -> bool:
        """Remove the folder named `path` and everything in it, when `ours(name)` says the name is one we make
        (a staging folder, a replaced folder): its parent resolved, checked and walked without following a link,
        the tree removed by folder descriptors (shutil.rmtree's symlink-attack-safe walk), so nothing outside is
        ever deleted. A link of that name is removed itself, never what it points to. False when absent."""
        target = self.write_target(path, what=what)
        if not ours(target.name):
            raise InputError(f"{what} {shown(target)} is not a folder this tool made: not removed")
        if not (FD_WALK and shutil.rmtree.avoids_symlink_attacks):
            if not os.path.lexists(target):
                return False
            if os.path.islink(target):
                os.unlink(target)
            else:
                shutil.rmtree(target)
            return True
        try:
            with self._parent(target, what) as pfd:
                try:
                    st = os.stat(target.name, dir_fd=pfd, follow_symlinks=False)
                except FileNotFoundError:
                    return False
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(target.name, dir_fd=pfd)
                else:
                    os.unlink(target.name, dir_fd=pfd)
        except FileNotFoundError:  # its folder is gone: nothing to remove
            return False
        return True

    def write_target(self, path: str | Path, *, what: str = "file") -> Path:
        """The path a write or a deletion acts on: its folder resolved and checked, its own name kept (a link
        of that name is replaced or removed, never followed)."""
        raw = self._checked_text(path, what)
        p = Path(raw).expanduser()
        if p.name in ("", ".", "..") or raw.endswith(os.sep):
            raise InputError(f"{what} {shown(raw)} names a folder, not a file: pass a file path")
        return self.resolve(p.parent, what=what) / p.name

    # ---- internals --------------------------------------------------------------------------------
    def _checked_text(self, path: str | Path, what: str) -> str:
        raw = os.fspath(path)
        if not raw.strip():
            raise InputError(f"{what} is empty: pass a folder or file under {shorten_middle(self.describe(), 100)}")
        if "\x00" in raw:
            raise InputError(f"{what} contains a NUL byte: pass a plain path")
        if "\n" in raw or "\r" in raw:
            raise InputError(f"{what} {shown(repr(raw))} contains a line break: pass the path without it")
        return raw

    @contextmanager
    def _parent(self, real: Path, what: str) -> Iterator[int]:
        fd = self._walk(real.parent, what=what, create=False)
        try:
            yield fd
        finally:
            os.close(fd)

    def _walk(self, real: Path, *, what: str, create: bool) -> int:
        root = self.root_of(real)
        if root is None:  # resolve() was bypassed: refuse rather than open
            raise PathOutsideRootsError(f"{what} {shown(real)} is outside the allowed data roots")
        if not FD_WALK:
            if create:
                real.mkdir(parents=True, exist_ok=True)
            return os.open(real, os.O_RDONLY | _O_CLOEXEC)
        fd = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        done = root
        try:
            for part in real.relative_to(root).parts:
                done = done / part
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(real)) from None
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass  # made by someone else meanwhile: opened (and checked) below
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nfd
            return fd
        except OSError as exc:
            err = self._open_error(exc, done, what, fd)
            os.close(fd)
            raise err from None

    @staticmethod
    def _open_error(exc: OSError, at: Path, what: str, dfd: int) -> OSError | InputError:
        """A failed openat as the error to raise: a link found where the check saw none is an escape attempt."""
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            try:
                is_link = stat.S_ISLNK(os.stat(at.name, dir_fd=dfd, follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            if is_link or exc.errno != errno.ENOTDIR:
                return PathOutsideRootsError(
                    f"{what} {shown(at)} became a symbolic link after it was checked: refused; retry, and check "
                    "who else writes into this folder"
                )
            return InputError(f"{what}: {shown(at)} is not a folder")
        exc.filename = str(at)
        return exc


UNRESTRICTED = DataRoots([Path("/")], cwd_relative=True)
"""The roots of a library caller that checked its paths itself (or runs with its own permissions, as the CLI
does without --root): every resolved path is allowed, and opening still never follows a swapped-in link."""
