"""SageAttention 2's CUDA ops on SM80 (thu-ml/SageAttention csrc/qattn/pybind_sm80.cpp, STABLE_TORCH_LIBRARY
sageattention_qattn_sm80): int8 Q·Kᵀ, P·V on V's fp16, the layout an int argument (0 NHD, 1 HND), the causal flag an
int. Each config below is worked out by hand from the recorded arguments."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.config import MaskKind
from sdpa_analyzer.perf_models.registry import parse_op

OP = "sageattention_qattn_sm80::qk_int8_sv_f16_accum_f32_attn"
B, N, H, D = 2, 1024, 16, 128
SCALARS = ["Scalar"] * 5


def _row(layout: int, causal: int, extra: int = 0) -> tuple[list, list, list]:
    """query, key, value, output, query_scale, key_scale, [value_mean], tensor_layout, is_causal, qk_quant_gran,
    sm_scale, return_lse."""
    qkv = [B, N, H, D] if layout == 0 else [B, H, N, D]
    dims = [qkv, qkv, qkv, qkv, [B, H, 8], [B, H, 16]] + [[B, H, D]] * extra + [[]] * 5
    types = ["signed char", "signed char", "c10::Half", "c10::Half", "float", "float"] + ["float"] * extra + SCALARS
    conc = [""] * (6 + extra) + [str(layout), str(causal), "2", "0.08838834764831845", "0"]
    return dims, types, conc


@pytest.mark.parametrize(("layout", "causal", "extra"), [(0, 1, 0), (1, 1, 0), (0, 0, 0), (1, 0, 1)])
def test_sage2_sm80_op_is_modeled_with_int8_qk_and_fp16_pv(layout: int, causal: int, extra: int) -> None:
    name = OP if not extra else "sageattention_qattn_sm80::qk_int8_sv_f16_accum_f16_fuse_v_mean_attn"
    p = parse_op(name, *_row(layout, causal, extra))
    assert p.config is not None, p.reason
    c = p.config
    # NHD [2, 1024, 16, 128] and HND [2, 16, 1024, 128] are one call: B 2, 16 heads, 1024 rows, d 128
    assert (c.batch, c.heads_q, c.heads_kv, c.seq_q, c.seq_kv, c.head_dim_qk, c.head_dim_v) == (B, H, H, N, N, D, D)
    assert (c.compute_spec, c.compute_spec_pv, c.dtype_q, c.dtype_v) == ("matrix_int8", "matrix_fp16", "int8", "fp16")
    assert c.mask.kind is (MaskKind.CAUSAL if causal else MaskKind.NONE)


@pytest.mark.parametrize(("slot", "value", "why"), [(6, "2", "slot 6 (tensor_layout) is '2'"),
                                                    (7, "3", "slot 7 (is_causal) is '3'")])
def test_sage2_sm80_op_with_a_bad_flag_says_which(slot: int, value: str, why: str) -> None:
    # and no signature is inferred from the row's roles instead: they cannot tell NHD from HND
    dims, types, conc = _row(0, 1)
    conc[slot] = value
    p = parse_op(OP, dims, types, conc)
    assert p.config is None and why in str(p.reason)
