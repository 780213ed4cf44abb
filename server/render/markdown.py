"""The findings prose (markdown an LLM wrote) as HTML for the report: a small subset, escaped throughout.

Block level: ATX headings, paragraphs (each source line kept as a line), pipe tables, `-`/`*`/`1.` lists (one
level), `>` quotes, fenced code, `---` rules; HTML comments (the findings' impact markers) are dropped. Inline:
`code`, **bold**, *italic*, `<br>` (the tables' line breaks) and `{{FILL: …}}` slots, highlighted so an
unfilled template shows. Links keep their text only (the page fetches and links nothing).

Safety: every character of the source reaches the page through html.escape; the only tags in the output are
the ones this module writes. Raw HTML in the source (`<script>`, `<img onerror=…>`) comes out as text.
"""

from __future__ import annotations

import html
import re

MAX_CHARS = 1_000_000  # a findings file is a few kB per finding; beyond this the page would be unusable

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_ORDERED = re.compile(r"^\s*\d{1,9}[.)]\s+")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_SEP_CELL = re.compile(r"^:?-{1,}:?$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_BR = re.compile(r"&lt;br\s*/?&gt;", re.IGNORECASE)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![*\w])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_FILL = re.compile(r"\{\{FILL:.*?\}\}", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def inline(text: str) -> str:
    """One line (or cell) of markdown as escaped HTML with the inline marks above."""
    out = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_inline_plain(text[pos : m.start()]))
        out.append(f"<code>{_esc(m.group(2).strip())}</code>")
        pos = m.end()
    out.append(_inline_plain(text[pos:]))
    return "".join(out)


def _inline_plain(text: str) -> str:
    text = _LINK.sub(lambda m: m.group(1), text)
    s = _esc(text)  # from here on the text holds no '<', '>', '"' or raw '&': only our tags are added
    s = _FILL.sub(lambda m: f'<span class="fill">{m.group(0)}</span>', s)
    s = _BOLD.sub(r"<strong>\1</strong>", s)
    s = _ITALIC.sub(r"<em>\1</em>", s)
    return _BR.sub("<br>", s)


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(body)]


def _is_separator(line: str) -> bool:
    if "|" not in line and "-" not in line:
        return False
    cells = _cells(line)
    return bool(cells) and all(_TABLE_SEP_CELL.match(c.replace(" ", "")) for c in cells)


def _table(lines: list[str]) -> str:
    head = _cells(lines[0])
    rows = [_cells(ln) for ln in lines[2:]]
    th = "".join(f"<th>{inline(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def render_markdown(source: str, *, heading_offset: int = 2) -> str:
    """The markdown as HTML; `#` becomes h(1 + heading_offset), capped at h6 (the report's own headings are h1-h3)."""
    truncated = len(source) > MAX_CHARS
    text = _COMMENT.sub("", source[:MAX_CHARS].replace("\r\n", "\n"))
    lines = text.split("\n")
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(inline(p.strip()) for p in para) + "</p>")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            flush()
            block = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                block.append(lines[i])
                i += 1
            out.append(f"<pre><code>{_esc(chr(10).join(block))}</code></pre>")
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = min(6, len(heading.group(1)) + heading_offset)
            out.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if "|" in line and i + 1 < len(lines) and _is_separator(lines[i + 1]):
            flush()
            block = [line, lines[i + 1]]
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                block.append(lines[i])
                i += 1
            out.append(_table(block))
            continue
        item = _LIST_ITEM.match(line)
        if item:
            flush()
            tag = "ol" if _ORDERED.match(line) else "ul"
            items = []
            while i < len(lines) and (m := _LIST_ITEM.match(lines[i])):
                items.append(m.group(1))
                i += 1
            out.append(f"<{tag}>" + "".join(f"<li>{inline(x)}</li>" for x in items) + f"</{tag}>")
            continue
        if line.lstrip().startswith(">"):
            flush()
            quoted = []
            while i < len(lines) and lines[i].lstrip().startswith(">"):
                quoted.append(lines[i].lstrip()[1:].strip())
                i += 1
            out.append("<blockquote>" + "<br>".join(inline(q) for q in quoted) + "</blockquote>")
            continue
        para.append(line)
        i += 1
    flush()
    if truncated:
        out.append(f'<p class="warn">The file is longer than {MAX_CHARS:,} characters: the rest is not shown.</p>')
    return "".join(out)
