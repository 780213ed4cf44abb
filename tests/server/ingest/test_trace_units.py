"""Hand-made traces for the cases real traces do not cover, each with its expected numbers worked out here."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.paged import kernel_breakdown, parse_step_annotation

FWD_ARGS = {
    "Input Dims": [[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [], [], [], []],
    "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 4,
    "Input Strides": [[65536, 8192, 64, 1]] * 3 + [[]] * 4,
    "Concrete Inputs": ["", "", "", "0.", "True", "False", "0.125"],
}


class T:
    """A tiny trace builder: ops nest by the times given; each `launch` adds runtime + kernel + flow."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.corr = 100

    def op(self, name: str, ts: float, dur: float, tid: int = 1, **args: object) -> None:
        self.events.append(
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": dict(args)}
        )

    def ann(self, name: str, ts: float, dur: float, gpu: bool = False) -> None:
        self.events.append(
            {
                "ph": "X",
                "cat": "gpu_user_annotation" if gpu else "user_annotation",
                "name": name,
                "pid": 0 if gpu else 1,
                "tid": 7 if gpu else 1,
                "ts": ts,
                "dur": dur,
                "args": {},
            }
        )

    def launch(self, ts: float, kernel: str, kts: float, kdur: float, tid: int = 1, cat: str = "kernel") -> None:
        self.corr += 1
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": tid,
                "ts": ts,
                "dur": 2.0,
                "args": {"correlation": self.corr},
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": kernel,
                "pid": 0,
                "tid": 7,
                "ts": kts,
                "dur": kdur,
                "args": {"correlation": self.corr, "stream": 7, "device": 0},
            }
        )

    def write(self, path: Path) -> Path:
        doc = {"traceEvents": self.events, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}
        path.write_text(json.dumps(doc))
        return path


def test_shapeless_backward_node_takes_forward_params(tmp_path: Path) -> None:
    """A backward node with no inner op: the row keeps the node name, NaN shapes, the forward's perf_params."""
    t = T()
    t.op("aten::scaled_dot_product_attention", 10, 100, **{"Sequence number": 41})
    t.op("aten::_scaled_dot_product_flash_attention", 20, 80, **{"Sequence number": 41}, **FWD_ARGS)
    t.launch(30, "flash_fwd_kernel", 200, 50)
    # the autograd thread (tid 2): PyTorch's Fwd thread id is its own index (1), not the OS tid
    t.op(
        "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0",
        500,
        100,
        tid=2,
        **{"Sequence number": 41, "Fwd thread id": 1},
    )
    t.op(
        "ScaledDotProductFlashAttentionBackward0",
        505,
        90,
        tid=2,
        **{"Sequence number": 41, "Fwd thread id": 1},
        **{"Input Dims": [[2, 8, 128, 64]], "Input type": ["c10::BFloat16"]},
    )  # the grad only
    t.launch(510, "flash_bwd_dq_dk_dv_loop_kernel", 600, 120, tid=2)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert {c.name for c in res.categories} == {"sdpa_fwd", "sdpa_bwd"}
    fwd = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    bwd = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert bwd["name"] == "ScaledDotProductFlashAttentionBackward0"
    assert pd.isna(bwd["Input Dims"]) and pd.isna(bwd["Concrete Inputs"])
    assert bwd["linked_forward"] == "aten::_scaled_dot_product_flash_attention"
    fp, bp = ast.literal_eval(fwd["perf_params"]), ast.literal_eval(bwd["perf_params"])
    for k in ("B", "N_Q", "H_Q", "N_KV", "H_KV", "d_h_qk", "d_h_v", "causal"):
        assert bp[k] == fp[k]
    assert (fp["B"], fp["H_Q"], fp["N_Q"], fp["d_h_qk"], fp["causal"]) == (2, 8, 128, 64, True)
    assert bool(bwd["has_perf_model"])
    assert bwd["Kernel Time (µs)_sum"] == pytest.approx(120.0)


