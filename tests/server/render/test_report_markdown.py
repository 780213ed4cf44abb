"""The findings prose in the report: the markdown subset rendered, and nothing from the file reaching the page as
markup (parsed back with html.parser: tags, attributes and texts)."""

from __future__ import annotations

from sdpa_analyzer.server.render.markdown import MAX_CHARS, render_markdown
from tests.support import parse_html as parse

ALLOWED_TAGS = {
    "h3", "h4", "h5", "h6", "p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "table", "thead", "tbody",
    "tr", "th", "td", "div", "span", "blockquote", "hr",
}  # fmt: skip

PROSE = """# SDPA findings: sdpa_fwd

Comparison scope: standalone. Numbers from `sdpa_fwd_metrics.json`.

## Recommendations

### P1: Flash kernel far below its band (FlashAttention-2)
**Insight**: the kernel runs at *26 %* of the datasheet peak.
**Action**: {{FILL: Action — what to do}}
<!-- impact-begin kind=p_item low=4.88 mid=5.7 high=6.51 -->
**Impact**: impact_score: 5.7 (% of E2E)
<!-- impact-end -->

| Operation | Args | Kernel Name |
|---|---|---|
| aten::_scaled_dot_product_flash_attention | (2,32,2048,128) bf16<br>(2,8,2048,128) bf16 | void flash<T, 128> |

- Low end impact_score: 4.88 (% of E2E)
- High end impact_score: 6.51 (% of E2E)

1. first
2. second

> quoted line

```
raw <b>code</b> & more
```
"""


def test_headings_paragraphs_tables_and_lists() -> None:
    out = render_markdown(PROSE)
    p = parse(out)
    assert set(p.start_tags) <= ALLOWED_TAGS
    # '#' → h3 (the report's own headings are h1-h3): heading_offset=2
    assert "<h3>SDPA findings: sdpa_fwd</h3>" in out
    assert "<h4>Recommendations</h4>" in out
    assert "<h5>P1: Flash kernel far below its band (FlashAttention-2)</h5>" in out
    assert "<strong>Insight</strong>: the kernel runs at <em>26 %</em> of the datasheet peak." in out
    assert "<code>sdpa_fwd_metrics.json</code>" in out
    (table,) = p.tables.values()
    assert table[0] == ["Operation", "Args", "Kernel Name"]
    # the cell's <br> stays a line break; the template argument stays text
    assert table[1] == ["aten::_scaled_dot_product_flash_attention", "(2,32,2048,128) bf16\n(2,8,2048,128) bf16",
                        "void flash<T, 128>"]  # fmt: skip
    items = "<li>Low end impact_score: 4.88 (% of E2E)</li><li>High end impact_score: 6.51 (% of E2E)</li>"
    assert f"<ul>{items}</ul>" in out
    assert "<ol><li>first</li><li>second</li></ol>" in out
    assert "<blockquote>quoted line</blockquote>" in out
    assert "<pre><code>raw &lt;b&gt;code&lt;/b&gt; &amp; more</code></pre>" in out
    # the impact markers are HTML comments: dropped, never shown
    assert "impact-begin" not in out and "<!--" not in out
    # an unfilled template slot is highlighted
    assert '<span class="fill">{{FILL: Action — what to do}}</span>' in out


def test_raw_html_in_the_prose_comes_out_as_text() -> None:
    evil = (
        '<script>alert("x")</script>\n\n<img src=x onerror=alert(1)>\n\n'
        '<a href="https://evil.example/">click</a> [link](javascript:alert(1)) ![img](https://evil.example/x.png)\n\n'
        '| a<script>b</script> | "quoted" |\n|---|---|\n| <iframe src=x> | `<b onclick=x>` |\n\n'
        "# <style>body{display:none}</style>\n\n<scr<!-- -->ipt>alert(2)</script>\n"
    )
    out = render_markdown(evil)
    p = parse(out)
    assert set(p.start_tags) <= ALLOWED_TAGS
    assert not {"script", "img", "a", "iframe", "style"} & set(p.start_tags)
    # the only attribute this renderer writes is class="fill"
    assert all(k == "class" for _, k, _ in p.attrs)
    assert "http" not in "".join(v or "" for _, _, v in p.attrs)
    text = "".join(p.text)
    assert '<script>alert("x")</script>' in text  # shown, as text
    assert "<img src=x onerror=alert(1)>" in text
    assert "link" in text and "javascript:" not in out  # a link keeps its text, never its target
    assert "&lt;script&gt;" in out and "<script" not in out.lower()
    assert "<scr" not in out  # removing a comment cannot splice a tag together: everything is escaped after


def test_a_huge_file_is_cut_with_a_note() -> None:
    out = render_markdown("x" * (MAX_CHARS + 10))
    assert "the rest is not shown" in out
