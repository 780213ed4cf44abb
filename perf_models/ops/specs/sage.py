"""SageAttention (quantized attention: int8 Q·Kᵀ, fp8 or fp16 P·V) as xDiT runs it on ROCm.

aiter's Triton SageAttention v1 (ROCm/aiter aiter/ops/triton/... fav3_sage; "INT8 Q/K + FP8 V"): the host wrapper
quantizes with the `sage_quant_kernel` Triton kernel (per-block int8 Q and K, per-channel fp8 V) and then launches
`sage_fwd`, whose Q·Kᵀ runs on the int8 MFMA and P·V on the fp8 MFMA. Profiled with a shape recorder, the two
launches appear as `sage_quant_kernel_<n>` and `sage_fwd_<n>` cpu ops; the latter holds the kernel's arguments:

    @triton.jit sage_fwd(Q, K, V, bias, Q_Descale, K_Descale, V_Descale, stride_qsz, stride_qsh, stride_qsblk,
        stride_ksz, stride_ksh, stride_ksblk, stride_vsz, stride_vsh, LSE, Out, SD_MASK, ALIBI_SLOPES, ...)

with q / k / v [B, H, N, d] (HND). The causal flag is a Triton constexpr, not an argument: the row has no causal
slot and is modeled without a mask (DiT attention is bidirectional); a causal call would be over-counted 2×, which
the row's warning says. The quantization kernel is auxiliary time of the call (server.ingest attaches it).
"""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

SAGE = "sage"
_SAGE = "ROCm/aiter aiter/ops/triton (fav3_sage: @triton.jit sage_fwd)"

SPECS: list[OpSpec] = []

SPECS += op_specs(
    ("sage_fwd",),
    family=SAGE,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    numbered=True,
    compute_specs=("matrix_int8", "v"),
    note="no causal argument (a Triton constexpr): modeled without a mask",
    signatures=(
        Signature(
            "aiter Triton sage v1",
            "sage_fwd(Q, K, V, bias, Q_Descale, K_Descale, V_Descale, stride_qsz, stride_qsh, stride_qsblk, "
            "stride_ksz, stride_ksh, stride_ksblk, stride_vsz, stride_vsh, LSE, Out, ...)",
            _SAGE,
            (3, 200),
            q=0,
            k=1,
            v=2,
            out=16,
            dropout_required=False,
        ),
    ),
)

# SageAttention 2's CUDA ops on SM80 (thu-ml/SageAttention csrc/qattn/pybind_sm80.cpp, the releases that register
# torch ops: STABLE_TORCH_LIBRARY(sageattention_qattn_sm80, m); the pybind releases record no op at all):
#
#   qk_int8_sv_f16_accum_f32_attn(Tensor query, Tensor key, Tensor value, Tensor(a!) output, Tensor query_scale,
#       Tensor key_scale, int tensor_layout, int is_causal, int qk_quant_gran, float sm_scale, int return_lse)
#   (…_accum_f16_attn, …_accum_f16_attn_inst_buf alike; …_accum_f16_fuse_v_mean_attn adds Tensor value_mean
#   before tensor_layout)
#
# int8 Q and K (quantized by sageattention_fused's kernels before the call), P·V on V's own fp16/bf16; the layout is
# the `tensor_layout` argument (0 NHD, 1 HND) and the causal flag an int.
_SAGE2 = "thu-ml/SageAttention csrc/qattn/pybind_sm80.cpp (STABLE_TORCH_LIBRARY sageattention_qattn_sm80)"
_SAGE2_TEXT = ("qk_int8_sv_f16_accum_*_attn(query, key, value, output, query_scale, key_scale, [value_mean,] "
               "int tensor_layout, int is_causal, int qk_quant_gran, float sm_scale, int return_lse)")


