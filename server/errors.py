"""User-facing input errors: one line naming the file, the field and the fix."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input the user can fix. str(err) is the whole message: one line, no traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def os_error_message(exc: OSError) -> str:
    """One line for a file-system failure: which path, what went wrong, what to do."""
    where = exc.filename if exc.filename is not None else "a file"
    return f"{where}: {exc.strerror or type(exc).__name__} — check the path and that its folder is writable"


class PathOutsideRootsError(InputError):
    """A path resolves outside every configured data root."""
