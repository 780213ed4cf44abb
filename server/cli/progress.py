"""A one-line progress bar on stderr, drawn only when stderr is a terminal (the CLI's side of tool progress)."""

from __future__ import annotations

import sys

from sdpa_analyzer.server.errors import printable


class ProgressBar:
    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, done: float, total: float, message: str) -> None:
        if not self.tty:
            return
        frac = 0.0 if total <= 0 else max(0.0, min(1.0, done / total))
        filled = int(frac * 30)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {frac * 100:5.1f}% {printable(message[:40]):<40}")
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            self.drawn = False
