"""GPU kernels per library: names, launch geometry and resources, as the real builds spell them.

FlashAttention-2 (PyTorch's vendored copy and the flash_attn package), CK tile FMHA and AOTriton (ROCm),
PyTorch's memory-efficient (CUTLASS) kernels, cuDNN SDPA, vLLM's paged-attention kernels, cuBLAS / hipBLASLt
GEMMs, softmax, reductions and element-wise kernels. Each function returns a ``Kernel``; the builder turns
it into a launch, a kernel event and their flows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.gpus import Gpu
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE
from sdpa_analyzer.server.synthetic.units import cdiv, to_ns

_CUTLASS_T = {"bf16": "cutlass::bfloat16_t", "fp16": "cutlass::half_t", "fp32": "float"}
_CUDA_T = {"bf16": "__nv_bfloat16", "fp16": "__half", "fp32": "float"}
_HIP_T = {"bf16": "__hip_bfloat16", "fp16": "_Float16", "fp32": "float"}


@dataclass(frozen=True)
class Kernel:
    """One kernel to launch: name, duration, geometry, resources, and its role in the ground truth."""

    name: str
    dur_ns: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    launch: str = "native"  # key into LAUNCH_API
    regs: int = 32
    smem: int = 0
    role: str = "aux"  # main | aux | copy | filler


def _tf(flag: bool) -> str:
    return "true" if flag else "false"


def round_hdim(d: int) -> int:
    return next(r for r in (32, 64, 96, 128, 160, 192, 224, 256) if d <= r)


_FLASH_FWD_TILES = {32: (128, 128, 4), 64: (128, 128, 4), 96: (128, 64, 4), 128: (128, 64, 4),
                    160: (128, 32, 4), 192: (128, 64, 8), 224: (128, 64, 8), 256: (128, 64, 8)}
_FLASH_FWD_TILES_DROPOUT = {64: (128, 64, 4), 128: (128, 32, 4)}
# kBlockM, kBlockN, kNWarps, AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ, Is_V_in_regs, No_double_buffer
_FLASH_BWD_TILES = {32: (128, 128, 8, 4, 4, 4, False, False), 64: (128, 128, 8, 2, 4, 4, False, False),
                    96: (64, 128, 8, 2, 4, 4, True, False), 128: (64, 128, 8, 2, 4, 2, False, False),
                    160: (64, 64, 8, 4, 2, 2, False, False), 192: (64, 64, 8, 4, 2, 2, True, False),
                    224: (64, 64, 8, 4, 2, 2, False, False), 256: (64, 64, 8, 4, 2, 2, False, False)}


@dataclass(frozen=True)
class FlashNaming:
    """Name spelling of one FlashAttention-2 build: PyTorch's vendored copy, the 2.6 package, vLLM's."""

    ns: str  # "pytorch_flash::", "" or "flash::"
    softcap: bool  # the package builds have an Is_softcap template flag, PyTorch's copy has not


PYTORCH_FLASH = FlashNaming("pytorch_flash::", softcap=False)
FLASH_ATTN_PKG = FlashNaming("", softcap=True)


def flash_fwd_kernel(c: SyntheticAttentionCall, nm: FlashNaming, dur_ns: int, *, varlen: bool) -> Kernel:
    d = round_hdim(c.head_dim_qk)
    m, n, w = (_FLASH_FWD_TILES_DROPOUT.get(d) if c.dropout else None) or _FLASH_FWD_TILES[d]
    t, ns = _CUTLASS_T[c.dtype], nm.ns
    local = c.window is not None and not c.causal
    even_mn = not varlen and c.seq_q % m == 0 and c.skv % n == 0
    even_k = c.head_dim_qk == d
    even_mn_t = even_mn and even_k and not local and d <= 128
    flags = [c.dropout > 0, c.causal, local, False, even_mn_t, even_k] + ([False] if nm.softcap else []) + [False]
    traits = (f"{ns}Flash_fwd_kernel_traits<{d}, {m}, {n}, {w}, false, false, {t}, "
              f"{ns}Flash_kernel_traits<{d}, {m}, {n}, {w}, {t}> >")
    name = f"void {ns}flash_fwd_kernel<{traits}, {', '.join(_tf(f) for f in flags)}>({ns}Flash_fwd_params)"
    return Kernel(name, dur_ns, (cdiv(c.seq_q, m), c.batch, c.heads_q), (w * 32, 1, 1), "native", 255,
                  (m * d + 2 * n * d) * 2, "main")


def flash_bwd_kernels(c: SyntheticAttentionCall, nm: FlashNaming, *, varlen: bool) -> list[Kernel]:
    d = round_hdim(c.head_dim_qk)
    m, n, w, a1, a2, a3, vreg, nodb = _FLASH_BWD_TILES[d]
    t, ns = _CUTLASS_T[c.dtype], nm.ns
    local = c.window is not None and not c.causal
    even_k = c.head_dim_qk == d
    even_mn = not varlen and c.seq_q % m == 0 and c.skv % n == 0 and even_k and not local and d <= 128
    traits = (f"{ns}Flash_bwd_kernel_traits<{d}, {m}, {n}, {w}, {a1}, {a2}, {a3}, {_tf(vreg)}, {_tf(nodb)}, {t}, "
              f"{ns}Flash_kernel_traits<{d}, {m}, {n}, {w}, {t}> >")
    flags = [c.dropout > 0, c.causal, local, False, even_mn, even_k] + ([False] if nm.softcap else [])
    params = f"{ns}Flash_bwd_params"
    aux, main = to_ns(c.aux_kernel_us), to_ns(c.bwd_us)
    grid_q, grid_k = (cdiv(c.seq_q, 128), c.batch, c.heads_q), (cdiv(c.skv, n), c.batch, c.heads_q)
    smem = min(229376, (2 * m * d + 4 * n * d) * 2)
    return [
        Kernel(f"void {ns}flash_bwd_dot_do_o_kernel<true, {traits} >({params})", aux, grid_q, (w * 32, 1, 1),
               "native", 40, 0, "aux"),
        Kernel(f"void {ns}flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{traits}, "
               f"{', '.join(_tf(f) for f in flags)}>({params})", main, grid_k, (w * 32, 1, 1), "native", 255,
               smem, "main"),
        Kernel(f"void {ns}flash_bwd_convert_dq_kernel<{traits} >({params}, int)", aux,
               (cdiv(c.seq_q, m), c.batch, c.heads_q), (w * 32, 1, 1), "native", 40, 0, "aux"),
    ]


def ck_fmha(c: SyntheticAttentionCall, kernel: str, dur_ns: int, role: str, grid: tuple[int, int, int]) -> Kernel:
    t = {"bf16": "ck_tile::bf16_t", "fp16": "ck_tile::fp16_t"}[c.dtype]
    d = round_hdim(c.head_dim_qk)
    mask = _tf(c.causal or c.window is not None)
    name = (f"void ck_tile::kentry<256, 1, ck_tile::{kernel}<ck_tile::BlockFmhaPipelineProblem<{t}, {t}, {t}, "
            f"float, float, {t}, float, {t}, ck_tile::TileFmhaShape<ck_tile::sequence<128, 128, 32, {d}, 32, {d}>, "
            f"ck_tile::sequence<4, 1, 1>, ck_tile::sequence<32, 32, 16>, true>, "
            f"ck_tile::SimplifiedGenericAttentionMask<{mask}> > > >(ck_tile::{kernel}Kargs)")
    return Kernel(name, dur_ns, grid, (256, 1, 1), "native", 128, 32768, role)


def aotriton_bwd(c: SyntheticAttentionCall) -> list[Kernel]:
    g = (c.heads_q, c.batch)
    aux, main = to_ns(c.aux_kernel_us), to_ns(c.bwd_us)
    return [
        Kernel("bwd_preprocess", aux, (cdiv(c.seq_q, 128), *g), (256, 1, 1), "triton", 64, 0, "aux"),
        Kernel("bwd_kernel_dk_dv", main, (cdiv(c.skv, 64), *g), (256, 1, 1), "triton", 128, 32768, "main"),
        Kernel("bwd_kernel_dq", main, (cdiv(c.seq_q, 64), *g), (256, 1, 1), "triton", 128, 32768, "main"),
    ]


def aotriton_attn_fwd(c: SyntheticAttentionCall, gpu: Gpu) -> Kernel:
    grid = (2 * gpu.num_sms, 1, 1) if c.causal else (cdiv(c.seq_q, 128), c.heads_q, c.batch)
    return Kernel("attn_fwd", to_ns(c.kernel_us), grid, (256, 1, 1), "triton", 128, 16384, "main")


def mem_eff_fwd(c: SyntheticAttentionCall) -> Kernel:
    t = {"bf16": "bf16", "fp16": "f16", "fp32": "f32"}[c.dtype]
    d = max(c.head_dim_qk, c.dv)
    qb, kb, mk, kind = (64, 64, 64, "rf") if d <= 64 else (64, 128, 128, "rf") if d <= 128 else (32, 128, 65536, "gmem")
    name = (f"fmha_cutlassF_{t}_aligned_{qb}x{kb}_{kind}_sm80(PyTorchMemEffAttention::AttentionKernel<"
            f"{_CUTLASS_T[c.dtype]}, cutlass::arch::Sm80, true, {qb}, {kb}, {mk}, true, {_tf(mk <= 128)}>::Params)")
    return Kernel(name, to_ns(c.kernel_us), (cdiv(c.seq_q, qb), c.heads_q, c.batch), (32, 4, 1), "native", 168,
                  49152, "main")


def mem_eff_bwd(c: SyntheticAttentionCall) -> Kernel:
    t = {"bf16": "bf16", "fp16": "f16", "fp32": "f32"}[c.dtype]
    d = max(c.head_dim_qk, c.dv)
    bi, bj, mk, preload = (
        (64, 64, 64, True) if d <= 64 else (128, 128, 128, True) if d <= 128 else (64, 64, 65536, False)
    )
    drop = "_dropout" if c.dropout else ""
    name = (f"fmha_cutlassB_{t}_aligned_{bi}x{bj}_k{mk}{drop}_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
            f"cutlass::arch::Sm80, {_CUTLASS_T[c.dtype]}, true, {_tf(c.dropout > 0)}, {_tf(preload)}, {bi}, {bj}, "
            f"{mk}, false>::Params)")
    return Kernel(name, to_ns(c.bwd_us), (cdiv(c.skv, bj), c.heads_q, c.batch), (256, 1, 1), "native", 255,
                  98304, "main")


def cudnn_kernel(c: SyntheticAttentionCall, gpu: Gpu, backward: bool) -> Kernel:
    sm = gpu.arch
    mma = {"sm80": "wmma_", "sm90": "wgmma_", "sm100": ""}[sm]
    d = c.head_dim_qk
    if backward:
        name = f"cudnn_generated_fort_native_sdpa_{sm}_flash_bprop_{mma}f16_knob_26_64x64x{d}_1x1x1_kernel0_0"
        return Kernel(name, to_ns(c.bwd_us), (cdiv(c.skv, 64), c.heads_q, c.batch), (384, 1, 1), "driver_ex", 168,
                      200704, "main")
    name = f"cudnn_generated_fort_native_sdpa_{sm}_flash_fprop_{mma}f16_knob_7_64x128x{d}_4x1x1_kernel0_0"
    return Kernel(name, to_ns(c.kernel_us), (cdiv(c.seq_q, 64), c.heads_q, c.batch), (384, 1, 1), "driver_ex", 168,
                  131072, "main")


def vec_kernel(gpu: Gpu, functor: str, n_ptrs: int, dur_ns: int, numel: int, role: str = "aux",
               elem_bytes: int = 2) -> Kernel:
    # ROCm builds vectorize to 16 bytes (8 bf16 lanes, 4 int/float lanes); CUDA builds use 4 lanes
    vec = max(1, min(8, 16 // elem_bytes)) if gpu.amd else 4
    name = (f"void at::native::vectorized_elementwise_kernel<{vec}, {functor}, std::array<char*, {n_ptrs}ul> >"
            f"(int, {functor}, std::array<char*, {n_ptrs}ul>)")
    threads = 256 if gpu.amd else 128
    return Kernel(name, dur_ns, (max(1, min(cdiv(numel, threads * vec), 65535)), 1, 1), (threads, 1, 1),
                  "native", 24, 0, role)


def mul_functor(at: str) -> str:
    return f"at::native::BinaryFunctor<{at}, {at}, {at}, at::native::binary_internal::MulFunctor<float> >"


def scalar_mul_functor(at: str) -> str:
    return f"at::native::AUnaryFunctor<{at}, {at}, {at}, at::native::binary_internal::MulFunctor<float> >"


def add_functor(at: str) -> str:
    return f"at::native::CUDAFunctor_add<{at}>"


def silu_functor(at: str) -> str:
    return (f"at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::operator()"
            f"() const::{{lambda()#7}}::operator()() const::{{lambda({at})#1}}")


def neg_functor(at: str) -> str:
    return (f"at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#2}}::operator()() const::"
            f"{{lambda()#8}}::operator()() const::{{lambda({at})#1}}")


# fp32-only element-wise lambdas (RMSNorm runs them on the upcast activations)
POW_FLOAT_FUNCTOR = ("at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>("
                     "at::TensorIteratorBase&, float)::{lambda(float)#2}")
RSQRT_FLOAT_FUNCTOR = ("at::native::(anonymous namespace)::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
                       "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}")


def dropout_kernel(dtype: str, dur_ns: int, numel: int) -> Kernel:
    at = ATEN_TYPE[dtype]
    name = (f"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{at}, float, unsigned int, "
            f"1, 4, bool>(at::cuda::detail::TensorInfo<{at} const, unsigned int>, at::cuda::detail::"
            f"TensorInfo<{at}, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned "
            f"int, float, at::PhiloxCudaState)")
    return Kernel(name, dur_ns, (max(1, cdiv(numel, 1024)), 1, 1), (256, 1, 1))


def layer_norm_kernel(dtype: str, dur_ns: int, rows: int) -> Kernel:
    at = ATEN_TYPE[dtype]
    name = (f"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<{at}, float>(int, float, "
            f"{at} const*, {at} const*, {at} const*, float*, float*, {at}*)")
    return Kernel(name, dur_ns, (rows, 1, 1), (32, 4, 1), "native", 34, 24, "filler")


def mean_float_kernel(dur_ns: int, rows: int) -> Kernel:
    """``x.float().mean(-1)``: one reduction block per row."""
    mean = "at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>"
    return Kernel(f"void at::native::reduce_kernel<512, 1, {mean} >({mean})", dur_ns, (rows, 1, 1), (32, 16, 1),
                  "native", 32, 16, "filler")


def cat_kernel(dur_ns: int, numel: int) -> Kernel:
    """``torch.cat`` of two 2-byte tensors along the last dim (RoPE's rotate_half)."""
    name = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::"
            "(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1>(at::native::(anonymous namespace)"
            "::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::"
            "(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::"
            "TensorSizeStride<unsigned int, 4u>, int, unsigned int)")
    return Kernel(name, dur_ns, (max(1, cdiv(numel, 4096)), 2, 1), (128, 1, 1), "native", 30, 0, "filler")