def _sage2(extra: int, label: str = "SageAttention 2 SM80 ops", text: str = _SAGE2_TEXT, ref: str = _SAGE2,
           v_transposed: bool = False) -> Signature:  # fmt: skip
    """The signature with `extra` tensors (value_scale, value_mean) between key_scale and tensor_layout."""
    at = 6 + extra
    return Signature(
        f"{label}, {extra} fused V tensor(s)", text, ref, (11 + extra, 11 + extra),
        q=0, k=1, v=2, out=3, layout_int=at, causal=at + 1, causal_name="is_causal", causal_int=True, scale=at + 3,
        dropout_required=False, tensor_slots=tuple(range(4, at)), v_transposed=v_transposed,
    )


SPECS += op_specs(
    tuple(f"sageattention_qattn_sm80::qk_int8_sv_f16_{op}" for op in (
        "accum_f32_attn", "accum_f16_attn", "accum_f16_attn_inst_buf", "accum_f16_fuse_v_mean_attn")),
    family=SAGE,
    direction=FWD,
    layout=Layout.BHND,  # the row's `tensor_layout` decides (ops.build)
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    compute_specs=("matrix_int8", "v"),
    signatures=(_sage2(0), _sage2(1)),
)

# SageAttention 2's fp8 P·V ops on SM89 and SM90 (thu-ml/SageAttention csrc/qattn/attn_cuda_sm89.h, attn_cuda_sm90.h,
# registered as torch ops `sageattention_qattn_sm89::…` / `sageattention_qattn_sm90::…` in the releases that register
# them; the pybind releases, csrc/qattn/pybind_sm89.cpp PYBIND11_MODULE, record no op):
#
#   qk_int8_sv_f8_accum_f32_attn(Tensor query, Tensor key, Tensor value, Tensor output, Tensor query_scale,
#       Tensor key_scale, int tensor_layout, int is_causal, int qk_quant_gran, float sm_scale, int return_lse)
#   (…_accum_f32_attn_inst_buf, …_accum_f16_attn_inst_buf alike; …_fuse_v_scale_… add Tensor value_scale and
#   …_fuse_v_scale_fuse_v_mean_attn Tensor value_scale, Tensor value_mean before tensor_layout)
#
# Q and K int8 as on SM80, V fp8 and passed transposed and padded (sageattention/quant.py per_channel_fp8: HND
# [B, H_kv, d, N_pad], NHD [B, d, H_kv, N_pad], N_pad = ceil(N_kv / 64) · 64; the SM90 path of sageattention/core.py
# pads V to a multiple of 128 first): read with Signature.v_transposed, the key length from K.
_SAGE2_FP8 = ("thu-ml/SageAttention csrc/qattn/attn_cuda_sm89.h, attn_cuda_sm90.h; sageattention/quant.py "
              "per_channel_fp8 (V transposed, padded)")
_SAGE2_FP8_TEXT = ("qk_int8_sv_f8_accum_*_attn[_inst_buf](query, key, value (fp8, transposed, padded), output, "
                   "query_scale, key_scale, [value_scale, [value_mean,]] int tensor_layout, int is_causal, "
                   "int qk_quant_gran, float sm_scale, int return_lse)")
_SAGE2_FP8_OPS = {
    "sm89": ("accum_f32_attn", "accum_f32_fuse_v_scale_attn", "accum_f32_fuse_v_scale_fuse_v_mean_attn",
             "accum_f32_attn_inst_buf", "accum_f16_attn_inst_buf", "accum_f32_fuse_v_scale_attn_inst_buf",
             "accum_f16_fuse_v_scale_attn_inst_buf"),
    "sm90": ("accum_f32_attn_inst_buf", "accum_f32_fuse_v_scale_attn_inst_buf"),
}

SPECS += op_specs(
    tuple(f"sageattention_qattn_{arch}::qk_int8_sv_f8_{op}" for arch, ops in _SAGE2_FP8_OPS.items() for op in ops),
    family=SAGE,
    direction=FWD,
    layout=Layout.BHND,  # the row's `tensor_layout` decides (ops.build)
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    compute_specs=("matrix_int8", "v"),
    signatures=tuple(_sage2(extra, "SageAttention 2 SM89/SM90 fp8 ops", _SAGE2_FP8_TEXT, _SAGE2_FP8, True)
                     for extra in (0, 1, 2)),
)
