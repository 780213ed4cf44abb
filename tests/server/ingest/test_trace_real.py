"""analyze_trace on every real trace: the attention rows must match what the trace holds.

Expected numbers are computed here, directly from the raw events with plain loops (json + gzip, no
project code): one call per top-level attention op, its kernels = the GPU events whose runtime launch
(same correlation id) happened on the op's thread inside the op's time span, kernel time = the sum of
their durations (each trace runs them on one stream, so the union equals the sum).
"""

from __future__ import annotations

import ast
import gzip
import json
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace

# trace -> (category, top-level op that starts a call, op whose args the row reports, causal slot in it)
FUSED = {
    "h100/gaunernst_bert-small-uncased__1016001.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "h100/Falconsai_nsfw_image_detection__1016002.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300/gaunernst_bert-small-uncased__1016001.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300/Falconsai_nsfw_image_detection__1016002.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300x-microbench/sdpa_01_long_seq_low_eff.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300x-microbench/sdpa_02_very_long_seq_head_waste.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300x-microbench/sdpa_03_short_seq_overhead.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    "mi300x-microbench/sdpa_04_large_head_dim.json.gz": (
        "sdpa_fwd",
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        4,
    ),
    # aiter op without Concrete Inputs: no causal slot to read
    "mi300x-microbench/test03_attention_fused_vs_unfused_trace1.json.gz": (
        "sdpa_fwd",
        "aiter::_flash_attn_forward",
        "aiter::_flash_attn_forward",
        None,
    ),
    # flash_attn: FlashAttnFunc(q, k, v, dropout_p, softmax_scale, causal, ...) -> causal at slot 5
    "synthetic/flash_attn_fwd_bwd_gqa_noncausal.json.gz": ("sdpa_fwd", "FlashAttnFunc", "FlashAttnFunc", 5),
    # vLLM unified attention: THD tensors, no causal argument (the registry assumes causal)
    "b200/vllm_eager_trace.json.gz": (
        "inferenceattention",
        "vllm::unified_attention_with_output",
        "vllm::unified_attention_with_output",
        None,
    ),
}
# the synthetic trace's backward: evaluate_function -> FlashAttnFuncBackward -> flash_attn::_flash_attn_backward;
# _flash_attn_backward(dout, q, k, v, out, lse, dq, dk, dv, dropout_p, softmax_scale, causal, ...) -> slot 11
BACKWARD = {
    "synthetic/flash_attn_fwd_bwd_gqa_noncausal.json.gz": (
        "sdpa_bwd",
        "flash_attn::_flash_attn_backward",
        "flash_attn::_flash_attn_backward",
        11,
    ),
}
UNFUSED = (
    "mi300x-microbench/test02_attention_both_unfused_trace1.json.gz",
    "mi300x-microbench/test02_attention_both_unfused_trace2.json.gz",
    "mi300x-microbench/test03_attention_fused_vs_unfused_trace2.json.gz",
)
SGLANG = "inference/sglang_Qwen3-8B_decode.json.gz"


@cache
def raw_events(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


@cache
def analyzed(path: Path, out: Path) -> tuple[object, dict[str, pd.DataFrame]]:
    res = analyze_trace(path, out)
    frames = {c.name: pd.read_csv(out / "category_data" / f"{c.name}_ops.csv") for c in res.categories}
    return res, frames


def expected_calls(events: list[dict], top: str, row_op: str) -> list[dict]:
    """One dict per call: the row op's args and the kernels launched inside the top op (plain loops)."""
    runtime = {}
    for e in events:
        if (
            e.get("ph") == "X"
            and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and "correlation" in e.get("args", {})
        ):
            runtime[e["args"]["correlation"]] = e
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    calls = []
    for t in ops:
        if t["name"] != top:
            continue
        t0, t1 = t["ts"], t["ts"] + t["dur"]
        inside = [o for o in ops if o["tid"] == t["tid"] and t0 <= o["ts"] <= t1 and o["name"] == row_op]
        row = inside[0]
        ks = []
        for k in kernels:
            r = runtime.get(k["args"].get("correlation"))
            if r is not None and r["tid"] == t["tid"] and t0 <= r["ts"] <= t1:
                ks.append(k)
        # KV-cache writes launched inside the op are accounted in their own column, not in its kernel time
        kv = [k for k in ks if "reshape_and_cache" in k["name"] or "store_kvcache" in k["name"]]
        calls.append({"args": row["args"], "kernel_us": sum(k["dur"] for k in ks if k not in kv),
                      "kv_us": sum(k["dur"] for k in kv), "n_kernels": len(ks)})
    return calls


def union_us(intervals: list[tuple[float, float]]) -> float:
    """Length covered by intervals (plain merge loop)."""
    total, cur = 0.0, None
    for s, e in sorted(intervals):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0.0)


