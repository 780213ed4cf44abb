"""Model hints: a Hugging Face config.json resolves what a serving trace does not carry — which layers are
sliding-window ones and how wide the window is, and MLA latent caches. Without it, a layer pattern the trace cannot
resolve is an upper bound (never "exact") and a row above 100 % says why. Bad config files are one-line errors with
nothing written. Expected numbers are worked out by hand in the comments (or read from the real traces' kernels)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.perf_models.config import AttentionConfig
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.ingest.layers import check_shapes
from sdpa_analyzer.server.ingest.model_config import FULL, SLIDING, load_model_config
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from sdpa_analyzer.server.synthetic import (
    SyntheticAttentionCall,
    build_trace_with_truth,
    write_serving_run,
    write_trace,
)
from tests.support import need

MI300X, H100 = "AMD Instinct MI300X", "NVIDIA H100 80GB HBM3"
BF16, HBM = 1307.4e12, 5.3e12  # MI300X datasheet dense bf16 and bandwidth (the roofs; the MAF 708 is shown beside)
H100_HBM = 3.35e12
# gpt-oss (openai/gpt-oss-20b config.json): 24 layers, layer_types alternating from sliding_attention, window 128,
# 64 query heads, 8 KV heads, head_dim 64; gpt-oss-120b has 36 layers of the same pattern
GPT_OSS_LAYERS = 24


def _gpt_oss(layers: int = GPT_OSS_LAYERS, first: str = SLIDING) -> dict:
    other = FULL if first == SLIDING else SLIDING
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": layers,
            "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128,
            "layer_types": [first if i % 2 == 0 else other for i in range(layers)],
            "rope_scaling": {"factor": 32.0, "rope_type": "yarn"}, "hidden_size": 2880}


def _write(path: Path, body: object) -> Path:
    path.write_text(json.dumps(body))
    return path


def _ops(out: Path, cat: str = "inferenceattention") -> pd.DataFrame:
    return pd.read_csv(out / "category_data" / f"{cat}_ops.csv")


def _records(out: Path, cat: str = "inferenceattention") -> pd.DataFrame:
    scored = score_category(DataRoots([out.parent]), out, cat, None, "compulsory")
    assert scored.table is not None
    return scored.table.records


# ---- reading config.json -------------------------------------------------------------------------------------------


def test_layer_kinds_as_transformers_configs_give_them(tmp_path: Path) -> None:
    hints = load_model_config(_write(tmp_path / "oss.json", _gpt_oss()))
    assert hints.attention_layers[:4] == (SLIDING, FULL, SLIDING, FULL) and len(hints.attention_layers) == 24
    assert hints.sliding_window == 128 and hints.mla_latent is None
    meta = hints.metadata()
    assert meta["layer_kinds"] == {SLIDING: 12, FULL: 12} and meta["layer_pattern"].startswith("SFSF")
    # Qwen3 ships sliding_window 32768 with use_sliding_window false: every layer is full
    qwen = load_model_config(_write(tmp_path / "qwen.json", {"num_hidden_layers": 36, "sliding_window": 32768,
                                                            "use_sliding_window": False, "num_key_value_heads": 8}))
    assert set(qwen.attention_layers) == {FULL} and qwen.sliding_window is None
    # Mistral: a window and no pattern — every layer slides
    mistral = load_model_config(_write(tmp_path / "m.json", {"num_hidden_layers": 32, "sliding_window": 4096}))
    assert set(mistral.attention_layers) == {SLIDING} and mistral.sliding_window == 4096
    # Gemma 3's older configs: every 6th layer full (sliding_window_pattern 6), inside text_config
    gemma = load_model_config(_write(tmp_path / "g.json", {"model_type": "gemma3", "text_config": {
        "num_hidden_layers": 12, "sliding_window": 1024, "sliding_window_pattern": 6}}))
    assert [i for i, k in enumerate(gemma.attention_layers) if k == FULL] == [5, 11]
    assert gemma.config.model_type == "gemma3"
    # a hybrid model's linear-attention layers run no attention op: they hold no attention call
    hybrid = load_model_config(_write(tmp_path / "h.json", {"num_hidden_layers": 4, "layer_types": [
        "linear_attention", "linear_attention", "linear_attention", "full_attention"]}))
    assert hybrid.attention_layers == (FULL,)
    # DeepSeek-V3: the latent cache is kv_lora_rank 512 + qk_rope_head_dim 64 = 576 wide, V its first 512
    ds = load_model_config(_write(tmp_path / "ds.json", {"num_hidden_layers": 61, "kv_lora_rank": 512,
                                                         "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                                                         "v_head_dim": 128, "num_key_value_heads": 128}))
    assert ds.mla_latent == (576, 512)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sliding_window": 128}, "'num_hidden_layers' is missing"),
        ({"num_hidden_layers": "24"}, "'num_hidden_layers' is '24'"),
        ({"num_hidden_layers": True}, "'num_hidden_layers' is True"),
        ({"num_hidden_layers": 24, "sliding_window": 128.0}, "'sliding_window' is 128.0"),
        ({"num_hidden_layers": 2, "layer_types": ["full_attention"]}, "'layer_types' has 1 entries"),
        ({"num_hidden_layers": 2, "sliding_window": 8, "layer_types": ["full_attention", "sliding_atention"]},
         "'layer_types.1' is 'sliding_atention'"),
        ({"num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"]},
         "'sliding_window' is missing"),
        ({"num_hidden_layers": 2, "kv_lora_rank": 512}, "'qk_rope_head_dim' is missing"),
        ({"text_config": {"num_hidden_layers": -1}}, "'text_config.num_hidden_layers' is -1"),
        ([1, 2], "a JSON list, not an object"),
    ],
)
def test_bad_config_files_are_one_line_errors_naming_the_field(tmp_path: Path, body: object, field: str) -> None:
    path = _write(tmp_path / "config.json", body)
    with pytest.raises(InputError) as err:
        load_model_config(path)
    msg = str(err.value)
    assert field in msg and str(path) in msg and "\n" not in msg


def test_a_bad_config_writes_nothing_and_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from sdpa_analyzer.server.cli.main import main

    trace = write_trace(build_trace_with_truth([_decode_layer(10.0)], gpu_name=MI300X).trace, tmp_path / "t.json.gz")
    (tmp_path / "config.json").write_text("{\"num_hidden_layers\": 24,")  # truncated
    out = tmp_path / "out"
    rc = main(["analyze", str(trace), "-o", str(out), "--model-config", str(tmp_path / "config.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "config.json: not readable JSON" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_config_outside_the_roots_or_a_link_out_of_them_is_refused(tmp_path: Path) -> None:
    from sdpa_analyzer.server.tools.analyze import AnalyzeInput
    from sdpa_analyzer.server.tools.analyze import analyze_trace as tool
    from sdpa_analyzer.server.tools.base import ToolContext

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    trace = write_trace(build_trace_with_truth([_decode_layer(10.0)], gpu_name=MI300X).trace, root / "t.json.gz")
    _write(outside / "config.json", _gpt_oss(4))
    ctx = ToolContext(roots=DataRoots([root]))
    with pytest.raises(InputError, match="model_config"):
        tool(ctx, AnalyzeInput.model_validate({"trace_path": str(trace), "output_dir": str(root / "o1"),
                                               "model_config": str(outside / "config.json")}))
    (root / "config.json").symlink_to(outside / "config.json")
    with pytest.raises(InputError) as err:
        tool(ctx, AnalyzeInput.model_validate({"trace_path": str(trace), "output_dir": str(root / "o2"),
                                               "model_config": str(root / "config.json")}))
    assert "\n" not in str(err.value)
    assert not (root / "o1").exists() and not (root / "o2").exists()


# ---- alternating windows: a synthetic full-graph decode with known truth -------------------------------------------


def _decode_layer(kernel_us: float) -> SyntheticAttentionCall:
    # 32 decodes, each over 4096 cached keys; Hq 64, Hkv 8, d 64 (gpt-oss-20b on one GPU); vLLM's Triton 3D kernel
    # `kernel_unified_attention_3d` (kernel_us) + reduce_segments (2 µs): the same kernel names for every layer
    return SyntheticAttentionCall(flavour="vllm_unified", batch=32, heads_q=64, heads_kv=8, head_dim_qk=64,
                                  seqlens_q=(1,) * 32, seqlens_kv=(4096,) * 32, causal=True, kernel_us=kernel_us,
                                  aux_kernel_us=2.0, gpu=MI300X)


# bytes per layer: full: K + V 32 · 4096 · 8 · 64 · 2 (K and V) · 2 B = 268,435,456, Q + O 2 · 32 · 64 · 64 · 2 =
# 524,288 → 268,959,744; sliding (window 128 < every context): K + V 32 · 128 · 8 · 64 · 2 · 2 = 8,388,608 → 8,912,896
FULL_BYTES, SLIDING_BYTES = 268_959_744, 8_912_896


def test_alternating_windows_full_graph_decode_with_and_without_the_config(tmp_path: Path) -> None:
    # 4 layers sliding, full, sliding, full: per call 8 + 2 = 10 µs (sliding) and 78 + 2 = 80 µs (full), all replayed
    # from one graph; the capture gives the shapes
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_layer(8.0), _decode_layer(78.0)] * 2)
    plain = analyze_trace(replay, tmp_path / "plain", capture_dir=capture)
    r = _records(tmp_path / "plain")
    assert len(r) == 1 and int(r["count"].iloc[0]) == 4
    # every layer modeled full: 268,959,744 B in a mean 45 µs is 112.8 % of 5.3 TB/s — an upper bound, flagged with
    # its cause and the hint, never "exact"
    row = r.iloc[0]
    assert row["work_bound"] == "upper" and row["efficiency_pct"] == pytest.approx(100 * FULL_BYTES / HBM / 45e-6)
    assert any("above 100%" in w and "--model-config" in w for w in row["warnings"])
    assert "kernel times spread" in _ops(tmp_path / "plain")["warnings"].iloc[0]
    assert plain.config_json is None

    cfg = _write(tmp_path / "config.json", {"num_hidden_layers": 4, "sliding_window": 128,
                                            "layer_types": [SLIDING, FULL, SLIDING, FULL]})
    res = analyze_trace(replay, tmp_path / "cfg", capture_dir=capture, model_config=cfg)
    r = _records(tmp_path / "cfg").set_index("mean_us")
    assert sorted(r.index) == [10.0, 80.0] and list(r["count"]) == [2, 2]
    full, sliding = r.loc[80.0], r.loc[10.0]
    assert full["work_bound"] == "exact" and full["bytes_compulsory"] == FULL_BYTES
    assert full["efficiency_pct"] == pytest.approx(100 * FULL_BYTES / HBM / 80e-6)  # 63.4 %
    # the window caps each decode at 128 keys: with only the step's sums the count is an upper bound (it is the truth
    # here, every context being longer than the window)
    assert sliding["bytes_compulsory"] == SLIDING_BYTES and sliding["work_bound"] == "upper"
    assert sliding["efficiency_pct"] == pytest.approx(100 * SLIDING_BYTES / HBM / 10e-6)  # 16.8 %
    assert not r["is_anomaly"].any()
    ops = _ops(tmp_path / "cfg")
    assert set(ops["perf_params"].map(lambda p: "'layer_type'" in p)) == {True}
    assert res.config_json == str(cfg)
    meta = json.loads((tmp_path / "cfg" / "metadata" / "inferenceattention_metadata.json").read_text())
    assert meta["model_config"]["source"] == str(cfg) and meta["model_config"]["sliding_window"] == 128
    assert meta["model_config"]["layer_kinds"] == {SLIDING: 2, FULL: 2}


def test_a_config_of_other_shapes_is_named(tmp_path: Path) -> None:
    # the trace's layers have 8 KV heads of 64; a config of 6 KV heads of 128 is not this model's
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_layer(8.0), _decode_layer(78.0)])
    cfg = _write(tmp_path / "config.json", {**_gpt_oss(2), "num_key_value_heads": 6, "head_dim": 128})
    res = analyze_trace(replay, tmp_path / "out", capture_dir=capture, model_config=cfg)
    assert any("8 KV heads, which do not divide the config's num_key_value_heads 6" in w for w in res.warnings)
    assert any("head dim 64, not the config's head_dim 128" in w for w in res.warnings)
    # tensor parallelism: gpt-oss-120b's 8 KV heads over 8 ranks are 1 per rank (the B200 trace): no warning
    hints = load_model_config(_write(tmp_path / "oss.json", _gpt_oss(36)))
    assert check_shapes(hints, [AttentionConfig(1, 8, 1, 888, 888, 64, 64)]) == []
    assert check_shapes(hints, [AttentionConfig(1, 16, 2, 888, 888, 64, 64)]) == []


def test_a_config_whose_layers_do_not_divide_the_step_leaves_the_layers_unresolved(tmp_path: Path) -> None:
    # 4 calls in the step, a 6-layer config: which call is which layer is not known, so the rows stay upper bounds
    replay, capture, _, _ = write_serving_run(tmp_path / "run", [_decode_layer(8.0), _decode_layer(78.0)] * 2)
    cfg = _write(tmp_path / "config.json", _gpt_oss(6))
    res = analyze_trace(replay, tmp_path / "out", capture_dir=capture, model_config=cfg)
    assert any("not a multiple of the config's 6 attention layers" in w for w in res.warnings)
    r = _records(tmp_path / "out")
    assert (r["work_bound"] == "upper").all()


# ---- MLA -------------------------------------------------------------------------------------------------------------


def _flashmla(**kw: object) -> SyntheticAttentionCall:
    # DeepSeek-V3 decode through FlashMLA: 128 requests × 4096 cached tokens, 128 query heads, ONE latent KV head of
    # 576 (kv_lora_rank 512 + RoPE 64), V its first 512 columns; split-KV kernel 205 µs + combine 8.125 µs
    base: dict = dict(flavour="flashmla", batch=128, heads_q=128, heads_kv=1, head_dim_qk=576, head_dim_v=512,
                      seqlens_q=(1,) * 128, seqlens_kv=(4096,) * 128, causal=True, kernel_us=205.0,
                      aux_kernel_us=8.125, repeat=2, gpu=H100)
    base.update(kw)
    return SyntheticAttentionCall(**base)


# bytes: the latent cache once, 524,288 tokens · 576 · 2 = 603,979,776; Q 128 · 128 · 576 · 2 = 18,874,368; O
# 128 · 128 · 512 · 2 = 16,777,216 → 639,631,360 (read as K and then V it would be 1,176,502,272: 1.84× more).
# FLOPs: 2 · 128 heads · 524,288 pairs · (576 + 512) = 146,028,888,064
MLA_BYTES, MLA_FLOPS = 639_631_360, 146_028_888_064


def test_flashmla_decode_at_its_published_bandwidth_is_below_the_roofline(tmp_path: Path) -> None:
    # FlashMLA's README: up to 3,000 GB/s memory-bound on H800 SXM5. 639,631,360 B in 213.125 µs is 3.0 TB/s: 89.6 %
    # of an H100's 3.35 TB/s — counted as two caches it would read 164.8 %
    truth = build_trace_with_truth([_flashmla()], gpu_name=H100)
    res = analyze_trace(write_trace(truth.trace, tmp_path / "t.json.gz"), tmp_path / "out")
    ops = _ops(tmp_path / "out")
    assert list(ops["name"]) == ["sgl_kernel::fwd_kvcache_mla"] and int(ops["operation_count"].iloc[0]) == 2
    assert ops["Kernel Time (µs)_sum"].iloc[0] == pytest.approx(2 * 213.125)
    assert ops["reduce_kernel_time_us_sum"].iloc[0] == pytest.approx(2 * 8.125)  # the combine: a helper, no call
    r = _records(tmp_path / "out").iloc[0]
    assert r["library"] == "FlashMLA" and r["kind"] == "decode" and r["work_bound"] == "exact"
    assert r["bytes_compulsory"] == MLA_BYTES and r["flops_useful"] == MLA_FLOPS
    assert r["efficiency_pct"] == pytest.approx(100 * MLA_BYTES / H100_HBM / 213.125e-6)
    assert r["efficiency_pct"] < 100 and not r["is_anomaly"]
    assert res.unlinked.attention_kernels_outside_rows == 0


# ---- the real traces -------------------------------------------------------------------------------------------------

PIECEWISE = "inference/vllm_prefilldecode_piecewise"


def test_real_vllm_piecewise_step_with_a_gpt_oss_config(traces_dir: Path, tmp_path: Path) -> None:
    # execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489): 24
    # attention calls, one per gpt-oss-20b layer (Hq 64, Hkv 8, d 64), their kernel_unified_attention_2d times
    # alternating ~130 / ~300 µs. Full layers: pairs 3,971,984 per head → 2 · 64 · 3,971,984 · 128 = 65,076,985,856
    # FLOPs, exact. Sliding layers (window 128): each query keeps at most 128 keys, 8192 · 128 = 1,048,576 pairs →
    # 17,179,869,184 FLOPs, an upper bound (the step's sums do not give each request's length).
    replay = need(traces_dir / PIECEWISE / "graph_execution.json.gz")
    cfg = _write(tmp_path / "config.json", _gpt_oss())
    res = analyze_trace(replay, tmp_path / "out", capture_dir=replay.parent / "capture_traces", model_config=cfg)
    r = _records(tmp_path / "out")
    assert len(r) == 2 and list(r["count"]) == [12, 12]
    full = r[r["mask"].str.startswith("causal")].iloc[0]
    sliding = r[r["mask"].str.startswith("sliding window (left=127")].iloc[0]
    assert full["flops_useful"] == 65_076_985_856 and full["work_bound"] == "exact"
    assert full["efficiency_pct"] == pytest.approx(100 * 65_076_985_856 / BF16 / (full["mean_us"] * 1e-6))
    # the full layers alone: 29-32 % of AMD's MAF 708 = 15.7-17.3 % of the 1307.4 datasheet roof (one causal row
    # for all layers read 42.9 % of 708)
    assert 29 * 708 / 1307.4 < full["efficiency_pct"] < 32 * 708 / 1307.4
    assert sliding["flops_useful"] == 17_179_869_184 and sliding["work_bound"] == "upper"
    # the window's FLOPs at the datasheet roof give a floor: its efficiency is at least the compute share
    # (the sliding calls read more bytes per FLOP, so the memory roof can bind them instead)
    assert sliding["efficiency_pct"] >= 100 * 17_179_869_184 / BF16 / (sliding["mean_us"] * 1e-6) * (1 - 1e-9)
    # the layers the position gives agree with the kernel times: the sliding rows are the fast calls
    assert sliding["mean_us"] < 140 < full["mean_us"]
    assert float(r["time_ms"].sum()) == pytest.approx(5.146906, rel=1e-6)  # every call modeled, none left out
    assert any("24 serving attention calls matched to its 24 attention layers" in w for w in res.warnings)


def test_real_vllm_piecewise_step_with_a_config_of_another_depth(traces_dir: Path, tmp_path: Path) -> None:
    # gpt-oss-120b's 36 layers cannot be this 24-call step's: the layers stay unresolved, an upper bound
    replay = need(traces_dir / PIECEWISE / "graph_execution.json.gz")
    res = analyze_trace(replay, tmp_path / "out", model_config=_write(tmp_path / "c.json", _gpt_oss(36)))
    assert any("not a multiple of the config's 36 attention layers" in w for w in res.warnings)
    assert (_records(tmp_path / "out")["work_bound"] == "upper").all()


def test_real_b200_trtllm_rows_become_exact_with_the_config(traces_dir: Path, tmp_path: Path) -> None:
    # gpt-oss-120b on 8 GPUs (Hq 8, Hkv 1 per rank), one 888-token prefill; TRT-LLM names each layer's mask. With the
    # config's window 128 the sliding layers keep Σ_i min(i + 1, 128) = 128 · 129 / 2 + 760 · 128 = 105,536 pairs
    # per head → 2 · 8 · 105,536 · 128 = 216,137,728 FLOPs, exact (one request: its lengths are the sums)
    path = need(traces_dir / "b200/vllm_eager_trace.json.gz")
    analyze_trace(path, tmp_path / "plain")
    before = _records(tmp_path / "plain")
    assert sorted(before["work_bound"]) == ["exact", "upper"]
    res = analyze_trace(path, tmp_path / "out", model_config=_write(tmp_path / "c.json", _gpt_oss(36)))
    r = _records(tmp_path / "out")
    sliding = r[r["kernel_name"].str.contains("SlidingOrChunked")].iloc[0]
    full = r[~r["kernel_name"].str.contains("SlidingOrChunked")].iloc[0]
    assert sliding["flops_useful"] == 216_137_728 and sliding["work_bound"] == "exact"
    assert full["flops_useful"] == 808_378_368 and full["work_bound"] == "exact"
    assert not any("kernel's name states another mask" in w for w in res.warnings)
    # a config whose pattern starts with a full layer disagrees with the kernels at every call: the kernels win
    res = analyze_trace(path, tmp_path / "rev", model_config=_write(tmp_path / "r.json", _gpt_oss(36, first=FULL)))
    assert any("at 36 calls the kernel's name states another mask" in w for w in res.warnings)
    again = _records(tmp_path / "rev")
    assert sorted(again["flops_useful"]) == [216_137_728, 808_378_368]
