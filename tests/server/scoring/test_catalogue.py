"""The output catalogue is the one place per-row fields are declared: every records column, the roofline CSV's header,
the metrics JSON's `roofline` block and the compute_roofline / model_attention result fields are the catalogue's,
with its descriptions and units."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from sdpa_analyzer.server.findings import load_metrics
from sdpa_analyzer.server.scoring.fields import BY_NAME, CATALOGUE, COMPUTED_AT_RESULT, on
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.model import ModelResult
from sdpa_analyzer.server.tools.roofline import RooflineRow
from tests.support import FLASH_ROW, make_folder


def test_names_are_unique_and_described() -> None:
    assert len({o.name for o in CATALOGUE}) == len(CATALOGUE)
    for o in CATALOGUE:
        assert o.description and o.label, o.name
        assert o.kind in ("float", "int", "text", "bool", "list"), o.name


def test_every_surface_is_the_catalogue(tmp_path: Path) -> None:
    from sdpa_analyzer.server.roots import DataRoots

    folder = make_folder(tmp_path, [FLASH_ROW])
    roots = DataRoots([tmp_path])
    roof = call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd")
    call("rank_findings", roots, output_dir=str(folder), category="sdpa_fwd")
    # the tool result rows: exactly the row fields, described with their units
    assert list(RooflineRow.model_fields) == [o.name for o in on("row")]
    for name, field in RooflineRow.model_fields.items():
        assert field.description == BY_NAME[name].help
    assert set(roof.rows[0].model_dump()) == {o.name for o in on("row")}
    # the model result: the catalogue's model fields, after what was modeled and before the settings
    model_fields = list(ModelResult.model_fields)
    assert model_fields[:3] == ["config", "mask", "peaks"]
    assert model_fields[3 : 3 + len(on("model"))] == [o.name for o in on("model")]
    # the roofline CSV's header
    with open(folder / "category_data" / "sdpa_fwd_roofline.csv", newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert header == [o.name for o in on("csv")]
    # the metrics JSON's roofline block
    # the metrics JSON's roofline block: declared once (field → kind), each operation's row in the roofline CSV
    path = folder / "category_data" / "sdpa_fwd_metrics.json"
    metrics = json.loads(path.read_text())
    assert "roofline" not in metrics["operations"][0]
    declared = metrics["sdpa_analyzer"]["roofline_rows"]
    assert declared["fields"] == {o.name: o.kind for o in on("json")}
    assert declared["file"] == "sdpa_fwd_roofline.csv" and declared["document_fields"] == ["bytes_model"]
    block = load_metrics(path)["operations"][0]["roofline"]
    assert list(block) == [*(o.name for o in on("json")), "bytes_model"]
    # what the tools compute at result time is declared too, and is no records column
    assert set(COMPUTED_AT_RESULT) <= set(BY_NAME)
    assert not set(COMPUTED_AT_RESULT) & set(header) & set(block)


def test_records_hold_only_declared_columns(tmp_path: Path) -> None:
    from sdpa_analyzer.perf_models.hardware import get_gpu
    from sdpa_analyzer.server.folder.read import load_category
    from sdpa_analyzer.server.scoring.records import compute_records

    folder = make_folder(tmp_path, [FLASH_ROW])
    table = compute_records(load_category(folder, "sdpa_fwd"), get_gpu("h100-sxm"))
    declared = {o.name for o in CATALOGUE} - set(COMPUTED_AT_RESULT)
    assert set(table.records.columns) == declared
