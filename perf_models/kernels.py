"""Kernel-name classification: which attention implementation ran, from which library, with what tiles.

Attribution comes from the DOMINANT attention kernel (longest total duration), never from whichever
kernel name appears first: a 4.5 µs FillFunctor launched before `attn_fwd` must not label the op
(docs/perf-model.md, pitfall 8). Auxiliary kernels (fills, memsets, copies, dQ conversion, the dO·O
preprocess, KV-cache writes) are recognised and kept out of the attribution, but reported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from sdpa_analyzer.perf_models.ops.types import AttentionType

__all__ = [
    "HELPERS_BEFORE_MAIN",
    "HelperKind",
    "KernelClass",
    "KernelInfo",
    "KernelRole",
    "KernelStage",
    "classify_kernel",
    "classify_kernels",
    "grid_shape_hints",
    "helper_kind",
    "is_auxiliary_kernel",
    "is_decode_kernel",
    "is_inductor_fused",
    "kernel_direction",
    "kernel_group_role",
    "kernel_kv_cache_dtype",
    "kernel_shape_hints",
    "kernel_stage",
    "kernel_vendor",
    "kernel_window_hint",
    "tile_sizes",
]


class KernelRole(StrEnum):
    ATTENTION = "attention"  # the fused attention compute
    AUXILIARY = "auxiliary"  # fill / memset / copy / dQ convert / dO·O preprocess / split combine
    KV_CACHE_WRITE = "reshape_and_cache"  # paged attention's cache write (a copy, never dominant)
    GEMM = "gemm"
    SOFTMAX = "softmax"
    OTHER = "other"


_AUX_ROLES = (KernelRole.AUXILIARY, KernelRole.KV_CACHE_WRITE)


class HelperKind(StrEnum):
    """What a helper kernel of one attention call does: the call is its main kernel plus these, never more calls.
    The kind says where the helper sits beside the main kernel, which is how a graph replay (no CPU op per call)
    attributes it."""

    QUANT = "quant"  # quantizes the call's inputs (SageAttention's sage_quant_kernel): before the main kernel
    PREPARE = "prepare"  # page indices, varlen metadata, dO·O preprocess, accumulator clears: before it
    KV_WRITE = "kv_write"  # the KV-cache write feeding the call: before it
    REDUCE = "reduce"  # split-KV combine / reduce, merge of partial states, dQ conversion: after it


HELPERS_BEFORE_MAIN = frozenset({HelperKind.QUANT, HelperKind.PREPARE, HelperKind.KV_WRITE})

LIB_FA_PYTORCH = "FlashAttention (PyTorch)"
LIB_FA1 = "FlashAttention-1"
LIB_FA2 = "FlashAttention-2"
LIB_FA3 = "FlashAttention-3"
LIB_FA4 = "FlashAttention-4 (CuTe DSL)"
LIB_CK = "CK / aiter"
LIB_TRITON = "Triton"
LIB_CUDNN = "cuDNN"
LIB_MEM_EFF = "xFormers/CUTLASS mem-efficient"
LIB_FLASHINFER = "FlashInfer"
LIB_TRTLLM = "TRT-LLM"
LIB_VLLM = "vLLM"
LIB_SAGE = "SageAttention"
LIB_FLASHMLA = "FlashMLA"
LIB_UNFUSED = "unfused (GEMM + softmax)"


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    role: KernelRole
    attention_type: AttentionType | None = None
    library: str | None = None
    paged_if: re.Pattern[str] | None = None  # this library's paged variants
    part_of_attention: bool = False  # a helper that belongs to the attention call (split-KV reduce, dO·O, ...)
    helper: HelperKind | None = None  # what that helper does (and so where it sits beside the main kernel)


def _r(
    pattern: str,
    role: KernelRole,
    atype: AttentionType | None = None,
    library: str | None = None,
    paged_if: str | None = None,
    part_of_attention: bool = False,
    helper: HelperKind | None = None,
) -> _Rule:
    return _Rule(re.compile(pattern), role, atype, library, re.compile(paged_if) if paged_if else None,
                 part_of_attention or helper is not None, helper)


A, X = KernelRole.ATTENTION, KernelRole.AUXILIARY
FLASH, MEFF, CUDNN, PAGED = (
    AttentionType.FLASH,
    AttentionType.MEMORY_EFFICIENT,
    AttentionType.CUDNN,
    AttentionType.PAGED,
)

# Inductor names a fused Triton kernel after every op it fused (`triton_poi_fused__to_copy_add_cat_fmha_v3_fwd_mul_0`
# is a RoPE/RMSNorm pointwise kernel next to attention, `triton_red_fused_..._softmax_...` a reduction): such a name
# lists its neighbours, not what it is, so no rule below may match inside it.
_INDUCTOR_FUSED = re.compile(r"^triton_(?:poi|red|per)_fused_")

# First match wins. Attention-specific helpers come first (a FA2 `flash_bwd_convert_dq_kernel` must not
# count as the attention compute); the generic fill/copy rules come after the attention rules, because
# attention kernels can carry words like "copy" in their template arguments.
_RULES: tuple[_Rule, ...] = (
    # attention helper kernels that run after the main kernel: split-KV combines and reduces (vLLM's Triton unified
    # attention 3D reduces its segments in `reduce_segments`; FlashMLA's `flash_fwd_mla_combine_kernel`, deepseek-ai/
    # FlashMLA csrc/smxx/decode/combine), merged partial states, the backward's dQ conversion
    _r(
        r"convert_dq|BwdPostprocess|splitkv_combine|FwdCombine|paged_attention_ll4mi_reduce|MergeStates|"
        r"merge_attn_states|^reduce_segments$|mla_combine",
        X,
        None,
        helper=HelperKind.REDUCE,
    ),
    # ... and before it: the backward's dO·O preprocess and accumulator clears, page-index and varlen metadata
    _r(
        r"dot_do_o|bwd_preprocess|BwdPreprocess|clear_dkvaccum|prepare_varlen|compute_dot_do_o|_copy_page_indices|"
        r"kv_indices|transformer_engine::fused_attn::\w+",
        X,
        None,
        helper=HelperKind.PREPARE,
    ),
    _r(r"reshape_and_cache|store_kvcache|concat_and_cache|set_kv_buffer", KernelRole.KV_CACHE_WRITE, PAGED,
       helper=HelperKind.KV_WRITE),
    # SageAttention (aiter's Triton v1 as xDiT runs it; thu-ml's CUDA kernels): int8 Q·Kᵀ, fp8/fp16 P·V. The
    # quantization kernel is a helper of the call, launched before it.
    _r(r"^sage_quant_kernel|^_?(?:per_block|per_warp|per_channel)_int8|quant_per_block_int8", X, None,
       helper=HelperKind.QUANT),
    # FlashMLA (DeepSeek's MLA decode: one latent KV head of 576, V its first 512 columns): before FA2's
    # `flash_fwd…kernel` rule, which its `flash_fwd_splitkv_mla_kernel` would match
    _r(r"flash_fwd_splitkv_mla\w*kernel|flash_fwd_\w*mla\w*kernel|\bflashmla\w*kernel", A, PAGED, LIB_FLASHMLA),
    # SageAttention's kernels: the Triton/CUDA v1-v2 names; v3 (Blackwell, FP4) reuses FA3's warp-specialized
    # `flash::compute_attn_ws` in namespace flash but passes the whole Flash_fwd_params first (thu-ml/SageAttention
    # sageattention3_blackwell/sageattn3/blackwell/kernel_ws.h; FA3's takes the mainloop params first) and FP4
    # operands (float_e2m1); v4 names its namespace flash::generated::SAGEATTN4_…: before the FA3 rule
    _r(
        r"^_?sage_fwd|^_?sage_attn|qk_int8_sv_f(?:8|16)|qk_int\w*_attn|[Ss]age[Aa]ttn\w*::|SAGEATTN|"
        r"compute_attn_ws\b.*\(\s*(?:flash::)?Flash_fwd_params\b|compute_attn_ws\b.*float_e2m1",
        A,
        FLASH,
        LIB_SAGE,
    ),
    # aiter / CK paged batch prefill (SGLang prefill): before FlashInfer's `Batch(Prefill|Decode)With…` rule
    _r(r"FmhaBatchPrefill", A, PAGED, LIB_CK),
    # aiter's ROCm paged attention (SGLang decode): the template of aiter's instantiation starts with an integer and
    # ends with ck_tile::ComposedAttention; vLLM's own copy (below) starts with the scalar type
    _r(r"paged_attention_ll4mi\w*<\s*\d|paged_attention_ll4mi\w*<.*ck_tile::ComposedAttention", A, PAGED, LIB_CK),
    # FlashAttention-3 (hopper/), by its structure rather than one release's spelling: a CUTLASS-3 kernel object
    # (`cutlass::device_kernel<flash::FlashAttn{Fwd,Bwd}[Sm90]<…>>`, the Sm90 suffix only from 2025 on), or the
    # warp-specialized entry point of the first releases (`flash::compute_attn_ws<Flash_fwd_kernel_traits<…>>`,
    # 2024: it carries FA2's traits name, so this rule comes before FA2's), or its CollectiveMainloop{Fwd,Bwd}
    _r(
        r"\bflash::(?:FlashAttn(?:Fwd|Bwd)\w*|compute_attn\w*_ws\b)|FlashAttn(?:Fwd|Bwd)Sm\d+|flash::enable_sm\d+|"
        r"\bflash::CollectiveMainloop(?:Fwd|Bwd)",
        A,
        FLASH,
        LIB_FA3,
    ),
    _r(r"FlashAttention(?:Forward|Backward)Sm\d+|flash_attn\w*cute", A, FLASH, LIB_FA4),
    # PyTorch's vendored FA2: void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<…
    _r(r"pytorch_flash::", A, FLASH, LIB_FA_PYTORCH),
    # FlashAttention-1 (flash-attn 0.x / 1.x, csrc/flash_attn/src/fmha_*): fmha_fwd_loop_kernel<FMHA_kernel_traits<…>>,
    # fmha_bwd_dq_dk_dv_loop_kernel<…>: before the CK `fmha_(fwd|bwd)` rule, which their names would match
    _r(r"FMHA_kernel_traits|\bfmha_(?:fwd|bwd|dgrad|fprop)\w*loop\w*kernel", A, FLASH,
       LIB_FA1),
    # Dao-AILab FA2: flash_fwd_kernel<Flash_fwd_kernel_traits<…>>, flash_bwd_dq_dk_dv_loop_seqk_parallel_…
    _r(
        r"\bflash_(?:fwd|bwd)\w*kernel|Flash_(?:fwd|bwd)_kernel_traits|\bflash_(?:fwd|bwd)_hdim\d+",
        A,
        FLASH,
        LIB_FA2,
    ),
    # PyTorch / xFormers memory-efficient (CUTLASS): fmha_cutlassF_bf16_aligned_64x128_rf_sm80
    _r(
        r"fmha_cutlass[FB]|PyTorchMemEffAttention|AttentionBackwardKernel<|AttentionKernel<|"
        r"efficient_attention|mem_efficient",
        A,
        MEFF,
        LIB_MEM_EFF,
    ),
    # TRT-LLM (also reached through FlashInfer's trtllm-gen backend): fmhaSm100aKernel_QkvE4m3…PagedKv…
    _r(
        r"fmhaSm\d+|fmha_v2_|xqa_kernel|\bmmha|masked_multihead_attention|trtllm\w*(?:fmha|attention)",
        A,
        FLASH,
        LIB_TRTLLM,
        paged_if=r"[Pp]aged|xqa|mmha|masked_multihead",
    ),
    # FlashInfer's own kernels
    _r(
        r"flashinfer::\w*(?:Prefill|Decode|Attention|MLA|POD)\w*Kernel|Batch(?:Prefill|Decode)With|"
        r"Single(?:Prefill|Decode)With",
        A,
        FLASH,
        LIB_FLASHINFER,
        paged_if=r"Paged|Batch(?:Prefill|Decode)",
    ),
    # cuDNN SDPA: cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_…
    _r(r"sdpa_sm\d+|native_sdpa|flash_[fb]prop|cudnn\w*(?:sdpa|mha|attention)", A, CUDNN, LIB_CUDNN),
    # vLLM / ROCm custom paged attention (CUDA paged_attention_v1/v2, ROCm ll4mi, Triton unified attention)
    _r(
        r"paged_attention_v[12]|paged_attention_ll4mi|kernel_paged_attention|kernel_unified_attention|"
        r"vllm::\w*paged_attention|unified_attention\w*kernel",
        A,
        PAGED,
        LIB_VLLM,
    ),
    _r(r"aiter\w*(?:paged_attention|pa_)|pa_ragged|pa_fwd", A, PAGED, LIB_CK),
    # CK tile / aiter: fmha_fwd_d128_bf16_batch_b128x128x32x128x32x128_…, ck_tile::FmhaFwdKernel<…>, asm v3
    _r(
        r"fmha_(?:fwd|bwd)|ck_tile::Fmha|Fmha(?:Fwd|Bwd)\w*Kernel|fmha_v3|aiter\w*fmha|_ZN5aiter\w*mha",
        A,
        FLASH,
        LIB_CK,
        paged_if=r"pagedkv|batch_prefill",
    ),
    # Triton: AOTriton on ROCm PyTorch (attn_fwd, attn_fwd.kd, bwd_kernel_dk_dv), tutorial/_attn_fwd kernels
    _r(
        r"^_?attn_(?:fwd|bwd)\w*(?:\.kd)?$|_attn_(?:fwd|bwd)|bwd_kernel_dk_dv|bwd_kernel_dq|"
        r"flash_attn_triton|triton\w*attention|attention_fwd_kernel|^_fwd_kernel$|context_attention_fwd",
        A,
        FLASH,
        LIB_TRITON,
    ),
    # generic helpers (after the attention rules on purpose)
    _r(r"FillFunctor|fill_kernel|\bfill_|[Mm]emset|[Mm]emcpy|[Cc]opy|zero_", X, None),
    # the pieces of unfused attention
    _r(r"[Ss]oft[Mm]ax", KernelRole.SOFTMAX, None),
    _r(r"gemm|Cijk_|nvjet|xmma|cutlass\w*tensorop|\bbmm|matmul|wgmma", KernelRole.GEMM, None),
)


# Name fragments only one vendor's software stack emits (CUDA libraries and CUTLASS templates; ROCm's CK, Tensile,
# aiter and hipBLASLt). Generic names (Triton kernels, at::native elementwise kernels) say nothing.
_NVIDIA_ONLY = re.compile(
    r"pytorch_flash::|cutlass|\bsm(?:80|86|89|90|100|120)_|xmma|nvjet|cudnn|cublas|fmhaSm\d|flash::enable_sm|"
    r"__nv_|flashinfer::|trtllm|FlashAttn\w*Sm\d+"
)
_AMD_ONLY = re.compile(
    r"ck_tile::|\bck::|Cijk_|aiter|hipblaslt|rocblas|__hip|miopen|MIOpen|paged_attention_ll4mi|_ZN5aiter"
)


def kernel_vendor(name: str) -> str | None:
    """'nvidia' or 'amd' when a kernel name can only come from that vendor's stack, else None."""
    nv, amd = bool(_NVIDIA_ONLY.search(name)), bool(_AMD_ONLY.search(name))
    if nv == amd:
        return None
    return "nvidia" if nv else "amd"


