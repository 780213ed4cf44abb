"""User-facing input errors: one line naming the file, the field and the fix."""

from __future__ import annotations

import errno

MESSAGE_LIMIT = 300  # characters of an error line (an LLM and a terminal read it whole)
_WORD_LIMIT = 150  # a longer word (a whole CSV cell, a very deep path) is shortened in its middle
_URL_LIMIT = 400  # ... but a URL only past this (the sources of our data files are shorter)


class InputError(ValueError):
    """Bad input the user can fix. str(err) is the whole message: one line, no traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class PathOutsideRootsError(InputError):
    """A path resolves outside every configured data root."""


def shorten_middle(text: str, limit: int) -> str:
    """`text` cut to `limit` characters by replacing its middle with an ellipsis (both ends stay readable)."""
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 2)
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def _is_url(word: str) -> bool:
    return "://" in word[:16]


def shorten_message(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """One line of at most `limit` characters: whitespace collapsed, overlong words (cells, paths) shortened in
    the middle, then whole words dropped from the middle of the line if it is still too long, so the cause at
    the start and the fix at the end both survive, and no word is cut. A URL is kept whole (up to
    `_URL_LIMIT`): a cut one leads nowhere."""
    words = [shorten_middle(w, _URL_LIMIT if _is_url(w) else _WORD_LIMIT) for w in str(message).split()]
    text = " ".join(words)
    if len(text) <= limit:
        return text
    budget = limit - 2  # " …" joins the two halves
    head: list[str] = []
    tail: list[str] = []
    head_len = tail_len = 0
    i, j = 0, len(words) - 1
    while i <= j:  # the shorter half takes the next word; when neither half's next word fits, stop
        for take_head in (True, False) if head_len <= tail_len else (False, True):
            w = words[i] if take_head else words[j]
            if head_len + tail_len + len(w) + 1 > budget:
                continue
            if take_head:
                head.append(w)
                head_len += len(w) + 1
                i += 1
            else:
                tail.append(w)
                tail_len += len(w) + 1
                j -= 1
            break
        else:
            break
    if not head and not tail:  # one word longer than the whole line
        return shorten_middle(text, limit)
    return " ".join([*head, "…", *reversed(tail)])


_OS_FIXES = {
    errno.ENOSPC: "free space on that disk (or pass another output_dir) and run the tool again",
    errno.EDQUOT: "free space within your disk quota (or pass another output_dir) and run the tool again",
    errno.EROFS: "the file system is read-only: pass an output_dir on a writable one",
    errno.EACCES: "check the permissions of the file and its folder",
    errno.EPERM: "check the permissions of the file and its folder",
    errno.ENAMETOOLONG: "pass a shorter path",
    errno.EISDIR: "a folder stands where a file is expected: pass a file path, or move the folder",
}


def os_error_message(exc: OSError) -> str:
    """One line for a file-system failure: which path, what went wrong, what to do about that cause."""
    where = exc.filename if exc.filename is not None else "a file"
    fix = _OS_FIXES.get(exc.errno or 0, "check the path and that its folder is writable")
    return f"{where}: {exc.strerror or type(exc).__name__} — {fix}"