def copy_kernel(gpu: Gpu, dtype: str, dur_ns: int, numel: int, role: str = "copy") -> Kernel:
    at = ATEN_TYPE[dtype]
    lam = (f"at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() const::"
           f"{{lambda()#12}}::operator()() const::{{lambda({at})#1}}")
    impl = f"at::native::gpu_kernel_impl_nocast<{lam}>(at::TensorIteratorBase&, {lam} const&)::{{lambda(int)#1}}"
    name = f"void at::native::elementwise_kernel<128, 4, {impl}>(int, {impl})"
    return Kernel(name, dur_ns, (max(1, min(cdiv(numel, 512), 65535)), 1, 1), (128, 1, 1), "native", 32, 0, role)


def fill_int_kernel(gpu: Gpu, dur_ns: int) -> Kernel:
    return vec_kernel(gpu, "at::native::FillFunctor<int>", 1, dur_ns, 1, elem_bytes=4)


def sum_kernel(dtype: str, dur_ns: int, numel: int) -> Kernel:
    at = ATEN_TYPE[dtype]
    op = (f"at::native::ReduceOp<{at}, at::native::func_wrapper_t<float, at::native::sum_functor<{at}, float, {at}>"
          f"::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, unsigned int, {at}, 4>")
    return Kernel(f"void at::native::reduce_kernel<512, 1, {op} >({op})", dur_ns,
                  (max(1, min(cdiv(numel, 512), 65535)), 1, 1), (32, 16, 1), "native", 32, 16, "aux")


