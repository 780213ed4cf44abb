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
