"""perf_models.kernels: attention type and library from the dominant kernel; tiles from template args."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from sdpa_analyzer.perf_models.kernels import (
    HELPERS_BEFORE_MAIN,
    HelperKind,
    KernelRole,
    classify_kernel,
    classify_kernels,
    helper_kind,
    is_auxiliary_kernel,
    is_decode_kernel,
    kernel_group_role,
    kernel_kv_cache_dtype,
    kernel_window_hint,
    tile_sizes,
)
from sdpa_analyzer.perf_models.literals import parse_literal
from sdpa_analyzer.perf_models.ops.types import AttentionType

FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, std::array<char*, 1ul> >"
    "(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)"
)


def kernel_summary(folder: Path, cat: str = "sdpa_fwd") -> tuple[list[str], list[float]]:
    """(names, total durations) from the first row's kernel_details_summary cell."""
    df = pd.read_csv(folder / "category_data" / f"{cat}_ops.csv")
    kernels = parse_literal(df.iloc[0]["kernel_details_summary"])
    return [k["name"] for k in kernels], [k["total_duration_us"] for k in kernels]


def trace_kernels(path: Path) -> tuple[list[str], list[float]]:
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    ks = [e for e in events if e.get("cat") == "kernel"]
    return [e["name"] for e in ks], [float(e["dur"]) for e in ks]


# --- real rows -----------------------------------------------------------------------------------------


def test_fill_before_attn_fwd_does_not_win(analysis_folders_dir):
    # mi300 Qwen row: FillFunctor<int> (24 x, 107.5 µs) listed BEFORE attn_fwd (24 x, 3908.8 µs).
    # The reference tool labelled this op from the fill kernel (reference-pitfalls #8).
    names, durs = kernel_summary(analysis_folders_dir / "mi300_qwen1.5-0.5b")
    assert "FillFunctor" in names[0] and names[1] == "attn_fwd"
    kc = classify_kernels(names, durs)
    assert (kc.attention_type, kc.library, kc.dominant_kernel) == (AttentionType.FLASH, "Triton", "attn_fwd")
    # breakdown by hand: 3908.798 / (3908.798 + 107.545) = 97.32 %; 107.545 / 4016.343 = 2.68 %
    assert kc.breakdown == {"auxiliary": 2.68, "attention": 97.32}
    assert kc.attention_us == pytest.approx(3908.798) and kc.auxiliary_us == pytest.approx(107.545)


def test_pytorch_flash_on_h100_with_tiles(analysis_folders_dir):
    # void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, ...
    # traits <kHeadDim=64, kBlockM=128, kBlockN=128, kNWarps=4>
    names, durs = kernel_summary(analysis_folders_dir / "h100_qwen1.5-0.5b")
    kc = classify_kernels(names, durs)
    assert kc.library == "FlashAttention (PyTorch)" and kc.attention_type is AttentionType.FLASH
    assert (kc.block_q, kc.block_kv, kc.head_dim) == (128, 128, 64)


def test_flash_attn_backward_kernels(analysis_folders_dir):
    # convert_dq (120 µs) + dot_do_o (160 µs) + dq_dk_dv_loop_seqk_parallel (10400 µs), traits
    # Flash_bwd_kernel_traits<128, 64, 128, ...> = <kHeadDim, kBlockM, kBlockN>
    names, durs = kernel_summary(
        analysis_folders_dir / "synthetic_flash_attn_fwd_bwd_gqa_noncausal", "sdpa_bwd"
    )
    kc = classify_kernels(names, durs)
    assert kc.library == "FlashAttention-2"
    assert kc.dominant_kernel.startswith("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel")
    assert (kc.block_q, kc.block_kv, kc.head_dim) == (64, 128, 128)
    # 10400 / 10680 = 97.378 %; 280 / 10680 = 2.622 %
    assert kc.breakdown == {"auxiliary": 2.62, "attention": 97.38}
    roles = {k.name.split("<")[0]: k.role for k in kc.kernels}
    assert roles["void flash_bwd_convert_dq_kernel"] is KernelRole.AUXILIARY
    assert roles["void flash_bwd_dot_do_o_kernel"] is KernelRole.AUXILIARY


def test_flash_attn_forward_kernel_tiles(analysis_folders_dir):
    # void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, ...>>: d=128, Br=128, Bc=64
    names, durs = kernel_summary(analysis_folders_dir / "synthetic_flash_attn_fwd_bwd_gqa_noncausal")
    kc = classify_kernels(names, durs)
    assert (kc.library, kc.block_q, kc.block_kv, kc.head_dim) == ("FlashAttention-2", 128, 64, 128)


