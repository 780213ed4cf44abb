"""What an attention kernel's name and template arguments say of its call's shape: head dim, dtypes, tiles, the
causal flag, per family, each reading with the source it is read from (the kernel's launch grid: kernel_grids).

Batch, heads and sequence lengths are never in a name; what a name holds is read here from the stable parts of each
family's templates (FA1/FA2/FA3 traits and flags, CUTLASS tile shapes, CK / cuDNN / TRT-LLM name fragments,
FlashInfer's KernelTraits, SageAttention 2's quantized kernels).
"""

from __future__ import annotations

import re

from sdpa_analyzer.perf_models.kernels import (
    CK_NAME_D,
    LIB_FA1,
    LIB_FA2,
    LIB_FA3,
    LIB_FA_PYTORCH,
    LIB_SAGE,
    KernelRole,
    classify_kernel,
    tile_sizes,
)

__all__ = ["kernel_shape_hints", "template_causal"]


# --- what a kernel name says of its call's shape ----------------------------------------------------------
# element types as the templates spell them (CUTLASS, CUDA, CK, cuDNN/TRT name fragments), checked in this order
_DTYPES = (
    ("fp8_e4m3", re.compile(r"float_e4m3|__nv_fp8_e4m3|[Ee]4[Mm]3|fp8e4m3|_fp8_")),
    ("fp8_e5m2", re.compile(r"float_e5m2|__nv_fp8_e5m2|[Ee]5[Mm]2")),
    ("bf16", re.compile(r"bfloat16|__nv_bfloat16|\bbf16|_bf16|Bfloat16|BFloat16")),
    ("fp16", re.compile(r"half_t|__half\b|\bhalf\b|_f16_|_fp16|fp16_|Fp16|\bf16")),
)
_FA_TRAITS_DV = re.compile(r"Flash_fwd_kernel_traits<\s*(\d+)\s*,(?:[^<>,]*,){7}\s*(\d+)\s*>")  # FA3 2024: kHeadDimV
_CAUSAL = re.compile(r"(?<![Nn]on)(?<![Nn]o_)(?<![Nn]o)[Cc]ausal")


def kernel_shape_hints(name: str) -> dict[str, object]:
    """What an attention kernel's own name says of its call: head_dim (and head_dim_v where it differs, or where the
    family takes one head dim for both: _ONE_HEAD_DIM), dtype
    (and a KV-cache dtype where the template names another), block_q / block_kv tiles, causal (where the template
    holds the flag: template_causal, FlashInfer's MaskMode; or the name states a causal mask). Batch, heads and
    sequence lengths are never in a name (a launch grid may give some: perf_models.kernel_grids)."""
    out: dict[str, object] = {}
    if classify_kernel(name)[0] is not KernelRole.ATTENTION:
        return out
    block_q, block_kv, head = tile_sizes(name)
    if head is not None:
        out["head_dim"] = head
    if (m := _FA_TRAITS_DV.search(name)) and int(m.group(2)) != int(m.group(1)):
        out["head_dim_v"] = int(m.group(2))
    elif (m := CK_NAME_D.search(name)) and m.group(2):
        out["head_dim_v"] = int(m.group(2))
    for dtype, pattern in _DTYPES:
        if pattern.search(name):
            out["dtype"] = dtype
            break
    if block_q is not None:
        out["block_q"] = block_q
    if block_kv is not None:
        out["block_kv"] = block_kv
    causal = template_causal(name)
    if causal is not None:
        out["causal"] = causal
    elif _CAUSAL.search(name):
        out["causal"] = True
    out.update(_flashinfer_traits(name))
    out.update(_sage_traits(name))
    if "head_dim" in out and "head_dim_v" not in out and classify_kernel(name)[2] in _ONE_HEAD_DIM:
        out["head_dim_v"] = out["head_dim"]
    return out


# families whose kernels take one head dim for Q·K and V (a single kHeadDim / head_dim template argument; FA1/FA2's
# flash_api.cpp checks V's head size against Q's): the name's head dim is V's too
_ONE_HEAD_DIM = frozenset((LIB_FA1, LIB_FA2, LIB_FA_PYTORCH, LIB_SAGE))


