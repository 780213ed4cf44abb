"""Which existing file a tool may replace: only one it wrote itself.

render_report and plot_roofline write under names of their own (report.html, reports/<name>.html,
plots/roofline_<cat>_<bytes>.png). A file standing at such a name is replaced only when it carries the tool's
marker in its first bytes (the page's `<meta name="generator">`, the PNG's Software text): a findings file, an
ops CSV, a manifest, a trace or a source file someone put there is never overwritten; the tool refuses in one
line. A link of that name is replaced as a link (the atomic write renames over the name), never written
through, so neither a symbolic nor a hard link lets a write reach another file.
"""

from __future__ import annotations

import stat
from pathlib import Path

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.roots import DataRoots, shown

HEAD_BYTES = 4096  # the markers sit in the first few hundred bytes of our files


def check_replaceable(path: Path, roots: DataRoots, marker: bytes, *, what: str, tool: str) -> None:
    """Refuse (InputError) unless nothing stands at `path`, or a link does, or a regular file of ours (it holds
    `marker` within its first HEAD_BYTES)."""
    st = roots.lstat(path, what=what)
    if st is None or stat.S_ISLNK(st.st_mode):
        return
    if stat.S_ISREG(st.st_mode):
        with roots.open_read(path, what=what) as fh:
            if marker in fh.read(HEAD_BYTES):
                return
        why = f"it was not written by {tool}"
    else:
        why = "it is not a file"
    raise InputError(
        f"{what} {shown(path)} already exists and {why}: refused, it is never replaced — pass another name, or move "
        "that file away"
    )