def test_microbench_attn_fwd_kd(analysis_folders_dir):
    names, durs = kernel_summary(analysis_folders_dir / "unit_sdpa_01_long_seq_low_eff")
    assert names == ["attn_fwd.kd"]
    assert classify_kernels(names, durs).library == "Triton"


def test_b200_vllm_trtllm_paged_kernels(traces_dir):
    # fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext:
    # TRT-LLM (trtllm-gen via FlashInfer), paged KV, head dim 64, tiles Q128 x Kv128; the
    # reshape_and_cache_flash kernel is the cache write, never the attribution.
    names, durs = trace_kernels(traces_dir / "b200" / "vllm_eager_trace.json.gz")
    keep = [i for i, n in enumerate(names) if "fmhaSm100" in n or "reshape_and_cache" in n]
    kc = classify_kernels([names[i] for i in keep], [durs[i] for i in keep])
    assert (kc.attention_type, kc.library) == (AttentionType.PAGED, "TRT-LLM")
    assert (kc.block_q, kc.block_kv, kc.head_dim) == (128, 128, 64)
    assert "reshape_and_cache" in kc.breakdown
    assert classify_kernel(next(n for n in names if "reshape_and_cache" in n))[0] is KernelRole.KV_CACHE_WRITE


def test_sglang_rocm_paged_attention(traces_dir):
    names, durs = trace_kernels(traces_dir / "inference" / "sglang_Qwen3-8B_decode.json.gz")
    keep = [i for i, n in enumerate(names) if "paged_attention" in n or "store_kvcache" in n]
    kc = classify_kernels([names[i] for i in keep], [durs[i] for i in keep])
    # aiter's instantiation (SGLang calls aiter's pa_ragged): paged_attention_ll4mi_QKV_mfma16_kernel<0, ...,
    # ck_tile::ComposedAttention<0u, false> >; vLLM's own copy starts its template with the scalar type
    assert kc.attention_type is AttentionType.PAGED and kc.library == "CK / aiter"
    assert kc.dominant_kernel.startswith("void paged_attention_ll4mi_QKV_mfma16_kernel")
    vllm_copy = ("void paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, "
                 "(vllm::Fp8KVCacheDataType)0>")
    assert classify_kernel(vllm_copy)[2] == "vLLM"
    assert is_auxiliary_kernel(next(n for n in names if "paged_attention_ll4mi_reduce" in n))


def test_unfused_attention_trace(traces_dir):
    # test02 trace1: volta_h16gemm tt + softmax_warp_forward + volta_h16gemm nt: GEMM + softmax + GEMM
    names, durs = trace_kernels(
        traces_dir / "mi300x-microbench" / "test02_attention_both_unfused_trace1.json.gz"
    )
    kc = classify_kernels(names, durs)
    assert kc.is_unfused and kc.attention_type is AttentionType.MATH
    assert kc.library == "unfused (GEMM + softmax)"
    assert (kc.block_q, kc.block_kv, kc.head_dim) == (None, None, None)


def test_test03_fused_kernel(traces_dir):
    names, durs = trace_kernels(
        traces_dir / "mi300x-microbench" / "test03_attention_fused_vs_unfused_trace1.json.gz"
    )
    kc = classify_kernels(names, durs)
    # flash_fwd_hdim64_bf16_sm80<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>
    assert (kc.library, kc.head_dim, kc.block_q, kc.block_kv) == ("FlashAttention-2", 64, 128, 128)


# --- names from other libraries (not in the shared traces; sources quoted) -------------------------------

# FA3, from sglang profiling reports (Dao-AILab hopper kernels, TileShape_MNK = (128, 80, 256) for d=256)
FA3_D256 = (
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
    "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
    "cute::tuple<cute::C<128>, cute::C<80>, cute::C<256> >, 256, cutlass::bfloat16_t, float, "
    "cutlass::arch::Sm90, false, false, false, true, true, false, false, true, true, true, true, false, "
    "cutlass::bfloat16_t, 1>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<256>, "
    "cute::C<80> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat"
    "16_t, cutlass::arch::Sm90, "
    "256, true, true, true, false, 1>, flash::VarlenDynamicPersistentTileScheduler<12"
    "8, 256, 128, false, true, "
    "true, true, true> > > >(...)"
)
FA3_INT_STYLE = (
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
    "flash::CollectiveMainloopFwdSm90"
    "<(int)2, cute::tuple<cute::C<(int)1>, cute::C<(int)1>, cute::C<(int)1>>, cute::tuple<cute::C<(int)128>, "
    "cute::C<(int)128>, cute::C<(int)128>>, (int)128, cutlass::half_t, float, cutlass::arch::Sm90>>>>"
)
# cuDNN SDPA kernels as named in H100 nsys / torch profiles (cudnn frontend generated kernels)
CUDNN_FWD = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"
CUDNN_BWD = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x1x1_kernel0_0"
# PyTorch memory-efficient (CUTLASS) kernel:
#  fmha_cutlassF_<dtype>_<align>_<kQueriesPerBlock>x<kKeysPerBlock>_…
MEM_EFF = (
    "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, "
    "cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)"
)
# CK tile forward kernel (aiter / composable_kernel example 01_fmha naming)
CK_FWD = (
    "fmha_fwd_d128_bf16_batch_b128x128x32x128x32x128_r4x1x1_r4x1x1_w32x32x16_w32x32x16_qr_async_vr_"
    "psddv_nlogits_nbias_nmask_lse_nskip_ndropout_nsquant"
)
FLASHINFER = (
    "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<...>, "
    "flashinfer::PagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(...)"
)