def literal(cell: str) -> object:
    return ast.literal_eval(cell)


def check_rows(df: pd.DataFrame, calls: list[dict], causal_slot: int | None) -> None:
    assert int(df["operation_count"].sum()) == len(calls)
    assert df["Kernel Time (µs)_sum"].sum() == pytest.approx(sum(c["kernel_us"] for c in calls), rel=1e-9)
    assert df["kv_cache_write_us_sum"].sum() == pytest.approx(sum(c["kv_us"] for c in calls), rel=1e-9, abs=1e-9)
    exp_dims = sorted({json.dumps(c["args"]["Input Dims"]) for c in calls})
    got_dims = sorted({json.dumps(literal(d)) for d in df["Input Dims"]})
    assert got_dims == [json.dumps(json.loads(d)) for d in exp_dims] or got_dims == exp_dims
    if causal_slot is not None:
        exp_causal = sorted({c["args"]["Concrete Inputs"][causal_slot] == "True" for c in calls})
        got_causal = sorted({literal(p)["causal"] for p in df["perf_params"]})
        assert got_causal == exp_causal


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_traces(name: str, traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = traces_dir / name
    if not path.exists():
        pytest.skip(f"{name} not available")
    cat, top, row_op, slot = FUSED[name]
    res, frames = analyzed(path, tmp_path_factory.mktemp("out"))
    assert res.status == "OK"
    calls = expected_calls(raw_events(path), top, row_op)
    assert calls, "the test's own expectation found no call"
    df = frames[cat]
    assert set(df["name"]) == {row_op}
    check_rows(df, calls, slot)
    if name in BACKWARD:
        bcat, btop, brow, bslot = BACKWARD[name]
        bcalls = expected_calls(raw_events(path), btop, brow)
        check_rows(frames[bcat], bcalls, bslot)
        assert set(frames[bcat]["linked_forward"]) == {"FlashAttnFunc"}
    else:
        assert "sdpa_bwd" not in frames  # none of the real traces has an attention backward


@pytest.mark.parametrize("name", UNFUSED)
def test_unfused_microbench(name: str, traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = traces_dir / name
    if not path.exists():
        pytest.skip(f"{name} not available")
    res, frames = analyzed(path, tmp_path_factory.mktemp("out"))
    events = raw_events(path)
    # the trace: one `attention` op holding bmm -> softmax -> bmm, three kernels in all
    ops = [e["name"] for e in events if e.get("cat") == "cpu_op"]
    assert ops.count("aten::bmm") == 2 and ops.count("aten::softmax") == 1
    # test02 trace1's kernels overlap on the stream (softmax ends after the second bmm starts):
    # the call's kernel time is the union of the intervals, as formats.md defines it
    kernel_us = union_us([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "kernel"])
    df = frames["sdpa_fwd"]
    assert len(df) == 1 and int(df["operation_count"].iloc[0]) == 1
    assert df["name"].iloc[0] == "unfused_attention (aten::bmm+aten::softmax+aten::bmm)"
    assert df["attention_type"].iloc[0] == "unfused"
    assert df["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(kernel_us)
    # Q·Kᵀ: bmm (8, 512, 64) @ (8, 64, 512); the bmm batch 8 = B*H, written as B=1, H=8 (SDPA layout)
    dims = literal(df["Input Dims"].iloc[0])
    assert dims[:3] == ((1, 8, 512, 64), (1, 8, 512, 64), (1, 8, 512, 64))
    # the second bmm records the first one's dims (not P·V): kept, with a warning
    assert any("do not fit P·V" in w for w in res.warnings)


def test_sglang_graph_replay(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = traces_dir / SGLANG
    if not path.exists():
        pytest.skip("sglang trace not available")
    _res, frames = analyzed(path, tmp_path_factory.mktemp("out"))
    kernels = sorted((e for e in raw_events(path) if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    # per layer: store_kvcache, paged_attention ..._QKV_..., paged_attention ..._reduce_... back to back
    qkv = [i for i, k in enumerate(kernels) if "paged_attention_ll4mi_QKV" in k["name"]]
    expected = kv = 0.0
    for i in qkv:
        assert "store_kvcache" in kernels[i - 1]["name"] and "ll4mi_reduce" in kernels[i + 1]["name"]
        expected += kernels[i]["dur"] + kernels[i + 1]["dur"]
        kv += kernels[i - 1]["dur"]
    df = frames["inferenceattention"]
    assert int(df["operation_count"].sum()) == len(qkv) == 36
    # the KV-cache write before each layer's attention is reported beside the row, not inside its time
    assert df["Kernel Time (µs)_sum"].sum() == pytest.approx(expected, rel=1e-9)
    assert df["kv_cache_write_us_sum"].sum() == pytest.approx(kv, rel=1e-9)
    assert int(df["kv_cache_write_count"].sum()) == 36
    params = literal(df["perf_params"].iloc[0])
    # execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)
    assert (params["num_gen_requests"], params["g_sq"], params["g_sk"], params["sum_ctx_tokens"]) == (32, 32, 32785, 0)
    bd = literal(df["kernel_breakdown"].iloc[0])
    assert bd["paged_attention_percent"] + bd["reshape_cache_percent"] == pytest.approx(100.0)


def test_vllm_workload_and_breakdown(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = traces_dir / "b200/vllm_eager_trace.json.gz"
    if not path.exists():
        pytest.skip("vLLM trace not available")
    _, frames = analyzed(path, tmp_path_factory.mktemp("out"))
    df = frames["inferenceattention"]
    params = literal(df["perf_params"].iloc[0])
    # execute_context_1(888_788544)_generation_0(0): one prefill request of 888 tokens, no decode
    assert (params["num_ctx_requests"], params["c_sq"], params["num_gen_requests"]) == (1, 888, 0)
    events = raw_events(path)
    cache_us = sum(e["dur"] for e in events if e.get("cat") == "kernel" and "reshape_and_cache" in e["name"])
    fmha = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("fmhaSm100a")]
    fmha_us = sum(e["dur"] for e in fmha)
    # sliding-window and full layers run differently named kernels: two rows of 18 calls each
    assert sorted(df["operation_count"]) == [18, 18]
    sliding = df[df["kernel_details_summary"].str.contains("SlidingOrChunked")]
    assert len(sliding) == 1 and literal(sliding["perf_params"].iloc[0])["sliding_window"] == "unknown"
    sliding_us = sum(e["dur"] for e in fmha if "SlidingOrChunked" in e["name"])
    assert sliding["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(sliding_us)
    # breakdown per row: the KV write beside the attention kernel; over both rows, the hand sums
    totals = [literal(c)["total_us"] for c in df["kernel_breakdown"]]
    cache_pct = [literal(c)["reshape_cache_percent"] for c in df["kernel_breakdown"]]
    fwd_pct = [literal(c)["fwd_kernel_percent"] for c in df["kernel_breakdown"]]
    assert sum(t * p / 100 for t, p in zip(totals, cache_pct, strict=True)) == pytest.approx(cache_us)
    assert sum(t * p / 100 for t, p in zip(totals, fwd_pct, strict=True)) == pytest.approx(fmha_us)
    assert df["kv_cache_write_us_sum"].sum() == pytest.approx(cache_us)
    assert df["Kernel Time (µs)_sum"].sum() == pytest.approx(fmha_us)


@pytest.mark.parametrize(
    "name", ["h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"]
)
def test_qwen_previous_step_kernels_are_reported(
    name: str, traces_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = traces_dir / name
    if not path.exists():
        pytest.skip(f"{name} not available")
    res, _ = analyzed(path, tmp_path_factory.mktemp("out"))
    events = raw_events(path)
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    orphans = [e for e in gpu if e["args"].get("correlation") not in launched]
    attn = [e for e in orphans if e.get("cat") == "kernel" and ("flash_fwd" in e["name"] or e["name"] == "attn_fwd")]
    assert res.unlinked.kernels_without_cpu_launch == len(orphans) > 0
    assert res.unlinked.time_without_cpu_launch_us == pytest.approx(sum(e["dur"] for e in orphans))
    assert res.unlinked.attention_kernels_without_cpu_launch == len(attn) in (10, 11)
    # every attention kernel outside the rows is one without a launch, from the previous step: named as outside the
    # profiled window (not a share of it, not "outside every row" of the window)
    assert res.unlinked.attention_kernels_outside_rows == len(attn)
    assert res.unlinked.attention_kernels_outside_window == len(attn)
    assert res.unlinked.attention_time_outside_window_us == pytest.approx(sum(e["dur"] for e in attn))
    late = [w for w in res.warnings if "ran outside the profiled window" in w]
    assert len(late) == 1 and late[0].startswith(f"{len(attn)} attention kernels"), late
    assert not any("lie outside every row" in w for w in res.warnings)
    # E2E window = the GPU-side ProfilerStep annotation: first to last GPU activity inside it
    ann = [e for e in events if e.get("cat") == "gpu_user_annotation" and e["name"].startswith("ProfilerStep#")]
    w0, w1 = ann[0]["ts"], ann[0]["ts"] + ann[0]["dur"]
    inside = [e for e in gpu if e["ts"] + e["dur"] > w0 and e["ts"] < w1]
    span = max(min(e["ts"] + e["dur"], w1) for e in inside) - min(max(e["ts"], w0) for e in inside)
    assert res.e2e.window_source == "gpu_profiler_step"
    assert res.e2e.total_time_ms == pytest.approx(span / 1000, rel=1e-7)  # 0.24 ns grid of µs stamps
    assert not any(o["ts"] >= w0 for o in orphans)  # every orphan is from the previous step


def test_qwen_contiguous_copies(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Qwen2 calls .contiguous() on q, k, v before SDPA and on the transposed output after it."""
    path = traces_dir / "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    if not path.exists():
        pytest.skip("Qwen H100 trace not available")
    _, frames = analyzed(path, tmp_path_factory.mktemp("out"))
    events = raw_events(path)
    runtime = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    modules = [
        e for e in events if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: Qwen2Attention")
    ]
    contig = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::contiguous"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    expected_us, expected_n = 0.0, 0
    for m in modules:
        m0, m1 = m["ts"], m["ts"] + m["dur"]
        for c in contig:
            if not (m0 <= c["ts"] <= m1):
                continue
            assert sorted(c["args"]["Input Dims"][0]) == sorted([16, 16, 559, 64])  # q/k/v or the output
            c0, c1 = c["ts"], c["ts"] + c["dur"]
            for k in kernels:
                r = runtime.get(k["args"].get("correlation"))
                if r is not None and c0 <= r["ts"] <= c1:
                    expected_us += k["dur"]
                    expected_n += 1
    row = frames["sdpa_fwd"].iloc[0]
    assert expected_n == 4 * 24
    assert int(row["copy_overhead_count"]) == expected_n
    assert row["copy_overhead_us_sum"] == pytest.approx(expected_us)


def test_every_trace_finishes(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    paths = sorted(traces_dir.glob("*/*.json.gz"))
    assert paths
    known = set(FUSED) | set(UNFUSED) | {SGLANG}
    for p in paths:
        rel = f"{p.parent.name}/{p.name}"
        res, frames = analyzed(p, tmp_path_factory.mktemp("out"))
        assert res.status == "OK", rel
        assert rel in known, f"new trace {rel}: add its expectation to this test"
        for df in frames.values():
            assert (df["Kernel Time (µs)_sum"] > 0).all()
