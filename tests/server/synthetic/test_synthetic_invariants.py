"""Structural invariants of the synthetic Kineto traces, checked from the trace alone.

Every expected kernel total below is worked by hand from the spec (the kernel list of each flavour is
written out in the comment), never taken from the generator's own bookkeeping.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.synthetic import (
    SyntheticAttentionCall,
    build_trace,
    build_trace_with_truth,
    c10_double,
    demo_calls,
    generate_large_trace,
    known_gpus,
    write_trace,
)

LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "hipLaunchKernel",
            "hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync",
            "hipMemcpyWithStream"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
CPU_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
H100, MI300, B200, A100 = "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X VF", "NVIDIA B200", "NVIDIA A100-SXM4-80GB"


def ns(us: float) -> int:
    return round(us * 1000)


def check_invariants(trace: dict[str, Any]) -> None:
    """Assert the invariants every Kineto trace the project reads relies on."""
    ev = trace["traceEvents"]
    runtime = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    gpu = [e for e in ev if e.get("cat") in GPU_CATS]

    # correlation: one runtime call per id, one device event per launch, and every device event launched
    rt_corr = Counter(e["args"]["correlation"] for e in runtime)
    assert max(rt_corr.values()) == 1
    by_corr = {e["args"]["correlation"]: e for e in runtime}
    gpu_corr = Counter(e["args"]["correlation"] for e in gpu)
    assert max(gpu_corr.values()) == 1
    for g in gpu:
        launch = by_corr[g["args"]["correlation"]]
        assert launch["name"] in LAUNCHES
        assert g["ts"] >= launch["ts"]
        assert g["args"].get("External id") == launch["args"].get("External id")
    for e in runtime:
        if e["name"] in LAUNCHES:
            assert gpu_corr[e["args"]["correlation"]] == 1, e

    # flows pair: exactly one start and one finish per (category, id), anchored on real events
    flows: dict[tuple[str, int], dict[str, dict]] = defaultdict(dict)
    for e in ev:
        if e.get("ph") in ("s", "f"):
            assert e["ph"] not in flows[(e["cat"], e["id"])]
            flows[(e["cat"], e["id"])][e["ph"]] = e
    gpu_by_corr = {g["args"]["correlation"]: g for g in gpu}
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    for (cat, fid), pair in flows.items():
        assert set(pair) == {"s", "f"}, (cat, fid)
        s, f = pair["s"], pair["f"]
        if cat == "ac2g":
            rt, g = by_corr[fid], gpu_by_corr[fid]
            assert (s["ts"], s["tid"]) == (rt["ts"], rt["tid"])
            assert (f["ts"], f["pid"], f["tid"]) == (g["ts"], g["pid"], g["tid"])
            assert f["bp"] == "e"
        else:
            assert cat == "fwdbwd"
            fwd = [o for o in ops if o["ts"] == s["ts"] and o["tid"] == s["tid"]]
            bwd = [o for o in ops if o["ts"] == f["ts"] and o["tid"] == f["tid"]]
            assert fwd and bwd
            assert fwd[0]["args"]["Sequence number"] == bwd[0]["args"]["Sequence number"]
            assert bwd[0]["name"].startswith("autograd::engine::evaluate_function: ")

    # one stream: device activity never overlaps
    spans = sorted((g["ts"], g["ts"] + g["dur"]) for g in gpu)
    for (_, end), (start, _) in pairwise(spans):
        assert start >= end

    # device activity inside its ProfilerStep window (CPU annotation and GPU annotation)
    steps = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    gsteps = {e["name"]: e for e in ev if e.get("cat") == "gpu_user_annotation"}
    if steps:
        for g in gpu:
            owner = [s for s in steps if s["ts"] <= g["ts"] and g["ts"] + g["dur"] <= s["ts"] + s["dur"]]
            assert len(owner) == 1, g
            gs = gsteps[owner[0]["name"]]
            assert gs["ts"] <= g["ts"] and g["ts"] + g["dur"] <= gs["ts"] + gs["dur"]
            assert gs["args"]["External id"] == owner[0]["args"]["External id"]

    # CPU events nest per thread; launches carry the External id of the innermost enclosing cpu_op
    py_ids = {e["args"]["Python id"]: e for e in ev if e.get("cat") == "python_function"}
    by_thread: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in ev:
        if e.get("cat") in CPU_CATS and e.get("ph") == "X":
            by_thread[(e["pid"], e["tid"])].append(e)
    for events in by_thread.values():
        stack: list[dict] = []
        for e in sorted(events, key=lambda x: (x["ts"], -x["dur"])):
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                assert e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"], (stack[-1]["name"], e["name"])
            if e["cat"] in ("cuda_runtime", "cuda_driver"):
                inner = next((o for o in reversed(stack) if o["cat"] == "cpu_op"), None)
                assert e["args"].get("External id") == (inner["args"]["External id"] if inner else None)
            if e["cat"] == "python_function":
                parent = e["args"]["Python parent id"]
                enclosing = next((o for o in reversed(stack) if o["cat"] == "python_function"), None)
                assert parent == (enclosing["args"]["Python id"] if enclosing else None)
                if parent is not None:
                    assert parent in py_ids
            stack.append(e)

    # Ev Idx numbers the CPU ops and python frames 0..n-1
    idx = sorted(e["args"]["Ev Idx"] for e in ev if "Ev Idx" in e.get("args", {}))
    assert idx == list(range(len(idx)))

    # backward: every autograd node links to a forward op through its Sequence number
    fwd_seq = {o["args"]["Sequence number"] for o in ops if o["args"].get("Fwd thread id") == 0}
    for o in ops:
        if o["args"].get("Fwd thread id", 0) > 0:
            assert o["args"]["Sequence number"] in fwd_seq, o["name"]
    for o in ops:
        if o["name"].startswith("autograd::engine::evaluate_function: "):
            node = o["name"].split(": ", 1)[1]
            assert any(n["name"] == node and n["args"]["Sequence number"] == o["args"]["Sequence number"]
                       for n in ops)


def check_dyadic_times(trace: dict[str, Any]) -> None:
    """Every time is a multiple of 1/8 µs: exact as a binary float (the generator's quantum)."""
    for e in trace["traceEvents"]:
        if isinstance(e.get("pid"), int) and "ts" in e:
            assert (e["ts"] * 8).is_integer(), e
            if "dur" in e:
                assert (e["dur"] * 8).is_integer(), e


def kernels_under(trace: dict[str, Any], op: dict) -> list[dict]:
    """Device events launched from inside ``op`` (on its thread), found through correlation ids."""
    ev = trace["traceEvents"]
    corr = {e["args"]["correlation"] for e in ev
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["tid"] == op["tid"]
            and op["ts"] <= e["ts"] and e["ts"] + e["dur"] <= op["ts"] + op["dur"]}
    return [e for e in ev if e.get("cat") == "kernel" and e["args"]["correlation"] in corr]


def ops_named(trace: dict[str, Any], name: str) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == name]


