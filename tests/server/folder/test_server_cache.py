"""server.folder.cache: a category is loaded and scored once while its files are unchanged, never served stale, and
the roofline CSV is not rewritten when it is still the one written from the cached table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdpa_analyzer.server.folder import cache
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring import cache as scoring_cache
from sdpa_analyzer.server.tools import call
from tests.support import FLASH_ROW, make_folder


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    cache.clear()
    scoring_cache.clear()


def test_reuses_until_a_file_changes(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    first = cache.cached_load(folder, "sdpa_fwd")
    assert cache.cached_load(folder, "sdpa_fwd") is first
    meta = folder / "metadata" / "sdpa_fwd_metadata.json"
    data = json.loads(meta.read_text())
    data["gpu_utilization"]["total_time_ms"] = 20.0
    meta.write_text(json.dumps(data))
    again = cache.cached_load(folder, "sdpa_fwd")
    assert again is not first and again.e2e_ms == 20.0  # the new baseline, not the cached one
    csv = folder / "category_data" / "sdpa_fwd_ops.csv"
    st = csv.stat()
    csv.write_text(csv.read_text())  # same bytes, new mtime
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.cached_load(folder, "sdpa_fwd") is not again


def test_scores_once_per_gpu_and_bytes_model(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    roots = DataRoots([tmp_path])
    a = call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    data = cache.cached_load(folder, "sdpa_fwd")
    from sdpa_analyzer.perf_models.hardware import get_gpu

    t1, _ = scoring_cache.cached_records(data, get_gpu("h100-sxm"))
    t2, _ = scoring_cache.cached_records(data, get_gpu("h100-sxm"))
    t3, _ = scoring_cache.cached_records(data, get_gpu("h100-sxm"), bytes_model="tiled")
    t4, _ = scoring_cache.cached_records(data, get_gpu("mi300x"))
    assert t1 is t2 and t3 is not t1 and t4 is not t1
    b = call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd", arch="mi300x")
    assert a.peaks.gpu_key == "h100-sxm" and b.peaks.gpu_key == "mi300x"
    assert a.rows[0].efficiency_pct != b.rows[0].efficiency_pct


def test_roofline_csv_written_once_and_rewritten_when_gone(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW], e2e_ms=10.0)
    roots = DataRoots([tmp_path])
    roof = call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    path = Path(roof.roofline_file or "")
    before = path.stat()
    call("rank_findings", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rewritten
    text = path.read_text()
    path.unlink()
    call("rank_findings", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    assert path.read_text() == text  # rank_findings alone still leaves the table


def test_bounded(tmp_path: Path) -> None:
    folders = [make_folder(tmp_path, [FLASH_ROW], name=f"f{i}") for i in range(cache.MAX_CATEGORIES + 2)]
    loaded = [cache.cached_load(f, "sdpa_fwd") for f in folders]
    assert cache.cached_load(folders[-1], "sdpa_fwd") is loaded[-1]
    assert cache.cached_load(folders[0], "sdpa_fwd") is not loaded[0]  # the oldest went first


def test_unmodeled_row_among_the_top_rows(tmp_path: Path) -> None:
    # an op no model knows, with the largest time: its row is listed without direction/mask/dtype
    # (pandas reads those missing texts as NaN; the result model needs None)
    unknown = (
        'aten::mystery_attention,SDPA_fwd,"((2, 8, 1024, 64),)","(\'c10::BFloat16\',)","(\'\',)",5,9000.0,1800.0,,'
    )
    folder = make_folder(tmp_path, [FLASH_ROW, unknown], e2e_ms=20.0)
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    top = res.rows[0]
    assert top.name == "aten::mystery_attention" and top.direction is None and top.mask is None and top.dtype is None
    assert res.unmodeled_rows == 1 and res.modeled_rows == 1
