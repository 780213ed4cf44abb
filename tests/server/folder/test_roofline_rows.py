"""Each operation's `roofline` object is written once, as its row of the roofline CSV, and joined back by the one
metrics reader (server.folder.roofline_rows): what the readers see, the checks against a stale or tampered CSV, and
a quoted line break in a cell."""

from __future__ import annotations

import csv
import json
import zlib
from decimal import Decimal
from functools import partial
from pathlib import Path

import pytest

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.findings import load_metrics
from sdpa_analyzer.server.folder.metrics_file import metrics_document
from sdpa_analyzer.server.folder.roofline_rows import clear_indexes, open_rows
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FLASH_ROW, make_folder

SECOND_ROW = FLASH_ROW.replace("1024", "2048")


@pytest.fixture
def ranked(tmp_path: Path) -> Path:
    folder = make_folder(tmp_path, [FLASH_ROW, SECOND_ROW])
    roots = DataRoots([tmp_path])
    call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    call("rank_findings", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    clear_indexes()
    return folder


def _metrics(folder: Path) -> Path:
    return folder / "category_data" / "sdpa_fwd_metrics.json"


def test_the_rows_are_written_once_and_read_as_the_tools_computed_them(ranked: Path) -> None:
    path = _metrics(ranked)
    raw = json.loads(path.read_text())
    assert all("roofline" not in op for op in raw["operations"])
    declared = raw["sdpa_analyzer"]["roofline_rows"]
    table = path.parent / "sdpa_fwd_roofline.csv"
    assert declared["crc32"] == f"{zlib.crc32(table.read_bytes()):08x}"
    assert declared["bytes"] == table.stat().st_size and declared["rows"] == 2
    # the tool's own rows, another surface of the same records, for the fields both carry
    result = call("compute_roofline", DataRoots([ranked.parent]), output_dir=str(ranked), category="sdpa_fwd",
                  arch="h100-sxm")  # fmt: skip
    by_row = {r.row: r.model_dump() for r in result.rows}
    with open(table, newline="", encoding="utf-8") as fh:
        order = [int(r["row"]) for r in csv.DictReader(fh)]
    for numbers in ("decimal", "float"):
        whole = partial(load_metrics, path, UNRESTRICTED)
        with metrics_document(path, UNRESTRICTED, numbers, whole) as doc:
            for i, op in enumerate(doc["operations"]):
                roof, want = op["roofline"], by_row[order[i]]
                assert roof["bytes_model"] == "compulsory"
                for key in ("shape", "regime"):
                    assert roof[key] == want[key], key
                for key in ("mean_us", "band_low", "band_high", "compute_pct", "flops_useful"):
                    assert float(roof[key]) == want[key], key
                number = Decimal if numbers == "decimal" else float
                assert isinstance(roof["mean_us"], number) and isinstance(roof["has_model"], bool)
    # the second row is N=2048: four times the first's useful work (B, H, d and the mask alike)
    joined = load_metrics(path)["operations"]
    flops = {op["roofline"]["shape"]: op["roofline"]["flops_useful"] for op in joined}
    small, large = sorted(flops.values())
    assert large / small == pytest.approx(4, rel=2e-3)


def test_a_roofline_csv_rewritten_since_is_one_line_naming_the_fix(ranked: Path) -> None:
    roots = DataRoots([ranked.parent])
    call("compute_roofline", roots, output_dir=str(ranked), category="sdpa_fwd", arch="a100-sxm")
    with pytest.raises(InputError) as err:
        load_metrics(_metrics(ranked))
    message = str(err.value)
    assert "\n" not in message and "sdpa_fwd_roofline.csv" in message and "run rank_findings" in message
    with pytest.raises(ToolFailure, match="run rank_findings for sdpa_fwd again"):  # the tools say the same
        call("render_findings_template", roots, output_dir=str(ranked), category="sdpa_fwd")


def test_the_same_table_written_again_keeps_the_declaration(ranked: Path) -> None:
    roots = DataRoots([ranked.parent])
    call("compute_roofline", roots, output_dir=str(ranked), category="sdpa_fwd", arch="h100-sxm")
    assert len(load_metrics(_metrics(ranked))["operations"]) == 2


def test_a_missing_roofline_csv_is_one_line(ranked: Path) -> None:
    (ranked / "category_data" / "sdpa_fwd_roofline.csv").unlink()
    with pytest.raises(InputError, match=r"missing — run rank_findings for sdpa_fwd again"):
        load_metrics(_metrics(ranked))


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("file", "../sdpa_fwd_roofline.csv", "file must be a plain .csv name"),
        ("rows", -1, "rows must be a whole number"),
        ("crc32", "xyz", "crc32 must be 8 hex digits"),
        ("fields", {"shape": "tuple"}, "fields must map"),
    ],
)
def test_a_tampered_declaration_names_its_field(ranked: Path, field: str, value: object, said: str) -> None:
    path = _metrics(ranked)
    doc = json.loads(path.read_text())
    doc["sdpa_analyzer"]["roofline_rows"][field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=f"roofline_rows.{said}"):
        load_metrics(path)