def kernel_ns(trace: dict[str, Any], op: dict) -> int:
    return sum(ns(k["dur"]) for k in kernels_under(trace, op))


ALL_FLAVOURS_NV = [
    SyntheticAttentionCall(flavour="aten_flash", batch=2, heads_q=32, heads_kv=8, seq_q=1024, causal=True,
                           with_backward=True, repeat=2, kernel_us=100, copies_before=1, copies_after=1),
    SyntheticAttentionCall(flavour="aten_efficient", batch=4, heads_q=8, seq_q=256, head_dim_qk=64, attn_mask=True,
                           with_backward=True, kernel_us=20, dropout=0.1),
    SyntheticAttentionCall(flavour="aten_cudnn", batch=2, heads_q=16, seq_q=2048, causal=True, with_backward=True,
                           kernel_us=150),
    SyntheticAttentionCall(flavour="flash_attn", batch=2, heads_q=32, heads_kv=8, seq_q=4096, window=(256, 0),
                           with_backward=True, kernel_us=400, repeat=2),
    SyntheticAttentionCall(flavour="flash_attn_varlen", batch=3, heads_q=16, heads_kv=4, seqlens_q=(100, 300, 511),
                           seqlens_kv=(100, 300, 511), causal=True, with_backward=True, kernel_us=60),
    SyntheticAttentionCall(flavour="unfused", batch=2, heads_q=12, heads_kv=4, seq_q=512, head_dim_qk=64, causal=True,
                           with_backward=True, kernel_us=30, dropout=0.1),
    SyntheticAttentionCall(flavour="vllm_paged", batch=4, heads_q=32, heads_kv=8, seqlens_q=(1, 1, 1, 1),
                           seqlens_kv=(900, 1500, 77, 4000), kernel_us=35, repeat=3, page_size=16),
]


