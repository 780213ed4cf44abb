"""Every attention kernel's time is in a row or in the outside-every-op list: rows + outside = the attention kernels'
time, counted here by a pass of its own over the raw trace JSON with its own family test (not perf_models.kernels).

Then traces of the classes the shared ones lack, built here: a model's own autograd Function around FlashAttention-3
with record_shapes off (the 2024 release's kernel names), and a CUDA graph the model captured itself.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from tests.support import FA3_BWD_2024, TRACES, need

# --- an attention family test of this file's own --------------------------------------------------------------
# A kernel is an attention call's main kernel when its base name (namespace and template arguments dropped) names the
# attention computation; the helpers around it (split combines and reduces, dQ conversion, dO·O preprocess, KV-cache
# writes, index preparation) and Inductor's fused pointwise kernels are not.
_MAIN_WORDS = ("attn_fwd", "attn_bwd", "flash_fwd", "flash_bwd", "fmha", "paged_attention", "unified_attention",
               "flashattn", "sdpa", "compute_attn", "attention")
_HELPER_WORDS = ("combine", "reduce", "convert_dq", "dot_do_o", "preprocess", "postprocess", "reshape_and_cache",
                 "kv_indices", "quant", "triton_poi_fused", "triton_red_fused", "triton_per_fused")


def _base(name: str) -> str:
    s = name.strip()
    s = s[5:] if s.startswith("void ") else s
    s = s.split("(", 1)[0]
    depth, out = 0, []
    for ch in s:  # drop every <...> (nested), keep what is outside
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">"
    flat = "".join(out)
    # a CUTLASS-3 kernel object is named by its class, the first template argument of cutlass::device_kernel
    if flat.endswith("device_kernel"):
        inner = re.search(r"device_kernel<\s*([\w:]+)", s)
        inner2 = re.search(r"<\s*flash::(\w+)", s[inner.end():]) if inner else None
        flat = (inner2.group(1) if inner2 and "enable_sm" in inner.group(1) else inner.group(1)) if inner else flat
    return flat.rsplit("::", 1)[-1].lower()


def is_main_attention_kernel(name: str) -> bool:
    base = _base(name)
    return any(w in base for w in _MAIN_WORDS) and not any(w in base for w in _HELPER_WORDS)


def raw_attention_us(path: Path) -> float:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    return sum(max(float(e.get("dur", 0.0)), 0.0) for e in events
               if e.get("ph") == "X" and e.get("cat") == "kernel" and is_main_attention_kernel(e["name"]))


def rows_attention_us(out: Path) -> float:
    total = 0.0
    for csv in (out / "category_data").glob("*_ops.csv"):
        for cell in pd.read_csv(csv)["kernel_details_summary"].dropna():
            total += sum(k["total_duration_us"] for k in ast.literal_eval(cell) if is_main_attention_kernel(k["name"]))
    return total


def test_own_family_test_on_hand_picked_names() -> None:
    # the test's own classifier, checked on names by hand before it checks the tool
    assert is_main_attention_kernel("attn_fwd.kd") and is_main_attention_kernel("kernel_unified_attention_2d")
    assert is_main_attention_kernel("void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>"
                                    ", flash::CollectiveEpilogueBwd<3>, flash::SingleTileScheduler<> > >(P)")
    assert not is_main_attention_kernel("void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<x> >(P)")
    assert not is_main_attention_kernel("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, 128>(x)")
    assert not is_main_attention_kernel("void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128> >(p)")
    assert not is_main_attention_kernel("softmax_warp_forward<float, float, float, 4, true>")


SHARED_TRACES = sorted(p.relative_to(TRACES).as_posix() for p in TRACES.rglob("*.json.gz")) if TRACES.exists() else []


@pytest.mark.parametrize("rel", SHARED_TRACES or ["(../shared absent)"])
def test_rows_plus_outside_is_every_attention_kernel(rel: str, tmp_path: Path) -> None:
    path = need(TRACES / rel)
    res = analyze_trace(path, tmp_path / "out")
    expected = raw_attention_us(path)
    got = rows_attention_us(tmp_path / "out") + res.unlinked.attention_time_outside_rows_us
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-6)
    if expected > 0:  # NO_DATA only where no attention kernel ran (a capture trace has calls and no kernels)
        assert res.status == "OK"


# --- hand-made traces ---------------------------------------------------------------------------------------------


class T:
    """A tiny trace: ops nest by the times given; `launch` adds a runtime call + kernel with one correlation id."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 100

    def op(self, name: str, ts: float, dur: float, tid: int = 1, **args: object) -> None:
        self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
                            "args": dict(args)})

    def runtime(self, name: str, ts: float, tid: int = 1) -> int:
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": ts,
                            "dur": 2.0, "args": {"correlation": self.corr}})
        return self.corr

    def kernel(self, name: str, ts: float, dur: float, corr: int) -> None:
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                            "args": {"correlation": corr, "stream": 7, "device": 0}})

    def launch(self, ts: float, kernel: str, kts: float, kdur: float, tid: int = 1) -> None:
        self.kernel(kernel, kts, kdur, self.runtime("cudaLaunchKernel", ts, tid))

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"traceEvents": self.events,
                                    "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}))
        return path