def gemm_kernel(gpu: Gpu, dtype: str, m: int, n: int, dur_ns: int, layout: str, role: str) -> Kernel:
    if gpu.amd:
        x = {"bf16": "B", "fp16": "H", "fp32": "S"}[dtype]
        name = (f"Cijk_Alik_Bljk_{x}{x}S_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_"
                "AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_"
                "LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV1_MIWT4_4_MO40_NTn1_NTA0_NTB0_"
                "NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_"
                "SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB8_WSGRA0_WSGRB0_WS64_WG32_8_1")
        return Kernel(name, dur_ns, (cdiv(m, 128) * cdiv(n, 128), 1, 1), (256, 1, 1), "gemm", 128, 65536, role)
    if gpu.arch == "sm90":
        ab = {"bf16": "bf16bf16_bf16f32_f32", "fp16": "f16f16_f16f32_f32", "fp32": "f32f32_tf32f32_f32"}[dtype]
        name = (f"sm90_xmma_gemm_{ab}_{layout}_n_tilesize128x128x64_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas")
        return Kernel(name, dur_ns, (cdiv(n, 128), cdiv(m, 128), 1), (384, 1, 1), "gemm", 168, 231424, role)
    if gpu.arch == "sm100":
        name = f"nvjet_tst_128x256_64x4_2x1_v_bz_coopB_{layout.upper()}T"
        return Kernel(name, dur_ns, (cdiv(n, 256), cdiv(m, 128), 1), (384, 1, 1), "gemm", 168, 231424, role)
    ab = {"bf16": "ampere_bf16_s16816gemm_bf16", "fp16": "ampere_fp16_s16816gemm_fp16", "fp32": "ampere_sgemm"}[dtype]
    tile = "128x64" if dtype == "fp32" else "128x128_ldg8_f2f_stages_64x3"
    return Kernel(f"{ab}_{tile}_{layout}", dur_ns, (cdiv(n, 128), cdiv(m, 128), 1), (256, 1, 1), "native", 238,
                  98304, role)