# the serving flavours that run aiter's or vLLM's ROCm kernels (MI300X only), eager
AMD_SERVING = [
    SyntheticAttentionCall(flavour="vllm_unified", batch=3, heads_q=64, heads_kv=8, head_dim_qk=64,
                           seqlens_q=(100, 1, 1), seqlens_kv=(100, 900, 50), causal=True, kernel_us=40, repeat=2),
    SyntheticAttentionCall(flavour="sglang_prefill", batch=2, heads_q=32, heads_kv=8, seqlens_q=(64, 128),
                           seqlens_kv=(64, 256), causal=True, kernel_us=50, repeat=2),
    SyntheticAttentionCall(flavour="sglang_decode", batch=2, heads_q=32, heads_kv=8, seqlens_q=(1, 1),
                           seqlens_kv=(700, 300), kernel_us=20, repeat=2),
    SyntheticAttentionCall(flavour="sage", batch=1, heads_q=24, seq_q=1024, kernel_us=90, aux_kernel_us=10),
    SyntheticAttentionCall(flavour="aiter_flash", batch=1, heads_q=24, seq_q=1024, kernel_us=80),
]


def test_amd_serving_flavours_build_consistent_traces() -> None:
    trace = build_trace(AMD_SERVING, gpu_name=MI300, extra_filler_kernels=4, seed=5)
    check_invariants(trace)
    check_dyadic_times(trace)
    names = {e["name"] for e in trace["traceEvents"]}
    assert {"vllm::unified_kv_cache_update", "aiter::mha_batch_prefill", "sage_fwd_8", "aiter::fmha_v3_fwd",
            "sglang_profiler::attention_paged_attention_ragged_100"} <= names


def test_graph_replay_kernels_share_their_launch() -> None:
    # one graph launch replays every kernel: one runtime call, the kernels carry its correlation, no CPU op per call
    call = SyntheticAttentionCall(flavour="sglang_decode", batch=2, heads_q=32, heads_kv=8, seqlens_q=(1, 1),
                                  seqlens_kv=(700, 300), kernel_us=20, repeat=3)
    ev = build_trace_with_truth([call], gpu_name=MI300, graph="replay").trace["traceEvents"]
    launches = [e for e in ev if e.get("name") == "hipGraphLaunch"]
    assert len(launches) == 1
    corr = launches[0]["args"]["correlation"]
    replayed = [e for e in ev if e.get("cat") == "kernel" and e["args"]["correlation"] == corr]
    assert len(replayed) == 3 * 3  # per layer: store_kvcache, the ll4mi QKV kernel, its reduce
    assert not any(e.get("cat") == "cpu_op" and e["name"].startswith("sglang_profiler::") for e in ev)
    cap = build_trace_with_truth([call], gpu_name=MI300, graph="capture").trace["traceEvents"]
    assert [e["name"] for e in cap if "Capture" in e.get("name", "")] == ["hipStreamBeginCapture",
                                                                           "hipStreamEndCapture"]
    assert not any(e.get("cat") == "kernel" and "ll4mi" in e["name"] for e in cap)
    assert sum(e.get("args", {}).get("kernel", "").startswith("void paged_attention_ll4mi_QKV") for e in cap) == 3