@dataclass(frozen=True, slots=True)
class KernelInfo:
    name: str
    role: KernelRole
    attention_type: AttentionType | None
    library: str | None
    count: int
    total_us: float | None


@dataclass(frozen=True, slots=True)
class KernelClass:
    """What the kernels of one op say. `library` is 'Unknown' when no attention kernel is recognised."""

    attention_type: AttentionType | None
    library: str
    dominant_kernel: str | None
    block_q: int | None = None
    block_kv: int | None = None
    head_dim: int | None = None
    is_unfused: bool = False
    kernels: tuple[KernelInfo, ...] = ()
    breakdown: dict[str, float] = field(default_factory=dict)  # % of kernel time per role
    attention_us: float | None = None
    auxiliary_us: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def tile_family(self) -> str | None:
        """The `perf_models.tiles` family of the dominant kernel (fa2/fa3/ck/triton), None if another: the tiled
        bytes of a row use its kernel's own default tiles."""
        return _TILE_FAMILY.get(self.library)


_TILE_FAMILY = {LIB_FA_PYTORCH: "fa2", LIB_FA2: "fa2", LIB_FA3: "fa3", LIB_CK: "ck", LIB_TRITON: "triton"}


def _rule_of(name: str) -> _Rule | None:
    if _INDUCTOR_FUSED.match(name):
        return None  # a fused Inductor kernel: never classified by the op names it lists
    for rule in _RULES:
        if rule.pattern.search(name):
            return rule
    return None


