"""The real serving traces (traces/README.md): vLLM eager on B200, SGLang decode replay + capture on MI300X, vLLM
mixed prefill + decode with piecewise graphs on MI300X, and their capture traces alone. Expected numbers by hand from
each trace's step annotation and shapes (in the comments); they skip when the shared traces are absent."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category

SGLANG = "inference/sglang_decode"
PIECEWISE = "inference/vllm_prefilldecode_piecewise"
B200 = "b200/vllm_eager_trace.json.gz"


def _need(traces_dir: Path, rel: str) -> Path:
    path = traces_dir / rel
    if not path.exists():
        pytest.skip(f"{rel} not available")
    return path


@cache
def _kernels(path: Path) -> tuple[tuple[str, float], ...]:
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    return tuple((e["name"], float(e["dur"])) for e in events if e.get("cat") == "kernel")


def _records(out: Path, cat: str = "inferenceattention") -> pd.DataFrame:
    scored = score_category(DataRoots([out.parent]), out, cat, None, "compulsory")
    assert scored.table is not None
    return scored.table.records


def _ops(out: Path, cat: str = "inferenceattention") -> pd.DataFrame:
    return pd.read_csv(out / "category_data" / f"{cat}_ops.csv")


def test_b200_vllm_eager_split_rows_exact_flops(traces_dir: Path, tmp_path: Path) -> None:
    # execute_context_1(888_788544)_generation_0(0): one prefill of 888 tokens, Hq 8, Hkv 1, d 64 (query fp8, TRT-LLM
    # QkvE4m3 kernels, fp8 cache: (vllm::Fp8KVCacheDataType)1 in reshape_and_cache_flash). Pairs 888 · 889 / 2 =
    # 394716 → FLOPs 2 · 8 · 394716 · 128 = 808,378,368 per layer (before: 3.6 MFLOP, a per-request bound).
    # Bytes: Q 888 · 8 · 64 · 1 = 454,656, K + V (fp8) 888 · 1 · 128 = 113,664, O (bf16) 909,312 → 1,477,632.
    path = _need(traces_dir, B200)
    res = analyze_trace(path, tmp_path / "out")
    ops = _ops(tmp_path / "out")
    assert sorted(ops["operation_count"]) == [18, 18]
    r = _records(tmp_path / "out")
    assert (r["flops_useful"] == 808_378_368).all() and (r["bytes_compulsory"] == 1_477_632).all()
    sliding = r[r["kernel_name"].str.contains("SlidingOrChunked")]
    full = r[~r["kernel_name"].str.contains("SlidingOrChunked")]
    assert list(sliding["work_bound"]) == ["upper"] and list(full["work_bound"]) == ["exact"]
    assert sliding["mask"].iloc[0].startswith("sliding window (size unknown")
    assert sliding["band_status"].iloc[0] == "none"
    assert (r["library"] == "TRT-LLM").all() and (r["efficiency_pct"] < 100).all()
    # the KV writes (inside the op on this vLLM version) are beside the rows, not in their time
    cache_us = sum(d for n, d in _kernels(path) if "reshape_and_cache" in n)
    fmha_us = sum(d for n, d in _kernels(path) if n.startswith("fmhaSm100a"))
    assert ops["kv_cache_write_us_sum"].sum() == pytest.approx(cache_us)
    assert ops["Kernel Time (µs)_sum"].sum() == pytest.approx(fmha_us)
    assert res.unlinked.attention_kernels_outside_rows == 0


def test_sglang_decode_replay_with_its_capture_folder(traces_dir: Path, tmp_path: Path) -> None:
    # execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785): 32 decodes over 32785 cached
    # tokens. Captured call: q (32, 32, 128), cache (835874, 1, 8, 128) bf16 → Hq 32, Hkv 8, d 128.
    # FLOPs = 2 · 32 · 32785 · 256 = 537,149,440; bytes: K + V = 32785 · 8 · 256 · 2 = 134,287,360, Q + O =
    # 2 · 32 · 32 · 128 · 2 = 524,288 → 134,811,648 per layer; 36 layers.
    replay = _need(traces_dir, f"{SGLANG}/sglang_Qwen3-8B_decode.json.gz")
    res = analyze_trace(replay, tmp_path / "out", capture_dir=replay.parent / "capture_traces")
    ops = _ops(tmp_path / "out")
    assert list(ops["name"]) == ["sglang_profiler::attention_paged_attention_ragged_100"]
    assert int(ops["operation_count"].iloc[0]) == 36
    qkv = sum(d for n, d in _kernels(replay) if "ll4mi_QKV" in n)
    reduce = sum(d for n, d in _kernels(replay) if "ll4mi_reduce" in n)
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(qkv + reduce)
    r = _records(tmp_path / "out").iloc[0]
    assert r["flops_useful"] == 537_149_440 and r["bytes_compulsory"] == 134_811_648
    assert r["kind"] == "decode" and r["bound"] == "memory" and r["library"] == "CK / aiter"
    per_call = (qkv + reduce) / 36
    assert r["efficiency_pct"] == pytest.approx(100 * 134_811_648 / 5.3e12 / (per_call * 1e-6))
    assert r["efficiency_pct"] < 100
    assert any("shapes of 1 of 1 graph replays" in w for w in res.warnings)
    assert _workload(tmp_path / "out") == "decode"


def _workload(out: Path) -> str:
    import io

    from sdpa_analyzer.server.scoring.ranking import build_metrics

    scored = score_category(DataRoots([out.parent]), out, "inferenceattention", None, "compulsory")
    buf = io.BytesIO()
    build_metrics(scored.data, scored.table, "standalone").write(buf)
    return json.loads(buf.getvalue())["operations"][0]["classification"]["workload_profile"]["workload_type"]


def test_sglang_decode_replay_alone_says_why(traces_dir: Path, tmp_path: Path) -> None:
    replay = _need(traces_dir, f"{SGLANG}/sglang_Qwen3-8B_decode.json.gz")
    res = analyze_trace(replay, tmp_path / "out")
    assert any("--capture-dir" in w and "sits beside" in w for w in res.warnings)
    ops = _ops(tmp_path / "out")
    r = _records(tmp_path / "out").iloc[0]
    assert not r["has_model"] and r["no_model_reason"] == ops["perf_model_reason"].iloc[0]
    assert r["library"] == "CK / aiter" and r["attention_type"] == "paged"
    assert _workload(tmp_path / "out") == "decode"  # from the step annotation: 32 decodes, no prefill


def test_sglang_capture_trace_alone(traces_dir: Path, tmp_path: Path) -> None:
    cap = _need(traces_dir, f"{SGLANG}/capture_traces/bs_32_rank0.json.gz")
    res = analyze_trace(cap, tmp_path / "out")
    assert res.status == "OK"
    ops = _ops(tmp_path / "out")
    assert int(ops["operation_count"].sum()) == 36 and ops["Kernel Time (µs)_sum"].sum() == 0
    assert any("captured" in w for w in res.warnings)


def test_vllm_piecewise_mixed_step(traces_dir: Path, tmp_path: Path) -> None:
    # execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489), gpt-oss
    # Hq 64, Hkv 8, d 64: pairs 7671310 − (7475785 − 8155)/2 + 34489 = 3971984, FLOPs 2 · 64 · 3971984 · 128 =
    # 65,076,985,856 per layer (before: 0.84 GFLOP from a per-request bound)
    replay = _need(traces_dir, f"{PIECEWISE}/graph_execution.json.gz")
    res = analyze_trace(replay, tmp_path / "out", capture_dir=replay.parent / "capture_traces")
    assert res.gpu.arch == "mi300x"  # the unnamed device (gfx 9.4, 304 CUs, 192 GiB)
    assert any("replays no attention kernel from a graph" in w for w in res.warnings)  # PIECEWISE: nothing to take
    r = _records(tmp_path / "out").iloc[0]
    # gpt-oss alternates sliding-window and full layers under one kernel name and the op carries no window: the
    # causal work is an upper bound (never "exact") until the model's config resolves each layer
    # (tests/server/ingest/test_model_config.py)
    assert r["flops_useful"] == 65_076_985_856 and r["work_bound"] == "upper" and r["efficiency_pct"] < 100
    ops = _ops(tmp_path / "out")
    kv_us = sum(d for n, d in _kernels(replay) if "reshape_and_cache" in n)
    assert ops["kv_cache_write_us_sum"].iloc[0] == pytest.approx(kv_us)  # unified_kv_cache_update, beside the row
    assert "kernel times spread" in ops["warnings"].iloc[0]  # sliding and full layers share the kernel name
    assert "--model-config" in ops["warnings"].iloc[0]


def test_vllm_piecewise_capture_trace_fills_are_not_attention_time(traces_dir: Path, tmp_path: Path) -> None:
    cap_dir = _need(traces_dir, f"{PIECEWISE}/capture_traces")
    cap = next(cap_dir.glob("graph_capture_rank_0*.json.gz"))
    res = analyze_trace(cap, tmp_path / "out")
    assert res.gpu.arch == "mi300x"
    ops = _ops(tmp_path / "out")
    fills = sum(d for n, d in _kernels(cap) if "FillFunctor<c10::BFloat16>" in n)
    assert ops["Kernel Time (µs)_sum"].sum() == 0  # only output-zeroing fills ran under the attention ops
    assert ops["aux_kernel_time_us_sum"].sum() == pytest.approx(fills)
    assert "launched no attention kernel" in ops["warnings"].iloc[0]