@pytest.mark.parametrize("gpu", [H100, A100, B200, MI300])
def test_every_flavour_builds_a_consistent_trace(gpu: str) -> None:
    calls = [c for c in ALL_FLAVOURS_NV if not (c.flavour == "aten_cudnn" and gpu == MI300)]
    trace = build_trace(calls, gpu_name=gpu, extra_filler_kernels=9, seed=3)
    check_invariants(trace)
    check_dyadic_times(trace)
    names = {e["name"] for e in trace["traceEvents"]}
    assert trace["deviceProperties"][0]["name"] == gpu
    assert "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0" in names
    assert "flash_attn::_flash_attn_varlen_backward" in names
    assert "vllm::unified_attention_with_output" in names


def test_demo_calls_trace_is_consistent_and_round_trips_exactly(tmp_path: Path) -> None:
    trace = build_trace(demo_calls(), extra_filler_kernels=12)
    check_invariants(trace)
    check_dyadic_times(trace)
    path = write_trace(trace, tmp_path / "demo.json.gz")
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(path.read_bytes())) == trace  # every float comes back bit-exact


def test_write_trace_suffix_and_override(tmp_path: Path) -> None:
    trace = build_trace([SyntheticAttentionCall(seq_q=128)])
    plain = write_trace(trace, tmp_path / "t.json")
    assert plain.read_bytes()[:1] == b"{"
    forced = write_trace(trace, tmp_path / "t.json.gz", gz=False)
    assert orjson.loads(forced.read_bytes()) == trace
    zipped = write_trace(trace, tmp_path / "t2.json", gz=True)
    assert orjson.loads(gzip.decompress(zipped.read_bytes())) == trace


def test_same_seed_same_bytes_other_seed_other_times() -> None:
    calls = demo_calls()
    a, b = build_trace(calls, seed=5), build_trace(calls, seed=5)
    assert orjson.dumps(a) == orjson.dumps(b)
    c = build_trace(calls, seed=6)
    assert [e["name"] for e in c["traceEvents"]] == [e["name"] for e in a["traceEvents"]]
    assert [e.get("ts") for e in c["traceEvents"]] != [e.get("ts") for e in a["traceEvents"]]


# ---- kernel time per call equals the spec (worked by hand) ------------------------------------------


def test_llama_aten_flash_gqa_kernel_totals() -> None:
    # demo call 0: fwd = flash_fwd_kernel 262.5 µs.
    # bwd (GQA 32/8) = dot_do_o 9.5 + dq_dk_dv 701.25 + convert_dq 9.5 + two head-group sums 9.5 each
    #               = 9.5 * 4 + 701.25 = 739.25 µs. Four layers.
    trace = build_trace([demo_calls()[0]])
    fwd = ops_named(trace, "aten::scaled_dot_product_attention")
    bwd = ops_named(trace, "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0")
    assert len(fwd) == len(bwd) == 4
    assert [kernel_ns(trace, o) for o in fwd] == [262_500] * 4
    assert [kernel_ns(trace, o) for o in bwd] == [739_250] * 4
    assert [len(kernels_under(trace, o)) for o in bwd] == [5] * 4


def test_flash_attn_gqa_noncausal_kernel_totals_and_links() -> None:
    # demo call 1: fwd 900; bwd = 40 + 2600 + 40 + 2 * 40 (GQA sums) = 2760 µs
    trace = build_trace([demo_calls()[1]])
    fwd = ops_named(trace, "FlashAttnFunc")
    bwd = ops_named(trace, "autograd::engine::evaluate_function: FlashAttnFuncBackward")
    assert [kernel_ns(trace, o) for o in fwd] == [900_000, 900_000]
    assert [kernel_ns(trace, o) for o in bwd] == [2_760_000, 2_760_000]
    # backward runs in reverse layer order and names its forward through the sequence number
    assert [o["args"]["Sequence number"] for o in bwd] == [o["args"]["Sequence number"] for o in fwd][::-1]
    assert all(o["args"]["Fwd thread id"] == 1 and o["tid"] != fwd[0]["tid"] for o in bwd)
    assert all(o["args"]["Fwd thread id"] == 0 for o in fwd)