# SageAttention 2 (thu-ml/SageAttention csrc/qattn): int8 Q·Kᵀ, P·V on fp8 (`…_sv_f8_…`) or fp16 (`…_sv_f16_…`);
# the kernel's template: SM80/89 qk_int_sv_f8_cuda_sm89.cuh `qk_int_sv_f8_attn_kernel<CTA_Q, CTA_K, WARP_Q, WARP_K,
# head_dim, DTypeQK, Q_GRAN, K_GRAN, DTypeSVAccum, use_inst_buffer, DTypeOut, DenominatorAccumUnit, mask_mode, …>`;
# SM90 qk_int_sv_f8_cuda_sm90.cuh `qk_int8_sv_f8_attn_kernel<CTA_Q, CTA_K, NUM_THREADS, HEAD_DIM, Q_GRAN, K_GRAN,
# DTypeOut, mask_mode, …>`; SM80 `qk_int_sv_f16_attn_kernel<CTA_Q, CTA_K, WARP_Q, WARP_K, head_dim, …>`.
# (kernel, head-dim index, output-dtype index, mask-mode index); MaskMode 0 kNone, 1 kCausal
_SAGE_TEMPLATES: tuple[tuple[re.Pattern[str], int, int | None, int | None], ...] = (
    (re.compile(r"\bqk_int_sv_f8_attn_kernel<"), 4, 10, 12),
    (re.compile(r"\bqk_int8_sv_f8_attn_kernel<"), 3, 6, 7),
    (re.compile(r"\bqk_int_sv_f16_attn_kernel<"), 4, None, None),
)
_SAGE_PV = re.compile(r"qk_int8?_sv_f(8|16)")
_SAGE_MASK = re.compile(r"^(?:\(MaskMode\)\s*|MaskMode::k)(0|1|None|Causal)$")


def _sage_traits(name: str) -> dict[str, object]:
    """SageAttention's quantized GEMMs: Q·Kᵀ on int8, P·V on fp8 or fp16 (`qk_dtype`, `pv_dtype`), and the tiles,
    head dim, output dtype (the model's: `dtype`) and mask its template holds."""
    pv = _SAGE_PV.search(name)
    if pv is None or classify_kernel(name)[2] != LIB_SAGE:
        return {}
    out: dict[str, object] = {"qk_dtype": "int8", "pv_dtype": "fp8_e4m3" if pv.group(1) == "8" else "fp16"}
    for pattern, head_at, out_at, mask_at in _SAGE_TEMPLATES:
        if (m := pattern.search(name)) is None:
            continue
        args = _template_args(name, m.end() - 1)
        ints = [_UINT.match(a) for a in args[:2]] + [_UINT.match(args[head_at]) if head_at < len(args) else None]
        if all(ints):
            block_q, block_kv, head = (int(i.group(1)) for i in ints)  # type: ignore[union-attr]
            out.update(block_q=block_q, block_kv=block_kv, head_dim=head)
        dtype = _dtype_of(args[out_at]) if out_at is not None and out_at < len(args) else None
        if dtype:
            out["dtype"] = dtype
        mask = _SAGE_MASK.match(args[mask_at]) if mask_at is not None and mask_at < len(args) else None
        if mask:
            out["causal"] = mask.group(1) in ("1", "Causal")
        break
    return out


# FlashInfer's prefill kernels carry `flashinfer::KernelTraits<MASK_MODE, CTA_TILE_Q, NUM_MMA_Q, NUM_MMA_KV,
# NUM_MMA_D_QK, NUM_MMA_D_VO, NUM_WARPS_Q, NUM_WARPS_KV, POS_ENCODING_MODE, DTypeQ, DTypeKV, DTypeO, …>`
# (include/flashinfer/attention/prefill.cuh): HEAD_DIM_QK = NUM_MMA_D_QK · 16, HEAD_DIM_VO = NUM_MMA_D_VO · 16;
# MaskMode (include/flashinfer/attention/mask.cuh) 0 kNone, 1 kCausal, 2 kCustom, 3 kMultiItemScoring
_FLASHINFER_TRAITS = re.compile(r"flashinfer::KernelTraits<")
_MMA_K = 16
_UINT = re.compile(r"^(?:\(unsigned int\))?\s*(\d+)u?$")


def _dtype_of(arg: str) -> str | None:
    for dtype, pattern in _DTYPES:
        if pattern.search(arg):
            return dtype
    return None


