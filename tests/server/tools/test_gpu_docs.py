"""docs/gpus.md shows the GPU table as the data files give it (one fact, one place: the page is generated)."""

from __future__ import annotations

from pathlib import Path

from sdpa_analyzer.server.tools.archs import TABLE_BEGIN, TABLE_END, markdown_table

PAGE = Path(__file__).resolve().parents[3] / "docs" / "gpus.md"


def test_gpu_page_table_is_the_generated_one() -> None:
    text = PAGE.read_text(encoding="utf-8")
    start, end = text.index(TABLE_BEGIN), text.index(TABLE_END) + len(TABLE_END)
    assert text[start:end] == markdown_table(), (
        "docs/gpus.md's table is stale: replace it with the output of "
        "`python -c 'from server.tools.archs import markdown_table; print(markdown_table())'`"
    )


def test_table_rows_carry_datasheet_figures() -> None:
    # hand-written from the datasheets: H100 SXM 989.4 / 3.35, MI300X 1307.4 (MAF 708 beside), L40S 362.05
    rows = {line.split("|")[1].strip(" `"): line for line in markdown_table().splitlines() if line.startswith("| `")}
    assert "| 989.4 (datasheet) |" in rows["h100-sxm"] and "| 3.35 |" in rows["h100-sxm"]
    assert "| 1307 (datasheet) |" in rows["mi300x"] and rows["mi300x"].endswith("| 708 |")
    assert "| 362.1 (datasheet) |" in rows["l40s"]
