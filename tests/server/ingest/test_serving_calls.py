"""One attention call is its main kernel plus its helpers (quantization, split-KV reduce, KV-cache write), in eager
traces, graph captures and replays alike: a replay counts the calls its capture holds, and the helpers' time is
reported beside the call (quant_kernel_time_us_sum, reduce_kernel_time_us_sum, kv_cache_write_us_sum), never as more
calls. Each expected number is worked out by hand from the synthetic spec in the comments."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.attention import AFTER, BEFORE, MAIN, OTHER, segment_calls
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from sdpa_analyzer.server.synthetic import (
    SyntheticAttentionCall,
    build_trace_with_truth,
    write_serving_run,
    write_trace,
)

MI300X = "AMD Instinct MI300X"
BF16, HBM = 1307.4e12, 5.3e12  # MI300X datasheet dense bf16 and bandwidth (the roofs; the MAF 708 is shown beside)
SAGE_ROOF = 1e12 / (0.5 / 2614.9 + 0.5 / 2614.9)  # int8 Q·Kᵀ and fp8 P·V at the datasheet (AMD MAF states bf16 only)


def _ops(out: Path, cat: str) -> pd.DataFrame:
    return pd.read_csv(out / "category_data" / f"{cat}_ops.csv")


def _records(out: Path, cat: str) -> pd.DataFrame:
    scored = score_category(DataRoots([out.parent]), out, cat, None, "compulsory")
    assert scored.table is not None
    return scored.table.records


def _sage(**kw: object) -> SyntheticAttentionCall:
    # a Flux-like DiT layer: B1 H24 N4608 d128, no mask: FLOPs = 2 · 24 · 4608² · 256 = 260,919,263,232 per call.
    # sage_fwd 500 µs, sage_quant_kernel 60 µs; copies_before puts a layout copy (8 µs) between the two launches, as
    # the real xDiT replays have other kernels between them
    base: dict = dict(flavour="sage", batch=1, heads_q=24, seq_q=4608, head_dim_qk=128, kernel_us=500.0,
                      aux_kernel_us=60.0, copy_kernel_us=8.0, repeat=2, gpu=MI300X)
    base.update(kw)
    return SyntheticAttentionCall(**base)


SAGE_FLOPS = 260_919_263_232


# ---- the segmentation itself --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kinds", "names", "expected"),
    [
        # quantization, a copy, the attention kernel: one call holding the quantization (not a call of its own)
        ([BEFORE, OTHER, MAIN], [7, 8, 1], [([0, 2], 2)]),
        # KV write, decode kernel, an unrelated kernel, its reduce; twice: two calls, each with its reduce
        ([BEFORE, MAIN, OTHER, AFTER, BEFORE, MAIN, AFTER], [5, 1, 9, 6, 5, 1, 6], [([0, 1, 3], 1), ([4, 5, 6], 5)]),
        # the same main kernel back to back: the next layer's call; two different ones: one call (prefill + decode)
        ([MAIN, MAIN], [1, 1], [([0], 0), ([1], 1)]),
        ([MAIN, MAIN], [1, 2], [([0, 1], 0)]),
        # helpers no main kernel claims are no call
        ([AFTER, OTHER, BEFORE], [6, 9, 7], []),
        # a reduce after the next call's quantization started waits for nothing: it is not that call's
        ([MAIN, BEFORE, AFTER, MAIN], [1, 7, 6, 1], [([0], 0), ([1, 3], 3)]),
    ],
)
def test_segment_calls(kinds: list[int], names: list[int], expected: list[tuple[list[int], int]]) -> None:
    assert segment_calls(np.array(kinds, dtype=np.int8), np.array(names)) == expected


# ---- SageAttention under graphs ------------------------------------------------------------------------------------


def test_sage_captured_and_replayed_counts_calls_not_kernels(tmp_path: Path) -> None:
    # 2 layers captured, the graph replayed 3 times: 6 calls. Each replayed call: quant 60 + copy 8 + fwd 500; the
    # copy runs between them, so the call's kernel time is the union of quant and fwd only: 560 µs (the copy is not
    # the call's: it has no attention role). Before, a quantization kernel with another kernel after it was a
    # `cuda_graph::sage_quant_kernel` call of its own: 7 calls in 4 rows, the replays matched no capture and 3 of
    # the 6 calls kept no shapes.
    truth = build_trace_with_truth([_sage(copies_before=1)], gpu_name=MI300X, graph="capture+replay", replays=3)
    res = analyze_trace(write_trace(truth.trace, tmp_path / "t.json.gz"), tmp_path / "out")
    ops = _ops(tmp_path / "out", "sdpa_fwd")
    assert list(ops["name"]) == ["sage_fwd_8"]  # the captured op's name: shapes taken, one row
    assert int(ops["operation_count"].iloc[0]) == 6
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(6 * 560.0)
    assert ops["quant_kernel_time_us_sum"].iloc[0] == pytest.approx(6 * 60.0)
    assert ops["aux_kernel_time_us_sum"].iloc[0] == pytest.approx(6 * 60.0)
    assert int(ops["helper_kernel_count"].iloc[0]) == 6
    assert not any("matches no capture" in w for w in res.warnings)
    r = _records(tmp_path / "out", "sdpa_fwd").iloc[0]
    assert r["has_model"] and r["flops_useful"] == SAGE_FLOPS and r["work_bound"] == "exact"
    assert r["efficiency_pct"] == pytest.approx(100 * SAGE_FLOPS / SAGE_ROOF / 560e-6)
    assert res.unlinked.attention_kernels_outside_rows == 0


def test_sage_replay_with_its_capture_folder_matches_call_for_call(tmp_path: Path) -> None:
    # the serving layout: the replay (2 layers, kernels only) and the capture trace (2 captured sage_fwd_8 calls,
    # their quantization ops beside them). Replay calls = captured calls = 2: every replayed call takes its shapes.
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_sage(copies_before=1)], gpu_name=MI300X)
    res = analyze_trace(replay, tmp_path / "out", capture_dir=capture)
    ops = _ops(tmp_path / "out", "sdpa_fwd")
    assert list(ops["name"]) == ["sage_fwd_8"] and int(ops["operation_count"].iloc[0]) == 2
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(2 * 560.0)
    assert ops["quant_kernel_time_us_sum"].iloc[0] == pytest.approx(2 * 60.0)
    assert any("shapes of 1 of 1 graph replays" in w for w in res.warnings)
    r = _records(tmp_path / "out", "sdpa_fwd").iloc[0]
    assert r["has_model"] and r["efficiency_pct"] == pytest.approx(100 * SAGE_FLOPS / SAGE_ROOF / 560e-6)


def test_sage_eager_quantization_is_the_calls_auxiliary_time(tmp_path: Path) -> None:
    # eager: the quantization op runs before the attention op; its kernel joins the call (2 calls, 560 µs each)
    truth = build_trace_with_truth([_sage(copies_before=1)], gpu_name=MI300X)
    analyze_trace(write_trace(truth.trace, tmp_path / "t.json.gz"), tmp_path / "out")
    ops = _ops(tmp_path / "out", "sdpa_fwd")
    assert int(ops["operation_count"].iloc[0]) == 2
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(2 * 560.0)
    assert ops["quant_kernel_time_us_sum"].iloc[0] == pytest.approx(2 * 60.0)


# ---- split-KV reduce -----------------------------------------------------------------------------------------------


def _decode(**kw: object) -> SyntheticAttentionCall:
    # 4 decodes over Σk = 1000 keys; Hq 32, Hkv 8, d 128; QKV 40 µs, reduce 4 µs, KV write 4 µs; 3 layers
    # bytes: K + V 1000 · 8 · 256 · 2 = 4,096,000, Q + O 2 · 4 · 32 · 128 · 2 = 65,536 → 4,161,536 per layer
    base: dict = dict(flavour="sglang_decode", batch=4, heads_q=32, heads_kv=8, head_dim_qk=128,
                      seqlens_q=(1, 1, 1, 1), seqlens_kv=(100, 200, 300, 400), kernel_us=40.0, aux_kernel_us=4.0,
                      repeat=3, gpu=MI300X)
    base.update(kw)
    return SyntheticAttentionCall(**base)


def test_split_kv_reduce_is_part_of_its_call_in_eager_and_replay(tmp_path: Path) -> None:
    for label, build in (("eager", None), ("replay", "capture+replay")):
        truth = build_trace_with_truth([_decode()], gpu_name=MI300X, graph=build)
        out = tmp_path / label
        analyze_trace(write_trace(truth.trace, tmp_path / f"{label}.json.gz"), out)
        ops = _ops(out, "inferenceattention")
        assert int(ops["operation_count"].sum()) == 3, label  # 3 calls, not 3 QKV + 3 reduce
        assert ops["Kernel Time (µs)_sum"].sum() == pytest.approx(3 * 44.0), label
        assert ops["reduce_kernel_time_us_sum"].sum() == pytest.approx(3 * 4.0), label
        assert ops["kv_cache_write_us_sum"].sum() == pytest.approx(3 * 4.0), label
        r = _records(out, "inferenceattention").iloc[0]
        assert r["efficiency_pct"] == pytest.approx(100 * 4_161_536 / HBM / 44e-6), label


def _move_launch_out_of_its_op(trace: dict, kernel: str) -> int:
    """Re-time the runtime launch of every `kernel` to just after the attention op that launched it (a reduce
    launched by an op of its own, outside the call), dropping its External id: returns how many moved."""
    events = trace["traceEvents"]
    corr = {e["args"]["correlation"] for e in events if e.get("cat") == "kernel" and e["name"] == kernel}
    ops = sorted((e for e in events if e.get("name") == "vllm::unified_attention_with_output"), key=lambda e: e["ts"])
    moved = 0
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args", {}).get("correlation") in corr:
            op = next(o for o in reversed(ops) if o["ts"] <= e["ts"])
            e["ts"] = op["ts"] + op["dur"] + 0.25
            e["dur"] = 0.125
            e["args"].pop("External id", None)
            moved += 1
    for e in events:
        if e.get("cat") == "kernel" and e["name"] == kernel:
            e["args"].pop("External id", None)
    return moved


def test_a_reduce_launched_outside_the_attention_op_joins_the_call_before_it(tmp_path: Path) -> None:
    # vLLM's Triton 3D decode: kernel_unified_attention_3d 30 µs + reduce_segments 2 µs per layer, 2 layers. With the
    # reduce launched by an op of its own after the attention op, it still belongs to that call: 32 µs per call.
    # 3 decodes k = 1000, 2000, 3000, Hq 64, Hkv 8, d 64: bytes 6000 · 8 · 128 · 2 + 2 · 3 · 64 · 64 · 2 = 12,337,152
    call = SyntheticAttentionCall(flavour="vllm_unified", batch=3, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1, 1, 1), seqlens_kv=(1000, 2000, 3000), causal=True, kernel_us=30.0,
                                  aux_kernel_us=2.0, repeat=2, gpu=MI300X)
    trace = build_trace_with_truth([call], gpu_name=MI300X).trace
    assert _move_launch_out_of_its_op(trace, "reduce_segments") == 2
    analyze_trace(write_trace(trace, tmp_path / "t.json.gz"), tmp_path / "out")
    ops = _ops(tmp_path / "out", "inferenceattention")
    assert int(ops["operation_count"].iloc[0]) == 2
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(2 * 32.0)
    assert ops["reduce_kernel_time_us_sum"].iloc[0] == pytest.approx(2 * 2.0)
    r = _records(tmp_path / "out", "inferenceattention").iloc[0]
    assert r["efficiency_pct"] == pytest.approx(100 * 12_337_152 / HBM / 32e-6)


# ---- real traces ---------------------------------------------------------------------------------------------------


def _kernel_durations(path: Path) -> list[tuple[str, float]]:
    with gzip.open(path, "rt") as fh:
        return [(e["name"], float(e["dur"])) for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"]


def test_real_sglang_decode_replay_counts_its_captured_calls(traces_dir: Path, tmp_path: Path) -> None:
    # 36 layers replayed: each call is ll4mi QKV + its reduce (helper) + the store_kvcache write beside it
    replay = traces_dir / "inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    analyze_trace(replay, tmp_path / "out", capture_dir=replay.parent / "capture_traces")
    ops = _ops(tmp_path / "out", "inferenceattention")
    kernels = _kernel_durations(replay)
    reduce = sum(d for n, d in kernels if "ll4mi_reduce" in n)
    assert int(ops["operation_count"].sum()) == 36
    assert int(ops["helper_kernel_count"].sum()) == sum("ll4mi_reduce" in n for n, _ in kernels) == 36
    assert ops["reduce_kernel_time_us_sum"].sum() == pytest.approx(reduce)


def test_real_b200_page_index_kernels_are_not_helpers_of_one_call(traces_dir: Path, tmp_path: Path) -> None:
    # FlashInfer's _copy_page_indices_kernel runs twice per step, outside every attention op, for all layers: it
    # joins no call (which would split that call into a row of its own)
    path = traces_dir / "b200/vllm_eager_trace.json.gz"
    analyze_trace(path, tmp_path / "out")
    ops = _ops(tmp_path / "out", "inferenceattention")
    assert sorted(ops["operation_count"]) == [18, 18] and (ops["helper_kernel_count"] == 0).all()