# FlashAttention-3 as released in 2024 (deepseek-ai/profile-data prefill.json / train.json name these): the
# warp-specialized forward entry point and the backward's kernel class before the Sm90 suffix
FA3_FWD_2024 = (
    "void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, 128>, "
    "true, flash::SingleTileScheduler, flash::SeqLenTraits<true> >(flash::CollectiveMainloopFwd<"
    "Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, 128>, true, "
    "flash::SeqLenTraits<true> >::Params)"
)
FA3_PRE = ("void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<cute::tuple<cute::C<64>, cute::C<128>, "
           "cute::C<192> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false> >(P)")
FA3_POST = ("void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<cute::C<64>, "
            "cute::C<192> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, 256> >(P)")


def _autograd_fa3_trace(path: Path) -> Path:
    """A model's own autograd Function around FA3, recorded without record_shapes: no Input Dims anywhere. Forward
    4900 µs; backward preprocess 100 + main 17000 + dQ conversion 200 µs, back to back; a GEMM beside them."""
    t = T()
    t.op("ProfilerStep#1", 0, 40000)
    t.op("MLAAttentionFn", 10, 100, **{"Sequence number": 77})
    t.launch(20, FA3_FWD_2024, 200, 4900)
    t.op("aten::mm", 150, 20)
    t.launch(155, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel", 5200, 300)
    t.op("autograd::engine::evaluate_function: MLAAttentionFnBackward", 6000, 300, tid=2,
         **{"Sequence number": 77, "Fwd thread id": 1})
    t.op("MLAAttentionFnBackward", 6005, 290, tid=2, **{"Sequence number": 77, "Fwd thread id": 1})
    t.launch(6010, FA3_PRE, 6100, 100, tid=2)
    t.launch(6020, FA3_BWD_2024, 6200, 17000, tid=2)
    t.launch(6030, FA3_POST, 23200, 200, tid=2)
    return t.write(path)


def test_autograd_function_around_fa3_without_shapes(tmp_path: Path) -> None:
    res = analyze_trace(_autograd_fa3_trace(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    fwd = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv")
    bwd = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv")
    assert len(fwd) == 1 and len(bwd) == 1
    f, b = fwd.iloc[0], bwd.iloc[0]
    # the caller's name kept; made from the kernels; direction from the kernel family
    assert (f["name"], f["call_kind"], f["direction"]) == ("MLAAttentionFn", "kernel", "fwd")
    assert (b["name"], b["call_kind"], b["direction"]) == ("MLAAttentionFnBackward", "kernel", "bwd")
    assert b["linked_forward"] == "MLAAttentionFn"  # paired through Sequence number 77
    # times by hand: forward 4900; backward 100 + 17000 + 200 back to back = 17300, of which 17000 the main kernel
    assert f["Kernel Time (µs)_sum"] == pytest.approx(4900.0)
    assert b["Kernel Time (µs)_sum"] == pytest.approx(17300.0)
    assert b["attention_kernel_time_us_sum"] == pytest.approx(17000.0)
    # shapes: from the kernel names (head dim 192, V 128, bf16 in the 2024 traits); batch, heads, lengths unknown
    assert f["shape_source"] == "kernel names"
    hints = ast.literal_eval(f["kernel_shape_hints"])
    assert (hints["head_dim"], hints["head_dim_v"], hints["dtype"]) == (192, 128, "bf16")
    unknown = ast.literal_eval(f["shape_unknown"])
    assert {"B", "H_Q", "N_Q", "N_KV"} <= set(unknown) and "d_h_qk" not in unknown
    assert not bool(f["has_perf_model"])
    assert "MLAAttentionFn" in f["shape_advice"] and "record_shapes=True" in f["shape_advice"]
    assert any("docs/recording.md" in w and "MLAAttentionFn" in w for w in res.warnings)
    # the library is FA3's, never FA2's
    kernels = ast.literal_eval(f["kernel_details_summary"])
    assert kernels[0]["name"] == FA3_FWD_2024
    assert raw_attention_us(tmp_path / "t.json") == pytest.approx(4900.0 + 17000.0)
    assert rows_attention_us(tmp_path / "out") == pytest.approx(4900.0 + 17000.0)


def test_model_owned_cuda_graph_replay(tmp_path: Path) -> None:
    """torch.cuda.graph captured by the model, replayed: one cudaGraphLaunch, its kernels share the correlation.
    Two layers of FA2 split-KV (60 + 20 µs combine each) with a GEMM between."""
    t = T()
    t.op("ProfilerStep#1", 0, 2000)
    corr = t.runtime("cudaGraphLaunch", 10)
    splitkv = ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
               "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, "
               "false, false, true, true, false, false>(flash::Flash_fwd_params)")
    combine = ("void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
               "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 2, true>"
               "(flash::Flash_fwd_params)")
    ts = 100.0
    for _layer in range(2):
        t.kernel(splitkv, ts, 60, corr)
        t.kernel(combine, ts + 60, 20, corr)
        t.kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_kernel", ts + 80, 40, corr)
        ts += 200
    res = analyze_trace(t.write(tmp_path / "g.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    df = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv")
    assert len(df) == 1
    row = df.iloc[0]
    assert row["operation_count"] == 2 and row["call_kind"] == "graph"
    assert row["Kernel Time (µs)_sum"] == pytest.approx(2 * (60 + 20))  # each layer's main kernel + its combine
    assert row["shape_source"] == "kernel names" and ast.literal_eval(row["kernel_shape_hints"])["head_dim"] == 128
    # the advice fits a graph the model captured itself (no serving capture folder exists for it)
    assert "captures itself" in row["shape_advice"] and "record_shapes=True" in row["shape_advice"]
    assert rows_attention_us(tmp_path / "out") == pytest.approx(raw_attention_us(tmp_path / "g.json"))


def test_missing_input_dims_warning_names_the_recording(tmp_path: Path) -> None:
    """A known op recorded without record_shapes: the warning says what the kernel gave, what is missing, and names
    the recording recipe."""
    t = T()
    t.op("aten::scaled_dot_product_attention", 5, 100)
    t.op("aten::_scaled_dot_product_flash_attention", 10, 80)
    t.launch(20, "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
             "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >,"
             " false, true, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)", 100, 50)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    (warning,) = [w for w in res.warnings if "has no perf model" in w]
    assert "missing Input Dims" in warning and "record_shapes=True" in warning and "docs/recording.md" in warning
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert row["shape_source"] == "kernel names"
    # the kernel's template holds its causal flag: flash_fwd_kernel<Kernel_traits, Is_dropout=false, Is_causal=true, …>
    assert ast.literal_eval(row["kernel_shape_hints"])["causal"] is True
    assert ast.literal_eval(row["shape_unknown"]) == ["B", "H_Q", "H_KV", "N_Q", "N_KV"]


def test_backward_under_unknown_node_takes_the_linked_forwards_shapes(tmp_path: Path) -> None:
    """Forward through a known op with shapes (Sequence number 41); the backward launched by a model's own autograd
    node the registry does not know: the backward row is made from its kernels, paired through Sequence number 41,
    carries the forward's config and its own direction as its perf_params, and is modeled from them (in the ingest
    and when scoring re-reads the row by its op name)."""
    t = T()
    t.op("aten::_scaled_dot_product_flash_attention", 10, 80, **{"Sequence number": 41}, **{
        "Input Dims": [[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [], [], [], []],
        "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 4,
        "Input Strides": [[65536, 8192, 64, 1]] * 3 + [[]] * 4,
        "Concrete Inputs": ["", "", "", "0.", "True", "False", "0.125"]})
    t.launch(20, "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
             "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, "
             "false, true, true, false, false>(flash::Flash_fwd_params)", 200, 50)
    t.op("MyAttnBackward", 500, 100, tid=2, **{"Sequence number": 41, "Fwd thread id": 1})
    t.launch(510, "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, "
             "4, 4, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> >,"
             " true, false, false, false, false, true, false, false>(flash::Flash_bwd_params)", 600, 120, tid=2)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.unlinked.attention_kernels_outside_rows == 0
    fwd = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    bwd = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert (bwd["name"], bwd["call_kind"], bwd["linked_forward"]) == (
        "MyAttnBackward", "kernel", "aten::_scaled_dot_product_flash_attention")
    assert bool(bwd["has_perf_model"]) and bwd["shape_source"] == "linked forward"
    fp, bp = ast.literal_eval(fwd["perf_params"]), ast.literal_eval(bwd["perf_params"])
    for k in ("B", "N_Q", "H_Q", "N_KV", "H_KV", "d_h_qk", "d_h_v", "causal"):
        assert bp[k] == fp[k]
    assert (bp["B"], bp["H_Q"], bp["N_Q"], bp["d_h_qk"]) == (2, 8, 128, 64)
    assert (fp["direction"], bp["direction"]) == ("fwd", "bwd")
    assert bwd["Kernel Time (µs)_sum"] == pytest.approx(120.0)
    # scored by op name: the causal B2 H8 N128 d64 call keeps Σ_{i=1..128} i = 8256 pairs per head; the forward's
    # two GEMMs count 2·B·H·pairs·(64 + 64), the backward's five 2·B·H·pairs·(3·64 + 2·64): 2.5× the forward
    fwd_flops, bwd_flops = _scored_flops(tmp_path / "out", "sdpa_fwd"), _scored_flops(tmp_path / "out", "sdpa_bwd")
    pairs = sum(range(1, 129))
    assert fwd_flops == 2 * 2 * 8 * pairs * 128 == 33_816_576
    assert bwd_flops == 2 * 2 * 8 * pairs * 320 == 2.5 * fwd_flops


def _scored_flops(out: Path, category: str) -> float:
    """The FLOPs the scoring gives the category's one row (it re-reads the row by its op name and perf_params)."""
    scored = score_category(DataRoots([out.parent]), out, category, None, "compulsory")
    assert scored.table is not None
    (row,) = scored.table.records.to_dict("records")
    assert row["has_model"], row.get("no_model_reason")
    return float(row["flops_useful"])


def _fa3_forward_op(t: T, ts: float, dims: tuple[int, int, int, int, int, int]) -> None:
    """flash_attn_3::fwd recorded with its arguments (hopper/flash_api.cpp TORCH_LIBRARY: q, k, v, 20 optional
    tensors and ints, softmax_scale (23), is_causal (24), window_size_left/right, attention_chunk, softcap,
    is_rotary_interleaved, scheduler_metadata, num_splits, pack_gqa, sm_margin), causal."""
    b, n, hq, hkv, dqk, dv = dims
    t.op("flash_attn_3::fwd", ts, 50, **{
        "Input Dims": [[b, n, hq, dqk], [b, n, hkv, dqk], [b, n, hkv, dv]] + [[]] * 31,
        "Input type": ["c10::BFloat16"] * 3 + [""] * 20 + ["double", "bool", "Scalar", "Scalar", "Scalar", "double",
                                                           "bool", "", "Scalar", "", "Scalar"],
        "Concrete Inputs": [""] * 23 + ["0.072168783648703216", "True", "-1", "-1", "0", "0.0", "False", "", "1",
                                        "", "0"]})


def test_autograd_function_around_fa3_with_the_forward_recorded(tmp_path: Path) -> None:
    """The autograd Function around FA3 of test_autograd_function_around_fa3_without_shapes (forward 4900 µs,
    backward 100 + 17000 + 200 µs under MLAAttentionFnBackward, an autograd node no list knows), with the forward's
    FA3 op recorded with its arguments inside MLAAttentionFn (Sequence number 77): the backward row takes the
    forward's shapes through Sequence number 77 and is modeled from them. B2 N4096 H16 d 192/128 (the kernels'
    head dims), causal: the forward's GEMMs count 2·B·H·pairs·(192 + 128), the backward's five
    2·B·H·pairs·(3·192 + 2·128) = 2.6× (2.5× holds for equal head dims)."""
    t = T()
    t.op("ProfilerStep#1", 0, 40000)
    t.op("MLAAttentionFn", 10, 100, **{"Sequence number": 77})
    _fa3_forward_op(t, 15, (2, 4096, 16, 16, 192, 128))
    t.launch(20, FA3_FWD_2024, 200, 4900)
    t.op("autograd::engine::evaluate_function: MLAAttentionFnBackward", 6000, 300, tid=2,
         **{"Sequence number": 77, "Fwd thread id": 1})
    t.op("MLAAttentionFnBackward", 6005, 290, tid=2, **{"Sequence number": 77, "Fwd thread id": 1})
    t.launch(6010, FA3_PRE, 6100, 100, tid=2)
    t.launch(6020, FA3_BWD_2024, 6200, 17000, tid=2)
    t.launch(6030, FA3_POST, 23200, 200, tid=2)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    b = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert f["name"] == "flash_attn_3::fwd" and bool(f["has_perf_model"]) and f["shape_source"] == "recorded inputs"
    assert (b["name"], b["call_kind"], b["direction"], b["linked_forward"]) == (
        "MLAAttentionFnBackward", "kernel", "bwd", "flash_attn_3::fwd")
    assert bool(b["has_perf_model"]) and b["shape_source"] == "linked forward"
    assert pd.isna(b["shape_unknown"]) and pd.isna(b["shape_advice"])  # nothing stays unknown
    assert f["Kernel Time (µs)_sum"] == pytest.approx(4900.0) and b["Kernel Time (µs)_sum"] == pytest.approx(17300.0)
    pairs = 4096 * 4097 // 2  # causal, N_Q = N_KV = 4096
    fwd_flops, bwd_flops = _scored_flops(tmp_path / "out", "sdpa_fwd"), _scored_flops(tmp_path / "out", "sdpa_bwd")
    assert fwd_flops == 2 * 2 * 16 * pairs * (192 + 128) == 171_840_634_880
    assert bwd_flops == 2 * 2 * 16 * pairs * (3 * 192 + 2 * 128) == 446_785_650_688
    assert bwd_flops == pytest.approx(2.6 * fwd_flops)


def test_backward_under_unknown_node_with_a_malformed_forward_config_says_why(tmp_path: Path) -> None:
    """The forward's recorded config is read, but the backward's perf_params cell is edited to a malformed one (a
    zero batch, as a hand-edited or foreign folder might hold): scoring gives the one-line reason, never a crash."""
    test_backward_under_unknown_node_takes_the_linked_forwards_shapes(tmp_path)
    csv = tmp_path / "out/category_data/sdpa_bwd_ops.csv"
    df = pd.read_csv(csv)
    params = ast.literal_eval(df.loc[0, "perf_params"])
    df.loc[0, "perf_params"] = repr({**params, "B": 0})
    df.to_csv(csv, index=False)
    scored = score_category(DataRoots([tmp_path]), tmp_path / "out", "sdpa_bwd", None, "compulsory")
    assert scored.table is not None
    (row,) = scored.table.records.to_dict("records")
    assert not row["has_model"]
    reason = str(row["no_model_reason"])
    assert reason.startswith("unknown op 'MyAttnBackward'") and "B=0 is not a positive integer" in reason
    assert "\n" not in reason


def test_forward_and_backward_back_to_back_under_one_caller_are_two_calls(tmp_path: Path) -> None:
    """A compiled region (one unknown op) runs FA3's forward then its backward with nothing between: two calls, one
    per direction, each with its own time (4900 and 17000 µs)."""
    t = T()
    t.op("CompiledFunction", 10, 200)
    t.launch(20, FA3_FWD_2024, 200, 4900)
    t.launch(30, FA3_BWD_2024, 5100, 17000)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    fwd = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    bwd = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert (fwd["name"], bwd["name"]) == ("CompiledFunction", "CompiledFunction")
    assert fwd["Kernel Time (µs)_sum"] == pytest.approx(4900.0)
    assert bwd["Kernel Time (µs)_sum"] == pytest.approx(17000.0)
    assert res.unlinked.attention_kernels_outside_rows == 0


# Every shared trace whose attention kernels carry launch grids and whose shapes are recorded. The FA2 and AOTriton
# layouts were written from their launch code; these traces' grids were listed while surveying the families, their
# recorded shapes compared only here (the layouts' held-out names are in tests/perf_models/test_kernel_grids.py).
GRID_TRACES = ["h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "h100/Falconsai_nsfw_image_detection__1016002.json.gz",
               "h100/gaunernst_bert-small-uncased__1016001.json.gz",
               "mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
               "mi300/gaunernst_bert-small-uncased__1016001.json.gz"]


@pytest.mark.parametrize("rel", GRID_TRACES)
def test_shapes_from_kernel_and_grid_agree_with_the_recorded_ones(rel: str, tmp_path: Path) -> None:
    """A real trace recorded with shapes, analyzed once as is and once with every op's arguments removed (as
    record_shapes=False would write it): what the kernel name and launch grid give must agree with the recorded
    shapes of the first analysis (Qwen (16, 16, 559, 64) causal, ViT (4, 12, 197, 64), BERT-small (1, 8, 141, 64)
    per ../shared/traces/README.md), and the row says the launch grid gave them."""
    path = need(TRACES / rel)
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            (e.get("args") or {}).pop(key, None)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc))
    analyze_trace(path, tmp_path / "full")
    analyze_trace(bare, tmp_path / "bare")
    full = pd.read_csv(tmp_path / "full/category_data/sdpa_fwd_ops.csv").iloc[0]
    row = pd.read_csv(tmp_path / "bare/category_data/sdpa_fwd_ops.csv").iloc[0]
    truth = ast.literal_eval(full["perf_params"])
    hints = ast.literal_eval(row["kernel_shape_hints"])
    assert row["shape_source"] == "kernel names and launch grid"
    # modeled (as a lower bound) only where the grid gives the length's range and the call is causal: see
    # test_bound_from_a_partial_shape_is_below_the_recorded_work
    assert bool(row["has_perf_model"]) == ("seq_q_range" in hints and hints.get("causal") is True)
    assert hints["heads_x_batch"] == truth["B"] * truth["H_Q"]
    checked = {"batch": "B", "heads_q": "H_Q", "head_dim": "d_h_qk", "causal": "causal"}
    for hint, field in checked.items():
        if hint in hints:
            assert hints[hint] == truth[field], (hint, hints[hint], truth[field])
    if "seq_q_range" in hints:
        lo, hi = hints["seq_q_range"]
        assert lo <= truth["N_Q"] <= hi
    unknown = ast.literal_eval(row["shape_unknown"])
    assert ("B" in unknown) == ("batch" not in hints) and "N_Q" in unknown
    if rel.startswith("h100/"):  # FA2: the grid gives batch and heads, the name the head dim, dtype and causal flag
        assert {"batch", "heads_q", "seq_q_range", "head_dim", "causal"} <= set(hints) and hints["dtype"] == "bf16"


@pytest.mark.parametrize("rel", ["h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                                 "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                                 "b200/vllm_eager_trace.json.gz"])
def test_real_trace_with_its_attention_ops_renamed(rel: str, tmp_path: Path) -> None:
    """A real trace whose attention ops are renamed to a custom op no list knows (a model's own wrapper): the same
    attention time is in rows made from the kernels, named after the custom op; nothing is NO_DATA."""
    path = need(TRACES / rel)
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    pattern = re.compile(r"attention|attn|sdpa", re.I)
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op" and pattern.search(str(e.get("name"))):
            e["name"] = "model::custom_op"
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(doc))
    res = analyze_trace(renamed, tmp_path / "out")
    assert res.status == "OK"
    got = rows_attention_us(tmp_path / "out") + res.unlinked.attention_time_outside_rows_us
    assert got == pytest.approx(raw_attention_us(path), rel=1e-9)
    for csv in (tmp_path / "out/category_data").glob("*_ops.csv"):
        df = pd.read_csv(csv)
        assert set(df["call_kind"]) == {"kernel"} and set(df["name"]) == {"model::custom_op"}


def test_renamed_serving_trace_keeps_its_category_and_time(tmp_path: Path) -> None:
    """A paged (serving) kernel under a custom op is an inference call, with the same kernel time as the known op's
    rows (b200 vLLM trace, attention ops renamed)."""
    path = need(TRACES / "b200/vllm_eager_trace.json.gz")
    analyze_trace(path, tmp_path / "known")
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op" and re.search(r"attention|attn", str(e.get("name")), re.I):
            e["name"] = "model::custom_op"
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(doc))
    analyze_trace(renamed, tmp_path / "out")
    known = pd.read_csv(tmp_path / "known/category_data/inferenceattention_ops.csv")
    made = pd.read_csv(tmp_path / "out/category_data/inferenceattention_ops.csv")
    assert made["Kernel Time (µs)_sum"].sum() == pytest.approx(known["Kernel Time (µs)_sum"].sum())
    # the KV-cache writes of the sibling `_C_cache_ops::reshape_and_cache_flash` ops join the calls made from the
    # kernels as they join the known op's calls (36 writes in this step), beside their kernel time
    assert int(known["kv_cache_write_count"].sum()) == 36
    assert int(made["kv_cache_write_count"].sum()) == 36
    assert made["kv_cache_write_us_sum"].sum() == pytest.approx(known["kv_cache_write_us_sum"].sum())