def test_unfused_causal_kernel_totals() -> None:
    # demo call 3: bmm 48 + scale mul 14.5 + causal mask add 14.5 + softmax 48 + bmm 48 = 173 µs per layer
    trace = build_trace([demo_calls()[3]])
    frames = [e for e in trace["traceEvents"]
              if e.get("cat") == "python_function" and e["name"].endswith(": eager_attention_forward")]
    assert [kernel_ns(trace, f) for f in frames] == [173_000, 173_000]


def test_unfused_gqa_backward_kernel_totals() -> None:
    # fwd: repeat_kv copies 2 * 5 + bmm 20 + mul 5 + softmax 20 + bmm 20 = 75 (non-causal, no dropout)
    # bwd: PV bmm 2 * 50, softmax bwd 50, mul 5, QK bmm 2 * 50, two expand sums 2 * 5 = 265
    call = SyntheticAttentionCall(flavour="unfused", batch=1, heads_q=8, heads_kv=2, seq_q=256, head_dim_qk=64,
                                  kernel_us=20, bwd_kernel_us=50, aux_kernel_us=5, with_backward=True)
    trace = build_trace([call])
    frames = [e for e in trace["traceEvents"]
              if e.get("cat") == "python_function" and e["name"].endswith(": eager_attention_forward")]
    assert [kernel_ns(trace, f) for f in frames] == [75_000]
    nodes = [o for o in trace["traceEvents"] if o.get("cat") == "cpu_op"
             and o["name"].startswith("autograd::engine::evaluate_function: ")]
    assert sorted(o["name"].split(": ")[1] for o in nodes) == sorted(
        ["BmmBackward0", "BmmBackward0", "SoftmaxBackward0", "MulBackward0", "ExpandBackward0", "ExpandBackward0"])
    assert sum(kernel_ns(trace, o) for o in nodes) == 265_000
    check_invariants(trace)


def test_copies_inflate_the_op_by_exactly_their_kernels() -> None:
    # 100 µs main kernel + 3 contiguous copies at 8 µs = 124 µs inside aten::scaled_dot_product_attention
    call = SyntheticAttentionCall(seq_q=512, kernel_us=100, copies_before=2, copies_after=1, copy_kernel_us=8)
    trace = build_trace([call])
    (op,) = ops_named(trace, "aten::scaled_dot_product_attention")
    assert kernel_ns(trace, op) == 124_000
    inner = ops_named(trace, "aten::_scaled_dot_product_flash_attention")[0]
    assert kernel_ns(trace, inner) == 100_000
    assert len(ops_named(trace, "aten::contiguous")) == 3


def test_mi300_causal_aten_flash_has_fill_then_attn_fwd() -> None:
    # ROCm causal: FillFunctor 3 + attn_fwd 100 = 103; bwd: bwd_preprocess 3 + dk_dv 250 + dq 250 = 503
    call = SyntheticAttentionCall(seq_q=1024, causal=True, kernel_us=100, aux_kernel_us=3, with_backward=True)
    trace = build_trace([call], gpu_name=MI300)
    (op,) = ops_named(trace, "aten::_flash_attention_forward")
    ks = kernels_under(trace, op)
    assert [k["name"] for k in ks][1] == "attn_fwd" and "FillFunctor<int>" in ks[0]["name"]
    assert kernel_ns(trace, op) == 103_000
    (node,) = ops_named(trace, "ScaledDotProductFlashAttentionBackward0")
    assert [k["name"] for k in kernels_under(trace, node)] == ["bwd_preprocess", "bwd_kernel_dk_dv", "bwd_kernel_dq"]
    assert kernel_ns(trace, node) == 503_000
    launch = next(e for e in trace["traceEvents"] if e.get("name") == "hipModuleLaunchKernel")
    assert launch["args"]["kernel"] == "attn_fwd"


