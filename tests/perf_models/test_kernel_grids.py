"""perf_models.kernel_grids: what each family's launch grid says of the call, against grids computed by hand from the
family's launch code for a stated shape (or recorded in a real trace whose shapes are known).

FIT: the grids the layouts were checked on while they were written (the shared traces' recorded grids, listed while
surveying the families, and the FA3 2024 scheduler). HELD_OUT: names found and grids worked out only after the layouts
were written (other releases, the backward, split, PackGQA and group-mode variants, other families' real kernel
names); they passed unchanged, except the two BERT-small grids, which are the shared traces' too (seen in the survey,
their shapes compared after).
"""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.kernel_grids import GRID_LAYOUTS, grid_shape_hints
from sdpa_analyzer.perf_models.kernel_shapes import kernel_shape_hints
from sdpa_analyzer.perf_models.kernels import classify_kernel
from tests.support import FA3_BWD_2024

PYTORCH_FA2 = (
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
    "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
    "false, true, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)"
)
FA3_FWD_2024 = (
    "void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, 128>, "
    "true, flash::SingleTileScheduler, flash::SeqLenTraits<true> >(flash::CollectiveMainloopFwd<"
    "Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, 128>, true, "
    "flash::SeqLenTraits<true> >::Params, flash::SingleTileScheduler::Params, flash::SeqLenTraits<true>)"
)
FA3_MAINLOOP_2025 = (
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<"
    "2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, "
    "cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, false, false, false, false, true, true, "
    "false, true, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, "
    "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, false, false, "
    "true, false>, SCHEDULER > > >(flash::FlashAttnFwdSm90<...>::Params)"
)
FA2_SPLITKV = ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
               "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, "
               "false, true, true, false, SPLIT, false>(flash::Flash_fwd_params)")
FLASHINFER_PREFILL = (
    "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, "
    "(unsigned int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned int)8, (unsigned int)4, "
    "(unsigned int)1, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, "
    "flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0> >, PagedParams>(PagedParams)"
)
CK_BATCH = ("fmha_fwd_d128_bf16_batch_b128x128x32x128x32x128_r4x1x1_r4x1x1_w32x32x16_w32x32x16_qr_async_vr_psddv_"
            "nlogits_nbias_mask_nlse_ndropout_nskip_nqscale_ntrload_nsink")
SAYS = "grid_says"

# (name, grid, expected fields (a subset of the hints), source)
FIT = [
    # h100 Qwen trace, (16, 16, 559, 64) recorded: grid(num_m_block = ceil(559 / 128) = 5, b 16, h 16)
    (PYTORCH_FA2, (5, 16, 16), {"batch": 16, "heads_q": 16, "seq_q_range": (513, 640)},
     "../shared h100/Qwen trace; flash_fwd_launch_template.h run_flash_fwd"),
    # FA3 2024 SingleTileScheduler {num_blocks_m, num_head, num_batch}, variable lengths (SeqLenTraits<true>): 2
    # sequences, the longest 4096 rows, H 16, kBlockM 128 -> (32, 16, 2): 3969 <= the longest <= 4096
    (FA3_FWD_2024, (32, 16, 2), {"heads_q": 16, "batch": 2, "seq_q_max_range": (3969, 4096)},
     "deepseek-ai/profile-data prefill.json name; hopper/tile_scheduler.hpp (2024)"),
    # ... with fixed lengths (FixedSeqLenTraits = SeqLenTraits<false>): the range is every sequence's
    (FA3_FWD_2024.replace("SeqLenTraits<true>", "SeqLenTraits<false>"), (32, 16, 2),
     {"heads_q": 16, "batch": 2, "seq_q_range": (3969, 4096)}, "hopper/seq_len.h FixedSeqLenTraits"),
    # FA3 persistent schedulers: {num_sm} (132 on an H100 SXM)
    (FA3_MAINLOOP_2025.replace("SCHEDULER", "flash::DynamicPersistentTileScheduler<256, 128, false, false, true>"),
     (132, 1, 1), {SAYS: "persistent"}, "hopper/tile_scheduler.hpp DynamicPersistentTileScheduler"),
    # mi300 ViT trace, (4, 12, 197, 64) recorded: AOTriton (cdiv(197, BLOCK_M), 12, 4)
    ("attn_fwd", (2, 12, 4), {"heads_q": 12, "batch": 4, "q_tiles": 2},
     "../shared mi300/Falconsai trace; ROCm/aotriton v2src/flash/attn_fwd.cc"),
    # vLLM's unified attention: two releases put the KV heads on x or on y
    ("kernel_unified_attention_2d", (8, 558, 1), {SAYS: "does not say which"},
     "../shared vllm_prefilldecode_piecewise; vllm triton_unified_attention.py"),
]