@pytest.mark.parametrize(
    ("name", "atype", "library", "tiles"),
    [
        (FA3_D256, AttentionType.FLASH, "FlashAttention-3", (128, 80, 256)),
        (FA3_INT_STYLE, AttentionType.FLASH, "FlashAttention-3", (128, 128, 128)),
        (CUDNN_FWD, AttentionType.CUDNN, "cuDNN", (64, 128, 128)),
        (CUDNN_BWD, AttentionType.CUDNN, "cuDNN", (64, 64, 128)),
        (MEM_EFF, AttentionType.MEMORY_EFFICIENT, "xFormers/CUTLASS mem-efficient", (64, 128, None)),
        (CK_FWD, AttentionType.FLASH, "CK / aiter", (128, 128, 128)),
        (FLASHINFER, AttentionType.PAGED, "FlashInfer", (None, None, None)),
        ("_attn_fwd", AttentionType.FLASH, "Triton", (None, None, None)),
        (
            "paged_attention_v2_kernel<__nv_bfloat16, 128, 16>",
            AttentionType.PAGED,
            "vLLM",
            (None, None, None),
        ),
    ],
)
def test_library_names(name, atype, library, tiles):
    kc = classify_kernels([name], [10.0])
    assert (kc.attention_type, kc.library, (kc.block_q, kc.block_kv, kc.head_dim)) == (atype, library, tiles)
    assert tile_sizes(name) == tiles


@pytest.mark.parametrize(
    "name",
    [
        FILL,
        "Memset (Device)",
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<a"
        "t::native::direct_copy_k"
        "ernel_cuda(at::TensorIteratorBase&)",
        "void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false>>",
        "void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2,"
        " 4, 2, false, false>>",
        "fmha_bwd_dot_do_o_d128_bf16_batch_o2",
        "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::F"
        "p8KVCacheDataType)1>",
        "bwd_preprocess",
    ],
)
def test_auxiliary_kernels(name):
    assert is_auxiliary_kernel(name)


@pytest.mark.parametrize(
    "name",
    [
        "attn_fwd",
        MEM_EFF,
        CUDNN_FWD,
        "softmax_warp_forward<float, float, float, 4, true>",
        "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16>",
    ],
)
def test_not_auxiliary(name):
    assert not is_auxiliary_kernel(name)


def test_dominant_by_duration_not_order():
    # a short FA2 kernel listed first, a long CK kernel second: the CK kernel is dominant
    fa2 = "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t>>"
    kc = classify_kernels([fa2, CK_FWD, CK_FWD], [5.0, 400.0, 410.0])
    assert kc.library == "CK / aiter" and kc.dominant_kernel == CK_FWD
    assert any("several libraries" in n for n in kc.notes)


def test_without_durations_counts_decide():
    kc = classify_kernels([FILL, "attn_fwd", "attn_fwd"])
    assert kc.library == "Triton" and kc.breakdown == {} and kc.attention_us is None


def test_nothing_recognised():
    kc = classify_kernels(["void at::native::vectorized_layer_norm_kernel<c10::BFloat16, float>"], [3.0])
    assert (kc.attention_type, kc.library, kc.dominant_kernel) == (None, "Unknown", None)
    assert kc.notes and "no attention kernel" in kc.notes[0]
    assert classify_kernels([]).library == "Unknown"


def test_cudnn_convolution_is_not_attention():
    # H100 ViT trace: cuDNN conv kernels contain 'cudnn' and 'fprop' but are not attention
    conv = (
        "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_"
        "256x64_32x4_nhwc_align8>"
        "(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)"
    )
    assert classify_kernel(conv)[0] is not KernelRole.ATTENTION


def test_quantize_kernel_mentioning_flashinfer_is_not_attention():
    # b200 trace: tensorrt_llm quantize kernel with a flashinfer:: template argument
    name = (
        "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, "
        "__nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, "
        "unsigned int*, flashinfer::QuantizationSFLayout)"
    )
    assert classify_kernel(name)[0] is not KernelRole.ATTENTION