def softmax_kernel(dtype: str, n_cols: int, dur_ns: int, rows: int, backward: bool, role: str) -> Kernel:
    at = ATEN_TYPE[dtype]
    if n_cols <= 1024:
        log2 = max(0, math.ceil(math.log2(n_cols)))
        if backward:
            name = (f"void (anonymous namespace)::softmax_warp_backward<{at}, {at}, float, {log2}, false, false>"
                    f"({at}*, {at} const*, {at} const*, int, int, int, bool const*)")
        else:
            name = (f"void (anonymous namespace)::softmax_warp_forward<{at}, {at}, float, {log2}, false, false>"
                    f"({at}*, {at} const*, int, int, int, bool const*, int, bool)")
        return Kernel(name, dur_ns, (max(1, cdiv(rows, 4)), 1, 1), (32, 4, 1), "native", 40, 0, role)
    if backward:
        name = (f"void (anonymous namespace)::cunn_SoftMaxBackward<4, {at}, float, {at}, (anonymous namespace)::"
                f"SoftMaxBackwardEpilogue>({at}*, {at} const*, {at} const*, long)")
    else:
        name = (f"void (anonymous namespace)::cunn_SoftMaxForward<4, {at}, float, {at}, (anonymous namespace)::"
                f"SoftMaxForwardEpilogue>({at}*, {at} const*, int)")
    return Kernel(name, dur_ns, (min(rows, 65535), 1, 1), (1024, 1, 1), "native", 40, 0, role)


