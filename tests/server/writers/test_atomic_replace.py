"""Replacing a large output: the old file is freed after the rename, off the caller's thread, and nothing that
stands at the target other than a regular file is ever opened (server.writers.atomic._hold_replaced)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.writers import atomic

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")


def _closers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "free-replaced-file"]


def _deleted_fds(name: str) -> list[str]:
    """This process's descriptors still open on a deleted file called `name`."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if where.endswith(f"/{name} (deleted)"):
            out.append(where)
    return out


@linux_only
def test_a_large_replaced_file_is_freed_after_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "BACKGROUND_FREE_BYTES", 1000)
    target = tmp_path / "metrics.json"
    target.write_bytes(b"old" * 1000)
    old_inode = target.stat().st_ino
    held: list[int] = []
    real = atomic._close_in_background

    def record(fd: int) -> None:
        held.append(os.fstat(fd).st_ino)  # what the caller handed over: the replaced file itself
        real(fd)

    monkeypatch.setattr(atomic, "_close_in_background", record)
    atomic.write_bytes_atomic(target, b"new", roots=DataRoots([tmp_path]))
    assert target.read_bytes() == b"new"
    assert held == [old_inode]
    for t in _closers():
        t.join(5)
    assert _deleted_fds("metrics.json") == []  # closed: the old file's blocks are gone


def test_small_files_links_and_fifos_are_replaced_in_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "BACKGROUND_FREE_BYTES", 1000)
    handed: list[int] = []
    monkeypatch.setattr(atomic, "_close_in_background", handed.append)
    roots = DataRoots([tmp_path])

    small = tmp_path / "small.csv"
    small.write_bytes(b"x" * 10)
    atomic.write_bytes_atomic(small, b"y", roots=roots)
    assert small.read_bytes() == b"y"

    big_elsewhere = tmp_path / "big.bin"
    big_elsewhere.write_bytes(b"z" * 5000)
    link = tmp_path / "link.json"
    link.symlink_to(big_elsewhere)
    atomic.write_bytes_atomic(link, b"new", roots=roots)
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert big_elsewhere.read_bytes() == b"z" * 5000  # the link was replaced, never followed

    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.json"
        os.mkfifo(fifo)
        atomic.write_bytes_atomic(fifo, b"new", roots=roots)  # not opened: an open could block or read a writer
        assert fifo.read_bytes() == b"new"
    assert handed == []


@pytest.mark.skipif(not atomic.FD_WALK, reason="the hold is taken through the folder's descriptor")
def test_the_hold_judges_what_it_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name swapped between the stat and the open to something other than a regular file is let go."""
    monkeypatch.setattr(atomic, "BACKGROUND_FREE_BYTES", 10)
    (tmp_path / "f").write_bytes(b"x" * 100)
    (tmp_path / "d").mkdir()
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    real_open = os.open

    def swapped(name: str, flags: int, *a: object, **k: object) -> int:
        if name == "f":
            return real_open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=dfd)  # what now stands there: a folder
        return real_open(name, flags, *a, **k)  # type: ignore[arg-type]

    try:
        monkeypatch.setattr(atomic.os, "open", swapped)
        assert atomic._hold_replaced(tmp_path / "f", dfd) is None
        monkeypatch.setattr(atomic.os, "open", real_open)
        fd = atomic._hold_replaced(tmp_path / "f", dfd)
        assert fd is not None
        os.close(fd)
    finally:
        os.close(dfd)
