"""The roofline records hold each repeated text once: 10^5 rows of one compute spec are one string, not 10^5."""

from __future__ import annotations

from pathlib import Path

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from tests.support import make_large_folder


def test_repeated_text_columns_share_one_object_per_value(tmp_path: Path) -> None:
    folder = make_large_folder(tmp_path, 300)
    scored = score_category(DataRoots([tmp_path]), folder, "sdpa_fwd", "h100-sxm", "compulsory")
    assert scored.table is not None
    records = scored.table.records
    for column in (
        "compute_spec", "kind", "peak_tbs_kind", "peak_tflops_kind", "tile_family", "band_status", "band_metric",
        "bound", "regime", "regime_compulsory", "regime_tiled", "work_bound", "measurement_status", "attention_type",
        "library",
    ):
        values = records[column].tolist()
        texts = [v for v in values if isinstance(v, str)]
        assert texts, column
        # about one object per distinct value (brute force over the column), not one per row: a few producers'
        # branches hold a copy each, which does not grow with the rows
        assert len({id(v) for v in texts}) <= len(set(texts)) + 8 < len(texts), column