HELD_OUT = [
    # h100 BERT-small trace, (1, 8, 141, 64): grid (2, 1, 8)
    (PYTORCH_FA2, (2, 1, 8), {"batch": 1, "heads_q": 8, "seq_q_range": (129, 256)},
     "../shared h100/gaunernst_bert-small trace"),
    # mi300 BERT-small trace, (1, 8, 141, 64): (2, 8, 1) fits both AOTriton layouts; only heads × batch is agreed
    ("attn_fwd", (2, 8, 1), {"heads_x_batch": 8, "q_tiles": 2}, "../shared mi300/gaunernst_bert-small trace"),
    # FA2 split-KV with Split=true: grid(num_m_block, num_splits, b·h); B 2, H 32, 4 splits, one query row
    (FA2_SPLITKV.replace("SPLIT", "true"), (1, 4, 64), {"splits": 4, "heads_x_batch": 64, "seq_q_range": (1, 64)},
     "flash_fwd_launch_template.h run_flash_splitkv_fwd"),
    # ... and without a split (num_splits 1): grid(num_m_block, b, h)
    (FA2_SPLITKV.replace("SPLIT", "false"), (1, 2, 32), {"batch": 2, "heads_q": 32},
     "flash_fwd_launch_template.h run_flash_splitkv_fwd"),
    # FA3 2025 split forward: SingleTileScheduler<false, true, false, 128>: (ceil(1000 / 128) = 8, 4 splits · 16, 2)
    (FA3_MAINLOOP_2025.replace("SCHEDULER", "flash::SingleTileScheduler<false, true, false, 128>"), (8, 64, 2),
     {"batch": 2, "heads_x_splits": 64, "seq_q_range": (897, 1024)}, "hopper/flash_fwd_launch_template.h (2025)"),
    # ... PackGQA: x counts query rows × heads per KV head, y the KV heads
    (FA3_MAINLOOP_2025.replace("SCHEDULER", "flash::SingleTileScheduler<false, false, true, 128>"), (32, 8, 2),
     {"batch": 2, "heads_kv": 8, "q_tiles_packed": 32}, "hopper/tile_scheduler.hpp PackGQA"),
    # FA3 2024 backward: SingleTileScheduler over the key tiles (tile N 128): B 2, H 16, N_kv 4096 -> (32, 16, 2)
    (FA3_BWD_2024, (32, 16, 2), {"heads_q": 16, "batch": 2, "seq_kv_range": (3969, 4096)},
     "deepseek-ai/profile-data train.json name; hopper/flash_bwd_launch_template.h"),
    # PyTorch mem-efficient (as PyTorch's profiler prints it), 1 × 8 × 256 × 64 fp16: (ceil(256 / 64) = 4, 8, 1)
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", (4, 8, 1),
     {"heads_q": 8, "batch": 1, "seq_q_range": (193, 256)}, "xformers/PyTorch kernel_forward.h getBlocksGrid"),
    # xFormers backward: (num_splits_key, num_heads, num_batches)
    ("fmha_cutlassB_bf16_aligned_64x64_k64_sm80", (1, 12, 4), {"heads_q": 12, "batch": 4},
     "xformers kernel_backward.h getBlocksGrid"),
    # FlashInfer prefill (as SGLang traces print it): nblks(padded_batch_size, 1, num_kv_heads)
    (FLASHINFER_PREFILL, (37, 1, 8), {"heads_kv": 8}, "flashinfer prefill.cuh"),
    # CK tile batch mode: (tiles, nhead, batch) or (nhead, batch, tiles) by a run-time choice: nothing agreed
    (CK_BATCH, (8, 16, 2), {SAYS: "does not say which"}, "ck_tile fmha_fwd_kernel.hpp GridSize"),
    # CK tile group mode (the generator's `_group_` spelling of the same instance): (nhead, batch, tiles)
    (CK_BATCH.replace("_batch_", "_group_"), (16, 2, 8), {"heads_q": 16, "batch": 2},
     "ck_tile fmha_fwd_kernel.hpp GridSize kIsGroupMode"),
    # cuDNN and TRT-LLM: no public layout
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", (64, 16, 2),
     {SAYS: "closed"}, "cuDNN"),
    ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext", (4, 8, 1),
     {SAYS: "no public grid layout"}, "../shared b200 trace"),
]


@pytest.mark.parametrize(("name", "grid", "expected", "source"), FIT + HELD_OUT,
                         ids=[f"{'fit' if i < len(FIT) else 'held'}-{i}" for i in range(len(FIT) + len(HELD_OUT))])
def test_grid_layouts(name: str, grid: tuple[int, int, int], expected: dict[str, object], source: str) -> None:
    hints = grid_shape_hints(name, grid)
    for key, value in expected.items():
        if key == SAYS:
            assert set(hints) == {SAYS} and str(value) in str(hints[SAYS]), (source, hints)
        else:
            assert hints.get(key) == value, (source, key, hints)


