"""The right GPU and the right roof (verdicts-evidence §1-2): roofs need a stated method, an unnamed device is
matched by its properties, and kernel names that contradict the metadata's GPU stop the scoring."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sdpa_analyzer.perf_models.devices import match_device_properties
from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import ANALYSIS_FOLDERS, FLASH_ROW, TRACES, kernel_trace, make_folder, need


def test_unnamed_rocm_device_is_matched_by_arch_cus_and_memory() -> None:
    # the vLLM trace's entry: name "", gfx 9.4, 304 CUs, 206,141,652,992 B = 192 GiB  -> an MI300X
    props = {"name": "", "totalGlobalMem": 206141652992, "computeMajor": 9, "computeMinor": 4, "warpSize": 64,
             "numSms": 304}
    assert match_device_properties(props).key == "mi300x"
    assert match_device_properties({**props, "totalGlobalMem": 256 * 2**30}).key == "mi325x"  # same die, 256 GiB
    assert match_device_properties({**props, "numSms": 228}) is None  # no such part: no guess
    # H200 SXM and H200 NVL share sm_90, 132 SMs and 141 GB: the properties cannot tell them apart
    assert match_device_properties({**props, "warpSize": 32, "computeMinor": 0, "numSms": 132,
                                    "totalGlobalMem": 150_000_000_000}) is None


def test_vllm_trace_with_an_unnamed_device_is_scored_on_an_mi300x(tmp_path: Path) -> None:
    trace = need(TRACES / "inference/vllm_prefilldecode_piecewise/graph_execution.json.gz")
    roots = DataRoots([tmp_path, trace.parents[2]])
    res = call("analyze_trace", roots, trace_path=str(trace), output_dir=str(tmp_path / "out"))
    assert res.gpu.arch == "mi300x" and res.gpu.source == "trace"
    assert "unnamed device (gfx94, 304 CUs, 192.0 GiB)" == res.gpu.device_name


def test_h100_folder_whose_trace_is_out_of_reach_is_not_scored_as_mi300x(tmp_path: Path) -> None:
    src = need(ANALYSIS_FOLDERS / "h100_qwen1.5-0.5b")
    folder = tmp_path / "h100_qwen"
    shutil.copytree(src, folder)
    for p in [folder, *folder.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    meta = json.loads((folder / "metadata/sdpa_fwd_metadata.json").read_text())
    assert meta["platform"] == "MI300X"  # the orchestrator only knew MI300X
    roots = DataRoots([tmp_path])  # the trace (../../traces/h100/...) is outside this root
    with pytest.raises(ToolFailure) as exc:
        call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd")
    msg = str(exc.value)
    assert "NVIDIA" in msg and "pytorch_flash::flash_fwd_kernel" in msg and "mi300x" in msg
    assert "outside the data roots" in msg and "arch=" in msg
    # with the GPU named, it is scored, against the H100's datasheet roof
    res = call("compute_roofline", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    assert res.peaks.gpu_key == "h100-sxm" and res.peaks.peak_tflops == pytest.approx(989.4)


def test_kernel_names_contradicting_an_explicit_arch_warn(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])  # pytorch_flash:: kernels (NVIDIA)
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd", arch="mi300x")
    assert any("NVIDIA" in w and "mi300x" in w for w in res.warnings)


def test_same_die_same_roof() -> None:
    # H200 is the GH100 of the H100 SXM: the same kernel time must score the same compute efficiency
    h100, h200 = get_gpu("h100-sxm"), get_gpu("h200")
    assert h100.compute_roof("matrix_bf16").value == h200.compute_roof("matrix_bf16").value == 989.4
    assert h200.bandwidth_roof().value == 4.8


def _trace_on(tmp_path: Path, device: dict) -> Path:
    doc = kernel_trace([{}, {}])
    doc["deviceProperties"] = [{"id": 0, **device}]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_40gb_a100_named_as_the_80gb_part_is_scored_from_its_memory(tmp_path: Path) -> None:
    # issue 33: a 40 GB A100 whose name says the 80 GB SXM (and whose analysis metadata says so too): not refused,
    # not the 80 GB part (2.039 TB/s) either: its 39.6 GiB pick the 40 GB A100, 1.555 TB/s, and the warning says so
    trace = _trace_on(tmp_path, {"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 40536 * 2**20, "numSms": 108,
                                 "computeMajor": 8, "computeMinor": 0, "warpSize": 32})
    roots = DataRoots([tmp_path])
    res = call("analyze_trace", roots, trace_path=str(trace), output_dir=str(tmp_path / "out"))
    assert res.gpu.arch == "a100-40gb"
    (msg,) = [w for w in res.warnings if "its name fits a100-sxm-80gb" in w]
    assert "39.6 GiB is not 80 GB" in msg and "scored as a100-40gb" in msg
    scored = call("compute_roofline", roots, output_dir=str(tmp_path / "out"), category="sdpa_fwd")
    assert scored.peaks.gpu_key == "a100-40gb" and scored.peaks.peak_tbs == pytest.approx(1.555)
    assert scored.peaks.peak_tbs_kind == "datasheet" and scored.peaks.peak_tflops_kind == "datasheet"


def test_a_device_no_part_fits_is_not_scored_as_a_sibling(tmp_path: Path) -> None:
    # a 95 GiB, 132-SM Hopper whose name says only "H100": the H100 NVL (835.5 TFLOPS) and the GH200 (989.4) both
    # fit its properties, with different roofs: refused with both keys, then scored with the arch the hint names
    trace = _trace_on(tmp_path, {"name": "NVIDIA H100", "totalGlobalMem": 95 * 2**30, "numSms": 132,
                                 "computeMajor": 9, "computeMinor": 0, "warpSize": 32})
    roots = DataRoots([tmp_path])
    res = call("analyze_trace", roots, trace_path=str(trace), output_dir=str(tmp_path / "out"))
    assert res.gpu.arch is None
    (msg,) = [w for w in res.warnings if "its name fits h100-sxm" in w]
    assert "95.0 GiB is not 80 GB" in msg and "gh200 (96 GB" in msg and "h100-nvl (94 GB" in msg
    assert "pass arch=" in msg
    with pytest.raises(ToolFailure) as exc:  # scoring it needs the GPU named
        call("compute_roofline", roots, output_dir=str(tmp_path / "out"), category="sdpa_fwd")
    assert "arch=" in str(exc.value)
    scored = call("compute_roofline", roots, output_dir=str(tmp_path / "out"), category="sdpa_fwd", arch="gh200")
    assert scored.peaks.gpu_key == "gh200" and scored.peaks.peak_tbs == pytest.approx(4.0)


def test_a_stated_best_match_reaches_the_warnings(tmp_path: Path) -> None:
    trace = _trace_on(tmp_path, {"name": "NVIDIA Hopper inference card", "totalGlobalMem": 97871 * 2**20,
                                 "numSms": 78, "computeMajor": 9, "computeMinor": 0, "warpSize": 32})
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(trace), output_dir=str(tmp_path / "out"))
    assert res.gpu.arch == "h20"
    assert any("not in the GPU table" in w and "scored as h20" in w for w in res.warnings)
