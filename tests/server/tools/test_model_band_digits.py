"""model_attention writes a band's edges once: `band.low_pct`/`band.high_pct` are the digits of `band_low`/`band_high`
(one value, one rounding per fact), and the anchor's `reference_pct` has those digits too."""

from __future__ import annotations

import pytest

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call

CASES = [  # (arch, direction, seq, head dim, mask): bands interpolated between published anchors, × a wave factor
    ("h100", "fwd", 4096, 128, "causal"),
    ("h100", "bwd", 3000, 64, "none"),
    ("a100", "bwd", 2048, 64, "none"),
    ("mi300x", "fwd", 5000, 128, "causal"),
    ("b200", "fwd", 1024, 64, "none"),
]


@pytest.mark.parametrize(("arch", "direction", "seq", "head_dim", "mask"), CASES)
def test_the_band_object_and_the_band_fields_say_the_same(
    arch: str, direction: str, seq: int, head_dim: int, mask: str, tmp_path
) -> None:
    r = call("model_attention", DataRoots([tmp_path]), batch=1, heads_q=32, heads_kv=8, seq_q=seq, head_dim=head_dim,
             mask=mask, direction=direction, arch=arch)  # fmt: skip
    assert r.band is not None
    assert (r.band.low_pct, r.band.high_pct) == (r.band_low, r.band_high)
    for pct in (r.band.low_pct, r.band.high_pct, r.band.reference_pct):
        assert pct == round(pct, 1), pct  # the catalogue's digits for a band edge: one decimal