def classify_kernel(name: str) -> tuple[KernelRole, AttentionType | None, str | None]:
    """(role, attention type, library) of one kernel name, matched on the kernel's own name (an Inductor
    `triton_{poi,red,per}_fused_*` kernel is OTHER whatever ops its name lists)."""
    rule = _rule_of(name)
    if rule is None:
        return KernelRole.OTHER, None, None
    atype = rule.attention_type
    if rule.paged_if is not None and rule.paged_if.search(name):
        atype = AttentionType.PAGED
    return rule.role, atype, rule.library


def is_inductor_fused(name: str) -> bool:
    return bool(_INDUCTOR_FUSED.match(name))


def kernel_group_role(name: str) -> str:
    """'attention' | 'helper' | 'kv_cache' | 'other': what a kernel is when kernels are grouped into calls by name
    (graph replays, kernel breakdowns). 'attention' is a call's main kernel; 'helper' a kernel that belongs to the
    call of a main kernel beside it (split-KV reduce, dO·O preprocess, dQ convert, the SageAttention quantization:
    `helper_kind` says which, and on which side); 'kv_cache' the KV-cache write feeding it."""
    rule = _rule_of(name)
    if rule is None:
        return "other"
    if rule.role is KernelRole.KV_CACHE_WRITE:
        return "kv_cache"
    if rule.role is KernelRole.ATTENTION:
        return "attention"
    if rule.part_of_attention:
        return "helper"
    return "other"