@pytest.mark.parametrize(("gpu", "expected_ns", "n_kernels"), [
    # H100 decode: reshape_and_cache 4 + flash split-KV 35 + combine 4 = 43 µs
    (H100, 43_000, 3),
    # B200 decode: reshape_and_cache 4 + trtllm-gen kernel 35 = 39 µs
    (B200, 39_000, 2),
    # MI300X: reshape_and_cache 4 + triton unified attention 35 = 39 µs
    (MI300, 39_000, 2),
])
def test_vllm_decode_kernel_totals(gpu: str, expected_ns: int, n_kernels: int) -> None:
    call = SyntheticAttentionCall(flavour="vllm_paged", batch=4, heads_q=32, heads_kv=8, seqlens_q=(1, 1, 1, 1),
                                  seqlens_kv=(900, 1500, 77, 4000), kernel_us=35, aux_kernel_us=4,
                                  module_names=("Qwen2ForCausalLM", "Qwen2Model", "Qwen2DecoderLayer", "Attention"))
    trace = build_trace([call], gpu_name=gpu)
    (op,) = ops_named(trace, "vllm::unified_attention_with_output")
    ks = kernels_under(trace, op)
    assert len(ks) == n_kernels and "reshape_and_cache_flash_kernel" in ks[0]["name"]
    assert kernel_ns(trace, op) == expected_ns
    # q/k/v are [tokens, heads, d] slices of one fused projection; tokens = 4 decode requests
    assert op["args"]["Input Dims"][:4] == [[4, 32, 128], [4, 8, 128], [4, 8, 128], [4, 32, 128]]


def test_truth_matches_what_the_trace_says() -> None:
    st = build_trace_with_truth(demo_calls(), extra_filler_kernels=5)
    ops = {e["args"]["External id"]: e for e in st.trace["traceEvents"] if e.get("cat") == "cpu_op"}
    kernels = {e["args"]["correlation"]: e for e in st.trace["traceEvents"] if e.get("cat") == "kernel"}
    for inst in st.instances:
        if inst.op_external_id is not None:
            op = ops[inst.op_external_id]
            assert op["name"] in (inst.op_name, f"autograd::engine::evaluate_function: {inst.op_name}",
                                  inst.op_name)
            assert sorted(inst.kernel_correlations) == sorted(k["args"]["correlation"]
                                                              for k in kernels_under(st.trace, op))
        assert [kernels[c]["name"] for c in inst.kernel_correlations] == inst.kernel_names


def test_filler_kernel_count_is_exact() -> None:
    base = build_trace([SyntheticAttentionCall(seq_q=256, repeat=3)], extra_filler_kernels=0)
    more = build_trace([SyntheticAttentionCall(seq_q=256, repeat=3)], extra_filler_kernels=11)

    def n_kernels(t: dict) -> int:
        return sum(1 for e in t["traceEvents"] if e.get("cat") == "kernel")

    assert n_kernels(more) - n_kernels(base) == 11
    check_invariants(more)


def test_inference_calls_have_no_sequence_numbers() -> None:
    trace = build_trace([SyntheticAttentionCall(seq_q=128)])
    assert not any("Sequence number" in e.get("args", {}) for e in trace["traceEvents"])
    assert not any(e.get("cat") == "fwdbwd" for e in trace["traceEvents"])


def test_without_profiler_step_there_is_no_step_annotation() -> None:
    trace = build_trace([SyntheticAttentionCall(seq_q=128)], with_profiler_step=False)
    assert not any(e.get("cat") in ("user_annotation", "gpu_user_annotation") for e in trace["traceEvents"])
    check_invariants(trace)


