"""Round trips through the synthetic Kineto writer: shapes, mask and times written = shapes, mask and times read.

The writer returns, per emitted call instance, which kernels it launched and how long they ran (its own
ground truth, independent of the analysis). Also: linking without correlation ids, the E2E window
without a ProfilerStep, progress reporting.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace

syn = pytest.importorskip("sdpa_analyzer.server.synthetic")
S = syn.SyntheticAttentionCall


def _run(tmp: Path, calls: list, **kw: object) -> tuple[object, dict[str, pd.DataFrame], list]:
    st = syn.build_trace_with_truth(calls, **kw)
    path = syn.write_trace(st.trace, tmp / "t.json.gz")
    res = analyze_trace(path, tmp / "out")
    frames = {c.name: pd.read_csv(tmp / "out" / "category_data" / f"{c.name}_ops.csv") for c in res.categories}
    return res, frames, st.instances


CASES = {
    "aten_flash_gqa_causal": S(
        flavour="aten_flash",
        batch=2,
        heads_q=16,
        heads_kv=4,
        seq_q=1024,
        head_dim_qk=128,
        causal=True,
        with_backward=True,
        repeat=3,
        copies_before=2,
        copies_after=1,
    ),
    "aten_efficient": S(
        flavour="aten_efficient",
        batch=2,
        heads_q=16,
        seq_q=512,
        head_dim_qk=64,
        causal=True,
        with_backward=True,
        repeat=2,
    ),
    "aten_cudnn": S(flavour="aten_cudnn", batch=1, heads_q=8, seq_q=256, head_dim_qk=128, with_backward=True, repeat=2),
    "flash_attn_window": S(
        flavour="flash_attn",
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=4096,
        head_dim_qk=128,
        with_backward=True,
        repeat=2,
        window=(128, 0),
    ),
    "flash_attn_varlen": S(
        flavour="flash_attn_varlen",
        batch=3,
        heads_q=8,
        seq_q=100,
        seqlens_q=(100, 50, 30),
        seqlens_kv=(100, 50, 30),
        head_dim_qk=64,
        causal=True,
        with_backward=True,
    ),
    "unfused_masked": S(
        flavour="unfused",
        batch=2,
        heads_q=8,
        seq_q=256,
        head_dim_qk=64,
        causal=True,
        with_backward=True,
        repeat=2,
        attn_mask=True,
    ),
    "vllm_paged": S(
        flavour="vllm_paged",
        batch=3,
        heads_q=8,
        heads_kv=1,
        seq_q=10,
        seqlens_q=(10, 1, 1),
        seqlens_kv=(10, 300, 500),
        head_dim_qk=64,
        repeat=2,
    ),
}
CATEGORY = {"fwd": "sdpa_fwd", "bwd": "sdpa_bwd"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip(case: str, tmp_path: Path) -> None:
    call = CASES[case]
    res, frames, truth = _run(tmp_path, [call])
    assert res.status == "OK"
    for direction in ("fwd", "bwd"):
        inst = [i for i in truth if i.direction == direction]
        if not inst:
            assert CATEGORY[direction] not in frames or call.flavour == "vllm_paged"
            continue
        cat = "inferenceattention" if call.flavour == "vllm_paged" else CATEGORY[direction]
        df = frames[cat]
        assert int(df["operation_count"].sum()) == len(inst), (case, direction)
        # the writer's kernels of each instance never overlap: their sum is the union; KV-cache writes are reported
        # beside the kernel time (kv_cache_write_us_sum), not in it
        kv_ns = sum(d for i in inst for n, d in zip(i.kernel_names, i.kernel_dur_ns, strict=True)
                    if "reshape_and_cache" in n)
        assert df["Kernel Time (µs)_sum"].sum() == pytest.approx(sum(i.kernel_us for i in inst) - kv_ns / 1000,
                                                                 rel=1e-9)
        assert df["kv_cache_write_us_sum"].sum() == pytest.approx(kv_ns / 1000, rel=1e-9, abs=1e-12)
        names = {k for i in inst for k in i.kernel_names}
        got = {d["name"] for cell in df["kernel_details_summary"] for d in ast.literal_eval(cell)}
        assert got == names, (case, direction)
        if call.flavour == "vllm_paged":
            continue
        params = ast.literal_eval(df["perf_params"].iloc[0])
        assert (params["B"], params["H_Q"], params["H_KV"], params["d_h_qk"]) == (
            call.batch,
            call.heads_q,
            call.heads_kv,
            call.head_dim_qk,
        ), (case, direction)
        if call.flavour != "flash_attn_varlen":
            assert (params["N_Q"], params["N_KV"]) == (call.seq_q, call.seq_kv)
        if call.flavour != "unfused":  # an unfused mask is an added tensor: its pattern is not visible
            assert params["causal"] == call.causal, (case, direction)
        if call.window is not None:
            assert next(iter(params["window_size"])) == call.window[0]
        if direction == "bwd":
            assert df["linked_forward"].notna().all()


def test_unfused_rows_are_typed_and_named(tmp_path: Path) -> None:
    _, frames, _ = _run(tmp_path, [CASES["unfused_masked"]])
    fwd, bwd = frames["sdpa_fwd"].iloc[0], frames["sdpa_bwd"].iloc[0]
    assert fwd["name"] == "unfused_attention (aten::matmul+aten::softmax+aten::matmul)"
    assert fwd["attention_type"] == "unfused" and bwd["attention_type"] == "unfused"
    assert bwd["name"].startswith("unfused_attention_backward (")
    # SDPA layout: q, k, v then attn_mask, dropout_p, is_causal, scale, enable_gqa
    dims = ast.literal_eval(fwd["Input Dims"])
    assert dims[:3] == ((2, 8, 256, 64),) * 3 and len(dims) == 8


def test_copies_counted(tmp_path: Path) -> None:
    call = CASES["aten_flash_gqa_causal"]
    _, frames, _ = _run(tmp_path, [call])
    row = frames["sdpa_fwd"].iloc[0]
    # 2 contiguous before + 1 after per call, one copy kernel of copy_kernel_us each, 3 calls
    assert int(row["copy_overhead_count"]) == 3 * call.repeat
    assert row["copy_overhead_us_sum"] == pytest.approx(3 * call.repeat * call.copy_kernel_us)


def _strip(trace: dict, *, correlation: bool, flows: bool = True) -> dict:
    for e in trace["traceEvents"]:
        if not flows and e.get("ph") in ("s", "f"):
            e["ph"] = "ignored"
        if correlation and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            e.get("args", {}).pop("correlation", None)
    return trace


@pytest.mark.parametrize("mode", ["flows", "external_id"])
def test_linking_without_correlation(mode: str, tmp_path: Path) -> None:
    call = S(flavour="aten_flash", batch=1, heads_q=8, seq_q=512, head_dim_qk=64, repeat=2)
    st = syn.build_trace_with_truth([call])
    trace = _strip(st.trace, correlation=True, flows=(mode == "flows"))
    path = syn.write_trace(trace, tmp_path / "t.json")
    res = analyze_trace(path, tmp_path / "out")
    df = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv")
    assert int(df["operation_count"].sum()) == 2
    assert df["Kernel Time (µs)_sum"].sum() == pytest.approx(sum(i.kernel_us for i in st.instances))
    assert res.unlinked.kernels_without_cpu_launch == 0


def test_window_without_profiler_step(tmp_path: Path) -> None:
    res, _, _truth = _run(
        tmp_path, [S(flavour="flash_attn", batch=1, heads_q=8, seq_q=256, head_dim_qk=64)], with_profiler_step=False
    )
    assert res.e2e.window_source == "gpu_activity"
    trace = json.loads(
        syn.write_trace(
            syn.build_trace(
                [S(flavour="flash_attn", batch=1, heads_q=8, seq_q=256, head_dim_qk=64)], with_profiler_step=False
            ),
            tmp_path / "again.json",
        ).read_text()
    )
    gpu = [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert res.e2e.total_time_ms == pytest.approx(span / 1000, rel=1e-9)


def test_progress_reports_every_stage(tmp_path: Path) -> None:
    st = syn.build_trace_with_truth([CASES["aten_cudnn"]])
    path = syn.write_trace(st.trace, tmp_path / "t.json.gz")
    seen: list[tuple[float, float, str]] = []
    analyze_trace(path, tmp_path / "out", progress=lambda d, t, m: seen.append((d, t, m)))
    stages = [m for _, _, m in seen]
    for stage in ("parse", "tree", "link", "attention", "write", "done"):
        assert stage in stages
    done = [d for d, _, _ in seen]
    assert done == sorted(done) and done[-1] == seen[-1][1] == 100.0


def test_large_generated_trace(tmp_path: Path) -> None:
    """The bench generator's trace: every layer's attention call is found, nothing left unlinked."""
    path = tmp_path / "big.json"
    layers = 8
    n = syn.generate_large_trace(20_000, path, layers_per_step=layers)
    res = analyze_trace(path, tmp_path / "out")
    df = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv")
    trace = json.loads(path.read_text())
    assert len(trace["traceEvents"]) == n
    calls = sum(1 for e in trace["traceEvents"] if e.get("name") == "aten::scaled_dot_product_attention")
    assert int(df["operation_count"].sum()) == calls > 0
    assert res.unlinked.kernels_without_cpu_launch == 0