def helper_kind(name: str) -> HelperKind | None:
    """What a helper kernel of an attention call does (quant, prepare, KV write, reduce), None for any other kernel
    (the main attention kernels, fills and copies, GEMMs, Inductor's fused kernels)."""
    rule = _rule_of(name)
    return rule.helper if rule is not None else None


class KernelStage(StrEnum):
    """Which part of an attention call a kernel is, from the stable parts of its name (whatever the release): the
    forward or backward main kernel, a split-KV forward, its combine, the backward's preprocess (dO·O, accumulator
    clears) or postprocess (dQ conversion), metadata preparation, the input quantization, the KV-cache write, or a
    paged decode kernel."""

    FORWARD = "forward"
    BACKWARD = "backward"
    SPLIT_KV = "split_kv"
    DECODE = "decode"
    COMBINE = "combine"
    PREPROCESS = "preprocess"
    POSTPROCESS = "postprocess"
    PREPARE = "prepare"
    QUANT = "quant"
    KV_WRITE = "kv_write"


# A backward kernel says so in its name or template arguments, whatever the library: bwd / Bwd / backward / bprop
# (cuDNN), the gradients it computes (dq_dk_dv, dk_dv, dkdv), xFormers' `cutlassB` (F is the forward)
_BACKWARD = re.compile(r"(?i:bwd|backward|bprop|dgrad)|d[qQ]_?d[kK]_?d[vV]|d[kK]_?d[vV]|cutlassB")
_SPLIT_KV = re.compile(r"(?i:split_?kv)|SplitKV|Split(?:Kv|KV)")
_POSTPROCESS = re.compile(r"(?i:convert_?dq|postprocess|dq_?accum)")
_PREPROCESS = re.compile(r"(?i:dot_?do_?o|preprocess|clear_dkvaccum)")


