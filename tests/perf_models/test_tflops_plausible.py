"""Issue 31: an arch JSON's compute peaks are checked for plausibility like its bandwidth: a value outside 0.01 to
100,000 TFLOPS (100x below the smallest built-in peak, 1 TFLOPS of FP64 on the H20, and about 10x above the largest,
10,066 dense FP4 TFLOPS on the MI355X) is refused in one line naming the field, its unit and the range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.hardware import gpu_from_arch_dict, list_gpus
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.arch import read_arch_file


def _arch(value: object) -> dict[str, object]:
    return {"name": "my-gpu", "mem_bw_gbps": 5300, "max_achievable_tflops": {"matrix_bf16": value}}


@pytest.mark.parametrize("value", [1e308, 7.08e14, 708_000, 100_001, 1e-9, 0.009])
def test_implausible_peaks_are_refused(value: float) -> None:
    with pytest.raises(ConfigError) as err:
        gpu_from_arch_dict(_arch(value))
    msg = str(err.value)
    assert msg.startswith("max_achievable_tflops.matrix_bf16=") and "TFLOPS" in msg, msg
    assert "0.01" in msg and "100,000" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("value", [0.01, 1.0, 708, 10_066.3, 100_000])
def test_plausible_peaks_are_taken(value: float) -> None:
    assert gpu_from_arch_dict(_arch(value)).peak_tflops("matrix_bf16")[0] == value


def test_every_built_in_peak_is_plausible() -> None:
    """The range is stated against the table: every datasheet peak a built-in GPU has must pass it."""
    for gpu in list_gpus():
        for spec, value in gpu.tflops_datasheet.items():
            assert 0.01 <= value <= 100_000, (gpu.key, spec, value)


def test_an_arch_file_in_flops_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(_arch(7.08e14)))
    with pytest.raises(InputError) as err:
        read_arch_file(str(path), DataRoots([tmp_path]))
    msg = str(err.value)
    assert str(path) in msg and "max_achievable_tflops.matrix_bf16" in msg and "TFLOPS" in msg and "\n" not in msg
