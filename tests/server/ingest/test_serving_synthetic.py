"""Serving structures with no real trace here, built by the synthetic writer with the structures of serving-traces.md:
aiter paged prefill under SGLang's wrapper, SGLang decode replay + capture folder, SageAttention, aiter flash captured
and replayed in one trace beside an Inductor kernel, newer vLLM (KV write out of the op, sums annotation), full-graph
vLLM decode. Each expected FLOP and byte count is worked out by hand from the step's requests in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from sdpa_analyzer.server.scoring.ranking import build_metrics
from sdpa_analyzer.server.synthetic import (
    SyntheticAttentionCall,
    build_trace_with_truth,
    write_serving_run,
    write_trace,
)

MI300X = "AMD Instinct MI300X"
BF16, HBM = 1307.4e12, 5.3e12  # MI300X datasheet dense bf16 and bandwidth (the roofs; the MAF 708 is shown beside)


def _analyze(tmp: Path, calls: list[SyntheticAttentionCall], **kw: object) -> tuple[object, Path, list]:
    truth = build_trace_with_truth(calls, gpu_name=MI300X, **kw)  # type: ignore[arg-type]
    path = write_trace(truth.trace, tmp / "t.json.gz")
    out = tmp / "out"
    return analyze_trace(path, out), out, truth.instances


def _records(out: Path, cat: str) -> pd.DataFrame:
    scored = score_category(DataRoots([out.parent]), out, cat, None, "compulsory")
    assert scored.table is not None
    return scored.table.records


def _ops(out: Path, cat: str) -> pd.DataFrame:
    return pd.read_csv(out / "category_data" / f"{cat}_ops.csv")


def test_sglang_prefill_under_the_profiler_wrapper(tmp_path: Path) -> None:
    # 3 requests (q, k) = (512, 512), (1024, 2048), (256, 256); Hq 32, Hkv 8, d 128, causal; 2 layers of 200 µs.
    # pairs q·k − q(q−1)/2: 262144 − 130816 = 131328; 2097152 − 523776 = 1573376; 65536 − 32640 = 32896 → 1737600
    # FLOPs = 2 · 32 · 1737600 · 256 = 28,468,838,400 per layer (the old per-request bound: Σk + Σq − R = 4605
    # pairs, 75.4 MFLOP, 378× too low)
    # bytes: Q and O 1792 · 32 · 128 · 2 = 14,680,064 each, K and V 2816 · 8 · 128 · 2 = 5,767,168 each → 40,894,464
    call = SyntheticAttentionCall(flavour="sglang_prefill", batch=3, heads_q=32, heads_kv=8, head_dim_qk=128,
                                  seqlens_q=(512, 1024, 256), seqlens_kv=(512, 2048, 256), causal=True,
                                  kernel_us=200.0, aux_kernel_us=3.0, repeat=2, gpu=MI300X)
    res, out, _ = _analyze(tmp_path, [call])
    ops = _ops(out, "inferenceattention")
    assert list(ops["name"]) == ["aiter::mha_batch_prefill"]  # the inner op, once: not the wrapper too
    assert int(ops["operation_count"].iloc[0]) == 2 and ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(400.0)
    assert ops["kv_cache_write_us_sum"].iloc[0] == pytest.approx(6.0)  # store_kvcache of each layer, beside it
    r = _records(out, "inferenceattention").iloc[0]
    assert r["flops_useful"] == 28_468_838_400 and r["bytes_compulsory"] == 40_894_464
    assert r["library"] == "CK / aiter" and r["work_bound"] == "exact" and r["kind"] == "mixed"
    assert r["efficiency_pct"] == pytest.approx(100 * 28_468_838_400 / BF16 / 200e-6)
    assert res.unlinked.attention_kernels_outside_rows == 0


def _decode_call(**kw: object) -> SyntheticAttentionCall:
    base: dict = dict(flavour="sglang_decode", batch=4, heads_q=32, heads_kv=8, head_dim_qk=128,
                      seqlens_q=(1, 1, 1, 1), seqlens_kv=(100, 200, 300, 400), kernel_us=40.0, aux_kernel_us=4.0,
                      repeat=3, gpu=MI300X)
    base.update(kw)
    return SyntheticAttentionCall(**base)


def test_sglang_decode_replay_with_and_without_its_capture(tmp_path: Path) -> None:
    # 4 decode requests, Σk = 1000; Hq 32, Hkv 8, d 128; 3 layers replayed from one graph.
    # FLOPs = 2 · 32 · 1000 · 256 = 16,384,000; bytes: K + V = 1000 · 8 · 256 · 2 = 4,096,000, Q + O =
    # 2 · 4 · 32 · 128 · 2 = 65,536 → 4,161,536 per layer. Kernel time per layer: QKV 40 + reduce 4 = 44 µs; the KV
    # write before it (4 µs) is beside it.
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_call()])
    plain = analyze_trace(replay, tmp_path / "plain")
    assert any("capture folder sits beside" in w for w in plain.warnings)
    ops = _ops(tmp_path / "plain", "inferenceattention")
    assert ops["name"].iloc[0].startswith("cuda_graph::paged_attention_ll4mi_QKV")
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(3 * 44.0)
    assert ops["kv_cache_write_us_sum"].iloc[0] == pytest.approx(3 * 4.0)
    r = _records(tmp_path / "plain", "inferenceattention").iloc[0]
    assert not r["has_model"] and "--capture-dir" in r["no_model_reason"] and r["library"] == "CK / aiter"
    # one reason everywhere: the ops CSV says what the roofline says
    assert ops["perf_model_reason"].iloc[0] == r["no_model_reason"]
    scored = score_category(DataRoots([tmp_path]), tmp_path / "plain", "inferenceattention", None, "compulsory")
    metrics = build_metrics(scored.data, scored.table, "standalone")
    doc = json.loads(_render(metrics))
    assert doc["operations"][0]["classification"]["workload_profile"]["workload_type"] == "decode"

    res = analyze_trace(replay, tmp_path / "cap", capture_dir=capture)
    ops = _ops(tmp_path / "cap", "inferenceattention")
    assert list(ops["name"]) == ["sglang_profiler::attention_paged_attention_ragged_100"]
    assert int(ops["operation_count"].iloc[0]) == 3 and ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(132.0)
    r = _records(tmp_path / "cap", "inferenceattention").iloc[0]
    assert r["flops_useful"] == 16_384_000 and r["bytes_compulsory"] == 4_161_536
    assert r["kind"] == "decode" and r["bound"] == "memory" and r["library"] == "CK / aiter"
    assert r["efficiency_pct"] == pytest.approx(100 * 4_161_536 / HBM / 44e-6)
    assert any("shapes of 1 of 1 graph replays" in w for w in res.warnings)
    # the run folder that holds capture_traces/ reads the same
    assert capture.name == "capture_traces"
    analyze_trace(replay, tmp_path / "run_dir", capture_dir=capture.parent)
    again = _records(tmp_path / "run_dir", "inferenceattention").iloc[0]
    assert again["flops_useful"] == 16_384_000 and again["bytes_compulsory"] == 4_161_536


def _render(metrics: object) -> str:
    import io

    buf = io.BytesIO()
    metrics.write(buf)  # type: ignore[attr-defined]
    return buf.getvalue().decode()


def test_the_capture_trace_alone_has_calls_and_no_time(tmp_path: Path) -> None:
    _, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_call()])
    res = analyze_trace(capture / "bs_4_rank0.json.gz", tmp_path / "out")
    assert res.status == "OK"
    ops = _ops(tmp_path / "out", "inferenceattention")
    assert int(ops["operation_count"].iloc[0]) == 3 and ops["Kernel Time (µs)_sum"].iloc[0] == 0
    assert ops["captured"].iloc[0]
    assert any("captured" in w and "--capture-dir" in w for w in res.warnings)


def test_capture_dir_errors_name_the_file_and_field(tmp_path: Path) -> None:
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_call()])
    details = capture / "execution_details.json"
    details.write_text(json.dumps([{"file": "bs_4_rank0.json.gz", "batch_size": "4", "mode": "FULL"}]))
    with pytest.raises(TraceError, match=r"execution_details.json: entry 0 field 'batch_size'"):
        analyze_trace(replay, tmp_path / "o1", capture_dir=capture)
    details.write_text(json.dumps([{"file": "../graph_execution.json.gz", "batch_size": 4}]))
    with pytest.raises(TraceError, match="leaves the capture folder"):
        analyze_trace(replay, tmp_path / "o2", capture_dir=capture)
    details.unlink()
    with pytest.raises(TraceError, match=r"execution_details\.json: not found"):
        analyze_trace(replay, tmp_path / "o3", capture_dir=capture)


def test_capture_dir_paths_stay_under_the_data_roots(tmp_path: Path) -> None:
    from sdpa_analyzer.server.tools.analyze import AnalyzeInput
    from sdpa_analyzer.server.tools.analyze import analyze_trace as tool
    from sdpa_analyzer.server.tools.base import ToolContext

    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_call()])
    ctx = ToolContext(roots=DataRoots([tmp_path / "run"]))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(InputError, match="capture_dir"):
        tool(ctx, AnalyzeInput(trace_path=str(replay), output_dir=str(tmp_path / "run" / "o"),
                               capture_dir=str(outside)))
    res = tool(ctx, AnalyzeInput(trace_path=str(replay), output_dir=str(tmp_path / "run" / "o"),
                                 capture_dir=str(capture)))
    assert res.status == "OK"
    # a capture trace that is a link out of the roots is refused (never read), in one line
    real = capture / "bs_4_rank0.json.gz"
    (outside / real.name).write_bytes(real.read_bytes())
    real.unlink()
    real.symlink_to(outside / real.name)
    with pytest.raises(InputError, match="outside") as err:
        tool(ctx, AnalyzeInput(trace_path=str(replay), output_dir=str(tmp_path / "run" / "o2"),
                               capture_dir=str(capture)))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "run" / "o2").exists()


def test_sage_attention_runs_int8_and_fp8_with_its_quantization_as_auxiliary(tmp_path: Path) -> None:
    # 2 DiT layers, B1 H24 N4608 d128, no mask: FLOPs = 2 · 24 · 4608² · 256 = 260,919,263,232 per call.
    # Q·Kᵀ on int8, P·V on fp8: both 2614.9 on the MI300X datasheet (AMD's MAF source states neither, so neither has
    # an achievable roof): roof 1 / (0.5/2614.9 + 0.5/2614.9) = 2614.9 TFLOPS. Kernel time per
    # call: sage_fwd 500 + its quantization 60 (auxiliary) = 560 µs.
    call = SyntheticAttentionCall(flavour="sage", batch=1, heads_q=24, seq_q=4608, head_dim_qk=128,
                                  kernel_us=500.0, aux_kernel_us=60.0, repeat=2, gpu=MI300X)
    _, out, _ = _analyze(tmp_path, [call])
    ops = _ops(out, "sdpa_fwd")
    assert list(ops["name"]) == ["sage_fwd_8"] and int(ops["operation_count"].iloc[0]) == 2
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(1120.0)
    assert ops["attention_kernel_time_us_sum"].iloc[0] == pytest.approx(1000.0)
    assert ops["aux_kernel_time_us_sum"].iloc[0] == pytest.approx(120.0)
    r = _records(out, "sdpa_fwd").iloc[0]
    roof = 1.0 / (0.5 / 2614.9 + 0.5 / 2614.9)
    assert r["flops_useful"] == 260_919_263_232 and r["compute_spec"] == "matrix_int8+matrix_fp8"
    assert r["peak_tflops"] == pytest.approx(roof) and r["library"] == "SageAttention"
    assert r["efficiency_pct"] == pytest.approx(100 * 260_919_263_232 / (roof * 1e12) / 560e-6)


def test_aiter_flash_captured_and_replayed_counts_each_call_once(tmp_path: Path) -> None:
    # 2 layers captured once, the graph replayed 3 times: 6 calls (not 2 captured + 6 replayed), each 500 µs; the
    # Inductor RoPE kernel triton_poi_fused__to_copy_add_cat_fmha_v3_fwd_mul_0 before each is not attention.
    # FLOPs per call (no mask): 2 · 24 · 4608² · 256 = 260,919,263,232
    call = SyntheticAttentionCall(flavour="aiter_flash", batch=1, heads_q=24, seq_q=4608, head_dim_qk=128,
                                  kernel_us=500.0, aux_kernel_us=20.0, repeat=2, gpu=MI300X)
    res, out, inst = _analyze(tmp_path, [call], graph="capture+replay", replays=3)
    assert sum(i.graph == "replay" for i in inst) == 6 and sum(i.graph == "capture" for i in inst) == 2
    ops = _ops(out, "sdpa_fwd")
    assert list(ops["name"]) == ["aiter::fmha_v3_fwd"] and int(ops["operation_count"].iloc[0]) == 6
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(3000.0)  # no Inductor kernel in it
    assert res.unlinked.attention_kernels_outside_rows == 0
    r = _records(out, "sdpa_fwd").iloc[0]
    assert r["flops_useful"] == 260_919_263_232 and r["efficiency_pct"] < 100
    assert r["efficiency_pct"] == pytest.approx(100 * 260_919_263_232 / BF16 / 500e-6)


def test_newer_vllm_mixed_step(tmp_path: Path) -> None:
    # requests (q, k): (300, 300), (200, 500) prefill, (1, 900), (1, 700) decode; Hq 64, Hkv 8, d 64.
    # annotation: context sq500 sk800 sqsq130000 sqsk190000, generation sq2 sk1600 sqsq2 sqsk1600.
    # pairs = 191600 − (130002 − 502)/2 = 126850 (= 45150 + 80100 + 900 + 700); FLOPs = 2 · 64 · 126850 · 128
    # = 2,078,310,400. The KV write runs in vllm::unified_kv_cache_update, before the op: beside its time.
    call = SyntheticAttentionCall(flavour="vllm_unified", batch=4, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(300, 200, 1, 1), seqlens_kv=(300, 500, 900, 700), causal=True,
                                  kernel_us=100.0, aux_kernel_us=3.0, repeat=2, gpu=MI300X)
    _, out, _ = _analyze(tmp_path, [call])
    ops = _ops(out, "inferenceattention")
    assert ops["step_annotation"].iloc[0] == (
        "execute_502_context_2(sq500sk800sqsq130000sqsk190000)_generation_2(sq2sk1600sqsq2sqsk1600)")
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(200.0)
    assert ops["kv_cache_write_us_sum"].iloc[0] == pytest.approx(6.0)
    r = _records(out, "inferenceattention").iloc[0]
    assert r["flops_useful"] == 2_078_310_400 and r["work_bound"] == "exact" and r["kind"] == "mixed"


def test_full_graph_vllm_decode_with_capture(tmp_path: Path) -> None:
    # 3 decode requests, k = 1000, 2000, 3000, padded to a graph of batch 4; Hq 64, Hkv 8, d 64; 2 layers.
    # FLOPs = 2 · 64 · 6000 · 128 = 98,304,000; bytes: K + V = 6000 · 8 · 128 · 2 = 12,288,000, Q + O (3 tokens)
    # = 2 · 3 · 64 · 64 · 2 = 49,152 → 12,337,152. Per layer: kernel_unified_attention_3d 30 + reduce_segments 2 µs.
    call = SyntheticAttentionCall(flavour="vllm_unified", batch=3, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1, 1, 1), seqlens_kv=(1000, 2000, 3000), causal=True, kernel_us=30.0,
                                  aux_kernel_us=2.0, repeat=2, graph_batch=4, gpu=MI300X)
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [call])
    assert json.loads((capture / "execution_details.json").read_text())[0]["batch_size"] == 4
    analyze_trace(replay, tmp_path / "out", capture_dir=capture)
    ops = _ops(tmp_path / "out", "inferenceattention")
    assert list(ops["name"]) == ["vllm::unified_attention_with_output"]
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(2 * 32.0)
    assert ops["kv_cache_write_us_sum"].iloc[0] == pytest.approx(2 * 2.0)
    r = _records(tmp_path / "out", "inferenceattention").iloc[0]
    assert r["flops_useful"] == 98_304_000 and r["bytes_compulsory"] == 12_337_152 and r["kind"] == "decode"
    assert r["efficiency_pct"] == pytest.approx(100 * 12_337_152 / HBM / 32e-6)