def kernel_stage(name: str) -> KernelStage | None:
    """The stage of an attention call one kernel runs (KernelStage), None for a kernel that is no part of attention
    (GEMMs, fills, softmax, Inductor's fused kernels)."""
    rule = _rule_of(name)
    if rule is None:
        return None
    if rule.role is KernelRole.KV_CACHE_WRITE:
        return KernelStage.KV_WRITE
    if rule.role is KernelRole.ATTENTION:
        if _BACKWARD.search(name):
            return KernelStage.BACKWARD
        if _DECODE.search(name):
            return KernelStage.DECODE
        return KernelStage.SPLIT_KV if _SPLIT_KV.search(name) else KernelStage.FORWARD
    if rule.helper is HelperKind.QUANT:
        return KernelStage.QUANT
    if rule.helper is HelperKind.REDUCE:
        return KernelStage.POSTPROCESS if _POSTPROCESS.search(name) else KernelStage.COMBINE
    if rule.helper is HelperKind.PREPARE:
        return KernelStage.PREPROCESS if _PREPROCESS.search(name) else KernelStage.PREPARE
    return None


def kernel_direction(name: str) -> str | None:
    """'bwd' for the kernels of an attention backward (main kernel, dO·O preprocess, dQ postprocess), 'fwd' for
    those of a forward (split-KV and decode kernels, combines, quantization, KV writes), None for a kernel that is
    no part of attention."""
    stage = kernel_stage(name)
    if stage is None:
        return None
    return "bwd" if stage in (KernelStage.BACKWARD, KernelStage.PREPROCESS, KernelStage.POSTPROCESS) else "fwd"


