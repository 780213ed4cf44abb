"""parse_op on real rows: analysis-folder CSV cells and trace cpu_op args from /work/shared.

Every expected config is written out by hand from the row quoted in the test.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from sdpa_analyzer.perf_models.config import Alignment, AttentionConfig, Direction, Mask, MaskKind, PagedInfo
from sdpa_analyzer.perf_models.ops.vllm import parse_vllm_annotation
from sdpa_analyzer.perf_models.registry import AttentionType, Layout, Source, parse_op

NONE = Mask()
CAUSAL_BR = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)
CAUSAL_TL = Mask(MaskKind.CAUSAL, Alignment.TOP_LEFT)


def csv_row(folder: Path, cat: str = "sdpa_fwd") -> pd.Series:
    """The first (in these folders: only) row of `<cat>_ops.csv`."""
    df = pd.read_csv(folder / "category_data" / f"{cat}_ops.csv")
    return df.iloc[0]


@cache
def _trace_events(path: str) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def cpu_op(path: Path, name: str) -> dict[str, Any]:
    for e in _trace_events(str(path)):
        if e.get("cat") == "cpu_op" and e.get("name") == name:
            return e.get("args", {})
    pytest.skip(f"{name} not in {path.name}")


def parse_csv(row: pd.Series):
    return parse_op(
        row["name"], row["Input Dims"], row["Input type"], row["Concrete Inputs"], row["perf_params"]
    )


def parse_args(name: str, args: dict[str, Any], perf_params=None):
    return parse_op(
        name, args.get("Input Dims"), args.get("Input type"), args.get("Concrete Inputs"), perf_params
    )


def bf16(**kw) -> AttentionConfig:
    return AttentionConfig(dtype_q="bf16", **kw)


# --- analysis-folder CSV rows -------------------------------------------------------------------------


def test_csv_sdpa_flash_causal(analysis_folders_dir):
    # Input Dims ((16, 16, 559, 64) x3, (), (), (), ()); Concrete ('', '', '', '0.', 'True', 'False', '0.125')
    # BHND: B=16, H=16, N=559, d=64; is_causal (slot 4) True -> bottom-right (Nq = Nkv anyway)
    p = parse_csv(csv_row(analysis_folders_dir / "h100_qwen1.5-0.5b"))
    assert p.reason is None and p.source is Source.INPUT_DIMS
    assert p.config == bf16(
        batch=16,
        heads_q=16,
        heads_kv=16,
        seq_q=559,
        seq_kv=559,
        head_dim_qk=64,
        head_dim_v=64,
        mask=CAUSAL_BR,
    )
    assert (p.family, p.layout, p.attention_type, p.direction) == (
        "aten_sdpa_flash",
        Layout.BHND,
        AttentionType.FLASH,
        Direction.FWD,
    )


def test_csv_sdpa_flash_noncausal_bert(analysis_folders_dir):
    # ((1, 8, 141, 64) x3 ...); ('', '', '', '0.', 'False', 'False', '0.125')
    p = parse_csv(csv_row(analysis_folders_dir / "h100_bert-small"))
    assert p.config == bf16(
        batch=1, heads_q=8, heads_kv=8, seq_q=141, seq_kv=141, head_dim_qk=64, head_dim_v=64, mask=NONE
    )


def test_csv_long_seq_d128(analysis_folders_dir):
    # ((1, 32, 32768, 128) x3 ...); ('', '', '', '0.', 'False', 'False', '0.088388347648318433')
    p = parse_csv(csv_row(analysis_folders_dir / "unit_sdpa_01_long_seq_low_eff"))
    assert p.config == bf16(
        batch=1, heads_q=32, heads_kv=32, seq_q=32768, seq_kv=32768, head_dim_qk=128, head_dim_v=128
    )


def test_csv_flash_attn_backward_scale_is_not_causal(analysis_folders_dir):
    # flash_attn::_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p,
    #   softmax_scale, causal, window_size_left, window_size_right, softcap, alibi_slopes, deterministic,
    #   rng_state). Row: q (2, 4096, 32, 128) BNHD -> B=2, N=4096, Hq=32; k/v (2, 4096, 8, 128) -> Hkv=8.
    # Concrete: slot 9 '0.0' dropout, slot 10 '0.088…' softmax_scale, slot 11 'False' causal, -1/-1 window.
    # The reference tool read slot 10 as causal (its perf_params say causal=0.0883): NON-causal here.
    row = csv_row(analysis_folders_dir / "synthetic_flash_attn_fwd_bwd_gqa_noncausal", "sdpa_bwd")
    assert row["name"] == "flash_attn::_flash_attn_backward"
    assert "0.088388347648318433" in row["Concrete Inputs"]
    p = parse_csv(row)
    assert p.reason is None and p.source is Source.INPUT_DIMS
    assert p.config == bf16(
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=4096,
        seq_kv=4096,
        head_dim_qk=128,
        head_dim_v=128,
        direction=Direction.BWD,
        mask=NONE,
        dropout_p=0.0,
    )
    assert p.config.mask.kind is MaskKind.NONE
    assert p.config.gqa_ratio == 4
    assert (p.family, p.layout, p.direction) == ("flash_attn", Layout.BNHD, Direction.BWD)


def test_csv_flash_attn_func_forward(analysis_folders_dir):
    # FlashAttnFunc.forward(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
    #   deterministic, return_softmax, is_grad_enabled); ('', '', '', '0.0', '0.088…', 'False', '[-1, -1]', …)
    p = parse_csv(csv_row(analysis_folders_dir / "synthetic_flash_attn_fwd_bwd_gqa_noncausal"))
    assert p.config == bf16(
        batch=2, heads_q=32, heads_kv=8, seq_q=4096, seq_kv=4096, head_dim_qk=128, head_dim_v=128, mask=NONE
    )
    assert p.family == "flash_attn"


def test_csv_aiter_without_concrete_inputs_has_a_reason(analysis_folders_dir):
    # aiter::_flash_attn_forward with Input Dims (q, k, v) only, Concrete Inputs and perf_params NaN:
    # the causal flag (slot 5) is unknown, so no model and a reason instead of a silent None.
    p = parse_csv(csv_row(analysis_folders_dir / "cmp_test03_attention_fused_vs_unfused_trace1_standalone"))
    assert p.config is None
    assert p.reason.startswith("missing Concrete Inputs for causal flag 'causal' (slot 5)")
    assert "no perf_params" in p.reason
    assert (p.family, p.attention_type) == ("aiter", AttentionType.FLASH)


def test_csv_backward_node_uses_forward_perf_params(analysis_folders_dir):
    # The autograd node has no Input Dims; the fwd row's perf_params (causal False, GQA 32/8) give the
    # config, with direction flipped to bwd.
    fwd = csv_row(analysis_folders_dir / "synthetic_flash_attn_fwd_bwd_gqa_noncausal")
    p = parse_op("FlashAttnFuncBackward", float("nan"), float("nan"), float("nan"), fwd["perf_params"])
    assert p.source is Source.PERF_PARAMS
    assert p.config == bf16(
        batch=2,
        heads_q=32,
        heads_kv=8,
        seq_q=4096,
        seq_kv=4096,
        head_dim_qk=128,
        head_dim_v=128,
        direction=Direction.BWD,
    )
    assert any("perf_params" in w for w in p.warnings)


def test_csv_upstream_misread_causal_is_refused(analysis_folders_dir):
    # The upstream bwd perf_params carry causal=0.08838834764831843: refused, with the reason.
    bwd = csv_row(analysis_folders_dir / "synthetic_flash_attn_fwd_bwd_gqa_noncausal", "sdpa_bwd")
    p = parse_op("FlashAttnFuncBackward", None, None, None, bwd["perf_params"])
    assert p.config is None
    assert "causal=0.0883883476483184" in p.reason and "not True/False" in p.reason


def test_every_csv_row_has_config_or_reason(analysis_folders_dir):
    for path in sorted(analysis_folders_dir.glob("*/category_data/*_ops.csv")):
        df = pd.read_csv(path)
        for _, row in df.iterrows():
            p = parse_csv(row)
            assert (p.config is None) != (p.reason is None), (path, row["name"])


# --- trace cpu_op args ---------------------------------------------------------------------------------


def test_trace_sdpa_dispatcher_is_top_left(traces_dir):
    # aten::scaled_dot_product_attention: [[16,16,559,64] x3, [], [], [], [], []];
    # Concrete ['', '', '', '', '0.', 'True', '0.125', 'False'] -> is_causal slot 5 True, scale slot 6.
    args = cpu_op(
        traces_dir / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "aten::scaled_dot_product_attention"
    )
    assert args["Concrete Inputs"][5] == "True"
    p = parse_args("aten::scaled_dot_product_attention", args)
    assert p.config == bf16(
        batch=16,
        heads_q=16,
        heads_kv=16,
        seq_q=559,
        seq_kv=559,
        head_dim_qk=64,
        head_dim_v=64,
        mask=CAUSAL_TL,
    )
    assert p.attention_type is AttentionType.UNKNOWN  # the backend op below decides


def test_trace_aten_flash_attention_forward_is_bnhd(traces_dir):
    # aten::_flash_attention_forward: q [16, 559, 16, 64] (B, N, H, D); Concrete
    # ['', '', '', '', '', '559', '559', '0.', 'True', 'False', '0.125', '', '', '', '']: is_causal slot 8.
    args = cpu_op(
        traces_dir / "mi300" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "aten::_flash_attention_forward"
    )
    p = parse_args("aten::_flash_attention_forward", args)
    assert p.config == bf16(
        batch=16,
        heads_q=16,
        heads_kv=16,
        seq_q=559,
        seq_kv=559,
        head_dim_qk=64,
        head_dim_v=64,
        mask=CAUSAL_BR,
    )
    assert p.layout is Layout.BNHD


def test_trace_microbench_d192(traces_dir):
    # sdpa_02: aten::_scaled_dot_product_flash_attention [1, 8, 65536, 192]; scale 0.0721…, non-causal
    args = cpu_op(
        traces_dir / "mi300x-microbench" / "sdpa_02_very_long_seq_head_waste.json.gz",
        "aten::_scaled_dot_product_flash_attention",
    )
    p = parse_args("aten::_scaled_dot_product_flash_attention", args)
    assert p.config == bf16(
        batch=1, heads_q=8, heads_kv=8, seq_q=65536, seq_kv=65536, head_dim_qk=192, head_dim_v=192
    )


def test_trace_flash_attn_forward_custom_op(traces_dir):
    # flash_attn::_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left,
    #   window_size_right, softcap, alibi_slopes, return_softmax):
    # ['', '', '', '0.0', '0.088…', 'False', '-1', '-1', '0.0', '', 'False']
    args = cpu_op(
        traces_dir / "synthetic" / "flash_attn_fwd_bwd_gqa_noncausal.json.gz",
        "flash_attn::_flash_attn_forward",
    )
    p = parse_args("flash_attn::_flash_attn_forward", args)
    assert p.config == bf16(
        batch=2, heads_q=32, heads_kv=8, seq_q=4096, seq_kv=4096, head_dim_qk=128, head_dim_v=128
    )


def test_trace_flash_attn_backward_and_node(traces_dir):
    path = traces_dir / "synthetic" / "flash_attn_fwd_bwd_gqa_noncausal.json.gz"
    bwd = parse_args("flash_attn::_flash_attn_backward", cpu_op(path, "flash_attn::_flash_attn_backward"))
    assert bwd.config is not None and bwd.config.mask == NONE and bwd.config.direction is Direction.BWD
    # the FlashAttnFuncBackward node carries only Sequence number / Fwd thread id: needs perf_params
    node = parse_args("FlashAttnFuncBackward", cpu_op(path, "FlashAttnFuncBackward"))
    assert node.config is None and "autograd backward node" in node.reason


def test_trace_aiter_forward_without_concrete_inputs(traces_dir):
    # test03 trace1: aiter::_flash_attn_forward args hold only Input Dims / Input type (no Concrete Inputs)
    args = cpu_op(
        traces_dir / "mi300x-microbench" / "test03_attention_fused_vs_unfused_trace1.json.gz",
        "aiter::_flash_attn_forward",
    )
    assert "Concrete Inputs" not in args
    p = parse_args("aiter::_flash_attn_forward", args)
    assert p.config is None and "missing Concrete Inputs for causal flag" in p.reason
    # with a perf_params dict the same row is modeled, and says where the config came from
    pp = {
        "B": 8,
        "N_Q": 512,
        "H_Q": 16,
        "N_KV": 512,
        "H_KV": 16,
        "d_h_qk": 64,
        "d_h_v": 64,
        "dropout": 0.0,
        "causal": False,
        "dtype_A_B": ("c10::bfloat16", "c10::bfloat16"),
    }
    p2 = parse_args("aiter::_flash_attn_forward", args, pp)
    assert p2.source is Source.PERF_PARAMS
    assert p2.config == bf16(
        batch=8, heads_q=16, heads_kv=16, seq_q=512, seq_kv=512, head_dim_qk=64, head_dim_v=64
    )
    assert p2.warnings[0].startswith("config from perf_params: missing Concrete Inputs")


def test_trace_vllm_unified_attention_with_step_annotation(traces_dir):
    # b200 vLLM step: vllm::unified_attention_with_output(query, key, value, output, layer_name,
    #   output_scale, output_block_scale): query [888, 8, 64] Float8_e4m3fn, key/value [888, 1, 64] bf16,
    #   output [888, 8, 64] bf16. Step annotation execute_context_1(888_788544)_generation_0(0): one
    #   prefill request of 888 tokens (888^2 = 788544), no decode. -> B=1, Hq=8, Hkv=1, N=888, d=64,
    #   causal bottom-right, paged info with 888 query and 888 context tokens.
    path = traces_dir / "b200" / "vllm_eager_trace.json.gz"
    args = cpu_op(path, "vllm::unified_attention_with_output")
    steps = [
        e["name"]
        for e in _trace_events(str(path))
        if e.get("cat") == "user_annotation" and e["name"].startswith("execute_context")
    ]
    assert steps == ["execute_context_1(888_788544)_generation_0(0)"]
    stats = parse_vllm_annotation(steps[0])
    assert stats == {
        "num_ctx_requests": 1,
        "c_sq": 888,
        "c_sk": 888,
        "c_sqsq": 788544,
        "c_sqsk": 788544,
        "num_gen_requests": 0,
        "g_sq": 0,
        "g_sk": 0,
    }
    p = parse_args("vllm::unified_attention_with_output", args, stats)
    assert p.reason is None, p.reason
    assert p.config == AttentionConfig(
        batch=1,
        heads_q=8,
        heads_kv=1,
        seq_q=888,
        seq_kv=888,
        head_dim_qk=64,
        head_dim_v=64,
        dtype_q="fp8_e4m3",
        dtype_k="bf16",
        dtype_v="bf16",
        dtype_o="bf16",
        mask=CAUSAL_BR,
        # Σq² = Σq·k = 888²: the pairs are exact, 888·889/2 per query head
        paged=PagedInfo(num_requests=1, sum_context_tokens=888, sum_query_tokens=888, sum_query_sq=788544,
                        sum_query_key=788544),
    )
    assert (p.attention_type, p.layout, p.family) == (AttentionType.PAGED, Layout.THD, "vllm")
    # without the step statistics the op says why it has no model
    bare = parse_args("vllm::unified_attention_with_output", args)
    assert bare.config is None and "context lengths" in bare.reason
