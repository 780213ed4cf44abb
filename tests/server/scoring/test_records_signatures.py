"""A row whose op signature is not one we know reaches the tool results modeled, with the warning that names the slots
it was read from (never silently unmodeled)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call
from tests.support import FLASH_ROW, make_folder

# the flash SDPA row of tests.support (B=2, H=8, N=1024, d=64, causal), as a release that adds an optional tensor
# after value would record it: every scalar moves by one slot
DRIFTED_ROW = (
    "aten::_scaled_dot_product_flash_attention,SDPA_fwd,"
    '"((2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024, 64), (), (), (), (), ())",'
    "\"('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', '', 'Scalar', 'Scalar', 'Scalar', 'Scalar')\","
    "\"('', '', '', '', '0.', 'True', 'False', '0.125')\",10,1000.0,100.0,"
    + FLASH_ROW.split(",10,1000.0,100.0,", 1)[1]
)


def test_an_inferred_signature_reaches_the_roofline_rows(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW, DRIFTED_ROW])
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd",
               arch="h100-sxm")  # fmt: skip
    assert res.modeled_rows == 2 and res.unmodeled_rows == 0
    known, drifted = sorted(res.rows, key=lambda r: len(r.warnings))
    assert not any("no known signature" in w for w in known.warnings)
    (note,) = [w for w in drifted.warnings if "no known signature fits" in w]
    assert "modeled from q=0, k=1, v=2, dropout_p=4, causal=5, softmax_scale=7 (BHND)" in note
    # the same shape and mask on both rows: causal pairs 1024 · 1025 / 2 = 524,800 per head, forward FLOPs
    # 4 · B · H · pairs · d = 4 · 2 · 8 · 524,800 · 64 = 2,149,580,800
    assert drifted.flops_useful == pytest.approx(2_149_580_800) == known.flops_useful