def test_durations_length_mismatch():
    with pytest.raises(ValueError, match="durations has 1 entries for 2 kernel names"):
        classify_kernels(["attn_fwd", FILL], [1.0])


def test_every_fixture_kernel_summary_parses(analysis_folders_dir):
    for path in sorted(analysis_folders_dir.glob("*/category_data/*_ops.csv")):
        df = pd.read_csv(path)
        for cell in df["kernel_details_summary"]:
            kernels = parse_literal(cell)
            kc = classify_kernels([k["name"] for k in kernels], [k["total_duration_us"] for k in kernels])
            assert kc.library != "Unknown", path


def test_inductor_fused_kernels_are_never_attention():
    # Inductor names a fused kernel after every op it fused: these are RoPE / RMSNorm / softmax-adjacent kernels
    for name in ("triton_poi_fused__to_copy_add_cat_fmha_v3_fwd_mul_0", "triton_red_fused_flash_attn_rms_norm_1",
                 "triton_per_fused__scaled_dot_product_flash_attention_2"):
        assert classify_kernel(name) == (KernelRole.OTHER, None, None)
        assert kernel_group_role(name) == "other" and not is_decode_kernel(name)
    # the attention kernel itself, next to it, still is
    assert classify_kernel("aiter::fmha_fwd_hd128_bf16_rtz")[0] is KernelRole.ATTENTION


def test_serving_kernels():
    prefill = ("void ck_tile::kentry<256, 1, ck_tile::FmhaBatchPrefillWithPagedKVCacheKernel<ck_tile::"
               "BlockFmhaBatchPrefillPipelineQRKSVSAsync<ck_tile::bf16_t> > >(ck_tile::FmhaBatchPrefillKargs)")
    assert classify_kernel(prefill) == (KernelRole.ATTENTION, AttentionType.PAGED, "CK / aiter")  # not FlashInfer
    assert classify_kernel("sage_fwd") == (KernelRole.ATTENTION, AttentionType.FLASH, "SageAttention")
    assert is_auxiliary_kernel("sage_quant_kernel") and kernel_group_role("sage_quant_kernel") == "helper"
    assert kernel_group_role("reduce_segments") == "helper" and is_auxiliary_kernel("reduce_segments")
    kv = "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams)"
    assert kernel_group_role(kv) == "kv_cache"


def test_helper_kinds_say_which_side_of_the_main_kernel_they_run():
    # real names: SGLang decode on MI300X (traces/inference/sglang_decode), vLLM eager on B200 (traces/b200), vLLM's
    # Triton 3D split (vllm attention/ops/triton_unified_attention.py), SageAttention (aiter fav3_sage), FlashMLA's
    # decode and combine kernels (deepseek-ai/FlashMLA csrc/smxx/decode: flash_fwd_mla_combine_kernel)
    reduce = ("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>("
              "__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int const*, int, int, "
              "float const*)")
    kv = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>("
    combine = ("void smxx::decode::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, (int)512, (int)8, (int)160, "
               "(int)256>(CombineParams)")
    mla = "void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>>("
    expected = {reduce: HelperKind.REDUCE, "reduce_segments": HelperKind.REDUCE, combine: HelperKind.REDUCE,
                "sage_quant_kernel": HelperKind.QUANT, kv: HelperKind.KV_WRITE,
                "_copy_page_indices_kernel": HelperKind.PREPARE, mla: None, "sage_fwd": None,
                "kernel_unified_attention_3d": None}
    for name, kind in expected.items():
        assert helper_kind(name) is kind, name
    assert {HelperKind.QUANT, HelperKind.KV_WRITE, HelperKind.PREPARE} == HELPERS_BEFORE_MAIN
    # FlashMLA's main kernel is FlashMLA's paged attention, not FlashAttention-2 (whose rule its name would match)
    assert classify_kernel(mla) == (KernelRole.ATTENTION, AttentionType.PAGED, "FlashMLA")
    assert kernel_group_role(mla) == "attention" and kernel_group_role(combine) == "helper"


def test_kernel_name_hints():
    sliding = "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvSlidingOrChunkedCausalP16VarSeqQ128Kv128PersistentContext"
    full = "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext"
    assert kernel_window_hint(sliding) == "sliding" and kernel_window_hint(full) == "full"
    # most kernels state no mask in their name: neither sliding nor full
    assert kernel_window_hint("kernel_unified_attention_2d") is None
    assert kernel_window_hint("sage_quant_kernel") is None  # not an attention kernel
    fp8 = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>("
    auto = "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>("
    assert kernel_kv_cache_dtype(fp8) == "fp8_e4m3" and kernel_kv_cache_dtype(auto) is None
