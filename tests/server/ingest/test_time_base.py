"""The time base: E2E, GPU busy and idle time side by side; attention as a share of busy time beside its share of E2E;
another step's kernels named as outside the window; runtime launches without kernel records said as such. Every
expected number is worked out by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools.base import ToolContext
from sdpa_analyzer.server.tools.load import LoadInput, load_category_data

FWD_ARGS = {
    "Input Dims": [[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [], [], [], []],
    "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 4,
    "Input Strides": [[65536, 8192, 64, 1]] * 3 + [[]] * 4,
    "Concrete Inputs": ["", "", "", "0.", "True", "False", "0.125"],
}
FLASH = ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
         "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, "
         "true, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)")


def _ev(cat: str, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    gpu = cat in ("kernel", "gpu_memcpy", "gpu_memset")
    return {"ph": "X", "cat": cat, "name": name, "pid": 0 if gpu else 1, "tid": 7 if gpu else 1, "ts": ts,
            "dur": dur, "args": args}


def _window_trace(path: Path) -> Path:
    """CPU ProfilerStep [0, 1000]. Another step's attention kernel [-400, -350] (no launch: outside the window).
    In the step: SDPA launches flash [100, 150]; a GEMM runs [400, 500]. Window = the GPU work launched in the step =
    [100, 500]: E2E 400 µs, busy 50 + 100 = 150 µs, idle 250 µs."""
    ev = [
        _ev("user_annotation", "ProfilerStep#1", 0, 1000),
        _ev("kernel", FLASH, -400, 50, correlation=1, stream=7, device=0),
        _ev("cpu_op", "aten::_scaled_dot_product_flash_attention", 10, 80, **FWD_ARGS),
        _ev("cuda_runtime", "cudaLaunchKernel", 20, 2, correlation=11),
        _ev("kernel", FLASH, 100, 50, correlation=11, stream=7, device=0),
        _ev("cpu_op", "aten::mm", 200, 20),
        _ev("cuda_runtime", "cudaLaunchKernel", 205, 2, correlation=12),
        _ev("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_kernel", 400, 100, correlation=12,
            stream=7, device=0),
    ]
    path.write_text(json.dumps({"traceEvents": ev, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}))
    return path


def test_busy_idle_and_outside_window(tmp_path: Path) -> None:
    res = analyze_trace(_window_trace(tmp_path / "t.json"), tmp_path / "out")
    assert res.e2e.total_time_ms == pytest.approx(0.4)
    assert res.e2e.busy_time_ms == pytest.approx(0.15) and res.e2e.idle_time_ms == pytest.approx(0.25)
    (cat,) = res.categories
    assert cat.percent_of_e2e == pytest.approx(100 * 50 / 400)  # 12.5 %
    assert cat.percent_of_busy == pytest.approx(100 * 50 / 150)  # 33.3 %
    # the other step's kernel: named as outside the window, not a share of it, not a call
    assert res.unlinked.attention_kernels_outside_window == 1
    assert res.unlinked.attention_time_outside_window_us == pytest.approx(50.0)
    assert any("outside the profiled window" in w for w in res.warnings)
    md = json.loads((tmp_path / "out/metadata/sdpa_fwd_metadata.json").read_text())
    outside = md["attention_outside_rows"]["trace1"]
    assert (outside["kernels"], outside["time_us"], outside["percent_of_e2e"]) == (0, 0.0, 0.0)
    assert (outside["outside_window"]["kernels"], outside["outside_window"]["time_us"]) == (1, 50.0)
    w = md["e2e_window"]
    assert (w["e2e_time_ms"], w["busy_time_ms"], w["idle_time_ms"]) == pytest.approx((0.4, 0.15, 0.25))

    loaded = load_category_data(ToolContext(roots=DataRoots([tmp_path])),
                                LoadInput(output_dir=str(tmp_path / "out"), category="sdpa_fwd"))
    assert loaded.e2e_baseline_ms == pytest.approx(0.4)
    assert (loaded.gpu_busy_ms, loaded.gpu_idle_ms) == pytest.approx((0.15, 0.25))
    assert loaded.percent_of_e2e == pytest.approx(12.5) and loaded.percent_of_busy == pytest.approx(100 / 3, 1e-4)
    assert loaded.attention_outside_window_us == pytest.approx(50.0)


def test_launches_without_kernel_records_are_named(tmp_path: Path) -> None:
    ev = [
        _ev("cpu_op", "aten::_scaled_dot_product_flash_attention", 10, 80, **FWD_ARGS),
        _ev("cuda_runtime", "cudaLaunchKernel", 20, 2, correlation=11),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    with pytest.raises(TraceError) as err:
        analyze_trace(path, tmp_path / "out")
    msg = str(err.value)
    assert "1 kernel launch runtime event(s) but no kernel records" in msg and "CPU-only" not in msg


def test_compare_reports_trace2_kernels_outside(tmp_path: Path) -> None:
    """--compare: trace 2's attention kernel from another step (50 µs, outside its window) is said as trace 2's."""
    one = _window_trace(tmp_path / "one.json")
    ev = json.loads(one.read_text())
    ev["traceEvents"] = [e for e in ev["traceEvents"] if e["ts"] >= 0]  # trace 1 without the other step's kernel
    one.write_text(json.dumps(ev))
    res = analyze_trace(one, tmp_path / "out", trace2_path=_window_trace(tmp_path / "two.json"))
    assert res.unlinked.attention_kernels_outside_rows == 0
    assert res.trace2_unlinked is not None
    assert res.trace2_unlinked.attention_kernels_outside_window == 1
    assert res.trace2_unlinked.attention_time_outside_window_us == pytest.approx(50.0)
    assert any(w.startswith("trace 2: 1 attention kernels (50.0 µs) ran outside the profiled window")
               for w in res.warnings)
    md = json.loads((tmp_path / "out/metadata/sdpa_fwd_metadata.json").read_text())
    assert md["attention_outside_rows"]["trace2"]["outside_window"]["time_us"] == 50.0


def test_the_time_base_reaches_rank_template_and_report(tmp_path: Path) -> None:
    """The same window through rank_findings, the template and the report: busy 150 µs, idle 250 µs (by hand above),
    and attention 50 µs = 33.33 % of the busy time beside 12.5 % of E2E."""
    from sdpa_analyzer.server.tools import call

    out = tmp_path / "out"
    analyze_trace(_window_trace(tmp_path / "t.json"), out)
    roots = DataRoots([tmp_path])
    call("rank_findings", roots, output_dir=str(out), category="sdpa_fwd")
    metrics = json.loads((out / "category_data" / "sdpa_fwd_metrics.json").read_text())
    assert metrics["sdpa_analyzer"]["time_base"] == {"gpu_busy_ms": 0.15, "gpu_idle_ms": 0.25, "percent_of_busy": 33.33}
    tpl = call("render_findings_template", roots, output_dir=str(out), category="sdpa_fwd")
    text = Path(tpl.findings_file).read_text()
    assert "{{cat.busy_ms}} = 0.15 ms" in text and "{{cat.share_busy}} = 33.33 %" in text
    call("render_report", roots, output_dir=str(out))
    html = (out / "report.html").read_text()
    assert "GPU busy 0.150 ms · idle 0.250 ms" in html and "12.50 % of E2E · 33.33 % of GPU busy time" in html