def _flashinfer_traits(name: str) -> dict[str, object]:
    m = _FLASHINFER_TRAITS.search(name)
    if m is None:
        return {}
    args = _template_args(name, m.end() - 1)
    if len(args) < 11:
        return {}
    ints = [_UINT.match(a) for a in args[1:6]]
    mask = re.fullmatch(r"\(flashinfer::MaskMode\)\s*(\d+)", args[0])
    out: dict[str, object] = {}
    if all(ints):
        cta_q, _mma_q, _mma_kv, d_qk, d_vo = (int(i.group(1)) for i in ints)  # type: ignore[union-attr]
        out.update(block_q=cta_q, head_dim=d_qk * _MMA_K)
        if d_vo != d_qk:
            out["head_dim_v"] = d_vo * _MMA_K
    if mask and mask.group(1) in ("0", "1"):
        out["causal"] = mask.group(1) == "1"
    dq, dkv = _dtype_of(args[9]), _dtype_of(args[10])
    if dq:
        out["dtype"] = dq
    if dkv and dkv != dq:
        out["kv_cache_dtype"] = dkv
    return out


# Where a kernel's template arguments hold its causal flag (the kernel's template, the argument's position among its
# top-level arguments, or the first bool after the CUTLASS ArchTag), as the launch templates declare them:
# FA1 csrc/flash_attn/src/fmha_{fwd,bwd}_launch_template.h `fmha_fwd_loop_kernel<Kernel_traits, Is_dropout, Is_causal,
# …>`; FA2 flash_fwd_launch_template.h `flash_fwd_kernel<Kernel_traits, Is_dropout, Is_causal, …>`,
# `flash_fwd_splitkv_kernel<Kernel_traits, Is_causal, …>`, flash_bwd_launch_template.h
# `flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Kernel_traits, Is_dropout, Is_causal, …>` (PyTorch's vendored copy
# alike); FA3 2024 hopper/flash_fwd_kernel.h `compute_attn_ws<Ktraits, Is_causal, TileScheduler, Seqlen_traits>`;
# FA3 from autumn 2024 `CollectiveMainloop{Fwd,Bwd}[Sm90|Sm80]<…, ElementAccum, ArchTag, Is_causal, Is_local, …>`
_CAUSAL_ARG: tuple[tuple[str, re.Pattern[str], int | None], ...] = (
    (LIB_FA1, re.compile(r"\bfmha_(?:fwd|bwd)\w*loop\w*kernel<"), 2),
    (LIB_FA2, re.compile(r"\bflash_fwd_kernel<|\bflash_bwd_dq_dk_dv_loop\w*kernel<"), 2),
    (LIB_FA2, re.compile(r"\bflash_fwd_splitkv_kernel<"), 1),
    (LIB_FA3, re.compile(r"\bcompute_attn_ws<"), 1),
    (LIB_FA3, re.compile(r"\bCollectiveMainloop(?:Fwd|Bwd)\w*<"), None),  # the first bool after the ArchTag
)
_ARCH_TAG = re.compile(r"^cutlass::arch::Sm\d+$")


def _template_args(name: str, open_at: int) -> list[str]:
    """The top-level template arguments of the template whose '<' is at `open_at` (linear in the name)."""
    args, depth, begin = [], 0, open_at + 1
    for i in range(open_at, len(name)):
        ch = name[i]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                args.append(name[begin:i].strip())
                return args
        elif ch == "," and depth == 1:
            args.append(name[begin:i].strip())
            begin = i + 1
    return args


def template_causal(name: str) -> bool | None:
    """The causal flag an attention kernel's template arguments hold (FA1/FA2/FA3 and PyTorch's vendored FA2:
    _CAUSAL_ARG), None where its template holds none or the argument is not a bool."""
    library = classify_kernel(name)[2]
    library = LIB_FA2 if library == LIB_FA_PYTORCH else library
    for lib, pattern, index in _CAUSAL_ARG:
        if lib != library or (m := pattern.search(name)) is None:
            continue
        args = _template_args(name, m.end() - 1)
        if index is None:
            after = [i for i, a in enumerate(args) if _ARCH_TAG.match(a)]
            index = after[0] + 1 if after else len(args)
        value = args[index] if index < len(args) else None
        if value in ("true", "false"):
            return value == "true"
    return None