def vllm_kernels(c: SyntheticAttentionCall, gpu: Gpu) -> tuple[Kernel, list[Kernel]]:
    """(reshape_and_cache_flash kernel, attention kernels) for the GPU's vLLM attention backend."""
    tokens, d = sum(c.q_lens), c.head_dim_qk
    aux, main = to_ns(c.aux_kernel_us), to_ns(c.kernel_us)
    cu = _HIP_T[c.dtype] if gpu.amd else _CUDA_T[c.dtype]
    cache = (f"void vllm::reshape_and_cache_flash_kernel<{cu}, {cu}, (vllm::Fp8KVCacheDataType)0>({cu} const*, "
             f"{cu} const*, {cu}*, {cu}*, long const*, long, long, long, long, long, int, int, int, float const*, "
             "float const*)")
    cache_k = Kernel(cache, aux, (tokens, 1, 1), (min(1024, c.hkv * d), 1, 1), "native", 42, 0, "aux")
    decode = max(c.q_lens) == 1
    if gpu.amd:
        return cache_k, [Kernel("kernel_unified_attention_2d", main, (cdiv(tokens, 16), c.hkv, 1), (256, 1, 1),
                                "triton", 128, 32768, "main")]
    if gpu.arch == "sm100":
        tn = {"bf16": "Bfloat16", "fp16": "Fp16"}[c.dtype]
        mask = "SlidingOrChunkedCausal" if c.window is not None else "Causal" if c.causal else "Dense"
        tail = "Q8Kv128PersistentSwapsAbForGen" if decode else "Q128Kv128PersistentContext"
        name = f"fmhaSm100aKernel_Qkv{tn}O{tn}H{d}PagedKv{mask}P{c.page_size}VarSeq{tail}"
        return cache_k, [Kernel(name, main, (cdiv(c.seq_q, 128), c.heads_q, c.batch), (512, 1, 1), "driver_ex",
                                128, 42160, "main")]
    t, dd = _CUTLASS_T[c.dtype], round_hdim(d)
    traits = (f"flash::Flash_fwd_kernel_traits<{dd}, 64, 128, 4, false, false, {t}, "
              f"flash::Flash_kernel_traits<{dd}, 64, 128, 4, {t}> >")
    local = c.window is not None and not c.causal
    splits = max(2, min(8, cdiv(gpu.num_sms, max(1, c.batch * c.hkv)))) if decode else 1
    flags = [c.causal and not decode, local, False, False, d == dd, False, splits > 1, False]
    main_k = Kernel(f"void flash::flash_fwd_splitkv_kernel<{traits}, {', '.join(_tf(f) for f in flags)}>"
                    f"(flash::Flash_fwd_params)", main,
                    (cdiv(c.seq_q, 64), splits if splits > 1 else c.batch, c.batch * c.heads_q if splits > 1
                     else c.heads_q), (128, 1, 1), "native", 255, 49152, "main")
    kernels = [main_k]
    if splits > 1:
        kernels.append(Kernel(f"void flash::flash_fwd_splitkv_combine_kernel<{traits}, 4, 3, {_tf(d == dd)}>"
                              f"(flash::Flash_fwd_params)", aux, (cdiv(tokens * c.heads_q, 4), 1, 1), (128, 1, 1),
                              "native", 64, 0, "aux"))
    return cache_k, kernels


