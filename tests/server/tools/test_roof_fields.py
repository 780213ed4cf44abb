"""The roofs a result names: the datasheet roof, its kind, and a measured achievable figure beside it (issue 32
item 4: never mixed into a ratio). Expected figures from the vendors' documents, written here."""

from __future__ import annotations

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call


def test_model_attention_names_the_datasheet_roof_and_the_maf_beside_it() -> None:
    # MI300X datasheet bf16 1307.4 TFLOPS, 5.3 TB/s; AMD's MAF (ROCm blog, part 2) 708 TFLOPS
    r = call("model_attention", DataRoots(["/"]), batch=1, heads_q=32, seq_q=4096, head_dim=128, arch="mi300x",
             measured_us=2000.0)
    assert (r.peaks.peak_tflops, r.peaks.peak_tflops_kind, r.peaks.peak_tflops_achievable) == (
        1307.4, "datasheet", 708.0)
    assert (r.peaks.peak_tbs, r.peaks.peak_tbs_kind) == (5.3, "datasheet")
    # 4·32·4096²·128 = 274.9 GFLOP in 2 ms = 137.4 TFLOPS: 10.51 % of the datasheet (19.4 % of the MAF: not shown)
    assert r.efficiency_pct == pytest.approx(10.51, abs=0.01)


def test_list_architectures_shows_both_figures_with_their_kinds() -> None:
    table = call("list_architectures", DataRoots(["/"]))
    rows = {a.key: a for a in table.architectures}
    assert (rows["mi300x"].bf16_tflops, rows["mi300x"].bf16_kind, rows["mi300x"].bf16_achievable) == (
        1307.4, "datasheet", 708.0)
    assert rows["h100-sxm"].bf16_achievable is None and rows["h100-sxm"].bf16_kind == "datasheet"
    # RTX 4090: 165.2 (Ada whitepaper, at the 2.52 GHz boost) at the sustained 2.73 GHz = 178.97
    assert rows["rtx-4090"].bf16_kind == "sustained"
    assert rows["rtx-4090"].bf16_tflops == pytest.approx(165.2 * 2.73 / 2.52)
    full = call("list_architectures", DataRoots(["/"]), gpu="mi325x").details
    assert full is not None and full.tflops["matrix_bf16"] == 1307.4 and full.tflops_kind["matrix_bf16"] == "datasheet"
    assert full.tflops_achievable["matrix_bf16"] == 843.0 and full.achievable_method