_DECODE = re.compile(r"paged_attention|[Dd]ecode|ll4mi|pa_ragged|pa_fwd|xqa_kernel|\bmmha|masked_multihead")


def is_decode_kernel(name: str) -> bool:
    """A kernel that streams a paged KV cache for one (or a few) query tokens per request."""
    return not _INDUCTOR_FUSED.match(name) and bool(_DECODE.search(name))


_SLIDING = re.compile(r"SlidingOrChunked|SlidingWindow|[Ss]liding_?[Ww]indow|_swa_|SWA(?:Kernel|Fwd)")
# TRT-LLM's fmha kernels spell their mask in the name (…PagedKvCausal…, …KvDense…, …KvSlidingOrChunkedCausal…)
_STATED_FULL = re.compile(r"^fmhaSm\d+\w*Kv(?:Causal|Dense)")


def kernel_window_hint(name: str) -> str | None:
    """'sliding' when an attention kernel's name says it runs a sliding-window (or chunked) mask: TRT-LLM's
    `fmhaSm100aKernel_…PagedKvSlidingOrChunkedCausal…`; 'full' when the name states a full mask instead (TRT-LLM's
    `…PagedKvCausal…` of the full layers); None when the name says neither (most kernels). The window size itself is
    never in the name."""
    if classify_kernel(name)[0] is not KernelRole.ATTENTION:
        return None
    if _SLIDING.search(name):
        return "sliding"
    return "full" if _STATED_FULL.search(name) else None


_KV_FP8 = re.compile(r"Fp8KVCacheDataType\)\s*([12])")


def kernel_kv_cache_dtype(name: str) -> str | None:
    """The KV cache dtype a kernel's template names: vLLM's and aiter's `(vllm::Fp8KVCacheDataType)1` (e4m3) or
    `2` (e5m2) in reshape_and_cache / paged-attention instantiations; None for `0` (kAuto: the cache has the
    model's dtype) or no such argument."""
    m = _KV_FP8.search(name)
    if m is None:
        return None
    return "fp8_e4m3" if m.group(1) == "1" else "fp8_e5m2"


def is_auxiliary_kernel(name: str) -> bool:
    """Fill, memset, copy, dQ conversion, dO·O preprocess, split-KV combine, KV-cache write kernels."""
    return classify_kernel(name)[0] in _AUX_ROLES


# --- tile sizes visible in template arguments / kernel names -------------------------------------------
_FA2_TRAITS = re.compile(r"Flash_(?:fwd|bwd)_kernel_traits<\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")
_CUTE_C = r"cute::C<\s*(?:\(int\))?\s*(\d+)\s*>"
_CUTE_TUPLE3 = re.compile(rf"cute::tuple<\s*{_CUTE_C}\s*,\s*{_CUTE_C}\s*,\s*{_CUTE_C}\s*>")
_CK_TILE = re.compile(
    r"TileFmhaShape<\s*ck_tile::sequence<\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*,\s*\d+\s*,\s*\d+\s*,"
    r"\s*(\d+)"
)
_CK_NAME_D = re.compile(r"fmha_(?:fwd|bwd)\w*?_d(\d+)(?:_(\d+))?_")
_CK_NAME_B = re.compile(r"_b(\d+)x(\d+)x\d+")
_CUDNN = re.compile(r"[fb]prop\w*?_(\d+)x(\d+)x(\d+)_")
_MEM_EFF = re.compile(r"fmha_cutlass[FB]\w*?_(\d+)x(\d+)_")
_TRT_HEAD = re.compile(r"(?<=[a-z0-9])H(\d+)(?=[A-Z])")
_TRT_TILE = re.compile(r"Q(\d+)Kv(\d+)")


