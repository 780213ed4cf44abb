"""perf_models.kernels by structure: each attention family's kernels, across releases, get the family's library and
stage (forward / backward / split-KV / combine / preprocess / postprocess) from the stable parts of their names.

The names are the entry points and kernel classes as the profiler prints them (`void <namespace>::<kernel><template
arguments>(<parameters>)`, CUTLASS-3 kernels as `cutlass::device_kernel<<class><…>>`), taken from the sources quoted
beside each. Long template argument lists are shortened to their structural parts (namespaces, class names, the
traits' first numbers), never to words the rules look for.

FIT: the names the FA3 / FA1 / SageAttention rules were written from. HELD_OUT: names read only after the rules were
written (other releases, forks, sibling classes); they pass unchanged.
"""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.kernels import (
    KernelRole,
    KernelStage,
    classify_kernel,
    kernel_direction,
    kernel_stage,
    tile_sizes,
)

FA1, FA2, FA3, FA4 = "FlashAttention-1", "FlashAttention-2", "FlashAttention-3", "FlashAttention-4 (CuTe DSL)"
SAGE, CK, CUDNN, MEFF = "SageAttention", "CK / aiter", "cuDNN", "xFormers/CUTLASS mem-efficient"
F, B, S, C = KernelStage.FORWARD, KernelStage.BACKWARD, KernelStage.SPLIT_KV, KernelStage.COMBINE
PRE, POST = KernelStage.PREPROCESS, KernelStage.POSTPROCESS

# (name, library or None for a helper, stage, source)
FIT = [
    # FA3 beta, July 2024: Dao-AILab/flash-attention hopper/flash_fwd_kernel.h `compute_attn_ws<Ktraits, Is_causal,
    # TileScheduler, Seqlen_traits>`; the name as deepseek-ai/profile-data prefill.json records it (H800)
    (
        "void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, "
        "128>, true, flash::SingleTileScheduler, flash::SeqLenTraits<true> >(flash::CollectiveMainloopFwd<"
        "Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, 128>, true, "
        "flash::SeqLenTraits<true> >::Params, flash::CollectiveEpilogueFwd<Flash_fwd_kernel_traits<192, 128, 128, 12, "
        "2, false, 1, cutlass::bfloat16_t, 128>, flash::SeqLenTraits<true> >::Params, "
        "flash::SingleTileScheduler::Params, flash::SeqLenTraits<true>, flash::SeqLenTraits<true>)",
        FA3, F, "deepseek-ai/profile-data prefill.json; flash-attention hopper/flash_fwd_kernel.h (2024)",
    ),
    # FA3, autumn 2024 (before the Sm90 suffix): hopper/flash_bwd_kernel.h `class FlashAttnBwd<CollectiveMainloop_,
    # CollectiveEpilogue_, TileScheduler_>` (commit 0eb8f680); deepseek-ai/profile-data train.json holds
    # `cutlass::device_kernel<flash::FlashAttnBwd<...>>`
    (
        "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1>, "
        "cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> >, cutlass::bfloat16_t, float, "
        "cutlass::arch::Sm90, true, false, false, false, false, true, false, 2, 2, 1, false>, "
        "flash::CollectiveEpilogueBwd<cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> >, cutlass::bfloat16_t, "
        "cutlass::arch::Sm90, 256, false, false, false>, flash::SingleTileScheduler<false, false, 128> > >"
        "(flash::FlashAttnBwd<...>::Params)",
        FA3, B, "flash-attention hopper/flash_bwd_kernel.h @0eb8f680; deepseek-ai/profile-data train.json",
    ),
    # FA1 (flash-attn 0.2-1.x): csrc/flash_attn/src/fmha_fwd_launch_template.h `fmha_fwd_loop_kernel<Kernel_traits,
    # Is_dropout, Is_causal, Return_softmax>(FMHA_fprop_params)`
    (
        "void fmha_fwd_loop_kernel<FMHA_kernel_traits<256, 64, 16, 1, 4, 8u, __half>, false, true, false>"
        "(FMHA_fprop_params)",
        FA1, F, "flash-attention csrc/flash_attn/src/fmha_fwd_launch_template.h (1.x)",
    ),
    # SageAttention3 (Blackwell): thu-ml/SageAttention sageattention3_blackwell/sageattn3/blackwell/kernel_ws.h,
    # namespace flash, `compute_attn_ws(Flash_fwd_params const, CollectiveMainloopFwd<…>::Params const, …)`
    (
        "void flash::compute_attn_ws<Flash_fwd_kernel_traits<128, 128, 128, 12, 2, false, 1, cutlass::float_e2m1_t>, "
        "true, flash::StaticPersistentTileScheduler>(Flash_fwd_params, flash::CollectiveMainloopFwd<"
        "Flash_fwd_kernel_traits<128, 128, 128, 12, 2, false, 1, cutlass::float_e2m1_t>, true>::Params, "
        "flash::CollectiveEpilogueFwd<Flash_fwd_kernel_traits<128, 128, 128, 12, 2, false, 1, "
        "cutlass::float_e2m1_t> >::Params, flash::StaticPersistentTileScheduler::Params)",
        SAGE, F, "thu-ml/SageAttention sageattention3_blackwell/sageattn3/blackwell/kernel_ws.h",
    ),
]

