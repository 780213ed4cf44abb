"""No bound from a partial shape, fixed: a call whose kernel name and launch grid give batch, heads, head dim, dtype and
the causal flag but the sequence length only as a range (its grid's tiles × its name's tile) is modeled at the range's
low end as a lower bound (work_bound 'lower', the reason, the fields it assumed), or stays unmodeled with the reason.

Every FLOP count here is computed by hand from the shapes (forward 4 · B · H · d · pairs for d_qk = d_v = d; the
backward 2 · B · H · pairs · (3 d_qk + 2 d_v), 2.5× the forward; causal pairs N(N + 1) / 2 per head), never read back
from the model.
"""

from __future__ import annotations

import ast
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from tests.server.ingest.test_attention_accounting import FA3_FWD_2024, T
from tests.support import FA3_BWD_2024, TRACES, need


def _scored(out: Path, category: str) -> dict[str, Any]:
    scored = score_category(DataRoots([out.parent]), out, category, None, "compulsory")
    assert scored.table is not None
    (row,) = scored.table.records.to_dict("records")
    return row


def _strip(path: Path, to: Path) -> Path:
    """The trace as record_shapes=False writes it: no op arguments."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            (e.get("args") or {}).pop(key, None)
    to.write_text(json.dumps(doc))
    return to


def _causal_pairs(n: int) -> int:
    return n * (n + 1) // 2


def test_bound_from_a_partial_shape_is_below_the_recorded_work_within_one_tile(tmp_path: Path) -> None:
    """Qwen1.5-0.5B on H100 (PyTorch's FA2 under aten::_scaled_dot_product_flash_attention, causal), recorded with
    shapes and stripped of them: the grid (5, 16, 16) and the name's 128-row tile put N in [513, 640]. The stripped
    row is modeled at 513: FLOPs 4 · 16 · 16 · 64 · 513 · 514 / 2 = 8,640,331,776, at most the recorded shapes'
    4 · 16 · 16 · 64 · 559 · 560 / 2 = 10,257,694,720 and above what a length one tile shorter (559 - 128) would do."""
    path = need(TRACES / "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    analyze_trace(path, tmp_path / "full")
    analyze_trace(_strip(path, tmp_path / "bare.json"), tmp_path / "bare")
    truth = ast.literal_eval(pd.read_csv(tmp_path / "full/category_data/sdpa_fwd_ops.csv").iloc[0]["perf_params"])
    b, h, d, n = truth["B"], truth["H_Q"], truth["d_h_qk"], truth["N_Q"]
    assert (b, h, d, n, truth["causal"]) == (16, 16, 64, 559, True)  # ../shared/traces/README.md
    tile = 128  # Flash_fwd_kernel_traits<64, 128, …>: kBlockM
    lo = (math.ceil(n / tile) - 1) * tile + 1
    true_flops = 4 * b * h * d * _causal_pairs(n)
    bound_flops = 4 * b * h * d * _causal_pairs(lo)
    assert (lo, true_flops, bound_flops) == (513, 10_257_694_720, 8_640_331_776)

    row = pd.read_csv(tmp_path / "bare/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert bool(row["has_perf_model"]) and row["shape_source"] == "kernel names and launch grid"
    assert ast.literal_eval(row["shape_unknown"]) == ["H_KV", "N_Q", "N_KV"]
    params = ast.literal_eval(row["perf_params"])
    assert (params["N_Q"], params["N_KV"], params["N_range"]) == (lo, lo, (513, 640))
    scored = _scored(tmp_path / "bare", "sdpa_fwd")
    assert scored["work_bound"] == "lower" and "known only as a range" in scored["work_bound_reason"]
    assert scored["flops_useful"] == bound_flops <= true_flops
    assert scored["flops_useful"] > 4 * b * h * d * _causal_pairs(n - tile)  # within one tile of the truth
    assert scored["flops_useful"] <= _scored(tmp_path / "full", "sdpa_fwd")["flops_useful"]
    assert scored["band_status"] == "none"  # a bound gets no band verdict


@pytest.mark.parametrize("rel", ["h100/Falconsai_nsfw_image_detection__1016002.json.gz",
                                 "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"])
def test_no_bound_where_the_kernel_gives_none_says_why(rel: str, tmp_path: Path) -> None:
    """A non-causal ViT on H100 (its keys' length is not in the grid: cross-attention would pass fewer) and AOTriton on
    MI300 (BLOCK_M is tuned per GPU, not in the name: tiles of no known size) stay unmodeled, and say why."""
    path = need(TRACES / rel)
    analyze_trace(_strip(path, tmp_path / "bare.json"), tmp_path / "bare")
    row = pd.read_csv(tmp_path / "bare/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert not bool(row["has_perf_model"])
    why = {"h100": "a non-causal call", "mi300": "no range of the sequence length"}[rel.split("/")[0]]
    assert "no lower bound from the kernel" in row["perf_model_reason"] and why in row["perf_model_reason"]
    scored = _scored(tmp_path / "bare", "sdpa_fwd")  # the scoring says the same, not the re-parse's generic reason
    assert scored["no_model_reason"] == row["perf_model_reason"]


# --- held out: kernels of families the rule was not written on, built into traces here ---------------------------

# FA3's 2024 release on a fixed-length call (hopper/seq_len.h SeqLenTraits<false>): compute_attn_ws<Ktraits,
# Is_causal=true, SingleTileScheduler, …>, grid {num_blocks_m, num_head, num_batch} (tile_scheduler.hpp); kBlockM 128,
# d_qk 192, d_v 128 (Flash_fwd_kernel_traits<192, 128, 128, …, 128>)
FA3_FWD_2024_FIXED = FA3_FWD_2024.replace("SeqLenTraits<true>", "SeqLenTraits<false>")


def test_held_out_fa3_forward_under_a_models_own_function_is_a_lower_bound(tmp_path: Path) -> None:
    """B 2, 16 heads, N 1000, causal: grid (ceil(1000 / 128) = 8, 16, 2), so N in [897, 1024]. Under a model's own
    Function (no Input Dims) the row is modeled at 897: 2 · 2 · 16 · (897 · 898 / 2) · (192 + 128) = 8,248,381,440
    FLOPs, at most the call's 2 · 2 · 16 · 500,500 · 320 = 10,250,240,000."""
    t = T()
    t.op("MyAttnFn", 10, 100)
    t.launch(20, FA3_FWD_2024_FIXED, 200, 300)
    t.events[-1]["args"]["grid"] = [8, 16, 2]
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert bool(row["has_perf_model"]) and row["shape_source"] == "kernel names and launch grid"
    scored = _scored(tmp_path / "out", "sdpa_fwd")
    assert scored["work_bound"] == "lower"
    assert scored["flops_useful"] == 2 * 2 * 16 * _causal_pairs(897) * 320 == 8_248_381_440
    assert scored["flops_useful"] <= 2 * 2 * 16 * _causal_pairs(1000) * 320 == 10_250_240_000


# FA2's backward (csrc/flash_attn/src/flash_bwd_launch_template.h run_flash_bwd_seqk_parallel: grid_n(num_n_block, b,
# h), kBlockN 128 of Flash_bwd_kernel_traits<128, 64, 128, …>; Is_causal the third template argument), the name of
# the shared synthetic trace's kernel with its causal flag set
FA2_BWD_CAUSAL = (
    "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, false, true, false, false, "
    "false, false, false, false>(Flash_bwd_params)"
)


def test_held_out_fa2_backward_is_bounded_by_the_backward_model(tmp_path: Path) -> None:
    """flash_attn's autograd backward node (FlashAttnFuncBackward, fixed length) with no forward recorded: B 2,
    32 heads, N 4000 keys, causal, d 128: grid (ceil(4000 / 128) = 32, 2, 32), N in [3969, 4096]. Modeled at 3969 by
    the backward model: 2 · 2 · 32 · (3969 · 3970 / 2) · (3 · 128 + 2 · 128) = 645,403,852,800 FLOPs, 2.5× the
    forward's, at most the call's 2 · 2 · 32 · 8,002,000 · 640 = 655,523,840,000."""
    t = T()
    t.op("FlashAttnFuncBackward", 10, 100)
    t.launch(20, FA2_BWD_CAUSAL, 200, 3000)
    t.events[-1]["args"]["grid"] = [32, 2, 32]
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert bool(row["has_perf_model"]), row["perf_model_reason"]
    scored = _scored(tmp_path / "out", "sdpa_bwd")
    assert scored["work_bound"] == "lower"
    forward = 4 * 2 * 32 * 128 * _causal_pairs(3969)
    assert scored["flops_useful"] == 2 * 2 * 32 * _causal_pairs(3969) * 640 == 2.5 * forward == 645_403_852_800
    assert scored["flops_useful"] <= 2 * 2 * 32 * _causal_pairs(4000) * 640


def test_fa2_under_an_unknown_op_may_be_varlen_so_no_bound(tmp_path: Path) -> None:
    """The same FA2 kernel under a model's own Function: FA2's names do not say varlen (a varlen call's grid counts
    the longest sequence's tiles), and no known fixed-length op is around it: unmodeled, and the reason says so."""
    t = T()
    t.op("MyAttnBackwardFn", 10, 100)
    t.launch(20, FA2_BWD_CAUSAL, 200, 3000)
    t.events[-1]["args"]["grid"] = [32, 2, 32]
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert not bool(row["has_perf_model"]) and "variable lengths" in row["perf_model_reason"]


def test_backward_linked_to_a_bound_forward_is_a_bound_too(tmp_path: Path) -> None:
    """The FA3 forward above under a model's own Function (Sequence number 5) and its backward under the Function's
    backward node (the same number): the backward takes the forward's bound config, in its own direction, and is a
    lower bound by the backward model: 2 · 2 · 16 · (897 · 898 / 2) · (3 · 192 + 2 · 128) = 21,445,791,744 FLOPs,
    at most the call's 2 · 2 · 16 · 500,500 · 832 = 26,650,624,000; it says which fields its forward assumed."""
    t = T()
    t.op("MyAttnFn", 10, 100, **{"Sequence number": 5})
    t.launch(20, FA3_FWD_2024_FIXED, 200, 300)
    t.events[-1]["args"]["grid"] = [8, 16, 2]
    t.op("MyAttnFnBackward", 600, 100, tid=2, **{"Sequence number": 5, "Fwd thread id": 1})
    t.launch(610, FA3_BWD_2024, 700, 900, tid=2)
    analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    row = pd.read_csv(tmp_path / "out/category_data/sdpa_bwd_ops.csv").iloc[0]
    assert bool(row["has_perf_model"]) and row["shape_source"] == "linked forward"
    assert ast.literal_eval(row["shape_unknown"]) == ["H_KV", "N_Q", "N_KV"]
    scored = _scored(tmp_path / "out", "sdpa_bwd")
    assert scored["work_bound"] == "lower"
    assert scored["flops_useful"] == 2 * 2 * 16 * _causal_pairs(897) * 832 == 21_445_791_744
    assert scored["flops_useful"] <= 2 * 2 * 16 * _causal_pairs(1000) * 832 == 26_650_624_000
