"""The markdown of a findings file as the checks read it: markdown-it-py's block tokens with their line maps
(headings, fenced code, paragraphs, tables), the inline pieces of the prose (text and code spans, each on its
line), plus the pipe-table reader and the marker attributes the contract itself defines.

One parser setup serves every check: markdown-it's fenced code, `#` headings and paragraphs, nothing else. No
setext headings (a `---` under a line is not a heading: the contract's headings are `#` headings), no HTML blocks
(an `<!-- impact-... -->` marker is the contract's own syntax, read by document.py; an unclosed `<!--` must not
swallow the rest of the file), no lists, quotes or indented code (a heading or fence is one at the start of a line,
as the contract writes them; their text is paragraph text to the prose checks). Blocks are parsed without their
inline content; the prose checks parse the inline content of the paragraphs they read, with code spans, escapes
and line breaks only. Both passes are linear in the text (tests/server/security and bench/bench_hardening.py hold
the inputs that once were not); the block pass costs about 40 µs a line on a 2-core machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

_BLOCKS = MarkdownIt("zero").enable(["fence", "heading"]).disable("inline")
_INLINE = MarkdownIt("zero").enable(["backticks", "escape", "newline"])

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_CELL = re.compile(r"^:?-+:?$")
_WORD_RUN = re.compile(r"[\w-]+")
_KEY_START = re.compile(r"[A-Za-z_]")
_VALUE = re.compile(r"\S+")


@dataclass(frozen=True)
class Block:
    """A leaf block: `heading`, `paragraph` or `fence`, on lines [start, end) (0-based), with its nesting depth
    (0: top level), heading level and inline content."""

    kind: str
    start: int
    end: int
    depth: int
    level: int
    content: str


_LEAF = {"heading_open": "heading", "paragraph_open": "paragraph"}


def read_blocks(lines: list[str]) -> list[Block]:
    """The leaf blocks of the file, in line order. The lines are joined with `\\n` so that markdown-it's line
    numbers are the caller's (`str.splitlines` also splits at characters markdown does not, such as U+2028)."""
    tokens = _BLOCKS.parse("\n".join(lines))
    blocks: list[Block] = []
    for position, token in enumerate(tokens):
        if token.map is None:
            continue
        start, end = token.map
        kind = _LEAF.get(token.type)
        if kind is not None:
            inline = tokens[position + 1] if position + 1 < len(tokens) else None
            content = inline.content if inline is not None and inline.type == "inline" else ""
            level = int(token.tag[1:]) if kind == "heading" else 0
            blocks.append(Block(kind, start, end, token.level, level, content))
        elif token.type == "fence":
            blocks.append(Block("fence", start, end, token.level, 0, ""))
    return blocks


def structural_lines(lines: list[str], blocks: list[Block] | None = None) -> list[str]:
    """The lines with fenced code blanked out, so a quoted example cannot pose as a heading or marker."""
    out = list(lines)
    for block in read_blocks(lines) if blocks is None else blocks:
        if block.kind == "fence":
            out[block.start : block.end] = [""] * (block.end - block.start)
    return out


@dataclass(frozen=True)
class Piece:
    """A run of prose on one line (0-based): plain `text`, or a `code` span's content (the backticks dropped)."""

    line: int
    kind: str
    text: str


def inline_pieces(block: Block) -> list[Piece]:
    """The text and code spans of a paragraph or heading, each with its source line (a line break inside a code
    span is not counted: markdown makes it a space)."""
    if not block.content:
        return []
    tokens = _INLINE.parseInline(block.content)
    children = tokens[0].children if tokens and tokens[0].children else []
    line = block.start
    pieces: list[Piece] = []
    for token in children:
        if token.type in ("softbreak", "hardbreak"):
            line += 1
        elif token.type == "code_inline":
            pieces.append(Piece(line, "code", token.content))
        elif token.content:
            pieces.append(Piece(line, "text", token.content))
    return pieces


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


# ---- the Data table, read line by line ---------------------------------------------------------------------
# A table whose separator row is missing or has the wrong number of cells is no table to a markdown parser (its
# lines become a paragraph); rule 5 has to say what is broken in it, so the Data table rules read the pipe lines
# themselves.


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