def test_a_row_count_that_disagrees_with_the_operations_is_refused(ranked: Path) -> None:
    path = _metrics(ranked)
    text = path.read_text()
    first = text.index("\n") + 1
    second = text.index("\n", first) + 1
    path.write_text(text[:first] + text[second:])  # one operation fewer
    with pytest.raises(InputError, match="has 1 operations and declares 2 roofline rows"):
        with metrics_document(path, UNRESTRICTED, "decimal", partial(load_metrics, path, UNRESTRICTED)) as doc:
            list(doc["operations"])


def test_a_quoted_line_break_in_a_cell_is_read_by_the_csv_module(tmp_path: Path) -> None:
    table = tmp_path / "x_roofline.csv"
    data = b'row,shape,mean_us,gqa_ratio,has_model\n0,"two\nlines",1.50,4.0,True\n1,,inf,,False\n'
    table.write_bytes(data)
    doc = {"sdpa_analyzer": {"bytes_model": "tiled", "roofline_rows": {
        "file": table.name, "rows": 2, "bytes": len(data), "crc32": f"{zlib.crc32(data):08x}",
        "fields": {"shape": "text", "mean_us": "float", "gqa_ratio": "int", "has_model": "bool"},
        "document_fields": ["bytes_model"]}}}  # fmt: skip
    rows = open_rows(doc, tmp_path / "x_metrics.json", UNRESTRICTED, decimal=True)
    assert rows is not None
    try:
        first, second = rows.row(0), rows.row(1)
    finally:
        rows.close()
    assert first == {"shape": "two\nlines", "mean_us": Decimal("1.50"), "gqa_ratio": 4, "has_model": True,
                     "bytes_model": "tiled"}  # fmt: skip
    assert str(first["mean_us"]) == "1.50"  # the spelling kept, as the JSON's Decimal read keeps it
    assert second == {"shape": None, "mean_us": None, "gqa_ratio": None, "has_model": False, "bytes_model": "tiled"}


def test_a_cell_changed_in_place_fails_the_crc(ranked: Path) -> None:
    table = ranked / "category_data" / "sdpa_fwd_roofline.csv"
    data = table.read_bytes()
    at = data.index(b"True")  # has_model of the first row: same size, other bytes
    table.write_bytes(data[:at] + b"Fals" + data[at + 4 :])
    with pytest.raises(InputError, match=r"is not the file sdpa_fwd_metrics.json was ranked against \(crc32"):
        load_metrics(_metrics(ranked))


def test_a_row_of_another_width_is_one_line_naming_the_csv(ranked: Path) -> None:
    """A CSV edited by hand and declared again (size and crc32 made to match): the row itself is checked."""
    table = ranked / "category_data" / "sdpa_fwd_roofline.csv"
    lines = table.read_bytes().split(b"\n")
    lines[1] += b",an extra cell"
    data = b"\n".join(lines)
    table.write_bytes(data)
    path = _metrics(ranked)
    doc = json.loads(path.read_text())
    doc["sdpa_analyzer"]["roofline_rows"].update(bytes=len(data), crc32=f"{zlib.crc32(data):08x}")
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        load_metrics(path)
    assert str(err.value).startswith(f"{table}: row 0 has ") and "run rank_findings again" in str(err.value)
