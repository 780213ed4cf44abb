"""The metrics reader's pass over a file is made once per file and parser (server.folder.metrics_file): a second
open of the unchanged file reads no line again and gives what the first gave; a rewritten file is read again; each
caller's document is its own."""

from __future__ import annotations

import dataclasses
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import sdpa_analyzer.server.folder.metrics_file as metrics_file
from sdpa_analyzer.server.folder.metrics_file import open_streamed
from sdpa_analyzer.server.roots import DataRoots

HEAD = b'{"category":"sdpa_fwd","operations":[\n'
TAIL = b'\n],"category_findings":[],"sdpa_analyzer":{"in_band":[{"time_ms":2.50}]}}\n'


def _write(path: Path, times: list[str]) -> None:
    ops = [f'{{"name":"op{i}","args":"a{i}","time_ms":{t},"efficiency":{{"efficiency_percent":1.0}}}}'.encode()
           for i, t in enumerate(times)]  # fmt: skip
    path.write_bytes(HEAD + b",\n".join(ops) + TAIL)


def _open(path: Path, numbers: str = "decimal") -> dict[str, Any]:
    doc = open_streamed(path, DataRoots([path.parent]), numbers)  # type: ignore[arg-type]
    assert doc is not None
    return doc


def _plain(doc: dict[str, Any]) -> tuple[str, str]:
    ops = doc["operations"]
    try:
        return repr({**doc, "operations": list(ops)}), repr(dataclasses.astuple(ops.keys))
    finally:
        ops.close()


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many passes over a file the reader made."""
    metrics_file.clear_listings()
    made: list[int] = []
    read = metrics_file._read

    def counted(*a: Any) -> Any:
        made.append(1)
        return read(*a)

    monkeypatch.setattr(metrics_file, "_read", counted)
    return made


def test_a_second_open_reads_no_line_again(passes: list[int], tmp_path: Path) -> None:
    path = tmp_path / "sdpa_fwd_metrics.json"
    _write(path, ["1.50", "2.25", "3"])
    first = _plain(_open(path))
    second = _plain(_open(path))
    assert len(passes) == 1
    assert second == first
    assert "Decimal('1.50')" in first[0] and "Decimal('1.50')" in first[1]  # the spelling as written


def test_a_rewritten_file_is_read_again(passes: list[int], tmp_path: Path) -> None:
    path = tmp_path / "sdpa_fwd_metrics.json"
    _write(path, ["1.50", "2.25"])
    _plain(_open(path))
    _write(tmp_path / "new.json", ["7.5", "8.5", "9.5"])
    os.replace(tmp_path / "new.json", path)  # as the atomic writer replaces it
    doc = _open(path)
    assert [op["time_ms"] for op in doc["operations"]] == [Decimal("7.5"), Decimal("8.5"), Decimal("9.5")]
    doc["operations"].close()
    assert len(passes) == 2


def test_each_caller_has_its_own_document_and_parser(passes: list[int], tmp_path: Path) -> None:
    path = tmp_path / "sdpa_fwd_metrics.json"
    _write(path, ["1.50"])
    doc = _open(path)
    doc["sdpa_analyzer"]["in_band"].clear()  # a caller that changes its document
    doc["operations"].close()
    again = _open(path)
    assert again["sdpa_analyzer"]["in_band"] == [{"time_ms": Decimal("2.50")}]
    again["operations"].close()
    floats = _open(path, "float")
    assert floats["operations"].keys.times == [1.5] and type(floats["sdpa_analyzer"]["in_band"][0]["time_ms"]) is float
    floats["operations"].close()
    assert len(passes) == 2  # one per parser