# --- serving engines on ROCm (aiter) and vLLM's newer Triton backend --------------------------------------------


def store_kvcache_kernel(c: SyntheticAttentionCall) -> Kernel:
    """SGLang's KV-cache write (sgl-kernel store_cache), named as in the real MI300X decode trace."""
    tokens = sum(c.q_lens)
    return Kernel("void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::"
                  "StoreKVCacheParams)", to_ns(c.aux_kernel_us), (tokens, 1, 1), (256, 1, 1), "native", 32, 0, "aux")


def aiter_batch_prefill_kernel(c: SyntheticAttentionCall) -> Kernel:
    """aiter's CK paged batch prefill (SGLang's prefill on MI300X)."""
    t = {"bf16": "ck_tile::bf16_t", "fp16": "ck_tile::fp16_t"}[c.dtype]
    d = round_hdim(c.head_dim_qk)
    name = (f"void ck_tile::kentry<256, 1, ck_tile::FmhaBatchPrefillWithPagedKVCacheKernel<ck_tile::"
            f"BlockFmhaBatchPrefillPipelineQRKSVSAsync<ck_tile::BlockFmhaPipelineProblem<{t}, {t}, {t}, float, float, "
            f"{t}, float, {t}, ck_tile::TileFmhaShape<ck_tile::sequence<128, 128, 32, {d}, 32, {d}>, "
            f"ck_tile::sequence<4, 1, 1>, ck_tile::sequence<32, 32, 16>, true>, "
            f"ck_tile::SimplifiedGenericAttentionMask<{_tf(c.causal)}> > > > >"
            f"(ck_tile::FmhaBatchPrefillWithPagedKVCacheKernelKargs)")
    return Kernel(name, to_ns(c.kernel_us), (cdiv(c.seq_q, 128), c.heads_q, c.batch), (256, 1, 1), "native", 128,
                  32768, "main")