# ---- formatting and validation ------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0."), (0.125, "0.125"), (1 / math.sqrt(128), "0.088388347648318433"), (128 ** -0.5, "0.088388347648318447"),
    (1e-12, "9.9999999999999998e-13"), (0.1, "0.10000000000000001"), (2.0, "2."),
])
def test_c10_double_matches_the_profiler(value: float, text: str) -> None:
    # strings copied from real traces (bert eps and dropout, SDPA scales, the shared flash_attn fixture);
    # 128 ** -0.5 rounds one ulp away from 1 / sqrt(128), and 17 digits show it
    assert c10_double(value) == text


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"flavour": "xformers"}, "flavour"),
    ({"heads_q": 32, "heads_kv": 5}, "heads_kv"),
    ({"flavour": "aten_flash", "window": (128, 0)}, "window"),
    ({"flavour": "aten_flash", "dtype": "fp32"}, "dtype"),
    ({"flavour": "flash_attn", "head_dim_qk": 128, "head_dim_v": 64}, "head_dim_v"),
    ({"flavour": "aten_efficient", "heads_q": 8, "heads_kv": 2}, "heads_kv"),
    ({"flavour": "aten_flash", "attn_mask": True}, "attn_mask"),
    ({"flavour": "vllm_paged", "with_backward": True}, "with_backward"),
    ({"flavour": "flash_attn_varlen", "batch": 2, "seqlens_q": (5,)}, "seqlens_q"),
    ({"kernel_us": -1.0}, "kernel_us"),
    ({"repeat": 0}, "repeat"),
    ({"dropout": 1.5}, "dropout"),
    ({"gpu": "TPU v5"}, "gpu"),
    ({"input_layout": "nhwc"}, "input_layout"),
])
def test_bad_specs_raise_one_line_errors(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        SyntheticAttentionCall(**kwargs)
    message = str(err.value)
    assert f"SyntheticAttentionCall.{field}=" in message and "\n" not in message


def test_bad_build_arguments_raise_clear_errors() -> None:
    with pytest.raises(InputError, match="gpu_name='H1000' is unknown"):
        build_trace([SyntheticAttentionCall()], gpu_name="H1000")
    with pytest.raises(InputError, match="aten_cudnn' needs an NVIDIA GPU"):
        build_trace([SyntheticAttentionCall(flavour="aten_cudnn")], gpu_name=MI300)
    with pytest.raises(InputError, match="several GPUs"):
        build_trace([SyntheticAttentionCall(gpu=H100), SyntheticAttentionCall(gpu=MI300)])
    with pytest.raises(InputError, match="extra_filler_kernels"):
        build_trace([SyntheticAttentionCall()], extra_filler_kernels=-2)
    assert H100 in known_gpus() and MI300 in known_gpus()


def test_large_trace_small_instance_keeps_every_invariant(tmp_path: Path) -> None:
    # a few replicated steps: replication must shift every time and id consistently
    n = generate_large_trace(25_000, tmp_path / "large.json", layers_per_step=4)
    trace = orjson.loads((tmp_path / "large.json").read_bytes())
    assert len(trace["traceEvents"]) == n >= 25_000
    check_invariants(trace)
    check_dyadic_times(trace)
    steps = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"]
    assert steps == [f"ProfilerStep#{i}" for i in range(1, len(steps) + 1)] and len(steps) > 2
    layers = [e for e in trace["traceEvents"] if e.get("name", "").startswith("nn.Module: LlamaDecoderLayer_")]
    assert {e["name"] for e in layers} == {f"nn.Module: LlamaDecoderLayer_{i}" for i in range(4)}


def test_large_trace_gz_suffix(tmp_path: Path) -> None:
    n = generate_large_trace(3_000, tmp_path / "large.json.gz", layers_per_step=1)
    data = gzip.decompress((tmp_path / "large.json.gz").read_bytes())
    assert len(orjson.loads(data)["traceEvents"]) == n
