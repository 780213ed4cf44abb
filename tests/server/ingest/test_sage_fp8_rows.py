"""SageAttention 2's SM89 fp8 op recorded with its arguments (record_shapes on): a modeled row from the op, V read
transposed and padded, its kernel's time in the row, the FLOPs by hand."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd

from sdpa_analyzer.server.ingest.analyze import analyze_trace
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.scoring.category import score_category
from tests.server.ingest.test_attention_accounting import SAGE2_SM89, T


def test_sage2_fp8_op_recorded_with_its_arguments_is_modeled(tmp_path: Path) -> None:
    """sageattention_qattn_sm89::qk_int8_sv_f8_accum_f32_attn_inst_buf as sageattention/core.py calls it: HND
    (tensor_layout 1), causal, q/k [2, 24, 1000, 128] int8, V fp8 transposed and padded to [2, 24, 128, 1024]
    (ceil(1000 / 64) · 64). Modeled with 1000 keys (K's, not V's 1024): Σ_{i=1..1000} i = 500,500 pairs per head,
    2 · 2 · 24 · 500,500 · (128 + 128) = 12,300,288,000 FLOPs."""
    t = T()
    q = [2, 24, 1000, 128]
    t.op("sageattention_qattn_sm89::qk_int8_sv_f8_accum_f32_attn_inst_buf", 10, 50, **{
        "Input Dims": [q, q, [2, 24, 128, 1024], q, [2, 24, 32], [2, 24, 16], [], [], [], [], []],
        "Input type": ["signed char", "signed char", "c10::Float8_e4m3fn", "c10::Half", "float", "float"]
        + ["Scalar"] * 5,
        "Concrete Inputs": [""] * 6 + ["1", "1", "2", "0.08838834764831845", "0"]})
    t.launch(20, SAGE2_SM89, 200, 600)
    res = analyze_trace(t.write(tmp_path / "t.json"), tmp_path / "out")
    assert res.status == "OK" and res.unlinked.attention_kernels_outside_rows == 0
    f = pd.read_csv(tmp_path / "out/category_data/sdpa_fwd_ops.csv").iloc[0]
    assert bool(f["has_perf_model"]) and f["shape_source"] == "recorded inputs"
    assert f["Kernel Time (µs)_sum"] == 600.0
    params = ast.literal_eval(f["perf_params"])
    assert (params["B"], params["H_Q"], params["N_Q"], params["N_KV"], params["d_h_v"]) == (2, 24, 1000, 1000, 128)
    scored = score_category(DataRoots([tmp_path]), tmp_path / "out", "sdpa_fwd", None, "compulsory")
    assert scored.table is not None
    (row,) = scored.table.records.to_dict("records")
    assert row["flops_useful"] == 2 * 2 * 24 * (1000 * 1001 // 2) * 256 == 12_300_288_000
    assert row["compute_spec"] == "matrix_int8+matrix_fp8"