def aiter_paged_decode_kernels(c: SyntheticAttentionCall) -> list[Kernel]:
    """aiter's pa_ragged (SGLang's decode on MI300X): the ll4mi QKV kernel and its partition reduce, with the template
    arguments of the real trace (block size 1, 256 threads, GQA ratio, mtp 1, ck_tile::ComposedAttention)."""
    ht = _HIP_T[c.dtype]
    d, gqa = c.head_dim_qk, c.heads_q // c.hkv
    qkv = (f"void paged_attention_ll4mi_QKV_mfma16_kernel<0, {ht}, {ht}, (vllm::Fp8KVCacheDataType)0, 1, {d}, 256, "
           f"false, {gqa}, 1, ck_tile::ComposedAttention<0u, false> >({ht} const*, {ht} const*, {ht} const*, float, "
           f"int const*, int const*, int const*, float const*, int, int, int, int, float*, float*, {ht}*, {ht}*, int, "
           "float const*, float const*, float const*)")
    red = (f"void paged_attention_ll4mi_reduce_kernel<{ht}, {ht}, {d}, {d}, 256, 3, false>({ht}*, float const*, "
           f"float const*, {ht} const*, int const*, int const*, int, int, float const*)")
    parts = max(1, cdiv(max(c.kv_lens), 256))
    return [
        Kernel(qkv, to_ns(c.kernel_us), (c.batch, parts, c.hkv), (256, 1, 1), "native", 128, 16384, "main"),
        Kernel(red, to_ns(c.aux_kernel_us), (c.batch, c.heads_q, 1), (256, 1, 1), "native", 64, 0, "aux"),
    ]