def test_cpu_profiler_step_window_and_shares(tmp_path: Path) -> None:
    """No GPU-side step annotation: the window is the GPU work launched inside the CPU ProfilerStep.

    Launched before the step: kernel [0, 40] (outside). Inside: compute [100, 200], an NCCL kernel
    [150, 300] (overlaps compute by 50), a memcpy [300, 320], compute [400, 450].
    Window [100, 450] = 350 µs. compute union 150; compute+comm 250 -> exposed comm 100;
    all 270 -> exposed memcpy 20; idle 80.
    """
    t = T()
    t.launch(0, "early_kernel", 0, 40)
    t.ann("ProfilerStep#3", 50, 1000)
    t.op("aten::mm", 60, 10)
    t.launch(62, "gemm_kernel", 100, 100)
    t.op("c10d::allreduce_", 70, 10)
    t.launch(72, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 150, 150)
    t.op("aten::copy_", 80, 10)
    t.launch(82, "Memcpy DtoD (Device -> Device)", 300, 20, cat="gpu_memcpy")
    t.op("aten::add", 90, 10)
    t.launch(92, "elementwise_kernel", 400, 50)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    e = res.e2e
    assert e.window_source == "cpu_profiler_step" and e.steps == ["ProfilerStep#3"]
    assert e.total_time_ms == pytest.approx(0.350)
    assert e.computation_time_percent == pytest.approx(100 * 150 / 350)
    assert e.exposed_comm_time_percent == pytest.approx(100 * 100 / 350)
    assert e.exposed_memcpy_time_percent == pytest.approx(100 * 20 / 350)
    assert e.idle_time_percent == pytest.approx(100 * 80 / 350)
    assert res.unlinked.gpu_events_outside_window == 1 and res.unlinked.outside_window_time_us == 40
    assert res.status == "NO_DATA"


def test_kernels_overlapping_in_one_call_count_once(tmp_path: Path) -> None:
    """Two streams: the call's kernels [200, 300] and [250, 320] -> union 120 µs, not 170."""
    t = T()
    t.op("aten::_scaled_dot_product_flash_attention", 10, 80, **FWD_ARGS)
    t.launch(20, "flash_fwd_kernel", 200, 100)
    t.launch(30, "flash_fwd_splitkv_combine_kernel", 250, 70)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert row["Kernel Time (µs)_sum"] == pytest.approx(120.0)
    assert res.categories[0].kernel_time_ms == pytest.approx(0.120)


def test_step_annotations() -> None:
    # vLLM: one prefill request of 888 tokens (888^2 = 788544), no decode. The format gives no Σk: none is
    # written here (the registry assumes no cached prefix and says so)
    v = parse_step_annotation("execute_context_1(888_788544)_generation_0(0)")
    assert v == {
        "num_ctx_requests": 1,
        "num_gen_requests": 0,
        "c_sq": 888,
        "c_sqsq": 788544,
        "g_sq": 0,
        "g_sk": 0,
        "sum_ctx_tokens": 888,
        "sum_gen_tokens": 0,
    }
    # SGLang: 32 decode requests with 32785 context tokens in all
    s = parse_step_annotation("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)")
    assert (s["num_gen_requests"], s["g_sq"], s["g_sk"], s["g_sqsk"], s["sum_ctx_tokens"]) == (32, 32, 32785, 32785, 0)
    assert parse_step_annotation("ProfilerStep#2") is None


def test_kernel_breakdown_percentages() -> None:
    names = [
        "reshape_and_cache_flash_kernel",
        "fmhaSm100aKernel_PagedKvContext",
        "paged_attention_ll4mi_QKV_kernel",
        "some_other_kernel",
    ]
    bd = kernel_breakdown(names, np.array([10.0, 50.0, 30.0, 10.0]))
    assert (
        bd["reshape_cache_percent"],
        bd["fwd_kernel_percent"],
        bd["paged_attention_percent"],
        bd["other_percent"],
    ) == pytest.approx((10.0, 50.0, 30.0, 10.0))
