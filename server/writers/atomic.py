"""Atomic file writes: write a temp file in the target folder, fsync, then rename over the target.

A reader never sees a half-written file, and a crash leaves the old file (or none) in place.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson


def write_bytes_atomic(path: Path, data: bytes, *, overwrite: bool = True) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not overwrite and path.exists():
        raise FileExistsError(f"{path} already exists; refusing to overwrite it")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if path appeared meanwhile: never clobber
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_text_atomic(path: Path, text: str, *, overwrite: bool = True) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), overwrite=overwrite)


def write_json_atomic(path: Path, obj: Any, *, overwrite: bool = True) -> Path:
    data = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return write_bytes_atomic(path, data + b"\n", overwrite=overwrite)