def sage_kernels(c: SyntheticAttentionCall) -> tuple[Kernel, Kernel]:
    """aiter's Triton SageAttention v1: the quantization kernel (int8 Q/K per block, fp8 V) and sage_fwd."""
    quant = Kernel("sage_quant_kernel", to_ns(c.aux_kernel_us), (cdiv(c.seq_q, 128) * c.heads_q * c.batch, 1, 1),
                   (256, 1, 1), "triton", 64, 0, "aux")
    fwd = Kernel("sage_fwd", to_ns(c.kernel_us), (cdiv(c.seq_q, 128), c.heads_q, c.batch), (256, 1, 1), "triton",
                 128, 32768, "main")
    return quant, fwd


def aiter_fmha_v3_kernel(c: SyntheticAttentionCall) -> Kernel:
    """aiter's asm flash forward (aiter::fmha_v3_fwd on MI300X)."""
    name = f"aiter::fmha_fwd_hd{round_hdim(c.head_dim_qk)}_{c.dtype}{'_causal' if c.causal else ''}_rtz"
    return Kernel(name, to_ns(c.kernel_us), (cdiv(c.seq_q, 128), c.heads_q, c.batch), (512, 1, 1), "native", 128,
                  65536, "main")


def inductor_rope_kernel(c: SyntheticAttentionCall) -> Kernel:
    """An Inductor pointwise kernel next to attention (RoPE / RMSNorm): its name lists the ops around it."""
    return Kernel("triton_poi_fused__to_copy_add_cat_fmha_v3_fwd_mul_0", to_ns(c.aux_kernel_us),
                  (cdiv(c.batch * c.seq_q * c.heads_q * c.head_dim_qk, 1024), 1, 1), (256, 1, 1), "triton", 32, 0,
                  "filler")


def vllm_unified_kernels(c: SyntheticAttentionCall, gpu: Gpu) -> tuple[Kernel, list[Kernel]]:
    """Newer vLLM on ROCm (Triton unified attention): the cache write (run by unified_kv_cache_update), then the 2D
    kernel, or for a decode-only step the 3D (split) kernel and its segment reduction."""
    cache_k, _ = vllm_kernels(c, gpu)
    tokens = sum(c.q_lens)
    main, aux = to_ns(c.kernel_us), to_ns(c.aux_kernel_us)
    if max(c.q_lens) == 1:
        return cache_k, [
            Kernel("kernel_unified_attention_3d", main, (cdiv(tokens, 16), c.hkv, 16), (128, 1, 1), "triton", 128,
                   32768, "main"),
            Kernel("reduce_segments", aux, (tokens, c.heads_q, 1), (128, 1, 1), "triton", 32, 0, "aux"),
        ]
    return cache_k, [Kernel("kernel_unified_attention_2d", main, (cdiv(tokens, 16), c.hkv, 1), (256, 1, 1),
                            "triton", 128, 32768, "main")]


def flashmla_kernels(c: SyntheticAttentionCall) -> list[Kernel]:
    """FlashMLA's dense decode (deepseek-ai/FlashMLA): the split-KV MLA kernel over the latent cache and the combine
    of its splits (csrc/smxx/decode: flash_fwd_mla_combine_kernel<ElementT, HEAD_DIM_V, BLOCK_SIZE_M, MAX_SPLITS,
    NUM_THREADS>)."""
    t = _CUTLASS_T[c.dtype]
    main = (f"void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<{c.head_dim_qk}, 64, 64, 8, {t}, {c.dv}>, "
            f"flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<{c.head_dim_qk}, 64, 64, 8, {t}, {c.dv}> > >"
            "(Flash_fwd_mla_params)")
    combine = (f"void smxx::decode::flash_fwd_mla_combine_kernel<{t}, (int){c.dv}, (int)8, (int)160, (int)256>"
               "(CombineParams)")
    rows = c.heads_q * c.q_lens[0]
    return [
        Kernel(main, to_ns(c.kernel_us), (132, 1, 1), (256, 1, 1), "native", 168, 230400, "main"),
        Kernel(combine, to_ns(c.aux_kernel_us), (c.batch, 1, cdiv(rows, 8)), (256, 1, 1), "native", 64, 0, "aux"),
    ]