PAGED_V2 = ("void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
            "(vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*)")
KV_WRITE = ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>"
            "(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*)")


def test_kv_cache_writes_of_sibling_ops_join_calls_made_from_kernels(tmp_path: Path) -> None:
    """A model's own decode layer (an op no list knows) runs a paged kernel; its KV-cache writes run before it, once
    under the cache op (`_C_cache_ops::reshape_and_cache_flash`, layer 0) and once under another unknown op that
    launches the write kernel (layer 1). Each write (7 and 9 µs) goes to its layer's call as a KV-cache write, beside
    its kernel time (40 and 50 µs), never as time of its own."""
    t = T()
    t.op("ProfilerStep#1", 0, 2000)
    t.op("_C_cache_ops::reshape_and_cache_flash", 10, 20)
    t.launch(12, KV_WRITE, 100, 7)
    t.op("model::decode_attention", 40, 30)
    t.launch(45, PAGED_V2, 110, 40)
    t.op("model::write_cache", 80, 20)
    t.launch(82, KV_WRITE, 200, 9)
    t.op("model::decode_attention", 110, 30)
    t.launch(115, PAGED_V2, 210, 50)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    df = pd.read_csv(tmp_path / "out/category_data/inferenceattention_ops.csv")
    assert set(df["call_kind"]) == {"kernel"} and set(df["name"]) == {"model::decode_attention"}
    assert int(df["operation_count"].sum()) == 2
    assert df["Kernel Time (µs)_sum"].sum() == pytest.approx(40.0 + 50.0)
    assert int(df["kv_cache_write_count"].sum()) == 2
    assert df["kv_cache_write_us_sum"].sum() == pytest.approx(7.0 + 9.0)


