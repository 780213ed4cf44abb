"""Data roots: every file the tools read or write must resolve (symlinks included) under one of them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from server.errors import InputError, PathOutsideRootsError


@dataclass
class DataRoots:
    """The folders the server may touch. Relative paths are taken against the first root."""

    roots: list[Path] = field(default_factory=lambda: [Path.cwd()])

    def __post_init__(self) -> None:
        if not self.roots:
            self.roots = [Path.cwd()]
        self.roots = [Path(os.path.realpath(Path(r).expanduser())) for r in self.roots]

    def resolve(self, path: str | Path, *, what: str = "path") -> Path:
        """Resolve `path` and refuse it unless it lies under a root (after following symlinks)."""
        raw = str(path).strip()
        if not raw:
            raise InputError(f"{what} is empty: pass a folder or file under {self.describe()}")
        if "\x00" in raw:
            raise InputError(f"{what} contains a NUL byte: pass a plain path")
        p = Path(raw).expanduser()
        if not p.is_absolute():
            p = self.roots[0] / p
        real = Path(os.path.realpath(p))
        for root in self.roots:
            if real == root or real.is_relative_to(root):
                return real
        raise PathOutsideRootsError(
            f"{what} {raw!r} is outside the allowed data roots ({self.describe()}): "
            "pass a path under a root, or start the server with --root <dir>"
        )

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)