def test_every_declared_layout_names_a_source_and_a_reason_when_it_gives_nothing() -> None:
    for layout in GRID_LAYOUTS:
        assert layout.source
        assert bool(layout.layouts) != bool(layout.says_nothing), layout
        for axes in layout.layouts:
            assert len(axes) == 3


def test_grid_that_fits_no_layout_says_so() -> None:
    # FlashInfer prefill keeps y at 1: a grid with y 4 was not launched by that layout
    assert "fits none" in str(grid_shape_hints(FLASHINFER_PREFILL, (37, 4, 8))[SAYS])


def test_non_attention_kernels_give_nothing() -> None:
    assert grid_shape_hints("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel", (8, 8, 1)) == {}


# --- what the names' template arguments carry, per family (sources as above) ---------------------------------------
NAME_HINTS = [
    # FA2 (PyTorch's copy): <kHeadDim 64, kBlockM 128, kBlockN 128, …>, Is_dropout false, Is_causal true
    (PYTORCH_FA2, {"head_dim": 64, "block_q": 128, "block_kv": 128, "dtype": "bf16", "causal": True}),
    # FA3 2024: traits <192, 128, 128, …, kHeadDimV 128>, Is_causal true
    (FA3_FWD_2024, {"head_dim": 192, "head_dim_v": 128, "dtype": "bf16", "causal": True}),
    # FA3 2025 mainloop: TileShape (128, 128, 128), ArchTag then Is_causal true
    (FA3_MAINLOOP_2025.replace("SCHEDULER", "flash::SingleTileScheduler<false, true, false, 128>"),
     {"head_dim": 128, "block_q": 128, "block_kv": 128, "causal": True}),
    # FA3 2024 backward: TileShape (64, 128, 192), ArchTag then Is_causal true
    (FA3_BWD_2024, {"head_dim": 192, "block_q": 64, "block_kv": 128, "causal": True}),
    # FA2 split-KV: <Kernel_traits, Is_causal true, …>
    (FA2_SPLITKV.replace("SPLIT", "true"), {"head_dim": 128, "causal": True}),
    # FlashInfer: MaskMode 1 (causal), CTA_TILE_Q 128, NUM_MMA_D_QK 8 -> 128, DTypeQ bf16
    (FLASHINFER_PREFILL, {"head_dim": 128, "block_q": 128, "causal": True, "dtype": "bf16"}),
    # SGLang's FlashInfer prefill with an fp8 KV cache: DTypeQ bf16, DTypeKV e4m3, MaskMode 0
    (FLASHINFER_PREFILL.replace("MaskMode)1", "MaskMode)0").replace(
        "__nv_bfloat16, __nv_bfloat16, __nv_bfloat16", "__nv_bfloat16, __nv_fp8_e4m3, __nv_bfloat16"),
     {"dtype": "bf16", "kv_cache_dtype": "fp8_e4m3", "causal": False}),
    # SageAttention 2 on SM90 (thu-ml/SageAttention csrc/qattn/qk_int_sv_f8_cuda_sm90.cuh): qk_int8_sv_f8_attn_kernel<
    # CTA_Q 64, CTA_K 128, NUM_THREADS 128, HEAD_DIM 64, Q_GRAN, K_GRAN, DTypeOut bf16, MaskMode 0, …>: int8 Q·Kᵀ,
    # fp8 P·V, the model's bf16
    ("void qk_int8_sv_f8_attn_kernel<64u, 128u, 128u, 64u, (QuantGranularity)2, (QuantGranularity)2, __nv_bfloat16, "
     "(MaskMode)0, false, true, false>(CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, float*, float*, float*, "
     "__nv_bfloat16*, unsigned int, unsigned int, unsigned int, float)",
     {"qk_dtype": "int8", "pv_dtype": "fp8_e4m3", "dtype": "bf16", "head_dim": 64, "block_q": 64, "block_kv": 128,
      "causal": False}),
    # SageAttention 2 on SM80 (csrc/qattn/qk_int_sv_f16_cuda_sm80.cuh): P·V on fp16
    ("void qk_int_sv_f16_attn_kernel<128u, 64u, 32u, 64u, 128u, (DataType)1, (QuantGranularity)2, "
     "(QuantGranularity)2, float, __half, (ComputeUnit)1, (MaskMode)0, false, false>(signed char*)",
     {"qk_dtype": "int8", "pv_dtype": "fp16", "head_dim": 128, "block_q": 128, "block_kv": 64}),
    # CK tile: d128, bf16, tile b128x128
    (CK_BATCH, {"head_dim": 128, "dtype": "bf16", "block_q": 128, "block_kv": 128}),
]


@pytest.mark.parametrize(("name", "expected"), NAME_HINTS, ids=[f"name-{i}" for i in range(len(NAME_HINTS))])
def test_name_hints(name: str, expected: dict[str, object]) -> None:
    assert classify_kernel(name)[0].value == "attention"
    hints = kernel_shape_hints(name)
    for key, value in expected.items():
        assert hints.get(key) == value, (key, hints)
