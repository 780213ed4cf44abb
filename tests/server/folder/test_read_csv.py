"""The ops CSV read (server.folder.read._read_csv): a block at a time with each repeated cell kept once, yet the
same table as a plain `csv` module read of the file, cell for cell, and one string per distinct cell."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from sdpa_analyzer.server.folder import read


def _write(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def _plain_read(path: Path) -> tuple[list[str], list[list[str]]]:
    """The file as the csv module reads it: every cell a string, an empty cell ''."""
    with open(path, newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    return header, rows


def _cell(value: object) -> str:
    """A cell of the pandas table written back as the csv module reads it (the numbers here are whole or .5)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


@pytest.mark.parametrize("block_rows", [1, 7, 64, 10_000])
def test_the_table_is_the_files_cells_with_each_repeated_cell_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_rows: int
) -> None:
    rng = np.random.default_rng(7)
    stacks = [f"['model.py({k}): forward', 'attention.py({k + 1}): sdpa', 'tail {'x' * k}']" for k in range(5)]
    rows = []
    for i in range(300):
        rows.append([
            "aten::_scaled_dot_product_flash_attention" if i % 3 else "aten::_efficient_attention_forward",
            f"(({i}, 8, 128, 64), ({i}, 8, 128, 64))",  # a distinct cell per row
            "" if i % 11 == 0 else stacks[int(rng.integers(0, len(stacks)))],  # repeated, with empty cells
            str(int(rng.integers(1, 9))),
            f"{float(rng.integers(1, 400)) + 0.5}",
            "" if i % 5 else "note, with a comma",  # mostly empty
        ])
    header = ["name", "Input Dims", "call_stack_full", "operation_count", read.KERNEL_SUM, "comment"]
    path = tmp_path / "ops.csv"
    _write(path, header, rows)
    monkeypatch.setattr(read, "_READ_CHUNK_ROWS", block_rows)
    df = read._read_csv(path)
    want_header, want_rows = _plain_read(path)
    assert list(df.columns) == want_header
    got = [[_cell(v) for v in row] for row in df.itertuples(index=False)]
    assert got == want_rows
    assert df.index.tolist() == list(range(len(rows)))
    # each distinct call stack is one string object, whichever block its rows fell in
    stacks_read = [v for v in df["call_stack_full"].tolist() if isinstance(v, str)]
    assert len({id(v) for v in stacks_read}) == len(set(stacks_read)) == len(stacks)
    assert df["call_stack_full"].isna().sum() == sum(1 for r in rows if r[2] == "")


def test_a_header_without_rows_is_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "ops.csv"
    _write(path, ["name", "operation_count", read.KERNEL_SUM], [])
    df = read._read_csv(path)
    assert list(df.columns) == ["name", "operation_count", read.KERNEL_SUM] and len(df) == 0
