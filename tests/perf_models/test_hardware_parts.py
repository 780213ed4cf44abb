"""The parts added from their properties (issue 32 item 5): each one's figures against the vendor documents or the
per-SM × SMs × clock hand computation (written here, not read back), and no part scored with a sibling's roofs."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.hardware import get_gpu

# key: (arch, SMs/CUs, memory GB, memory TB/s, dense bf16 TFLOPS, dense fp8 or None), from the documents cited in
# each file; the bf16 figure is also the hand computation SMs × FLOP/clk/SM × boost clock where the comment says so
PARTS = {
    "l40": ("sm_89", 142, 48, 0.864, 181.05, 362),  # L40 datasheet; 142 × 512 × 2.49 GHz = 181.0
    "l20": ("sm_89", 92, 48, 0.864, 118.7, 237.4),  # 92 × 512 × 2.52 GHz = 118.7
    "l4": ("sm_89", 58, 24, 0.3, 121, 242.5),  # L4 datasheet 242* sparse; 58 × 1024 × 2.04 GHz = 121.2
    "a10": ("sm_86", 72, 24, 0.6, 125, None),  # A10 datasheet; 72 × 1024 × 1.695 GHz = 125.0
    "a800-sxm-80gb": ("sm_80", 108, 80, 2.039, 312, None),
    "a800-pcie-80gb": ("sm_80", 108, 80, 1.935, 312, None),
    "a800-40gb": ("sm_80", 108, 40, 1.555, 312, None),
    "rtx-3090": ("sm_86", 82, 24, 0.936, 71, None),  # GA102 whitepaper; 82 × 512 × 1.695 GHz = 71.2
    "rtx-a6000": ("sm_86", 84, 48, 0.768, 154.8, None),  # 309.7 sparse / 2; 84 × 1024 × 1.8 GHz = 154.8
    "rtx-5090": ("sm_120", 170, 32, 1.792, 209.5, 419),  # 170 × 512 × 2.407 GHz = 209.5
    "gh200": ("sm_90", 132, 96, 4.0, 989.4, 1978.9),  # GH200 datasheet 1,979* sparse
    "gh200-144gb": ("sm_90", 132, 144, 4.9, 989.4, 1978.9),
    "gb300": ("sm_103", 160, 288, 8.0, 2500, 5000),  # 180 PF dense bf16 per 72-GPU rack / 72
    "mi308x": ("gfx942", 80, 192, 5.3, 344.1, 688.1),  # 80 CUs × 2048 × 2.1 GHz = 344.1
}


@pytest.mark.parametrize("key", sorted(PARTS))
def test_part_figures(key: str) -> None:
    arch, sms, memory, tbs, bf16, fp8 = PARTS[key]
    g = get_gpu(key)
    assert (g.arch, g.sm_count, g.memory_gb, g.hbm_tbs_datasheet) == (arch, sms, memory, tbs)
    assert g.tflops_datasheet["matrix_bf16"] == pytest.approx(bf16, abs=0.05)
    if fp8 is None:
        assert "matrix_fp8" not in g.tflops_datasheet  # no fp8 tensor cores before sm_89
    else:
        assert g.tflops_datasheet["matrix_fp8"] == pytest.approx(fp8, abs=0.05)
    for field in ("sm_count", "memory_gb", "hbm_tbs_datasheet", "tflops_datasheet.matrix_bf16"):
        assert "http" in g.source(field), field


def test_hand_computed_peaks() -> None:
    """bf16 = SMs × dense FLOP/clk/SM × boost clock, with the rates of the vendor documents."""
    assert get_gpu("l20").tflops_datasheet["matrix_bf16"] == pytest.approx(92 * 512 * 2.52e9 / 1e12, abs=0.05)
    assert get_gpu("rtx-5090").tflops_datasheet["matrix_bf16"] == pytest.approx(170 * 512 * 2.407e9 / 1e12, abs=0.1)
    assert get_gpu("rtx-a6000").tflops_datasheet["matrix_bf16"] == pytest.approx(84 * 1024 * 1.8e9 / 1e12, abs=0.1)
    assert get_gpu("mi308x").tflops_datasheet["matrix_bf16"] == pytest.approx(80 * 2048 * 2.1e9 / 1e12, abs=0.1)
    # MI308X is a quarter of the MI300X's compute on the same HBM: 1307.4 × 80 / 304 = 344.1
    assert get_gpu("mi308x").tflops_datasheet["matrix_bf16"] == pytest.approx(1307.4 * 80 / 304, abs=0.1)


@pytest.mark.parametrize(
    ("part", "sibling", "ratio"),
    [
        ("l40", "l40s", 0.5),  # 181.05 / 362.05: the L40 has half the L40S's tensor rate
        ("gh200", "h100-nvl", 989.4 / 835.5),  # a GH200 scored as H100 NVL read 1.18× too high
        ("gb300", "b300", 2500 / 2250),
        ("mi308x", "mi300x", 80 / 304),
        ("l20", "l40s", 118.7 / 362.05),
    ],
)
def test_never_a_sibling_with_other_roofs(part: str, sibling: str, ratio: float) -> None:
    a, b = get_gpu(part), get_gpu(sibling)
    assert a.key != b.key
    assert a.compute_roof("matrix_bf16").value / b.compute_roof("matrix_bf16").value == pytest.approx(ratio, rel=1e-3)
    assert a.relation(b) != "same"


@pytest.mark.parametrize(
    ("arg", "key"),
    [("L40", "l40"), ("l40", "l40"), ("L40S", "l40s"), ("GH200", "gh200"), ("gh200-144gb", "gh200-144gb"),
     ("GB300", "gb300"), ("MI308X", "mi308x"), ("A800", "a800-sxm-80gb"), ("RTX 5090", "rtx-5090"), ("L4", "l4"),
     ("A10", "a10"), ("RTX A6000", "rtx-a6000"), ("RTX 3090", "rtx-3090"), ("L20", "l20")],
)
def test_the_names_a_warning_suggests_are_accepted(arg: str, key: str) -> None:
    assert get_gpu(arg).key == key
