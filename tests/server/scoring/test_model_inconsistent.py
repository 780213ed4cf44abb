"""Efficiency above the roofline is never a verdict: the model, not the kernel, is wrong there, and the row says why.

The class: a serving decode replayed from a full CUDA/HIP graph, modeled from its step annotation's token sums. Two
mechanisms put such a row above 100 %:

* the step ran in more than one call per layer — two micro-batches, each replaying a graph captured at half the
  batch — and each call was given the whole step's sums: work of 8 requests against the time of a call that ran 4
  (110.8 % before; the call's query tensor, 4 rows against the step's 8 query tokens, shows it). The step's work is
  now an upper bound of the call's ("at most"), with that reason, never exact;
* the work is exact but the time misses kernels: the row reads "model inconsistent: <reason>", no band, no verdict.

Each expected number is worked out by hand in the comments (MI300X: 5.3 TB/s datasheet HBM, the roof of the ratio).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from sdpa_analyzer.server.scoring.verdicts import row_verdict, verdict
from sdpa_analyzer.server.synthetic import (
    SyntheticAttentionCall,
    build_trace_with_truth,
    write_serving_run,
    write_trace,
)

MI300X = "AMD Instinct MI300X"
HBM = 5.3e12


def _records(out: Path):  # type: ignore[no-untyped-def]
    scored = score_category(DataRoots([out.parent]), out, "inferenceattention", None, "compulsory")
    assert scored.table is not None
    return scored.table.records


def _micro_batched_step(tmp: Path) -> Path:
    """One decode step of 8 requests run as two micro-batches of 4 (contexts 1000, 2000, 3000, 4000 each), each
    replaying the graph captured (in this trace) at batch 4; Hq 64, Hkv 8, d 64; 2 layers; each replayed call:
    kernel_unified_attention_3d 6 µs + reduce_segments 1 µs."""
    call = SyntheticAttentionCall(flavour="vllm_unified", batch=4, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1, 1, 1, 1), seqlens_kv=(1000, 2000, 3000, 4000), causal=True,
                                  kernel_us=6.0, aux_kernel_us=1.0, repeat=2, gpu=MI300X)
    trace = build_trace_with_truth([call], gpu_name=MI300X, graph="capture+replay", replays=2).trace
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "user_annotation" and e["name"].startswith("execute_")]
    assert [e["name"] for e in steps] == [
        "execute_4_context_0(sq0sk0sqsq0sqsk0)_generation_4(sq4sk10000sqsq4sqsk10000)"]
    # the engine's annotation counts the whole step: both micro-batches
    steps[0]["name"] = "execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk20000sqsq8sqsk20000)"
    return write_trace(trace, tmp / "t.json.gz")


def test_a_step_split_over_micro_batches_is_an_upper_bound_not_above_100(tmp_path: Path) -> None:
    analyze_trace(_micro_batched_step(tmp_path), tmp_path / "out")
    (r,) = [r for _, r in _records(tmp_path / "out").iterrows()]
    assert r["count"] == 4 and r["mean_us"] == pytest.approx(7.0)  # 2 layers × 2 micro-batches, 6 + 1 µs each
    # the step's sums: 8 requests, Σk = 20,000 -> K + V = 20,000 · 8 · 64 · 2 B · 2 = 40,960,000, Q + O =
    # 2 · 8 · 64 · 64 · 2 = 131,072 -> 41,091,072 B; FLOPs 4 · 64 · 64 · 20,000 = 327,680,000
    assert r["flops_useful"] == 327_680_000 and r["bytes_compulsory"] == 41_091_072
    # at the roofs, 41,091,072 B / 5.3 TB/s = 7.753 µs against 7 µs measured: 110.8 % — impossible for one call that
    # ran 4 of the 8 requests (its own work, 20,545,536 B, is 55.4 %). So the step's work is an upper bound:
    assert r["efficiency_pct"] == pytest.approx(100 * 41_091_072 / HBM / 7e-6)
    assert r["work_bound"] == "upper" and "more than one call per layer" in r["work_bound_reason"]
    assert r["band_status"] == "none"
    words = row_verdict(r, "compulsory")
    assert words.startswith("at most ") and "more than one call per layer" in words and "no band verdict" in words
    assert any("exceed the query tensor's 4 rows" in w for w in r["warnings"])
    assert not any("sliding-window" in w and "above 100%" in w for w in r["warnings"])  # not blamed on a window


def test_the_whole_step_in_one_call_stays_exact(tmp_path: Path) -> None:
    # the same graph replayed twice in a step of 4 requests (two forwards of the whole batch): each call holds the
    # step's 4 query tokens, so its work is exact — 20,545,536 B / 5.3 TB/s / 7 µs = 55.38 %
    call = SyntheticAttentionCall(flavour="vllm_unified", batch=4, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1, 1, 1, 1), seqlens_kv=(1000, 2000, 3000, 4000), causal=True,
                                  kernel_us=6.0, aux_kernel_us=1.0, repeat=2, gpu=MI300X)
    truth = build_trace_with_truth([call], gpu_name=MI300X, graph="capture+replay", replays=2)
    analyze_trace(write_trace(truth.trace, tmp_path / "t.json.gz"), tmp_path / "out")
    (r,) = [r for _, r in _records(tmp_path / "out").iterrows()]
    assert r["work_bound"] == "exact" and r["model_check"] is None
    assert r["efficiency_pct"] == pytest.approx(100 * 20_545_536 / HBM / 7e-6)


def test_exact_work_above_the_roofline_is_model_inconsistent(tmp_path: Path) -> None:
    # a full-graph decode with its capture folder: 3 requests, k = 1000, 2000, 3000, Hq 64, Hkv 8, d 64, 2 layers;
    # bytes 6000 · 8 · 64 · 2 · 2 + 2 · 3 · 64 · 64 · 2 = 12,337,152, 2.328 µs at 5.3 TB/s; each call's recorded
    # kernels take 1.0 + 0.5 µs — 155.2 % of the roofline, which no kernel reaches
    call = SyntheticAttentionCall(flavour="vllm_unified", batch=3, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1, 1, 1), seqlens_kv=(1000, 2000, 3000), causal=True, kernel_us=1.0,
                                  aux_kernel_us=0.5, repeat=2, graph_batch=4, gpu=MI300X)
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [call])
    analyze_trace(replay, tmp_path / "out", capture_dir=capture)
    (r,) = [r for _, r in _records(tmp_path / "out").iterrows()]
    assert r["work_bound"] == "exact" and r["efficiency_pct"] == pytest.approx(100 * 12_337_152 / HBM / 1.5e-6)
    assert r["model_check"].startswith("model inconsistent: a serving call modeled from its step's token sums")
    assert r["band_status"] == "none" and "inconsistent" in r["band_note"]
    words = row_verdict(r, "compulsory")
    assert words.startswith("model inconsistent: ") and "no verdict" in words
    assert "within" not in words and "below" not in words and "above the band" not in words


def test_any_verdict_above_the_roofline_names_the_inconsistency() -> None:
    # a training call 120 % of the tensor roof: no regime, no band, the generic reason
    words = verdict("compute", 120.0, 30.0, "above", 50.0, 80.0, "compute", True, "exact")
    assert words.startswith("model inconsistent: the modeled work needs more time at the roofs")
    assert "no verdict" in words and "above the band" not in words
    # an upper bound above 100 % is only "at most": not inconsistent
    assert verdict("memory", 3.0, 120.0, "none", None, None, None, True, "upper").startswith("at most ")


def test_the_split_step_rule_holds_for_another_engine_s_op() -> None:
    # held out (the rule was written on vLLM's op): SGLang's paged decode, the real capture trace's row (q (32, 32,
    # 128), NHD cache with 8 KV heads). A step of 32 requests fits the call: exact. A step of 64 requests (two
    # batches of 32, as two-batch overlap runs them) cannot: its sums are at most this call's work.
    from sdpa_analyzer.perf_models.estimate import estimate_work
    from sdpa_analyzer.perf_models.ops.vllm import parse_step_annotation
    from sdpa_analyzer.perf_models.registry import parse_op
    from sdpa_analyzer.perf_models.table import ConfigTable

    bf16 = "c10::BFloat16"
    dims = [[32, 32, 128], [10905190400], [32, 32, 128], [835874, 1, 8, 128], [835874, 1, 8, 128], [33],
            [20971520], [4096], [], [1], [1], []]
    types = [bf16, "unsigned char", bf16, bf16, bf16, "int", "int", "int", "", "float", "float", ""]
    name = "sglang_profiler::attention_paged_attention_ragged_100"
    bounds = {}
    for requests, keys in ((32, 32785), (64, 65570)):
        step = parse_step_annotation(f"execute_{requests}_context_0(sq0sk0sqsq0sqsk0)_generation_{requests}"
                                     f"(sq{requests}sk{keys}sqsq{requests}sqsk{keys})")
        p = parse_op(name, dims, types, [""] * 12, step)
        assert p.config is not None, p.reason
        bounds[requests] = str(estimate_work(ConfigTable.from_configs([p.config])).work_bound[0])
    assert bounds == {32: "exact", 64: "upper"}