def tile_sizes(name: str) -> tuple[int | None, int | None, int | None]:
    """(block_q, block_kv, head_dim) when the kernel name spells them out, else Nones."""
    if m := _FA2_TRAITS.search(name):
        return int(m.group(2)), int(m.group(3)), int(m.group(1))  # <kHeadDim, kBlockM, kBlockN, ...>
    if "CollectiveMainloop" in name:
        # FA3 mainloop<Stages, ClusterShape, TileShape_MNK, ...>: the second 3-tuple is (M, N, head dim)
        tuples = _CUTE_TUPLE3.findall(name[name.index("CollectiveMainloop") :])
        if len(tuples) >= 2:
            m_, n_, k_ = (int(x) for x in tuples[1])
            return m_, n_, k_
    if m := _CK_TILE.search(name):
        return int(m.group(1)), int(m.group(2)), int(m.group(3))  # sequence<bm0, bn0, bk0, bn1, bk1, bk0max>
    if m := _CK_NAME_D.search(name):
        head = int(m.group(1))
        b = _CK_NAME_B.search(name)
        return (int(b.group(1)), int(b.group(2)), head) if b else (None, None, head)
    if m := _CUDNN.search(name):
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    if m := _MEM_EFF.search(name):
        return int(m.group(1)), int(m.group(2)), None  # kQueriesPerBlock x kKeysPerBlock
    if name.startswith("fmhaSm"):
        head = _TRT_HEAD.search(name)
        tile = _TRT_TILE.search(name)
        return (
            int(tile.group(1)) if tile else None,
            int(tile.group(2)) if tile else None,
            int(head.group(1)) if head else None,
        )
    return None, None, None


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
    """What an attention kernel's own name says of its call: head_dim (and head_dim_v where it differs), dtype,
    block_q / block_kv tiles, causal (only where the name states a causal mask). Batch, heads and sequence lengths
    are never in a name: a call made from its kernels alone leaves them unknown."""
    out: dict[str, object] = {}
    if classify_kernel(name)[0] is not KernelRole.ATTENTION:
        return out
    block_q, block_kv, head = tile_sizes(name)
    if head is not None:
        out["head_dim"] = head
    if (m := _FA_TRAITS_DV.search(name)) and int(m.group(2)) != int(m.group(1)):
        out["head_dim_v"] = int(m.group(2))
    elif (m := _CK_NAME_D.search(name)) and m.group(2):
        out["head_dim_v"] = int(m.group(2))
    for dtype, pattern in _DTYPES:
        if pattern.search(name):
            out["dtype"] = dtype
            break
    if block_q is not None:
        out["block_q"] = block_q
    if block_kv is not None:
        out["block_kv"] = block_kv
    if _CAUSAL.search(name):
        out["causal"] = True
    return out


def grid_shape_hints(name: str, grid: tuple[int, int, int]) -> dict[str, object]:
    """What an attention kernel's launch grid says of its call, where the library's launch code fixes the grid's
    meaning. FlashAttention-2 (Dao-AILab csrc/flash_attn/src/flash_{fwd,bwd}_launch_template.h, and PyTorch's
    vendored copy): the forward launches grid(num_m_blocks, b, h), the seqk-parallel backward grid(num_n_blocks, b,
    h), so batch and query heads are exact and a sequence length is bounded by its tile count × the tile (block_q /
    block_kv from the traits). Other kernels (persistent FA3 schedulers, split-KV grids that fold splits into b·h,
    CK, cuDNN) give nothing here."""
    role, _atype, library = classify_kernel(name)
    if role is not KernelRole.ATTENTION or library not in (LIB_FA2, LIB_FA_PYTORCH):
        return {}
    x, y, z = grid
    block_q, block_kv, _head = tile_sizes(name)
    stage = kernel_stage(name)
    if stage is KernelStage.FORWARD:
        out: dict[str, object] = {"batch": y, "heads_q": z}
        if block_q:
            out["seq_q_range"] = ((x - 1) * block_q + 1, x * block_q)
        return out
    if stage is KernelStage.BACKWARD and "seqk_parallel" in name:
        out = {"batch": y, "heads_q": z}
        if block_kv:
            out["seq_kv_range"] = ((x - 1) * block_kv + 1, x * block_kv)
        return out
    return {}


