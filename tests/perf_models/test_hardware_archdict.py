"""User-supplied peaks: TraceLens arch JSON and analysis metadata, taken as-is; bad dicts name the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.hardware import gpu_from_arch_dict

# TraceLens examples/gpu_arch_example.md, verbatim
TRACELENS_MI300X: dict[str, Any] = {
    "name": "MI300X",
    "mem_bw_gbps": 5300,
    "max_achievable_tflops": {
        "matrix_fp16": 654,
        "matrix_bf16": 708,
        "matrix_fp32": 163,
        "matrix_fp64": 81,
        "matrix_fp8": 1273,
        "matrix_int8": 2600,
        "vector_fp16": 163,
        "vector_bf16": 163,
        "vector_fp32": 81,
        "vector_fp64": 40,
    },
    "_reference": "https://rocm.blogs.amd.com/software-tools-optimization/measuring-max-achievable-flops-part2/README.html#amd-maf-results",
}
# TraceLens TraceLens/Agent/Analysis/utils/arch/B200.json, verbatim (note the matrix_fp6: 0 placeholder)
TRACELENS_B200: dict[str, Any] = {
    "name": "B200",
    "mem_bw_gbps": 7476,
    "memory_gb": 178,
    "max_achievable_tflops": {
        "matrix_fp16": 1347,
        "matrix_bf16": 1401,
        "matrix_fp32": 66,
        "matrix_fp64": 36,
        "matrix_fp8": 2816,
        "matrix_fp4": 5912,
        "matrix_fp6": 0,
        "matrix_int8": 2927,
        "vector_fp16": 58,
        "vector_bf16": 47,
        "vector_fp32": 48,
        "vector_fp64": 24,
    },
    "source": "These are benchmark derived peak flops and bw",
}
# a TraceLens test arch with simulation keys and no name known to us
TRACELENS_ORIGAMI = {
    "name": "mi300x",
    "freq_mhz": 2100,
    "mem_bw_gbps": 5300,
    "l1_bw_gbps": 100,
    "num_cus": 304,
    "gemm_units_per_cu": 4,
    "max_achievable_tflops": {"matrix_bf16": 708, "vector_bf16": 163},
}
METADATA = {
    "platform": "MI300X",
    "peak_hbm_bw_tbs": 5.3,
    "max_achievable_tflops": {"matrix_fp16": 654, "matrix_bf16": 708, "matrix_fp32": 163, "matrix_fp8": 1273},
    "memory_gb": 192,
    "trace_path": "../../traces/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "output_dir": ".",
    "category": "SDPA_fwd",
    "gpu_utilization": {"total_time_ms": 33.131},
}


def test_tracelens_mi300x_loads_as_is() -> None:
    g = gpu_from_arch_dict(copy.deepcopy(TRACELENS_MI300X))
    assert (g.key, g.origin, g.name) == ("mi300x", "arch_json", "MI300X")
    # the file's numbers are achievable figures beside the datasheet roofs (one roof kind per ratio)
    assert g.peak_tflops("matrix_bf16") == (1307.4, "datasheet")
    assert g.peak_tflops("matrix_bf16", prefer="achievable") == (708.0, "achievable")
    assert g.peak_tflops("matrix_fp8") == (2614.9, "datasheet")
    assert g.compute_roof("matrix_fp8").achievable == 1273.0
    # 5300 GB/s is the MI300X datasheet value, so it is labelled as such
    assert g.peak_tbs() == (5.3, "datasheet")
    # 163 is within 1 % of the 163.4 datasheet FP32 matrix peak: the file's value, labelled datasheet
    assert g.peak_tflops("matrix_fp32") == (163.0, "datasheet")
    assert g.peak_tflops("matrix_bf16", prefer="datasheet") == (1307.4, "datasheet")
    assert g.sm_count == 304 and g.l2_cache_mb == 32  # from the built-in table the name matched
    assert "rocm.blogs.amd.com" in g.source("tflops_achievable.matrix_bf16")


def test_tracelens_b200_with_zero_placeholder_loads() -> None:
    g = gpu_from_arch_dict(copy.deepcopy(TRACELENS_B200))
    assert g.key == "b200"
    assert g.peak_tflops("matrix_bf16") == (2250.0, "datasheet")
    assert g.compute_roof("matrix_bf16").achievable == 1401.0
    # 7476 GB/s differs from the 7.7 TB/s HGX datasheet: the file's number is an achievable figure, beside the roof
    assert g.peak_tbs() == (7.7, "datasheet")
    assert g.peak_tbs(prefer="achievable") == (7.476, "achievable")
    assert g.bandwidth_roof().achievable == pytest.approx(7.476)
    assert g.memory_gb == 178  # the file's own value wins over the table's 180
    with pytest.raises(ConfigError, match="matrix_fp6"):
        g.peak_tflops("matrix_fp6")  # 0 means "not measured": left out, and the lookup says so
    assert "not measured" in g.sources["dropped.matrix_fp6"]


def test_extra_keys_and_num_cus() -> None:
    g = gpu_from_arch_dict(dict(TRACELENS_ORIGAMI))
    assert g.key == "mi300x" and g.sm_count == 304
    # no datasheet figure for vector_bf16: the file's number is the only one for that spec
    assert g.peak_tflops("vector_bf16") == (163.0, "achievable")


def test_metadata_format(analysis_folders_dir: Path) -> None:
    g = gpu_from_arch_dict(dict(METADATA))
    assert (g.origin, g.key, g.name) == ("metadata", "mi300x", "MI300X")
    assert g.peak_tflops("matrix_bf16") == (1307.4, "datasheet")
    assert g.compute_roof("matrix_bf16").achievable == 708.0
    assert g.peak_tbs() == (5.3, "datasheet")
    # and the real metadata files of the shared analysis folders, untouched
    files = sorted(analysis_folders_dir.glob("*/metadata/*_metadata.json"))
    assert files
    for path in files:
        meta = json.loads(path.read_text())
        g = gpu_from_arch_dict(meta, name=str(meta["platform"]))
        assert g.peak_tflops("matrix_bf16", prefer="achievable") == (
            meta["max_achievable_tflops"]["matrix_bf16"], "achievable")
        assert g.peak_tflops("matrix_bf16")[1] == "datasheet"


def test_unknown_gpu_name_keeps_the_numbers() -> None:
    g = gpu_from_arch_dict(
        {"name": "Radeon 8060S (HRX)", "mem_bw_gbps": 256, "max_achievable_tflops": {"matrix_bf16": 59.4}}
    )
    assert g.key == "custom-radeon-8060s-hrx" and g.vendor == "unknown"
    assert g.peak_tflops("matrix_bf16") == (59.4, "achievable")
    assert g.peak_tbs() == (0.256, "datasheet")
    assert g.sm_count is None and g.tflops_datasheet == {}
    assert gpu_from_arch_dict({"mem_bw_gbps": 100, "max_achievable_tflops": {"matrix_bf16": 1}}).key == "custom"


def test_name_argument_overrides() -> None:
    g = gpu_from_arch_dict(dict(TRACELENS_B200), name="NVIDIA B200")
    assert g.key == "b200" and g.name == "NVIDIA B200"
    assert g.peak_tflops("matrix_bf16") == (2250.0, "datasheet")


def test_numbers_above_the_named_datasheet_are_not_merged() -> None:
    # MI300X numbers under the name H100: 5.3 TB/s is above the H100 SXM 3.35 TB/s datasheet
    g = gpu_from_arch_dict(dict(TRACELENS_MI300X), name="H100")
    assert g.key == "custom-h100" and g.vendor == "unknown"
    assert g.peak_tflops("matrix_bf16") == (708.0, "achievable")  # the file's numbers are still used
    assert g.peak_tbs() == (5.3, "datasheet")
    assert g.tflops_datasheet == {}
    assert any("exceed" in n for n in g.notes)
    # the TraceLens-fork MI325X table whose matrix_fp32 194 > 163.4 datasheet
    g = gpu_from_arch_dict({"name": "MI325X", "mem_bw_gbps": 6000, "max_achievable_tflops": {"matrix_fp32": 194}})
    assert g.key == "custom-mi325x"


def test_older_metadata_bf16_scalar() -> None:
    g = gpu_from_arch_dict({"platform": "MI300X", "peak_hbm_bw_tbs": 5.3, "peak_bf16_maf_tflops": 708})
    assert g.peak_tflops("matrix_bf16") == (1307.4, "datasheet") and g.achievable_tflops("matrix_bf16") == 708.0


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    d = copy.deepcopy(base)
    for k, v in changes.items():
        if v is _DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


_DROP = object()
_GOOD = {"name": "X", "mem_bw_gbps": 5300, "max_achievable_tflops": {"matrix_bf16": 708}}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (_with(_GOOD, mem_bw_gbps=_DROP), "mem_bw_gbps"),
        (_with(_GOOD, mem_bw_gbps=0), "mem_bw_gbps"),
        (_with(_GOOD, mem_bw_gbps=-5300), "mem_bw_gbps"),
        (_with(_GOOD, mem_bw_gbps="5300"), "mem_bw_gbps"),
        (_with(_GOOD, mem_bw_gbps=True), "mem_bw_gbps"),
        (_with(_GOOD, mem_bw_gbps=float("nan")), "mem_bw_gbps"),
        (_with(_GOOD, mem_bw_gbps=5.3), "mem_bw_gbps"),  # TB/s given where GB/s is expected
        (_with(_GOOD, mem_bw_gbps=_DROP, peak_hbm_bw_tbs=5300), "peak_hbm_bw_tbs"),  # and the reverse
        (_with(_GOOD, peak_hbm_bw_tbs=4.0), "peak_hbm_bw_tbs"),  # disagrees with mem_bw_gbps
        (_with(_GOOD, max_achievable_tflops=_DROP), "max_achievable_tflops"),
        (_with(_GOOD, max_achievable_tflops={}), "max_achievable_tflops"),
        (_with(_GOOD, max_achievable_tflops=708), "max_achievable_tflops"),
        (_with(_GOOD, max_achievable_tflops={"matrix_bf16": 0}), "max_achievable_tflops"),
        (_with(_GOOD, max_achievable_tflops={"matrix_bf16": -1}), "max_achievable_tflops.matrix_bf16"),
        (_with(_GOOD, max_achievable_tflops={"matrix_bf16": "708"}), "max_achievable_tflops.matrix_bf16"),
        (_with(_GOOD, max_achievable_tflops={"matrix_bf16": None}), "max_achievable_tflops.matrix_bf16"),
        (_with(_GOOD, max_achievable_tflops={"bf16": 708}), "max_achievable_tflops.bf16"),
        (_with(_GOOD, memory_gb=-1), "memory_gb"),
        (_with(_GOOD, num_cus="304"), "num_cus"),
        (_with(_GOOD, name=42), "name"),
    ],
)
def test_bad_dicts_name_the_field(bad: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as exc:
        gpu_from_arch_dict(bad)
    assert exc.value.field == field
    assert str(exc.value).startswith(f"{field}=")


@pytest.mark.parametrize("bad", [None, [1, 2], "MI300X", 5300])
def test_non_dict_is_rejected(bad: Any) -> None:
    with pytest.raises(ConfigError, match="JSON object"):
        gpu_from_arch_dict(bad)
