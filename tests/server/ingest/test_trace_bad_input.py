"""Bad input to analyze_trace: one-line TraceError naming the file, and nothing written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.errors import TraceError


def _kernel_trace(ops: list[dict], device: str | None = "NVIDIA H100 80GB HBM3") -> dict:
    """A minimal GPU trace: each op launches one kernel (runtime event + correlation)."""
    events: list[dict] = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 0.0,
            "dur": 10_000.0,
            "args": {},
        }
    ]
    t = 10.0
    for i, op in enumerate(ops):
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": op["name"],
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": 50.0,
                "args": {"External id": i + 1, **op.get("args", {})},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": t + 10,
                "dur": 5.0,
                "args": {"correlation": 100 + i, "External id": i + 1},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": op.get("kernel", "some_kernel"),
                "pid": 0,
                "tid": 7,
                "ts": t + 20,
                "dur": op.get("kernel_us", 30.0),
                "args": {"correlation": 100 + i, "stream": 7, "device": 0},
            }
        )
        t += 100.0
    doc: dict = {"schemaVersion": 1, "traceEvents": events}
    if device is not None:
        doc["deviceProperties"] = [{"id": 0, "name": device}]
    return doc


SDPA_ARGS = {
    "Input Dims": [[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [], [], [], []],
    "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 4,
    "Input Strides": [[65536, 8192, 64, 1]] * 3 + [[]] * 4,
    "Concrete Inputs": ["", "", "", "0.", "True", "False", "0.125"],
}


def _write(tmp: Path, name: str, doc: dict | bytes, gz: bool = False) -> Path:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    p = tmp / name
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


def _assert_fails(trace: Path, out: Path, fragment: str, **kw: object) -> str:
    with pytest.raises(TraceError) as err:
        analyze_trace(trace, out, **kw)  # type: ignore[arg-type]
    msg = str(err.value)
    assert fragment in msg, msg
    assert "\n" not in msg
    assert isinstance(err.value, InputError) and isinstance(err.value, ValueError)
    assert not out.exists(), "nothing may be written on error"
    return msg


def test_missing_file(tmp_path: Path) -> None:
    msg = _assert_fails(tmp_path / "nope.json.gz", tmp_path / "out", "not found")
    assert "nope.json.gz" in msg


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(_kernel_trace([{"name": "aten::mm"}] * 200)).encode())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) * 2 // 3])
    _assert_fails(p, tmp_path / "out", "truncated gzip")


def test_not_json(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.json", b"<html>not a trace</html>")
    _assert_fails(p, tmp_path / "out", "not valid JSON")
    q = _write(tmp_path, "x.json.gz", b"hello world", gz=True)
    _assert_fails(q, tmp_path / "out2", "not valid JSON")


def test_json_without_trace_events(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.json", {"schemaVersion": 1, "deviceProperties": []})
    _assert_fails(p, tmp_path / "out", "without 'traceEvents'")


def test_empty_events(tmp_path: Path) -> None:
    p = _write(tmp_path, "x.json", {"traceEvents": []})
    _assert_fails(p, tmp_path / "out", "traceEvents is empty")


def test_cpu_only_trace(tmp_path: Path) -> None:
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}
    _assert_fails(_write(tmp_path, "cpu.json", doc), tmp_path / "out", "CPU-only trace")


def test_unknown_explicit_arch_lists_known_names(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.json", _kernel_trace([{"name": "aten::scaled_dot_product_attention"}]))
    msg = _assert_fails(p, tmp_path / "out", "unknown", arch="tpu-v5")
    # the nearest keys (each one arch= accepts) and where every key is
    assert "list_architectures shows all" in msg
    named = msg.split("known GPUs: ", 1)[1].split(";", 1)[0].split(", ")
    assert named and all(get_gpu(k).key == k for k in named)


def test_no_attention_is_no_data(tmp_path: Path) -> None:
    p = _write(tmp_path, "t.json", _kernel_trace([{"name": "aten::mm"}, {"name": "aten::add"}]))
    res = analyze_trace(p, tmp_path / "out")
    assert res.status == "NO_DATA" and res.categories == []
    manifest = json.loads((tmp_path / "out/category_data/category_manifest.json").read_text())
    assert not any(c["name"].startswith("sdpa") for c in manifest["categories"])
    assert manifest["gpu_utilization"]["total_time_ms"] == pytest.approx(0.13)  # kernels at 30..60, 130..160 µs
    assert not list((tmp_path / "out/category_data").glob("*_ops.csv"))


def test_stale_category_files_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with_attn = _write(
        tmp_path,
        "a.json",
        _kernel_trace(
            [{"name": "aten::_scaled_dot_product_flash_attention", "args": SDPA_ARGS, "kernel": "flash_fwd_kernel"}]
        ),
    )
    analyze_trace(with_attn, out)
    assert (out / "category_data/sdpa_fwd_ops.csv").exists()
    (out / "category_data/sdpa_fwd_metrics.json").write_text("{}")
    (out / "category_findings").mkdir()
    (out / "category_findings/sdpa_fwd_findings.md").write_text("mine")
    without = _write(tmp_path, "b.json", _kernel_trace([{"name": "aten::mm"}]))
    assert analyze_trace(without, out).status == "NO_DATA"
    assert not (out / "category_data/sdpa_fwd_ops.csv").exists()
    assert not (out / "category_data/sdpa_fwd_metrics.json").exists()
    assert (out / "category_findings/sdpa_fwd_findings.md").read_text() == "mine"  # never touched


def test_gpu_resolution(tmp_path: Path) -> None:
    ops = [{"name": "aten::_scaled_dot_product_flash_attention", "args": SDPA_ARGS, "kernel": "flash_fwd_kernel"}]
    # known device name -> peaks of that GPU
    res = analyze_trace(_write(tmp_path, "a.json", _kernel_trace(ops)), tmp_path / "a")
    meta = json.loads((tmp_path / "a/metadata/sdpa_fwd_metadata.json").read_text())
    assert (res.gpu.arch, res.gpu.source, meta["platform"]) == ("h100-sxm", "trace", "h100-sxm")
    assert meta["peak_hbm_bw_tbs"] == pytest.approx(3.35) and meta["max_achievable_tflops"]["matrix_bf16"] > 900
    # explicit arch overrides, with a warning naming the trace's GPU
    res = analyze_trace(_write(tmp_path, "b.json", _kernel_trace(ops)), tmp_path / "b", arch="mi300x")
    meta = json.loads((tmp_path / "b/metadata/sdpa_fwd_metadata.json").read_text())
    assert (res.gpu.arch, res.gpu.source, meta["platform"]) == ("mi300x", "argument", "mi300x")
    assert any("NVIDIA H100 80GB HBM3" in w for w in res.warnings)
    # unknown device name -> no peaks, a warning listing what is known
    res = analyze_trace(_write(tmp_path, "c.json", _kernel_trace(ops, device="Acme Tensor 9000")), tmp_path / "c")
    meta = json.loads((tmp_path / "c/metadata/sdpa_fwd_metadata.json").read_text())
    assert res.status == "OK" and res.gpu.arch is None and "max_achievable_tflops" not in meta
    assert meta["platform"] == "Acme Tensor 9000"
    assert any("Acme Tensor 9000" in w and "list_architectures" in w for w in res.warnings)
    # no deviceProperties at all -> no peaks, a warning
    res = analyze_trace(_write(tmp_path, "d.json", _kernel_trace(ops, device=None)), tmp_path / "d")
    meta = json.loads((tmp_path / "d/metadata/sdpa_fwd_metadata.json").read_text())
    assert res.gpu.device_name is None and meta["platform"] is None
    assert any("deviceProperties" in w for w in res.warnings)
    df = pd.read_csv(tmp_path / "d/category_data/sdpa_fwd_ops.csv")
    assert df["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(30.0)


def test_output_dir_is_a_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "a.json", _kernel_trace([{"name": "aten::mm"}]))
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(TraceError, match="not a folder"):
        analyze_trace(p, f)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("name", {"a": 1}, "traceEvents[3].name is an object, expected a string or a number"),
        ("pid", [1], "traceEvents[3].pid is an array, expected a string or a number"),
        ("args", [1], "traceEvents[3].args is list, expected an object"),
    ],
)
def test_event_field_of_the_wrong_json_type_is_named(tmp_path: Path, field: str, value: object, expected: str) -> None:
    doc = _kernel_trace([{"name": "aten::scaled_dot_product_attention"}])
    doc["traceEvents"][3][field] = value  # the kernel event (annotation, op, runtime launch, kernel)
    msg = _assert_fails(_write(tmp_path, "t.json", doc), tmp_path / "out", expected)
    assert "unhashable" not in msg