# --- the op-level verdict ------------------------------------------------------------------------------


def classify_kernels(kernel_names: Sequence[str], durations: Sequence[float] | None = None) -> KernelClass:
    """Classify the kernels launched under one op; `durations` (µs, parallel to names) pick the dominant.

    Names may repeat (one entry per launch, or one per kernel summary row): they are grouped. Without
    durations the most frequent attention kernel is dominant, and a note says so.
    """
    names = [str(n) for n in kernel_names]
    if durations is not None and len(durations) != len(names):
        raise ValueError(f"durations has {len(durations)} entries for {len(names)} kernel names")
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for i, n in enumerate(names):
        counts[n] = counts.get(n, 0) + 1
        if durations is not None:
            d = float(durations[i])
            totals[n] = totals.get(n, 0.0) + (d if d == d else 0.0)  # NaN durations count as 0
    infos = []
    for n in counts:  # insertion order = first appearance
        role, atype, lib = classify_kernel(n)
        infos.append(
            KernelInfo(n, role, atype, lib, counts[n], totals.get(n) if durations is not None else None)
        )
    notes: list[str] = []

    def weight(k: KernelInfo) -> float:
        return k.total_us if k.total_us is not None else float(k.count)

    attention = [k for k in infos if k.role is KernelRole.ATTENTION]
    unfused = False
    if attention:
        dominant = max(attention, key=weight)  # max keeps the first of equal weights
        atype, library = dominant.attention_type, dominant.library or "Unknown"
        if library == LIB_TRITON and any(helper_kind(k.name) is HelperKind.QUANT for k in infos):
            # a generic Triton attention kernel (`_attn_fwd`) fed by int8 quantization kernels is SageAttention's
            # Triton path (thu-ml/SageAttention sageattention/triton: quant_per_block_int8 then _attn_fwd)
            library = LIB_SAGE
            notes.append("Triton attention kernel fed by int8 quantization kernels: SageAttention's Triton path")
        libs = {k.library for k in attention}
        if len(libs) > 1:
            notes.append(
                f"attention kernels from several libraries ({', '.join(sorted(map(str, libs)))}); "
                f"attributed to the dominant one"
            )
    else:
        gemms = [k for k in infos if k.role is KernelRole.GEMM]
        softmax = [k for k in infos if k.role is KernelRole.SOFTMAX]
        if gemms and softmax:
            unfused = True
            dominant = max(gemms + softmax, key=weight)
            atype, library = AttentionType.MATH, LIB_UNFUSED
        else:
            dominant, atype, library = None, None, "Unknown"
            if infos:
                notes.append(
                    "no attention kernel recognised among: " + ", ".join(k.name[:60] for k in infos[:4])
                )
    if durations is None and len(attention) > 1:
        notes.append("no kernel durations: dominant kernel chosen by launch count")
    block_q, block_kv, head_dim = (
        tile_sizes(dominant.name) if dominant and not unfused else (None, None, None)
    )
    breakdown: dict[str, float] = {}
    att_us = aux_us = None
    if durations is not None:
        total = sum(totals.values())
        by_role: dict[str, float] = {}
        for k in infos:
            by_role[k.role.value] = by_role.get(k.role.value, 0.0) + (k.total_us or 0.0)
        if total > 0:
            breakdown = {role: round(100.0 * us / total, 2) for role, us in by_role.items()}
        att_us = by_role.get(KernelRole.ATTENTION.value, 0.0)
        aux_us = sum(by_role.get(r.value, 0.0) for r in _AUX_ROLES)
    return KernelClass(
        attention_type=atype,
        library=library,
        dominant_kernel=dominant.name if dominant else None,
        block_q=block_q,
        block_kv=block_kv,
        head_dim=head_dim,
        is_unfused=unfused,
        kernels=tuple(infos),
        breakdown=breakdown,
        attention_us=att_us,
        auxiliary_us=aux_us,
        notes=tuple(notes),
    )