HELD_OUT = [
    # FA3 2025: hopper/flash_fwd_kernel_sm90.h `FlashAttnFwdSm90`, wrapped in enable_sm90_or_later
    (
        "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
        "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
        "cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> >, "
        "128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, false, false, false, true, "
        "true, false, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<176> "
        ">, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, "
        "false, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> > > >"
        "(flash::FlashAttnFwdSm90<...>::Params)",
        FA3, F, "flash-attention hopper/flash_fwd_kernel_sm90.h",
    ),
    # FA3's Ampere path in hopper/: flash_fwd_kernel_sm80.h `class FlashAttnFwdSm80`
    (
        "void cutlass::device_kernel<flash::enable_sm80_to_sm89<flash::FlashAttnFwdSm80<"
        "flash::CollectiveMainloopFwdSm80<4, 1, cute::tuple<cute::C<128>, cute::C<64>, cute::C<128> >, 128, "
        "cutlass::half_t, float, cutlass::arch::Sm80, false, false, false, false, false, false, false>, "
        "flash::CollectiveEpilogueFwd<...>, "
        "flash::SingleTileScheduler<false, false, false, 128> > > >(flash::FlashAttnFwdSm80<...>::Params)",
        FA3, F, "flash-attention hopper/flash_fwd_kernel_sm80.h",
    ),
    # FA3 backward helpers: hopper/flash_bwd_postprocess_kernel.h `FlashAttnBwdPostprocessConvertdQ`,
    # hopper/flash_bwd_preprocess_kernel.h `FlashAttnBwdPreprocess`, hopper/flash_fwd_combine_kernel.h
    # `FlashAttnFwdCombine`
    (
        "void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<cute::C<64>, cute::C<128> >, "
        "cutlass::bfloat16_t, float, cutlass::arch::Sm90, 256, ..., false> >(flash::FlashAttnBwdPostprocessConvertdQ"
        "<...>::Params)",
        None, POST, "flash-attention hopper/flash_bwd_postprocess_kernel.h",
    ),
    (
        "void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<cute::tuple<cute::C<64>, cute::C<128>, "
        "cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false> >"
        "(flash::FlashAttnBwdPreprocess<...>::Params)",
        None, PRE, "flash-attention hopper/flash_bwd_preprocess_kernel.h",
    ),
    (
        "void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 7, 256, 1, "
        "false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90> >(flash::FlashAttnFwdCombine<...>::Params)",
        None, C, "flash-attention hopper/flash_fwd_combine_kernel.h",
    ),
    # a fork of the 2024 FA3 whose backward keeps the `compute_attn_ws` entry point (hopper-style
    # mainloop_bwd_sm90_tma_gmma_ws.hpp, `compute_attn_ws(CollectiveMainloopBwd<Ktraits, Seqlen_traits>::Params…)`)
    (
        "void flash::compute_attn_ws<Flash_bwd_kernel_traits<128, 64, 128, 2, 2, 2, false, false, false, 1, "
        "cutlass::bfloat16_t>, flash::SingleTileSchedulerBwd, flash::VarSeqLenTraits>(flash::CollectiveMainloopBwd"
        "<Flash_bwd_kernel_traits<...>, flash::VarSeqLenTraits>::Params, flash::CollectiveEpilogueBwd<...>::Params, "
        "flash::SingleTileSchedulerBwd::Params, flash::VarSeqLenTraits, flash::VarSeqLenTraits)",
        FA3, B, "an FA3 fork's hopper/flash_bwd_kernel.h (2024, compute_attn_ws backward)",
    ),
    # FA1 backward: csrc/flash_attn/src/fmha_bwd_launch_template.h `fmha_bwd_dq_dk_dv_loop_kernel`,
    # `fmha_bwd_dot_do_o_kernel`
    (
        "void fmha_bwd_dq_dk_dv_loop_kernel<FMHA_kernel_traits<128, 64, 16, 1, 8, 8u, __half>, false, true, -1>"
        "(FMHA_dgrad_params)",
        FA1, B, "flash-attention csrc/flash_attn/src/fmha_bwd_launch_template.h (1.x)",
    ),
    (
        "void fmha_bwd_dot_do_o_kernel<FMHA_kernel_traits<128, 64, 16, 1, 8, 8u, __half> >(FMHA_dgrad_params)",
        None, PRE, "flash-attention csrc/flash_attn/src/fmha_bwd_launch_template.h (1.x)",
    ),
    # FA2 (v2.x): csrc/flash_attn/src/flash_fwd_kernel.h / flash_bwd_kernel.h entry points
    (
        "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, "
        "true, true, false, false>(flash::Flash_fwd_params)",
        FA2, S, "flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h (2.x)",
    ),
    (
        "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 2, true>"
        "(flash::Flash_fwd_params)",
        None, C, "flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h (2.x)",
    ),
    (
        "void flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> > >(flash::Flash_bwd_params, "
        "int)",
        None, POST, "flash-attention csrc/flash_attn/src/flash_bwd_launch_template.h (2.x)",
    ),
    # FA4 (CuTe DSL), flash_attn/cute: the JIT names the kernel after the class path
    (
        "kernel_cutlass_kernel_flash_attncuteflash_bwd_sm100FlashAttentionBackwardSm100_object_at__tensorptrbf16"
        "gmemalign16odiv8",
        FA4, B, "flash-attention flash_attn/cute/flash_bwd_sm100.py",
    ),
    # xFormers / PyTorch mem-efficient: fmha_cutlassF (forward), fmha_cutlassB (backward)
    ("fmha_cutlassB_bf16_aligned_64x64_k64_sm80", MEFF, B, "xformers/csrc/attention/cuda/fmha/kernels"),
    ("fmha_cutlassF_bf16_aligned_64x128_rf_sm80", MEFF, F, "xformers/csrc/attention/cuda/fmha/kernels"),
    # cuDNN SDPA backward (as TransformerEngine and PyTorch's cuDNN backend run it)
    (
        "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0",
        CUDNN, B, "cuDNN 9 SDPA (NVIDIA/cudnn-frontend samples/python/52_scaled_dot_product_attention)",
    ),
    # CK tile backward (ROCm): ck_tile FmhaBwdDQDKDVKernel
    (
        "void ck_tile::kentry<64, 1, ck_tile::FmhaBwdDQDKDVKernel<ck_tile::BlockFmhaBwdDQDKDVPipelineKRKTRVR<...> > >"
        "(ck_tile::FmhaBwdDQDKDVKernel<...>::Kargs)",
        CK, B, "ROCm/composable_kernel example/ck_tile/01_fmha fmha_bwd",
    ),
    # TransformerEngine's fused-attention helper kernels around the cuDNN call
    ("void transformer_engine::fused_attn::extract_seed_and_offset(long*, long, long*, long, bool, long*)",
     None, KernelStage.PREPARE, "NVIDIA/TransformerEngine transformer_engine/common/fused_attn"),
]


