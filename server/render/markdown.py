"""The findings prose (markdown an LLM wrote) as HTML for the report, read by markdown-it-py, escaped throughout.

Block level: headings, paragraphs (each source line kept as a line), pipe tables, lists, `>` quotes, fenced and
indented code, rules; HTML comments (the findings' impact markers) are dropped. Inline: `code`, **bold**,
*italic*, `<br>` (the tables' line breaks) and `{{FILL: …}}` slots, highlighted so an unfilled template shows.
Links and images keep their text only (the page fetches and links nothing).

Safety: markdown-it parses with raw HTML off, and this module writes the page from the tokens itself (not with
markdown-it's renderer): every character of the source reaches the page through html.escape, and the only tags
in the output are the ones written here. Raw HTML in the source (`<script>`, `<img onerror=…>`) comes out as text.
Parsing is linear in the text (bench/bench_hardening.py times the costliest inputs).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

MAX_CHARS = 1_000_000  # a findings file is a few kB per finding; beyond this the page would be unusable

# Links and images are not markdown-it's: its link rule costs ~50 µs a character on a run of `[` (a 1 MB file of
# them: a minute); `[text](target)` and `![alt](target)` keep their text through _LINK, which is linear.
_MD = MarkdownIt("commonmark", {"html": False}).disable(["lheading", "link", "image"]).enable("table")
_LINK = re.compile(r"!?\[([^\[\]]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")

_BR = re.compile(r"&lt;br\s*/?&gt;", re.IGNORECASE)
_FILL = re.compile(r"\{\{FILL:.*?\}\}")

# block token -> the tag it opens (the ones handled here; anything else keeps only its content)
_BLOCK_TAGS = {
    "bullet_list_open": "<ul>",
    "bullet_list_close": "</ul>",
    "ordered_list_open": "<ol>",
    "ordered_list_close": "</ol>",
    "list_item_open": "<li>",
    "list_item_close": "</li>",
    "thead_open": "<thead>",
    "thead_close": "</thead>",
    "tbody_open": "<tbody>",
    "tbody_close": "</tbody>",
    "tr_open": "<tr>",
    "tr_close": "</tr>",
    "th_open": "<th>",
    "th_close": "</th>",
    "td_open": "<td>",
    "td_close": "</td>",
    "table_open": '<div class="scroll"><table>',
    "table_close": "</table></div>",
    "hr": "<hr>",
}
_INLINE_TAGS = {
    "strong_open": "<strong>",
    "strong_close": "</strong>",
    "em_open": "<em>",
    "em_close": "</em>",
    "softbreak": "<br>",
    "hardbreak": "<br>",
}


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def _text(s: str) -> str:
    """Plain text: links reduced to their text, escaped, then the two marks that survive as markup: `<br>` and
    highlighted `{{FILL: …}}`."""
    out = _FILL.sub(lambda m: f'<span class="fill">{m.group(0)}</span>', _esc(_LINK.sub(r"\1", s)))
    return _BR.sub("<br>", out)


def _inline(children: Sequence[Token] | None) -> str:
    out: list[str] = []
    for token in children or ():
        if token.type in ("text", "text_special"):
            out.append(_text(token.content))
        elif token.type == "code_inline":
            out.append(f"<code>{_esc(token.content.strip())}</code>")
        elif token.type in _INLINE_TAGS:
            out.append(_INLINE_TAGS[token.type])
    return "".join(out)


def strip_comments(text: str) -> str:
    """`<!-- … -->` removed, each up to the first `-->` after it (an unclosed one stays as text), in linear time."""
    out: list[str] = []
    pos = 0
    while (start := text.find("<!--", pos)) >= 0:
        close = text.find("-->", start + 4)
        if close < 0:
            break
        out.append(text[pos:start])
        pos = close + 3
    out.append(text[pos:])
    return "".join(out)


def render_markdown(source: str, *, heading_offset: int = 2) -> str:
    """The markdown as HTML; `#` becomes h(1 + heading_offset), capped at h6 (the report's own headings are h1-h3)."""
    truncated = len(source) > MAX_CHARS
    tokens = _MD.parse(strip_comments(source[:MAX_CHARS].replace("\r\n", "\n")))
    out: list[str] = []
    quote_depth = 0
    for i, token in enumerate(tokens):
        kind = token.type
        if kind == "heading_open":
            level = min(6, int(token.tag[1:]) + heading_offset)
            out.append(f"<h{level}>{_inline(tokens[i + 1].children)}</h{level}>")
        elif kind == "paragraph_open":
            body = _inline(tokens[i + 1].children)
            if token.hidden:  # a tight list item's text
                out.append(body)
            elif quote_depth:  # a quote's paragraphs are its lines
                if out and not out[-1].startswith("<blockquote"):
                    out.append("<br>")
                out.append(body)
            else:
                out.append(f"<p>{body}</p>")
        elif kind in ("th_open", "td_open"):
            out.append(_BLOCK_TAGS[kind] + _inline(tokens[i + 1].children))
        elif kind == "blockquote_open":
            quote_depth += 1
            out.append("<blockquote>")
        elif kind == "blockquote_close":
            quote_depth -= 1
            out.append("</blockquote>")
        elif kind in ("fence", "code_block"):
            out.append(f"<pre><code>{_esc(token.content.removesuffix(chr(10)))}</code></pre>")
        elif kind in _BLOCK_TAGS:
            out.append(_BLOCK_TAGS[kind])
        # inline tokens are written by their block above; heading/paragraph closes write nothing
    if truncated:
        out.append(f'<p class="warn">The file is longer than {MAX_CHARS:,} characters: the rest is not shown.</p>')
    return "".join(out)
