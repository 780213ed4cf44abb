"""The one error analyze_trace raises for bad input: a single line naming the file, the problem and the fix."""

from __future__ import annotations

from sdpa_analyzer.server.errors import InputError


class TraceError(InputError):
    """A trace file that cannot be analyzed (missing, truncated, not JSON, no events, no GPU kernels).

    `str(err)` is the whole user-facing message. Nothing has been written when it is raised.
    """