@pytest.mark.parametrize(("name", "library", "stage", "source"), FIT + HELD_OUT,
                         ids=[f"{'fit' if i < len(FIT) else 'held'}-{i}" for i in range(len(FIT) + len(HELD_OUT))])
def test_family_and_stage(name: str, library: str | None, stage: KernelStage, source: str) -> None:
    role, _atype, lib = classify_kernel(name)
    assert kernel_stage(name) is stage, source
    if library is None:
        assert role is not KernelRole.ATTENTION, source  # a helper of the call, never a call of its own
    else:
        assert (role, lib) == (KernelRole.ATTENTION, library), source
    backward = stage in (B, PRE, POST)
    assert kernel_direction(name) == ("bwd" if backward else "fwd"), source


def test_early_fa3_forward_is_not_fa2_and_keeps_its_tiles() -> None:
    # Flash_fwd_kernel_traits<kHeadDim=192, kBlockM=128, kBlockN=128, …, kHeadDimV=128> (DeepSeek's 192/128 MLA
    # prefill): FA3's tile family, not FA2's, and the tiles from the traits
    name = FIT[0][0]
    assert classify_kernel(name)[2] == FA3
    assert tile_sizes(name) == (128, 128, 192)


@pytest.mark.parametrize("name", [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel",
    "triton_poi_fused__scaled_dot_product_flash_attention_backward_add_0",
])
def test_not_attention_has_no_stage(name: str) -> None:
    assert kernel_stage(name) is None and kernel_direction(name) is None


