"""SageAttention 2's fp8 P·V ops on SM89 and SM90 (thu-ml/SageAttention csrc/qattn/attn_cuda_sm89.h, attn_cuda_sm90.h;
torch ops `sageattention_qattn_sm89::…`, `sageattention_qattn_sm90::…`): int8 Q and K in the layout the int argument
names, V fp8 passed transposed and padded (sageattention/quant.py per_channel_fp8: HND [B, H_kv, d, N_pad], NHD
[B, d, H_kv, N_pad], N_pad = ceil(N_kv / 64) · 64; the SM90 path pads to 128 first). The arguments below are the ones
sageattention/core.py builds for a CogVideoX-like call (B 2, 24 query heads over 8 KV heads, 4500 tokens, d 128); every
config and FLOP count is worked out by hand from them."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.config import MaskKind
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.registry import parse_op
from sdpa_analyzer.perf_models.table import ConfigTable

B, N, HQ, HKV, D = 2, 4500, 24, 8, 128
PAD64, PAD128 = 4544, 4608  # 4500 rounded up to 71 · 64 and to 36 · 128
SCALARS = ["Scalar"] * 5


def _row(layout: int, causal: int, n_pad: int, fused: int) -> tuple[list, list, list]:
    """query, key, value (fp8, transposed, padded), output, query_scale, key_scale, [value_scale, [value_mean]],
    tensor_layout, is_causal, qk_quant_gran, sm_scale, return_lse."""
    q, k = ([B, N, HQ, D], [B, N, HKV, D]) if layout == 0 else ([B, HQ, N, D], [B, HKV, N, D])
    v = [B, D, HKV, n_pad] if layout == 0 else [B, HKV, D, n_pad]
    dims = [q, k, v, q, [B, HQ, 284], [B, HKV, 36]] + [[B, HKV, D]] * fused + [[]] * 5
    types = (["signed char", "signed char", "c10::Float8_e4m3fn", "c10::BFloat16", "float", "float"]
             + ["float"] * fused + SCALARS)
    conc = [""] * (6 + fused) + [str(layout), str(causal), "2", "0.12751743074", "0"]
    return dims, types, conc


CASES = [  # (op, tensor_layout, is_causal, V's padded keys, fused V tensors)
    ("sageattention_qattn_sm89::qk_int8_sv_f8_accum_f32_attn", 1, 0, PAD64, 0),
    ("sageattention_qattn_sm89::qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf", 0, 1, PAD64, 1),
    ("sageattention_qattn_sm89::qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn", 1, 1, PAD64, 2),
    ("sageattention_qattn_sm90::qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", 1, 0, PAD128, 1),
    ("sageattention_qattn_sm90::qk_int8_sv_f8_accum_f32_attn_inst_buf", 0, 1, PAD128, 0),
]


@pytest.mark.parametrize(("op", "layout", "causal", "n_pad", "fused"), CASES)
def test_sage2_fp8_op_reads_the_transposed_padded_v(op: str, layout: int, causal: int, n_pad: int, fused: int) -> None:
    p = parse_op(op, *_row(layout, causal, n_pad, fused))
    assert p.config is not None, p.reason
    c = p.config
    # the key length is K's 4500, not V's padded axis (4544 / 4608); d_v and H_kv are read off V's transposed axes
    assert (c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_kv, c.head_dim_qk, c.head_dim_v) == (B, HQ, HKV, N, N, D, D)
    specs = ("matrix_int8", "matrix_fp8", "int8", "fp8_e4m3")
    assert (c.compute_spec, c.compute_spec_pv, c.dtype_q, c.dtype_v) == specs
    assert c.mask.kind is (MaskKind.CAUSAL if causal else MaskKind.NONE)
    # FLOPs by hand: 2 · B · Hq · pairs · (d_qk + d_v); pairs 4500² dense, 4500 · 4501 / 2 causal
    pairs = N * (N + 1) // 2 if causal else N * N
    flops = float(estimate_work(ConfigTable.from_configs([c])).flops_useful[0])
    assert flops == 2 * B * HQ * pairs * (D + D) == (497_664_000_000 if not causal else 248_887_296_000)


@pytest.mark.parametrize(("n_pad", "why"), [(4480, "v transposed"), (4672, "v transposed"), (4500, "v transposed")])
def test_sage2_fp8_op_with_v_not_padded_from_k_says_so(n_pad: int, why: str) -> None:
    """V's key axis shorter than K's keys, a whole 128 beyond them, or not a multiple of 64: not this layout."""
    p = parse_op(CASES[0][0], *_row(1, 0, n_pad, 0))
    assert p.config is None and why in str(p.reason)
