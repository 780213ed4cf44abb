"""User-facing input errors: one line naming the file, the field and the fix."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input the user can fix. str(err) is the whole message: one line, no traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class PathOutsideRootsError(InputError):
    """A path resolves outside every configured data root."""