def test_triton_attention_fed_by_int8_quantization_is_sage() -> None:
    # thu-ml/SageAttention sageattention/triton/quant_per_block.py (quant_per_block_int8_kernel) feeding
    # attn_qk_int8_per_block.py's `_attn_fwd`: the structure, not the kernel's generic name, says SageAttention
    from sdpa_analyzer.perf_models.kernels import classify_kernels

    kc = classify_kernels(["quant_per_block_int8_kernel", "quant_per_block_int8_kernel", "_attn_fwd"],
                          [3.0, 3.0, 90.0])
    assert kc.library == SAGE and kc.dominant_kernel == "_attn_fwd"
    assert classify_kernels(["_attn_fwd"], [90.0]).library == "Triton"  # alone it stays Triton


def test_fa2_launch_grid_gives_batch_heads_and_a_length_range() -> None:
    # csrc/flash_attn/src/flash_fwd_launch_template.h: dim3 grid(num_m_block, params.b, params.h); by hand for
    # (b=16, h=16, seq_q=559, kBlockM=128): num_m_block = ceil(559 / 128) = 5 -> 513 <= seq_q <= 640
    from sdpa_analyzer.perf_models.kernel_grids import grid_shape_hints

    fwd = ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
           "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
           "false, true, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)")
    hints = grid_shape_hints(fwd, (5, 16, 16))
    assert "variable lengths" in str(hints.pop("lengths_may_vary"))  # FA2's names do not say varlen
    assert hints == {"batch": 16, "heads_q": 16, "heads_x_batch": 256, "seq_q_range": (513, 640)}
    # a persistent FA3 grid (one CTA per SM) says nothing, and says why
    persistent = HELD_OUT[0][0]
    assert "VarlenDynamicPersistentTileScheduler" in persistent
    assert set(grid_shape_hints(persistent, (132, 1, 1))) == {"grid_says"}
