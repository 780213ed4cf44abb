"""Just enough markdown for the findings checks: fenced-code masking, markers and pipe tables."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_WORD_RUN = re.compile(r"[\w-]+")
_KEY_START = re.compile(r"[A-Za-z_]")
_VALUE = re.compile(r"\S+")


def structural_lines(lines: list[str]) -> list[str]:
    """The lines with fenced code blanked out, so a quoted example cannot pose as a heading or marker."""
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def parse_attrs(text: str) -> dict[str, str]:
    r"""`kind=p_item low=8.3` -> {"kind": "p_item", "low": "8.3"}; later duplicates win.

    The pairs `re.findall(r"([A-Za-z_][\w-]*)=(\S+)")` finds, found run by run of word characters instead (the
    regex retries every start inside a long word: quadratic): a key is a run that `=` follows, from its first
    letter or `_`; its value runs to the next whitespace, and the search resumes after it."""
    attrs: dict[str, str] = {}
    pos = 0
    while (run := _WORD_RUN.search(text, pos)) is not None:
        pos = run.end()
        if not text.startswith("=", run.end()):
            continue
        key_start = _KEY_START.search(text, run.start(), run.end())
        value = _VALUE.match(text, run.end() + 1)
        if key_start is None or value is None:
            continue
        attrs[text[key_start.start() : run.end()]] = value.group()
        pos = value.end()
    return attrs


def split_cells(line: str) -> list[str]:
    """Cells of a pipe-table row, stripped; `\\|` inside a cell is kept escaped."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip() for cell in _CELL_SPLIT.split(body)]


def unescape_cell(cell: str) -> str:
    return cell.replace("\\|", "|")


def is_separator_row(cells: list[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL.match(cell.replace(" ", "")) for cell in cells)


@dataclass(frozen=True)
class Table:
    """A pipe table: 0-based index of its header line, header cells, and (line index, cells) rows."""

    header_index: int
    header: list[str]
    separator_index: int | None
    separator: list[str] | None
    rows: list[tuple[int, list[str]]]


def find_table(lines: list[str], start: int, stop: int) -> Table | None:
    """The first pipe table in lines[start:stop] (consecutive lines starting with `|`)."""
    index = start
    while index < stop and not lines[index].lstrip().startswith("|"):
        index += 1
    if index >= stop:
        return None
    header_index = index
    block: list[int] = []
    while index < stop and lines[index].lstrip().startswith("|"):
        block.append(index)
        index += 1
    header = split_cells(lines[header_index])
    separator_index: int | None = None
    separator: list[str] | None = None
    body = block[1:]
    if body and is_separator_row(split_cells(lines[body[0]])):
        separator_index = body[0]
        separator = split_cells(lines[separator_index])
        body = body[1:]
    return Table(header_index, header, separator_index, separator, [(i, split_cells(lines[i])) for i in body])