def test_attention_kernel_without_a_launch_record_inside_the_window_is_a_call(tmp_path: Path) -> None:
    """The runtime record of one attention launch was lost (the kernel's correlation matches no launch) and no known
    op's call lost its kernels: the kernel is a call of its own, so the trace is not NO_DATA."""
    t = T()
    t.op("ProfilerStep#1", 0, 1000)
    t.op("aten::mm", 50, 20)
    t.launch(55, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_kernel", 100, 100)
    t.kernel("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
             "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, "
             "false, true, true, false, false>(flash::Flash_fwd_params)", 300, 50, corr=9999)
    t.op("aten::mm", 500, 20)
    t.launch(505, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_kernel", 600, 100)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert row["name"] == "(no CPU launch)::flash_fwd_kernel" and row["Kernel Time (µs)_sum"] == pytest.approx(50.0)


def test_launch_grids_are_read_strictly() -> None:
    # packed by hand: (5 << 32) | (16 << 16) | 16 = 21475885072; a zero, a y above CUDA's 65535 cap, a value beyond
    # int64 and a missing grid read as "no grid" (-1)
    from sdpa_analyzer.server.ingest.grids import pack_grid, pack_grids, unpack_grid

    grids = [(5, 16, 16), None, (0, 1, 1), (1, 65536, 1), (2**63 + 5, 1, 1)]
    assert pack_grids(grids).tolist() == [21475885072, -1, -1, -1, -1] == [pack_grid(g) for g in grids]
    assert unpack_grid(21475885072) == (5, 16, 16) and unpack_grid(-1) is None
    assert pack_grid([5, 16, True]) == -1 and pack_grid("5,16,16") == -1


def test_kernel_calls_of_other_launch_grids_are_other_rows(tmp_path: Path) -> None:
    """Two shapes through one custom op with no Input Dims: the FA2 grids (5, 16, 16) and (2, 4, 12) differ, so the
    calls are two rows, each with its own batch and heads."""
    t = T()
    kernel = ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
              "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, "
              "false, true, true, false, false>(flash::Flash_fwd_params)")
    for i, grid in enumerate([[5, 16, 16], [2, 4, 12], [5, 16, 16]]):
        t.op("model::custom_op", 10 + 100 * i, 50)
        t.launch(20 + 100 * i, kernel, 1000 + 100 * i, 40)
        t.events[-1]["args"]["grid"] = grid
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    df = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv")
    got = sorted((int(r["operation_count"]), ast.literal_eval(r["kernel_shape_hints"])["batch"],
                  ast.literal_eval(r["kernel_shape_hints"])["heads_q"]) for _, r in df.iterrows())
    assert got == [(1, 4, 12), (2, 16, 16)]


def test_forward_under_unknown_op_with_its_arguments_recorded_says_the_kernels_gave_its_shape(tmp_path: Path) -> None:
    """The autograd Function around FA3 recorded with record_shapes on: the Function's op carries Input Dims (its own
    q, k, v arguments), which no registry entry reads. The forward row is not modeled, so its shapes did not come
    from recorded inputs: the row says the kernel names gave them, what stays unknown, and why."""
    t = T()
    t.op("ProfilerStep#1", 0, 40000)
    t.op("MLAAttentionFn", 10, 100, **{"Sequence number": 77,
                                       "Input Dims": [[2, 4096, 16, 192], [2, 4096, 16, 192], [2, 4096, 16, 128]],
                                       "Input type": ["c10::BFloat16"] * 3})
    t.launch(20, FA3_FWD_2024, 200, 4900)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert (f["name"], f["call_kind"]) == ("MLAAttentionFn", "kernel") and not bool(f["has_perf_model"])
    assert f["shape_source"] == "kernel names"
    # compute_attn_ws<Ktraits, Is_causal=true, …>: d 192 / 128, bf16, causal from the template; B, H, N unknown
    hints = ast.literal_eval(f["kernel_shape_hints"])
    assert (hints["head_dim"], hints["head_dim_v"], hints["dtype"], hints["causal"]) == (192, 128, "bf16", True)
    assert ast.literal_eval(f["shape_unknown"]) == ["B", "H_Q", "H_KV", "N_Q", "N_KV"]
    assert "Input Dims the registry cannot read" in f["shape_advice"]


# FA3 2025 (hopper/flash_fwd_launch_template.h run_flash_fwd): on SM90 the single-tile scheduler runs only a split,
# non-varlen forward: SingleTileScheduler<Varlen=false, Split=true, PackGQA=false, kBlockM=128>, grid
# (num_blocks_m, num_splits * h, b); ClusterShape (1, 1, 1), TileShape_MNK (128, 128, 128), kHeadDimV 128, bf16,
# Is_causal true
FA3_FWD_2025_SPLIT = (
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<"
    "2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, "
    "cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, false, false, false, false, true, true, "
    "false, true, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, "
    "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, false, false, "
    "true, false>, flash::SingleTileScheduler<false, true, false, 128> > > >(flash::FlashAttnFwdSm90<...>::Params)"
)


def test_forward_under_unknown_op_says_the_launch_grid_gave_batch(tmp_path: Path) -> None:
    """A model's own Function around a split FA3 forward, record_shapes off, its launch grid recorded: B 2, 16 heads,
    4 splits, 1000 query rows -> grid (ceil(1000 / 128) = 8, 4 · 16 = 64, 2). The row names the launch grid as a
    source: batch 2, heads × splits 64, 897 <= N_Q <= 1024; H_Q stays unknown (only its product with the splits)."""
    t = T()
    t.op("MyAttnFn", 10, 100, **{"Sequence number": 5})
    t.launch(20, FA3_FWD_2025_SPLIT, 200, 300)
    t.events[-1]["args"]["grid"] = [8, 64, 2]
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert f["shape_source"] == "kernel names and launch grid"
    hints = ast.literal_eval(f["kernel_shape_hints"])
    assert (hints["batch"], hints["heads_x_splits"], hints["seq_q_range"]) == (2, 64, (897, 1024))
    assert (hints["head_dim"], hints["causal"]) == (128, True)
    assert ast.literal_eval(f["shape_unknown"]) == ["H_Q", "H_KV", "N_Q", "N_KV"]


def test_persistent_grid_says_why_it_gives_nothing(tmp_path: Path) -> None:
    """The same Function on FA3's persistent scheduler (its non-split forward on SM90): the grid is one CTA per SM
    (132 on an H100 SXM), so the row keeps its kernel-name source and its advice says the grid gave nothing, and why."""
    t = T()
    t.op("MyAttnFn", 10, 100)
    t.launch(20, FA3_FWD_2025_SPLIT.replace("flash::SingleTileScheduler<false, true, false, 128>",
                                            "flash::DynamicPersistentTileScheduler<256, 128, false, false, true>"),
             200, 300)
    t.events[-1]["args"]["grid"] = [132, 1, 1]
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert f["shape_source"] == "kernel names"
    assert "persistent scheduler" in ast.literal_eval(f["kernel_shape_hints"])["grid_says"]
    assert "the launch grid gives nothing" in f["shape_advice"] and "one CTA per SM" in f["shape_advice"]
    assert ast.literal_eval(f["shape_unknown"]) == ["B", "H_Q", "H_KV", "N_Q", "N_KV"]


# SageAttention 2 on SM89 (thu-ml/SageAttention csrc/qattn/qk_int_sv_f8_cuda_sm89.cuh, instantiated by
# sm89_qk_int8_sv_f8_accum_f32_attn_inst_buf.cu): qk_int_sv_f8_attn_kernel<CTA_Q 128, CTA_K 64, WARP_Q 32, WARP_K 64,
# head_dim 128, DataType::kInt8, per-warp Q/K granularity, float accum, inst_buf, half out, CUDA-core denominator,
# MaskMode::kCausal, …>, as a demangler prints its enums
SAGE2_SM89 = (
    "void qk_int_sv_f8_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)1, (QuantGranularity)2, (QuantGranularity)2, "
    "float, true, __half, (ComputeUnit)0, (MaskMode)1, false, false, false, false>(signed char*, signed char*, "
    "signed char*, __half*, float*, float*, float*, float*, float*, unsigned int, unsigned int, unsigned int, "
    "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
    "unsigned int, unsigned int, unsigned int, float)"
)


def test_sage_cuda_kernel_row_carries_its_quantized_dtypes_and_is_a_lower_bound(tmp_path: Path) -> None:
    """SageAttention 2's CUDA path called through an extension op no registry entry names
    (`sageattention::qk_int8_sv_f8_accum_f32_attn_inst_buf`), record_shapes off, B 2, 24 heads, 1000 query rows:
    grid(div_ceil(1000, 128) = 8, 24, 2). The row is made from the kernel (never lost), carries Q·Kᵀ int8 and P·V fp8
    beside the model's fp16, the causal mask and the grid's batch and heads, and is modeled as a lower bound at the
    range's low end, 897 (perf_models.ops.hinted), with the GEMM specs of SageAttention's registered ops:
    2 · 2 · 24 · (897 · 898 / 2) · (128 + 128) = 9,898,057,728 FLOPs, at most the call's 2 · 2 · 24 · 500,500 · 256."""
    t = T()
    t.op("sageattention::qk_int8_sv_f8_accum_f32_attn_inst_buf", 10, 50)
    t.launch(20, SAGE2_SM89, 200, 600)
    t.events[-1]["args"]["grid"] = [8, 24, 2]
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert f["call_kind"] == "kernel" and f["Kernel Time (µs)_sum"] == pytest.approx(600.0)
    hints = ast.literal_eval(f["kernel_shape_hints"])
    assert (hints["qk_dtype"], hints["pv_dtype"], hints["dtype"]) == ("int8", "fp8_e4m3", "fp16")
    assert (hints["head_dim"], hints["causal"], hints["batch"], hints["heads_q"]) == (128, True, 2, 24)
    assert hints["seq_q_range"] == (897, 1024)
    assert f["shape_source"] == "kernel names and launch grid" and bool(f["has_perf_model"])
    assert ast.literal_eval(f["shape_unknown"]) == ["H_KV", "N_Q", "N_KV"]
    assert "an op the registry does not know" in f["shape_advice"]
    scored = score_category(DataRoots([tmp_path]), tmp_path / "out", "sdpa_fwd", None, "compulsory")
    assert scored.table is not None
    (row,) = scored.table.records.to_dict("records")
    assert row["work_bound"] == "lower" and row["compute_spec"] == "matrix_int8+matrix_fp8"
    assert row["flops_useful"] == 2 * 2 * 24 * (897 * 898 // 2) * 256 == 9_898_057_728
    assert row["flops_useful"] <= 2 * 2 * 24 * (1000 * 1001 // 2) * 256


def test_sage_kernel_launched_outside_every_op_says_no_recording_gives_its_shapes(tmp_path: Path) -> None:
    """SageAttention's pybind releases (thu-ml/SageAttention csrc/qattn/pybind_sm89.cpp: PYBIND11_MODULE, no torch
    op) launch the kernel with no op around it: the call is made from the kernel, named after it, and its advice says
    why no recording gives the shapes (and does not send the user to record_shapes)."""
    t = T()
    t.op("aten::mm", 5, 10)
    t.launch(8, "sm89_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_kernel", 50, 20)
    t.launch(20, SAGE2_SM89, 200, 600)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert f["name"] == "(no op)::qk_int_sv_f8_attn_kernel" and f["shape_source"] == "kernel names"
    assert ast.literal_eval(f["kernel_shape_hints"])["qk_dtype"] == "int8"
    assert "pybind11 records no op" in f["shape_advice"] and "record_shapes" not in f["shape_advice"]


SAGE2_SM80 = ("void qk_int_sv_f16_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)1, (QuantGranularity)2, "
              "(QuantGranularity)2, float, __half, (ComputeUnit)1, (MaskMode)1, false, false>(signed char*)")


def test_sage2_op_recorded_with_its_arguments_is_modeled(tmp_path: Path) -> None:
    """SageAttention 2's SM80 op as its torch-op releases register it (sageattention_qattn_sm80::
    qk_int8_sv_f16_accum_f32_attn), recorded with record_shapes: NHD (tensor_layout 0), causal (is_causal 1), B 2,
    1024 rows, 16 heads, d 128, int8 Q/K and fp16 V. Modeled: Q·Kᵀ on int8, P·V on fp16, and the FLOPs by hand:
    Σ_{i=1..1024} i = 524,800 pairs per head, 2 · B · H · pairs · (128 + 128) = 8,598,323,200."""
    t = T()
    q = [2, 1024, 16, 128]
    t.op("sageattention_qattn_sm80::qk_int8_sv_f16_accum_f32_attn", 10, 50, **{
        "Input Dims": [q, q, q, q, [2, 16, 8], [2, 16, 16], [], [], [], [], []],
        "Input type": ["signed char", "signed char", "c10::Half", "c10::Half", "float", "float"] + ["Scalar"] * 5,
        "Concrete Inputs": [""] * 6 + ["0", "1", "2", "0.08838834764831845", "0"]})
    t.launch(20, SAGE2_SM80, 200, 600)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert bool(f["has_perf_model"]) and f["shape_source"] == "recorded inputs"
    params = ast.literal_eval(f["perf_params"])
    assert (params["B"], params["N_Q"], params["H_Q"], params["d_h_qk"], params["causal"]) == (2, 1024, 16, 128, True)
    assert _scored_flops(tmp_path / "out", "sdpa_fwd") == 2 * 2 * 16 * (1024 * 1025 // 2) * 256 == 8_598_323_200
