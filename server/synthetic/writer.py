"""Synthetic Kineto (PyTorch profiler) traces whose attention ground truth is known.

The real traces in ../shared/traces have no attention backward, no flash_attn package ops, no cuDNN or
memory-efficient SDPA and no unfused training step. This module writes traces with those, in the formats
seen in the real H100 / MI300X / B200 traces: the same event phases and categories, the same argument
names and slot layouts per op (``Input Dims`` / ``Input type`` / ``Input Strides`` / ``Concrete Inputs``),
``python_function`` frames with ``nn.Module`` frames, ``ProfilerStep#N`` annotations, runtime launches
linked to kernels by ``correlation`` and ``ac2g`` flows, autograd backward nodes on the autograd thread
linked to the forward through ``Sequence number`` (and ``fwdbwd`` flows), and ``deviceProperties``.

Time is kept as integer nanoseconds and written as microseconds (``ns / 1000``). Every time the
generator picks itself is a multiple of 125 ns, so those values are exact binary floats; kernel
durations are the spec's values (``kernel_us`` etc.), exact when they are multiples of 0.125 µs and
always recoverable as ``round(value * 1000)`` ns.
"""

from __future__ import annotations

import gzip
import math
import random
import re
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from server.errors import InputError
from server.writers.atomic import write_bytes_atomic

FLAVOURS = (
    "aten_flash",
    "aten_efficient",
    "aten_cudnn",
    "flash_attn",
    "flash_attn_varlen",
    "unfused",
    "vllm_paged",
)
DTYPES = ("bf16", "fp16", "fp32")
DEFAULT_GPU = "NVIDIA H100 80GB HBM3"

_SDPA_FLAVOURS = ("aten_flash", "aten_efficient", "aten_cudnn")
_FLASH_ONLY_HALF = ("aten_flash", "aten_cudnn", "flash_attn", "flash_attn_varlen", "vllm_paged")
_WINDOW_FLAVOURS = ("flash_attn", "flash_attn_varlen", "vllm_paged")

_Q = 125  # ns quantum of every generated time: multiples of 1/8 µs are exact binary floats
_T0_NS = 1_419_247_332_000_000  # µs timestamps of the same magnitude as the real traces
_BASE_TIME_NS = 1_751_410_836_000_000_000
_PID = 19392
_AUTOGRAD_TID = 19457
_FIRST_CORRELATION = 8198
_FIRST_SEQUENCE = 1200


# ----------------------------------------------------------------------------------------------------
# GPUs
# ----------------------------------------------------------------------------------------------------

_NV_LIMITS = {"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
              "warpSize": 32, "sharedMemPerBlock": 49152}
_AMD_LIMITS = {"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048}


def _nv_props(name: str, mem: int, major: int, minor: int, sms: int, optin: int, per_sm: int) -> dict:
    return {"name": name, "totalGlobalMem": mem, "computeMajor": major, "computeMinor": minor, **_NV_LIMITS,
            "numSms": sms, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": optin,
            "sharedMemPerMultiprocessor": per_sm}


def _amd_props(name: str, mem: int, regs_per_block: int) -> dict:
    return {"name": name, "totalGlobalMem": mem, "computeMajor": 9, "computeMinor": 4, **_AMD_LIMITS,
            "regsPerBlock": regs_per_block, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304,
            "maxSharedMemoryPerMultiProcessor": 65536}


@dataclass(frozen=True)
class _Gpu:
    name: str
    vendor: str  # "nvidia" | "amd"
    arch: str  # "sm80" | "sm90" | "sm100" | "gfx942"
    props: dict[str, Any] = field(hash=False, compare=False)
    versions: dict[str, Any] = field(hash=False, compare=False)

    @property
    def num_sms(self) -> int:
        return int(self.props["numSms"])

    @property
    def stream(self) -> int:
        return 7 if self.vendor == "nvidia" else 0

    @property
    def amd(self) -> bool:
        return self.vendor == "amd"


_NV_VERSIONS = {"cupti_version": 22, "cuda_runtime_version": 12040, "cuda_driver_version": 12090}
_AMD_VERSIONS = {"roctracer_version": 4.1, "hip_runtime_version": 60443483, "hip_driver_version": 60443483}

_GPUS: dict[str, _Gpu] = {
    g.name: g
    for g in (
        _Gpu("NVIDIA H100 80GB HBM3", "nvidia", "sm90",
             _nv_props("NVIDIA H100 80GB HBM3", 85018279936, 9, 0, 132, 232448, 233472), _NV_VERSIONS),
        _Gpu("NVIDIA H200", "nvidia", "sm90",
             _nv_props("NVIDIA H200", 150754820096, 9, 0, 132, 232448, 233472), _NV_VERSIONS),
        _Gpu("NVIDIA A100-SXM4-80GB", "nvidia", "sm80",
             _nv_props("NVIDIA A100-SXM4-80GB", 85097971712, 8, 0, 108, 166912, 167936), _NV_VERSIONS),
        _Gpu("NVIDIA B200", "nvidia", "sm100",
             _nv_props("NVIDIA B200", 191503138816, 10, 0, 148, 232448, 233472),
             {"cupti_version": 28, "cuda_runtime_version": 12090, "cuda_driver_version": 13000}),
        _Gpu("AMD Instinct MI300X", "amd", "gfx942",
             _amd_props("AMD Instinct MI300X", 206141652992, 131072), _AMD_VERSIONS),
        _Gpu("AMD Instinct MI300X VF", "amd", "gfx942",
             _amd_props("AMD Instinct MI300X VF", 205571227648, 65536), _AMD_VERSIONS),
        _Gpu("AMD Instinct MI325X", "amd", "gfx942",
             _amd_props("AMD Instinct MI325X", 274877906944, 131072), _AMD_VERSIONS),
    )
}


def known_gpus() -> list[str]:
    """Device names build_trace can write into deviceProperties."""
    return sorted(_GPUS)


def _gpu(name: str) -> _Gpu:
    try:
        return _GPUS[name]
    except KeyError:
        raise InputError(f"gpu_name={name!r} is unknown: expected one of {', '.join(known_gpus())}") from None


# launch API per (vendor, kernel launch kind): (event name, category, cbid/cid)
_LAUNCH_API: dict[tuple[str, str], tuple[str, str, int]] = {
    ("nvidia", "native"): ("cudaLaunchKernel", "cuda_runtime", 211),
    ("nvidia", "gemm"): ("cudaLaunchKernelExC", "cuda_runtime", 430),
    ("nvidia", "triton"): ("cuLaunchKernel", "cuda_driver", 307),
    ("nvidia", "driver_ex"): ("cuLaunchKernelEx", "cuda_driver", 652),
    ("amd", "native"): ("hipLaunchKernel", "cuda_runtime", 107),
    ("amd", "gemm"): ("hipExtModuleLaunchKernel", "cuda_runtime", 65),
    ("amd", "triton"): ("hipModuleLaunchKernel", "cuda_runtime", 169),
    ("amd", "driver_ex"): ("hipModuleLaunchKernel", "cuda_runtime", 169),
}
_NV_CBID = {"cudaStreamIsCapturing": 317, "cudaFuncSetAttribute": 273, "cudaMemcpyAsync": 41,
            "cudaMemsetAsync": 51, "cudaDeviceSynchronize": 165}
_AMD_CID = {"hipStreamGetDevice": 363, "hipMemcpyWithStream": 153, "hipDeviceSynchronize": 48}


# ----------------------------------------------------------------------------------------------------
# The spec
# ----------------------------------------------------------------------------------------------------


def _bad(field_name: str, value: object, allowed: str) -> InputError:
    return InputError(f"SyntheticAttentionCall.{field_name}={value!r} is invalid: expected {allowed}")


@dataclass(frozen=True, kw_only=True)
class SyntheticAttentionCall:
    """One attention call site, repeated ``repeat`` times (e.g. once per layer).

    Kernel durations: every *main* attention kernel of the forward takes ``kernel_us`` (unfused: the two
    GEMMs and the softmax), every main backward kernel ``bwd_kernel_us`` (default 2.5 × ``kernel_us``),
    every auxiliary kernel (FillFunctor, dot(dO, O), convert dQ, GQA head sums, reshape_and_cache, scale
    and mask element-wise ops, split-KV combine) ``aux_kernel_us``, every contiguous copy
    ``copy_kernel_us``. ``copies_before`` / ``copies_after`` add ``aten::contiguous`` copies inside the
    outermost attention op, before / after the inner op (siblings for ``unfused``).

    ``seqlens_q`` / ``seqlens_kv`` give per-sequence lengths (``flash_attn_varlen``, ``vllm_paged``); when
    given, ``seq_q`` / ``seq_kv`` are replaced by their maxima. ``scale=None`` leaves the scale argument
    of ``scaled_dot_product_attention`` / ``flash_attn_func`` empty (the inner ops still get the default
    scale). ``input_layout`` is the memory layout of the (B, H, N, d) tensors handed to SDPA:
    ``"bnhd_view"`` = ``x.view(B, N, H, d).transpose(1, 2)`` (BERT-like), ``"bhnd"`` = contiguous
    (after RoPE, Llama/Qwen-like). ``gpu`` pins the device (build_trace's ``gpu_name`` must agree).
    Invalid combinations raise ``InputError`` naming the field and what is allowed.
    """

    flavour: str = "aten_flash"
    batch: int = 1
    heads_q: int = 32
    heads_kv: int | None = None
    seq_q: int = 2048
    seq_kv: int | None = None
    head_dim_qk: int = 128
    head_dim_v: int | None = None
    dtype: str = "bf16"
    causal: bool = False
    window: tuple[int, int] | None = None
    dropout: float = 0.0
    scale: float | None = None
    attn_mask: bool = False
    input_layout: str = "bnhd_view"
    kernel_us: float = 100.0
    bwd_kernel_us: float | None = None
    aux_kernel_us: float = 3.0
    copy_kernel_us: float = 8.0
    repeat: int = 1
    with_backward: bool = False
    module_names: tuple[str, ...] = ("LlamaForCausalLM", "LlamaModel", "LlamaDecoderLayer", "LlamaAttention")
    copies_before: int = 0
    copies_after: int = 0
    seqlens_q: tuple[int, ...] | None = None
    seqlens_kv: tuple[int, ...] | None = None
    page_size: int = 16
    gpu: str | None = None

    def __post_init__(self) -> None:
        self._fill_defaults()
        self._validate_numbers()
        self._validate_combinations()

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def _fill_defaults(self) -> None:
        if self.flavour not in FLAVOURS:
            raise _bad("flavour", self.flavour, "one of " + ", ".join(FLAVOURS))
        for name in ("seqlens_q", "seqlens_kv", "module_names", "window"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                self._set(name, tuple(value))
        if self.seqlens_q is not None:
            if self.flavour not in ("flash_attn_varlen", "vllm_paged"):
                raise _bad("seqlens_q", self.seqlens_q, "None unless flavour is flash_attn_varlen or vllm_paged")
            if len(self.seqlens_q) != self.batch or min(self.seqlens_q, default=0) < 1:
                raise _bad("seqlens_q", self.seqlens_q, f"{self.batch} (batch) lengths, each >= 1")
            self._set("seq_q", max(self.seqlens_q))
        if self.seqlens_kv is not None:
            if self.flavour not in ("flash_attn_varlen", "vllm_paged"):
                raise _bad("seqlens_kv", self.seqlens_kv, "None unless flavour is flash_attn_varlen or vllm_paged")
            if len(self.seqlens_kv) != self.batch or min(self.seqlens_kv, default=0) < 1:
                raise _bad("seqlens_kv", self.seqlens_kv, f"{self.batch} (batch) lengths, each >= 1")
            self._set("seq_kv", max(self.seqlens_kv))
        if self.heads_kv is None:
            self._set("heads_kv", self.heads_q)
        if self.seq_kv is None:
            self._set("seq_kv", self.seq_q)
        if self.head_dim_v is None:
            self._set("head_dim_v", self.head_dim_qk)
        if self.bwd_kernel_us is None:
            self._set("bwd_kernel_us", 2.5 * self.kernel_us)

    def _validate_numbers(self) -> None:
        for name in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v", "repeat",
                     "page_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise _bad(name, value, "an integer >= 1")
        for name in ("copies_before", "copies_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _bad(name, value, "an integer >= 0")
        for name in ("kernel_us", "bwd_kernel_us", "aux_kernel_us", "copy_kernel_us"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or round(value * 1000) < 1:
                raise _bad(name, value, "a finite duration >= 0.001 µs")
        if self.heads_q % self.heads_kv:
            raise _bad("heads_kv", self.heads_kv, f"a divisor of heads_q={self.heads_q}")
        if self.input_layout not in ("bnhd_view", "bhnd"):
            raise _bad("input_layout", self.input_layout, "'bnhd_view' (BERT-like q.view(B, N, H, d).transpose(1, 2)) "
                       "or 'bhnd' (contiguous (B, H, N, d), e.g. after RoPE)")
        if self.dtype not in DTYPES:
            raise _bad("dtype", self.dtype, "one of " + ", ".join(DTYPES))
        if not 0.0 <= self.dropout < 1.0:
            raise _bad("dropout", self.dropout, "a probability in [0, 1)")
        if self.scale is not None and not (math.isfinite(self.scale) and self.scale > 0):
            raise _bad("scale", self.scale, "None or a positive finite float")
        if not self.module_names or not all(isinstance(m, str) and m for m in self.module_names):
            raise _bad("module_names", self.module_names, "one or more non-empty class names")
        if self.gpu is not None and self.gpu not in _GPUS:
            raise _bad("gpu", self.gpu, "None or one of " + ", ".join(known_gpus()))

    def _validate_combinations(self) -> None:
        fl = self.flavour
        if self.window is not None:
            if fl not in _WINDOW_FLAVOURS:
                raise _bad("window", self.window, "None: a sliding window is only expressible with "
                           + ", ".join(_WINDOW_FLAVOURS))
            if len(self.window) != 2 or not all(isinstance(w, int) and w >= -1 for w in self.window):
                raise _bad("window", self.window, "(left, right) integers >= -1 (-1 = unbounded)")
        if fl in _FLASH_ONLY_HALF and self.dtype == "fp32":
            raise _bad("dtype", self.dtype, f"bf16 or fp16 for flavour {fl} (fp32 runs aten_efficient/unfused)")
        if fl in _FLASH_ONLY_HALF and fl != "aten_cudnn" and self.head_dim_qk != self.head_dim_v:
            raise _bad("head_dim_v", self.head_dim_v, f"equal to head_dim_qk={self.head_dim_qk} for flavour {fl}")
        if fl in _FLASH_ONLY_HALF and fl != "aten_cudnn" and self.head_dim_qk > 256:
            raise _bad("head_dim_qk", self.head_dim_qk, f"<= 256 for flavour {fl}")
        if fl in ("aten_efficient", "aten_cudnn") and self.heads_kv != self.heads_q:
            raise _bad("heads_kv", self.heads_kv, f"equal to heads_q={self.heads_q} for {fl} (GQA runs aten_flash, "
                       "flash_attn or unfused)")
        if self.attn_mask and fl not in ("aten_efficient", "aten_cudnn", "unfused"):
            raise _bad("attn_mask", self.attn_mask, "False unless flavour is aten_efficient, aten_cudnn or unfused")
        if fl == "vllm_paged":
            if self.with_backward:
                raise _bad("with_backward", self.with_backward, "False for vllm_paged (inference only)")
            if self.dropout:
                raise _bad("dropout", self.dropout, "0.0 for vllm_paged")
            if any(q > k for q, k in zip(self.q_lens, self.kv_lens, strict=True)):
                raise _bad("seqlens_kv", self.kv_lens, "each context length >= its query length for vllm_paged")

    # ---- derived geometry ---------------------------------------------------------------------------
    @property
    def hkv(self) -> int:
        return int(self.heads_kv or self.heads_q)

    @property
    def skv(self) -> int:
        return int(self.seq_kv or self.seq_q)

    @property
    def dv(self) -> int:
        return int(self.head_dim_v or self.head_dim_qk)

    @property
    def bwd_us(self) -> float:
        return float(self.bwd_kernel_us if self.bwd_kernel_us is not None else 2.5 * self.kernel_us)

    @property
    def softmax_scale(self) -> float:
        """The scale the kernels get: ATen computes 1 / sqrt(d) in C++, Python callers d ** -0.5."""
        if self.scale is not None:
            return self.scale
        if self.flavour in _SDPA_FLAVOURS:
            return 1.0 / math.sqrt(self.head_dim_qk)
        return self.head_dim_qk ** -0.5

    @property
    def gqa(self) -> bool:
        return self.hkv != self.heads_q

    @property
    def q_lens(self) -> tuple[int, ...]:
        return self.seqlens_q if self.seqlens_q is not None else (self.seq_q,) * self.batch

    @property
    def kv_lens(self) -> tuple[int, ...]:
        return self.seqlens_kv if self.seqlens_kv is not None else (self.skv,) * self.batch


def demo_calls() -> list[SyntheticAttentionCall]:
    """A small realistic mix for ``make demo``: every duration is a multiple of 0.125 µs."""
    return [
        # Llama-3-8B-like training layer: causal GQA 32/8, N=2048, d=128, bf16, PyTorch flash SDPA.
        SyntheticAttentionCall(
            flavour="aten_flash", batch=2, heads_q=32, heads_kv=8, seq_q=2048, head_dim_qk=128,
            causal=True, scale=128 ** -0.5, input_layout="bhnd", kernel_us=262.5, bwd_kernel_us=701.25,
            aux_kernel_us=9.5, repeat=4, with_backward=True,
        ),
        # flash_attn package, GQA 32/8 non-causal N=4096 (same shape as the shared synthetic fixture).
        SyntheticAttentionCall(
            flavour="flash_attn", batch=2, heads_q=32, heads_kv=8, seq_q=4096, head_dim_qk=128,
            kernel_us=900.0, bwd_kernel_us=2600.0, aux_kernel_us=40.0, repeat=2, with_backward=True,
            module_names=("GPTModel", "TransformerBlock", "FlashSelfAttention"),
        ),
        # BERT-like inference with a padding mask: short sequences, memory-efficient SDPA.
        SyntheticAttentionCall(
            flavour="aten_efficient", batch=8, heads_q=8, seq_q=128, head_dim_qk=64, attn_mask=True,
            kernel_us=12.25, repeat=4,
            module_names=("BertModel", "BertEncoder", "BertLayer", "BertSdpaSelfAttention"),
        ),
        # GPT-2-like eager attention (matmul + softmax + matmul), causal fp16 inference.
        SyntheticAttentionCall(
            flavour="unfused", batch=4, heads_q=12, seq_q=1024, head_dim_qk=64, dtype="fp16", causal=True,
            kernel_us=48.0, aux_kernel_us=14.5, repeat=2,
            module_names=("GPT2LMHeadModel", "GPT2Model", "GPT2Block", "GPT2Attention"),
        ),
    ]


# ----------------------------------------------------------------------------------------------------
# Argument slots (Input Dims / Input type / Input Strides / Concrete Inputs)
# ----------------------------------------------------------------------------------------------------

_ATEN_T = {"bf16": "c10::BFloat16", "fp16": "c10::Half", "fp32": "float"}
_CUTLASS_T = {"bf16": "cutlass::bfloat16_t", "fp16": "cutlass::half_t", "fp32": "float"}
_CUDA_T = {"bf16": "__nv_bfloat16", "fp16": "__half", "fp32": "float"}
_HIP_T = {"bf16": "__hip_bfloat16", "fp16": "_Float16", "fp32": "float"}

_Slot = tuple[list[int], str, list[int], str]


def _contig(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * int(dims[i + 1])
    return strides


def c10_double(x: float) -> str:
    """A double as the profiler prints it: 17 significant digits, integral values end with '.'."""
    text = f"{x:.17g}"
    if not any(ch in text for ch in ".en"):
        text += "."
    return text


def _T(dims: Sequence[int], dtype: str, strides: Sequence[int] | None = None) -> _Slot:
    return (list(dims), dtype, list(strides) if strides is not None else _contig(dims), "")


def _TP(pair: tuple[list[int], list[int]], dtype: str) -> _Slot:
    """Tensor slot from a (dims, strides) pair."""
    return _T(pair[0], dtype, pair[1])


def _S(value: bool | int | float) -> _Slot:
    if isinstance(value, bool):
        text = "True" if value else "False"
    elif isinstance(value, int):
        text = str(value)
    else:
        text = c10_double(value)
    return ([], "Scalar", [], text)


def _L(values: Sequence[int | bool]) -> _Slot:
    return ([], "ScalarList", [], "[" + ", ".join(str(v) for v in values) + "]")


def _N() -> _Slot:
    return ([], "", [], "")


def _slot_args(slots: Sequence[_Slot]) -> dict[str, list]:
    return {
        "Concrete Inputs": [s[3] for s in slots],
        "Input type": [s[1] for s in slots],
        "Input Strides": [s[2] for s in slots],
        "Input Dims": [s[0] for s in slots],
    }


def _bnhd(b: int, n: int, h: int, d: int) -> tuple[list[int], list[int]]:
    dims = [b, n, h, d]
    return dims, _contig(dims)


def _bhnd_view(b: int, n: int, h: int, d: int) -> tuple[list[int], list[int]]:
    """The (B, H, N, d) view of a contiguous (B, N, H, d) tensor: what ``.transpose(1, 2)`` gives."""
    s = _contig([b, n, h, d])
    return [b, h, n, d], [s[0], s[2], s[1], s[3]]


# ----------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Kernel:
    name: str
    dur_ns: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    launch: str = "native"  # key into _LAUNCH_API
    regs: int = 32
    smem: int = 0
    role: str = "aux"  # main | aux | copy | filler


def _ns(us: float) -> int:
    return round(us * 1000)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _tf(flag: bool) -> str:
    return "true" if flag else "false"


def _round_hdim(d: int) -> int:
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
class _FlashNaming:
    """Name spelling of one FlashAttention-2 build: PyTorch's vendored copy, the 2.6 package, vLLM's."""

    ns: str  # "pytorch_flash::", "" or "flash::"
    softcap: bool  # the package builds have an Is_softcap template flag, PyTorch's copy has not


_PYTORCH_FLASH = _FlashNaming("pytorch_flash::", softcap=False)
_FLASH_ATTN_PKG = _FlashNaming("", softcap=True)


def _flash_fwd_kernel(c: SyntheticAttentionCall, nm: _FlashNaming, dur_ns: int, *, varlen: bool) -> _Kernel:
    d = _round_hdim(c.head_dim_qk)
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
    return _Kernel(name, dur_ns, (_cdiv(c.seq_q, m), c.batch, c.heads_q), (w * 32, 1, 1), "native", 255,
                   (m * d + 2 * n * d) * 2, "main")


def _flash_bwd_kernels(c: SyntheticAttentionCall, nm: _FlashNaming, *, varlen: bool) -> list[_Kernel]:
    d = _round_hdim(c.head_dim_qk)
    m, n, w, a1, a2, a3, vreg, nodb = _FLASH_BWD_TILES[d]
    t, ns = _CUTLASS_T[c.dtype], nm.ns
    local = c.window is not None and not c.causal
    even_k = c.head_dim_qk == d
    even_mn = not varlen and c.seq_q % m == 0 and c.skv % n == 0 and even_k and not local and d <= 128
    traits = (f"{ns}Flash_bwd_kernel_traits<{d}, {m}, {n}, {w}, {a1}, {a2}, {a3}, {_tf(vreg)}, {_tf(nodb)}, {t}, "
              f"{ns}Flash_kernel_traits<{d}, {m}, {n}, {w}, {t}> >")
    flags = [c.dropout > 0, c.causal, local, False, even_mn, even_k] + ([False] if nm.softcap else [])
    params = f"{ns}Flash_bwd_params"
    aux, main = _ns(c.aux_kernel_us), _ns(c.bwd_us)
    grid_q, grid_k = (_cdiv(c.seq_q, 128), c.batch, c.heads_q), (_cdiv(c.skv, n), c.batch, c.heads_q)
    smem = min(229376, (2 * m * d + 4 * n * d) * 2)
    return [
        _Kernel(f"void {ns}flash_bwd_dot_do_o_kernel<true, {traits} >({params})", aux, grid_q, (w * 32, 1, 1),
                "native", 40, 0, "aux"),
        _Kernel(f"void {ns}flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{traits}, "
                f"{', '.join(_tf(f) for f in flags)}>({params})", main, grid_k, (w * 32, 1, 1), "native", 255,
                smem, "main"),
        _Kernel(f"void {ns}flash_bwd_convert_dq_kernel<{traits} >({params}, int)", aux,
                (_cdiv(c.seq_q, m), c.batch, c.heads_q), (w * 32, 1, 1), "native", 40, 0, "aux"),
    ]


def _ck_fmha(c: SyntheticAttentionCall, kernel: str, dur_ns: int, role: str, grid: tuple[int, int, int]) -> _Kernel:
    t = {"bf16": "ck_tile::bf16_t", "fp16": "ck_tile::fp16_t"}[c.dtype]
    d = _round_hdim(c.head_dim_qk)
    mask = _tf(c.causal or c.window is not None)
    name = (f"void ck_tile::kentry<256, 1, ck_tile::{kernel}<ck_tile::BlockFmhaPipelineProblem<{t}, {t}, {t}, "
            f"float, float, {t}, float, {t}, ck_tile::TileFmhaShape<ck_tile::sequence<128, 128, 32, {d}, 32, {d}>, "
            f"ck_tile::sequence<4, 1, 1>, ck_tile::sequence<32, 32, 16>, true>, "
            f"ck_tile::SimplifiedGenericAttentionMask<{mask}> > > >(ck_tile::{kernel}Kargs)")
    return _Kernel(name, dur_ns, grid, (256, 1, 1), "native", 128, 32768, role)


def _aotriton_bwd(c: SyntheticAttentionCall) -> list[_Kernel]:
    g = (c.heads_q, c.batch)
    aux, main = _ns(c.aux_kernel_us), _ns(c.bwd_us)
    return [
        _Kernel("bwd_preprocess", aux, (_cdiv(c.seq_q, 128), *g), (256, 1, 1), "triton", 64, 0, "aux"),
        _Kernel("bwd_kernel_dk_dv", main, (_cdiv(c.skv, 64), *g), (256, 1, 1), "triton", 128, 32768, "main"),
        _Kernel("bwd_kernel_dq", main, (_cdiv(c.seq_q, 64), *g), (256, 1, 1), "triton", 128, 32768, "main"),
    ]


def _attn_fwd_aotriton(c: SyntheticAttentionCall, gpu: _Gpu) -> _Kernel:
    grid = (2 * gpu.num_sms, 1, 1) if c.causal else (_cdiv(c.seq_q, 128), c.heads_q, c.batch)
    return _Kernel("attn_fwd", _ns(c.kernel_us), grid, (256, 1, 1), "triton", 128, 16384, "main")


def _mem_eff_fwd(c: SyntheticAttentionCall) -> _Kernel:
    t = {"bf16": "bf16", "fp16": "f16", "fp32": "f32"}[c.dtype]
    d = max(c.head_dim_qk, c.dv)
    qb, kb, mk, kind = (64, 64, 64, "rf") if d <= 64 else (64, 128, 128, "rf") if d <= 128 else (32, 128, 65536, "gmem")
    name = (f"fmha_cutlassF_{t}_aligned_{qb}x{kb}_{kind}_sm80(PyTorchMemEffAttention::AttentionKernel<"
            f"{_CUTLASS_T[c.dtype]}, cutlass::arch::Sm80, true, {qb}, {kb}, {mk}, true, {_tf(mk <= 128)}>::Params)")
    return _Kernel(name, _ns(c.kernel_us), (_cdiv(c.seq_q, qb), c.heads_q, c.batch), (32, 4, 1), "native", 168,
                   49152, "main")


def _mem_eff_bwd(c: SyntheticAttentionCall) -> _Kernel:
    t = {"bf16": "bf16", "fp16": "f16", "fp32": "f32"}[c.dtype]
    d = max(c.head_dim_qk, c.dv)
    bi, bj, mk, preload = (
        (64, 64, 64, True) if d <= 64 else (128, 128, 128, True) if d <= 128 else (64, 64, 65536, False)
    )
    drop = "_dropout" if c.dropout else ""
    name = (f"fmha_cutlassB_{t}_aligned_{bi}x{bj}_k{mk}{drop}_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
            f"cutlass::arch::Sm80, {_CUTLASS_T[c.dtype]}, true, {_tf(c.dropout > 0)}, {_tf(preload)}, {bi}, {bj}, "
            f"{mk}, false>::Params)")
    return _Kernel(name, _ns(c.bwd_us), (_cdiv(c.skv, bj), c.heads_q, c.batch), (256, 1, 1), "native", 255,
                   98304, "main")


def _cudnn_kernel(c: SyntheticAttentionCall, gpu: _Gpu, backward: bool) -> _Kernel:
    sm = gpu.arch
    mma = {"sm80": "wmma_", "sm90": "wgmma_", "sm100": ""}[sm]
    d = c.head_dim_qk
    if backward:
        name = f"cudnn_generated_fort_native_sdpa_{sm}_flash_bprop_{mma}f16_knob_26_64x64x{d}_1x1x1_kernel0_0"
        return _Kernel(name, _ns(c.bwd_us), (_cdiv(c.skv, 64), c.heads_q, c.batch), (384, 1, 1), "driver_ex", 168,
                       200704, "main")
    name = f"cudnn_generated_fort_native_sdpa_{sm}_flash_fprop_{mma}f16_knob_7_64x128x{d}_4x1x1_kernel0_0"
    return _Kernel(name, _ns(c.kernel_us), (_cdiv(c.seq_q, 64), c.heads_q, c.batch), (384, 1, 1), "driver_ex", 168,
                   131072, "main")


def _vec_kernel(gpu: _Gpu, functor: str, n_ptrs: int, dur_ns: int, numel: int, role: str = "aux",
                elem_bytes: int = 2) -> _Kernel:
    # ROCm builds vectorize to 16 bytes (8 bf16 lanes, 4 int/float lanes); CUDA builds use 4 lanes
    vec = max(1, min(8, 16 // elem_bytes)) if gpu.amd else 4
    name = (f"void at::native::vectorized_elementwise_kernel<{vec}, {functor}, std::array<char*, {n_ptrs}ul> >"
            f"(int, {functor}, std::array<char*, {n_ptrs}ul>)")
    threads = 256 if gpu.amd else 128
    return _Kernel(name, dur_ns, (max(1, min(_cdiv(numel, threads * vec), 65535)), 1, 1), (threads, 1, 1),
                   "native", 24, 0, role)


def _mul_functor(at: str) -> str:
    return f"at::native::BinaryFunctor<{at}, {at}, {at}, at::native::binary_internal::MulFunctor<float> >"


def _scalar_mul_functor(at: str) -> str:
    return f"at::native::AUnaryFunctor<{at}, {at}, {at}, at::native::binary_internal::MulFunctor<float> >"


def _copy_kernel(gpu: _Gpu, dtype: str, dur_ns: int, numel: int, role: str = "copy") -> _Kernel:
    at = _ATEN_T[dtype]
    lam = (f"at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() const::"
           f"{{lambda()#12}}::operator()() const::{{lambda({at})#1}}")
    impl = f"at::native::gpu_kernel_impl_nocast<{lam}>(at::TensorIteratorBase&, {lam} const&)::{{lambda(int)#1}}"
    name = f"void at::native::elementwise_kernel<128, 4, {impl}>(int, {impl})"
    return _Kernel(name, dur_ns, (max(1, min(_cdiv(numel, 512), 65535)), 1, 1), (128, 1, 1), "native", 32, 0, role)


def _fill_int_kernel(gpu: _Gpu, dur_ns: int) -> _Kernel:
    return _vec_kernel(gpu, "at::native::FillFunctor<int>", 1, dur_ns, 1, elem_bytes=4)


def _sum_kernel(dtype: str, dur_ns: int, numel: int) -> _Kernel:
    at = _ATEN_T[dtype]
    op = (f"at::native::ReduceOp<{at}, at::native::func_wrapper_t<float, at::native::sum_functor<{at}, float, {at}>"
          f"::operator()(at::TensorIterator&)::{{lambda(float, float)#1}}>, unsigned int, {at}, 4>")
    return _Kernel(f"void at::native::reduce_kernel<512, 1, {op} >({op})", dur_ns,
                   (max(1, min(_cdiv(numel, 512), 65535)), 1, 1), (32, 16, 1), "native", 32, 16, "aux")


def _gemm_kernel(gpu: _Gpu, dtype: str, m: int, n: int, dur_ns: int, layout: str, role: str) -> _Kernel:
    if gpu.amd:
        x = {"bf16": "B", "fp16": "H", "fp32": "S"}[dtype]
        name = (f"Cijk_Alik_Bljk_{x}{x}S_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_"
                "AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_"
                "LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV1_MIWT4_4_MO40_NTn1_NTA0_NTB0_"
                "NTC0_NTD0_NTM0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW8_SK0_"
                "SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA8_VWB8_WSGRA0_WSGRB0_WS64_WG32_8_1")
        return _Kernel(name, dur_ns, (_cdiv(m, 128) * _cdiv(n, 128), 1, 1), (256, 1, 1), "gemm", 128, 65536, role)
    if gpu.arch == "sm90":
        ab = {"bf16": "bf16bf16_bf16f32_f32", "fp16": "f16f16_f16f32_f32", "fp32": "f32f32_tf32f32_f32"}[dtype]
        name = (f"sm90_xmma_gemm_{ab}_{layout}_n_tilesize128x128x64_warpgroupsize1x1x1_"
                "execute_segment_k_off_kernel__5x_cublas")
        return _Kernel(name, dur_ns, (_cdiv(n, 128), _cdiv(m, 128), 1), (384, 1, 1), "gemm", 168, 231424, role)
    if gpu.arch == "sm100":
        name = f"nvjet_tst_128x256_64x4_2x1_v_bz_coopB_{layout.upper()}T"
        return _Kernel(name, dur_ns, (_cdiv(n, 256), _cdiv(m, 128), 1), (384, 1, 1), "gemm", 168, 231424, role)
    ab = {"bf16": "ampere_bf16_s16816gemm_bf16", "fp16": "ampere_fp16_s16816gemm_fp16", "fp32": "ampere_sgemm"}[dtype]
    tile = "128x64" if dtype == "fp32" else "128x128_ldg8_f2f_stages_64x3"
    return _Kernel(f"{ab}_{tile}_{layout}", dur_ns, (_cdiv(n, 128), _cdiv(m, 128), 1), (256, 1, 1), "native", 238,
                   98304, role)


def _softmax_kernel(dtype: str, n_cols: int, dur_ns: int, rows: int, backward: bool, role: str) -> _Kernel:
    at = _ATEN_T[dtype]
    if n_cols <= 1024:
        log2 = max(0, math.ceil(math.log2(n_cols)))
        if backward:
            name = (f"void (anonymous namespace)::softmax_warp_backward<{at}, {at}, float, {log2}, false, false>"
                    f"({at}*, {at} const*, {at} const*, int, int, int, bool const*)")
        else:
            name = (f"void (anonymous namespace)::softmax_warp_forward<{at}, {at}, float, {log2}, false, false>"
                    f"({at}*, {at} const*, int, int, int, bool const*, int, bool)")
        return _Kernel(name, dur_ns, (max(1, _cdiv(rows, 4)), 1, 1), (32, 4, 1), "native", 40, 0, role)
    if backward:
        name = (f"void (anonymous namespace)::cunn_SoftMaxBackward<4, {at}, float, {at}, (anonymous namespace)::"
                f"SoftMaxBackwardEpilogue>({at}*, {at} const*, {at} const*, long)")
    else:
        name = (f"void (anonymous namespace)::cunn_SoftMaxForward<4, {at}, float, {at}, (anonymous namespace)::"
                f"SoftMaxForwardEpilogue>({at}*, {at} const*, int)")
    return _Kernel(name, dur_ns, (min(rows, 65535), 1, 1), (1024, 1, 1), "native", 40, 0, role)


# ----------------------------------------------------------------------------------------------------
# Ground truth
# ----------------------------------------------------------------------------------------------------


@dataclass
class SyntheticInstance:
    """What one emitted call instance contains (forward or backward), for tests to compare against."""

    call_index: int
    repeat_index: int
    direction: str  # "fwd" | "bwd"
    flavour: str
    op_name: str  # the op whose subtree holds every kernel of the instance
    op_external_id: int | None
    sequence_number: int | None
    kernel_names: list[str] = field(default_factory=list)
    kernel_dur_ns: list[int] = field(default_factory=list)
    kernel_correlations: list[int] = field(default_factory=list)

    @property
    def kernel_us(self) -> float:
        return sum(self.kernel_dur_ns) / 1000


@dataclass
class SyntheticTrace:
    trace: dict[str, Any]
    instances: list[SyntheticInstance]


# ----------------------------------------------------------------------------------------------------
# The timeline builder
# ----------------------------------------------------------------------------------------------------


class _Builder:
    """Lays events out on per-thread CPU cursors and one GPU stream, all in integer nanoseconds."""

    def __init__(self, gpu: _Gpu, rng: random.Random, *, t0_ns: int = _T0_NS) -> None:
        self.gpu = gpu
        self.rng = rng
        self.pid = _PID
        self.main_tid = _PID
        self.autograd_tid = _AUTOGRAD_TID
        self.tid = self.main_tid
        self.cursor: dict[int, int] = {self.main_tid: t0_ns}
        self.open: dict[int, list[tuple[str, dict]]] = {self.main_tid: []}
        self.gpu_free = t0_ns
        self.t0 = t0_ns
        self.ops: list[dict] = []
        self.pys: list[dict] = []
        self.device: list[dict] = []
        self.fwdbwd: list[dict] = []
        self.gpu_annotations: list[dict] = []
        self.next_ext = 1
        self.next_corr = _FIRST_CORRELATION
        self.next_py = 1
        self.next_flow = 1
        self.next_seq = _FIRST_SEQUENCE
        self.module_counts: Counter[str] = Counter()
        self.instance: SyntheticInstance | None = None
        self.instances: list[SyntheticInstance] = []
        self.gpu_activity: list[tuple[int, int]] = []

    # ---- time -------------------------------------------------------------------------------------
    def _q(self, lo_ns: int, hi_ns: int) -> int:
        return _Q * self.rng.randint(lo_ns // _Q, hi_ns // _Q)

    def _advance(self, lo_ns: int, hi_ns: int) -> int:
        self.cursor[self.tid] += self._q(lo_ns, hi_ns)
        return self.cursor[self.tid]

    def now(self) -> int:
        return self.cursor[self.tid]

    def idle(self, lo_ns: int, hi_ns: int) -> None:
        self._advance(lo_ns, hi_ns)

    # ---- ids --------------------------------------------------------------------------------------
    def new_seq(self) -> int:
        self.next_seq += 1
        return self.next_seq - 1

    def _corr(self) -> int:
        self.next_corr += 1
        return self.next_corr - 1

    def _current_ext(self) -> int | None:
        for kind, ev in reversed(self.open[self.tid]):
            if kind == "op":
                return ev["args"]["External id"]
        return None

    # ---- CPU scopes -------------------------------------------------------------------------------
    @contextmanager
    def op(self, name: str, slots: Sequence[_Slot] | None = None, *, seq: int | None = None, fwd_tid: int = 0,
           cat: str = "cpu_op") -> Iterator[dict]:
        start = self._advance(375, 1750)
        args: dict[str, Any] = {"External id": self.next_ext}
        self.next_ext += 1
        if seq is not None:
            args["Sequence number"] = seq
            args["Fwd thread id"] = fwd_tid
        args["Record function id"] = 0
        if slots is not None:
            args.update(_slot_args(slots))
        ev = {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.tid, "ts": start, "dur": 0,
              "args": args}
        self.ops.append(ev)
        stack = self.open[self.tid]
        stack.append(("op" if cat == "cpu_op" else "annotation", ev))
        self._advance(250, 1250)
        try:
            yield ev
        finally:
            self._advance(250, 1000)
            stack.pop()
            ev["dur"] = self.cursor[self.tid] - start

    def leaf(self, name: str, slots: Sequence[_Slot] | None = None, **kw: Any) -> dict:
        with self.op(name, slots, **kw) as ev:
            return ev

    @contextmanager
    def py(self, name: str, module_id: int | None = None) -> Iterator[dict]:
        start = self._advance(125, 750)
        stack = self.open[self.tid]
        parent = next((ev["args"]["Python id"] for kind, ev in reversed(stack) if kind == "py"), None)
        args: dict[str, Any] = {"Python parent id": parent, "Python id": self.next_py}
        if module_id is not None:
            args["Python module id"] = module_id
        self.next_py += 1
        ev = {"ph": "X", "cat": "python_function", "name": name, "pid": self.pid, "tid": self.tid, "ts": start,
              "dur": 0, "args": args}
        self.pys.append(ev)
        stack.append(("py", ev))
        try:
            yield ev
        finally:
            self._advance(125, 625)
            stack.pop()
            ev["dur"] = self.cursor[self.tid] - start

    @contextmanager
    def pys_(self, *names: str) -> Iterator[None]:
        with ExitStack() as stack:
            for name in names:
                stack.enter_context(self.py(name))
            yield

    @contextmanager
    def module(self, cls_name: str) -> Iterator[None]:
        idx = self.module_counts[cls_name]
        self.module_counts[cls_name] += 1
        src, line = _module_source(cls_name)
        with self.py(f"nn.Module: {cls_name}_{idx}", module_id=idx), \
                self.py("torch/nn/modules/module.py(1762): _call_impl"), self.py(f"{src}({line}): forward"):
            yield

    @contextmanager
    def thread(self, tid: int) -> Iterator[None]:
        prev = self.tid
        self.cursor[tid] = max(self.cursor.get(tid, 0), self.cursor[prev])
        self.open.setdefault(tid, [])
        self.tid = tid
        try:
            yield
        finally:
            self.tid = prev
            self.cursor[prev] = max(self.cursor[prev], self.cursor[tid])

    # ---- instances (ground truth) -----------------------------------------------------------------
    @contextmanager
    def instance_scope(self, inst: SyntheticInstance) -> Iterator[SyntheticInstance]:
        prev, self.instance = self.instance, inst
        self.instances.append(inst)
        try:
            yield inst
        finally:
            self.instance = prev

    # ---- runtime and device -----------------------------------------------------------------------
    def runtime(self, name: str) -> None:
        """A runtime call without device work (cudaStreamIsCapturing, cudaFuncSetAttribute, ...)."""
        start = self._advance(250, 1000)
        dur = self._q(125, 1250)
        args: dict[str, Any] = {}
        ext = self._current_ext()
        if ext is not None:
            args["External id"] = ext
        if self.gpu.amd:
            args["cid"] = _AMD_CID[name]
        else:
            args["cbid"] = _NV_CBID[name]
        args["correlation"] = self._corr()
        self.device.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid, "tid": self.tid,
                            "ts": start, "dur": dur, "args": args})
        self.cursor[self.tid] = start + dur

    def _gpu_start(self, launch_ts: int) -> int:
        earliest = max(self.gpu_free + self._q(750, 2500), launch_ts + self._q(3750, 8750))
        return _cdiv(earliest, _Q) * _Q

    def _flows(self, corr: int, cpu_ts: int, gpu_ts: int) -> tuple[dict, dict]:
        s = {"ph": "s", "id": corr, "pid": self.pid, "tid": self.tid, "ts": cpu_ts, "cat": "ac2g", "name": "ac2g"}
        f = {"ph": "f", "id": corr, "pid": 0, "tid": self.gpu.stream, "ts": gpu_ts, "cat": "ac2g", "name": "ac2g",
             "bp": "e"}
        return s, f

    def launch(self, k: _Kernel) -> dict:
        api_name, api_cat, code = _LAUNCH_API[(self.gpu.vendor, k.launch)]
        start = self._advance(375, 1500)
        rdur = self._q(2500, 7500)
        corr = self._corr()
        ext = self._current_ext()
        rargs: dict[str, Any] = {}
        if ext is not None:
            rargs["External id"] = ext
        if self.gpu.amd:
            rargs.update({"kernel": k.name, "cid": code, "correlation": corr, "grid": list(k.grid),
                          "block": list(k.block), "shared memory": k.smem})
        else:
            rargs.update({"cbid": code, "correlation": corr})
        runtime = {"ph": "X", "cat": api_cat, "name": api_name, "pid": self.pid, "tid": self.tid, "ts": start,
                   "dur": rdur, "args": rargs}
        kstart = self._gpu_start(start)
        kargs: dict[str, Any] = {}
        if ext is not None:
            kargs["External id"] = ext
        if self.gpu.amd:
            kargs.update({"device": 0, "stream": self.gpu.stream, "correlation": corr, "kind": "Dispatch Kernel",
                          "grid": list(k.grid), "block": list(k.block)})
        else:
            kargs.update(self._nv_kernel_stats(k, corr))
        kev = {"ph": "X", "cat": "kernel", "name": k.name, "pid": 0, "tid": self.gpu.stream, "ts": kstart,
               "dur": k.dur_ns, "args": kargs}
        self.gpu_free = kstart + k.dur_ns
        self.gpu_activity.append((kstart, self.gpu_free))
        s, f = self._flows(corr, start, kstart)
        self.device += [kev, f, runtime, s]
        self.cursor[self.tid] = start + rdur
        if self.instance is not None:
            self.instance.kernel_names.append(k.name)
            self.instance.kernel_dur_ns.append(k.dur_ns)
            self.instance.kernel_correlations.append(corr)
        return kev

    def _nv_kernel_stats(self, k: _Kernel, corr: int) -> dict[str, Any]:
        blocks = k.grid[0] * k.grid[1] * k.grid[2]
        threads = k.block[0] * k.block[1] * k.block[2]
        per_sm = blocks / self.gpu.num_sms
        warps = per_sm * _cdiv(threads, 32)
        resident_warps = min(64, _cdiv(threads, 32) * max(1, 65536 // max(1, k.regs * threads)))
        occupancy = round(100 * min(warps, resident_warps) / 64)
        return {"queued": 0, "device": 0, "context": 1, "stream": self.gpu.stream, "correlation": corr,
                "registers per thread": k.regs, "shared memory": k.smem, "blocks per SM": round(per_sm, 6),
                "warps per SM": round(warps, 6), "grid": list(k.grid), "block": list(k.block),
                "est. achieved occupancy %": min(occupancy, 100)}

    def _copy_like(self, api: str, cat: str, name: str, nbytes: int, dur_ns: int, extra_rt: dict[str, Any],
                   extra_dev: dict[str, Any]) -> None:
        start = self._advance(375, 1500)
        rdur = self._q(2500, 8750)
        corr = self._corr()
        ext = self._current_ext()
        rargs: dict[str, Any] = {} if ext is None else {"External id": ext}
        rargs.update(extra_rt)
        rargs["correlation"] = corr
        dstart = self._gpu_start(start)
        dargs: dict[str, Any] = {} if ext is None else {"External id": ext}
        dargs.update(extra_dev)
        dargs.update({"stream": self.gpu.stream, "correlation": corr})
        if self.gpu.amd:
            dargs["kind"] = name.split()[1]
        dargs.update({"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / dur_ns})
        runtime = {"ph": "X", "cat": "cuda_runtime", "name": api, "pid": self.pid, "tid": self.tid, "ts": start,
                   "dur": rdur, "args": rargs}
        dev = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": self.gpu.stream, "ts": dstart, "dur": dur_ns,
               "args": dargs}
        self.gpu_free = dstart + dur_ns
        self.gpu_activity.append((dstart, self.gpu_free))
        s, f = self._flows(corr, start, dstart)
        self.device += [dev, f, runtime, s]
        self.cursor[self.tid] = start + rdur

    def memcpy_h2d(self, nbytes: int) -> None:
        dur = max(_Q, _cdiv(nbytes, 20_000 * _Q) * _Q)  # pageable copies run at a few GB/s
        if self.gpu.amd:
            self._copy_like("hipMemcpyWithStream", "gpu_memcpy", "Memcpy HtoD (Host -> Device)", nbytes, dur,
                            {"cid": _AMD_CID["hipMemcpyWithStream"]}, {"device": 0})
        else:
            self._copy_like("cudaMemcpyAsync", "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", nbytes, dur,
                            {"cbid": _NV_CBID["cudaMemcpyAsync"]}, {"device": 0, "context": 1})

    def memset(self, nbytes: int) -> None:
        """cuBLAS on sm90+ zeroes a split-K semaphore before its GEMMs (NVIDIA only)."""
        self._copy_like("cudaMemsetAsync", "gpu_memset", "Memset (Device)", nbytes, 750,
                        {"cbid": _NV_CBID["cudaMemsetAsync"]}, {"device": 0, "context": 1})

    def synchronize(self) -> None:
        name = "hipDeviceSynchronize" if self.gpu.amd else "cudaDeviceSynchronize"
        start = self._advance(375, 1500)
        end = max(start + self._q(1500, 5000), self.gpu_free + self._q(1000, 3000))
        args: dict[str, Any] = {}
        if self.gpu.amd:
            args["cid"] = _AMD_CID[name]
        else:
            args["cbid"] = _NV_CBID[name]
        args["correlation"] = self._corr()
        self.device.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid, "tid": self.tid,
                            "ts": start, "dur": end - start, "args": args})
        self.cursor[self.tid] = end

    def link_fwd_bwd(self, fwd_op: dict, bwd_op: dict) -> None:
        fid = self.next_flow
        self.next_flow += 1
        self.fwdbwd.append({"ph": "s", "id": fid, "pid": self.pid, "tid": fwd_op["tid"], "ts": fwd_op["ts"],
                            "cat": "fwdbwd", "name": "fwdbwd"})
        self.fwdbwd.append({"ph": "f", "id": fid, "pid": self.pid, "tid": bwd_op["tid"], "ts": bwd_op["ts"],
                            "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})

    @contextmanager
    def annotation(self, name: str) -> Iterator[dict]:
        """A record_function range (ProfilerStep#N, vLLM's execute_... range) and its GPU projection."""
        first_gpu = len(self.gpu_activity)
        with self.op(name, cat="user_annotation") as ev:
            yield ev
        spans = self.gpu_activity[first_gpu:]
        if spans:
            start, end = min(s for s, _ in spans), max(e for _, e in spans)
            self.gpu_annotations.append({"ph": "X", "cat": "gpu_user_annotation", "name": ev["name"], "pid": 0,
                                         "tid": self.gpu.stream, "ts": start, "dur": end - start,
                                         "args": {"External id": ev["args"]["External id"]}})

    # ---- output -----------------------------------------------------------------------------------
    def ordered_events(self, first_ev_idx: int = 0) -> list[dict]:
        """CPU ops, python frames, fwd-bwd flows, runtime/device activity, GPU annotations (Kineto order)."""
        ops = sorted(self.ops, key=lambda e: (e["ts"], -e["dur"]))
        pys = sorted(self.pys, key=lambda e: (e["ts"], -e["dur"]))
        for i, ev in enumerate([*ops, *pys]):
            ev["args"]["Ev Idx"] = first_ev_idx + i
        return [*ops, *self.fwdbwd, *pys, *self.device, *self.gpu_annotations]

    def span(self) -> tuple[int, int]:
        timed = [e for e in self.ops + self.pys + self.device if "dur" in e]
        starts = [e["ts"] for e in timed]
        ends = [e["ts"] + e["dur"] for e in timed]
        return min(starts, default=self.t0), max(ends, default=self.t0)


_MODULE_SOURCES = (
    ("Llama", "transformers/models/llama/modeling_llama.py"),
    ("Qwen2", "transformers/models/qwen2/modeling_qwen2.py"),
    ("Mistral", "transformers/models/mistral/modeling_mistral.py"),
    ("Bert", "transformers/models/bert/modeling_bert.py"),
    ("GPT2", "transformers/models/gpt2/modeling_gpt2.py"),
    ("Linear", "torch/nn/modules/linear.py"),
    ("Attention", "vllm/attention/layer.py"),
)


def _module_source(cls_name: str) -> tuple[str, int]:
    src = next((path for prefix, path in _MODULE_SOURCES if cls_name.startswith(prefix)), "model.py")
    if cls_name == "Linear":
        return src, 125
    return src, 100 + zlib.crc32(cls_name.encode()) % 900


_PTR = "0x7f3a5c2e1b40"


# ----------------------------------------------------------------------------------------------------
# Small op trees shared by the flavours
# ----------------------------------------------------------------------------------------------------


def _transpose(b: _Builder, dims: list[int], strides: list[int], dtype: str, d0: int = 1, d1: int = 2) -> None:
    new_dims, new_strides = list(dims), list(strides)
    new_dims[d0], new_dims[d1] = dims[d1], dims[d0]
    new_strides[d0], new_strides[d1] = strides[d1], strides[d0]
    with b.op("aten::transpose", [_T(dims, dtype, strides), _S(d0), _S(d1)]):
        b.leaf("aten::as_strided", [_T(dims, dtype, strides), _L(new_dims), _L(new_strides), _N()])


def _empty(b: _Builder, dims: Sequence[int], dtype_code: int) -> None:
    b.leaf("aten::empty", [_L(dims), _S(dtype_code), _S(0), _N(), _N(), _N()])


def _empty_like(b: _Builder, dims: list[int], strides: list[int], dtype: str, code: int) -> None:
    with b.op("aten::empty_like", [_T(dims, dtype, strides), _N(), _N(), _N(), _N(), _N()]):
        b.leaf("aten::empty_strided", [_L(dims), _L(strides), _S(code), _S(0), _N(), _N()])


_SCALAR_CODE = {"bf16": 15, "fp16": 5, "fp32": 6}
_ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}  # c10::ScalarType as aten::empty prints it


def _copies(b: _Builder, c: SyntheticAttentionCall, n: int) -> None:
    """``t.contiguous()`` copies: aten::contiguous -> aten::clone -> aten::copy_ -> one copy kernel each."""
    at = _ATEN_T[c.dtype]
    dims, strides = _bhnd_view(c.batch, c.seq_q, c.heads_q, c.head_dim_qk)
    numel = math.prod(dims)
    for _ in range(n):
        with b.op("aten::contiguous", [_T(dims, at, strides), _S(0)]), \
                b.op("aten::clone", [_T(dims, at, strides), _S(0)]):
            _empty_like(b, dims, _contig(dims), at, _SCALAR_CODE[c.dtype])
            with b.op("aten::copy_", [_T(dims, at), _T(dims, at, strides), _S(False)]):
                b.launch(_copy_kernel(b.gpu, c.dtype, _ns(c.copy_kernel_us), numel))


def _fill_zero_int(b: _Builder, dur_ns: int) -> None:
    """``at::zeros({1}, kInt)``: the atomic counter ROCm's causal attention kernel needs."""
    with b.op("aten::zeros", [_L([1]), _S(3), _S(0), _N(), _N()]):
        b.leaf("aten::empty", [_L([1]), _S(3), _S(0), _N(), _N(), _N()])
        with b.op("aten::zero_", [_T([1], "int")]), b.op("aten::fill_", [_T([1], "int"), _S(0)]):
            b.launch(_fill_int_kernel(b.gpu, dur_ns))


def _gqa_head_sums(b: _Builder, c: SyntheticAttentionCall, dk_dims: list[int], dv_dims: list[int]) -> None:
    """GQA backward: dK/dV are computed per query head and summed over each group (``at::sum_out``)."""
    at, group = _ATEN_T[c.dtype], c.heads_q // c.hkv
    for dims in (dk_dims, dv_dims):
        exp = [dims[0], dims[1], c.heads_q, dims[3]]
        grouped = [dims[0], dims[1], c.hkv, group, dims[3]]
        with b.op("aten::reshape", [_T(exp, at), _L(grouped)]):
            b.leaf("aten::view", [_T(exp, at), _L(grouped)])
        with b.op("aten::sum", [_T(grouped, at), _L([3]), _S(False), _N()]):
            b.launch(_sum_kernel(c.dtype, _ns(c.aux_kernel_us), math.prod(dims)))


# ----------------------------------------------------------------------------------------------------
# Forward emitters
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Fwd:
    """What the backward pass needs from one forward instance."""

    call_index: int
    repeat_index: int
    call: SyntheticAttentionCall
    # (autograd node name, sequence number, forward op, dims the node's kernels work on)
    seqs: list[tuple[str, int, dict, list[list[int]]]]


def _emit_forward(b: _Builder, c: SyntheticAttentionCall, ci: int, ri: int) -> _Fwd:
    fwd = _Fwd(ci, ri, c, [])
    if c.flavour in _SDPA_FLAVOURS:
        _fwd_sdpa(b, c, fwd)
    elif c.flavour in ("flash_attn", "flash_attn_varlen"):
        _fwd_flash_attn(b, c, fwd)
    elif c.flavour == "unfused":
        _fwd_unfused(b, c, fwd)
    else:
        _fwd_vllm(b, c, fwd)
    return fwd


_SDPA_NODE = {"aten_flash": "ScaledDotProductFlashAttentionBackward0",
              "aten_efficient": "ScaledDotProductEfficientAttentionBackward0",
              "aten_cudnn": "ScaledDotProductCudnnAttentionBackward0"}


def _swap12(pair: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
    dims, strides = pair
    return [dims[0], dims[2], dims[1], dims[3]], [strides[0], strides[2], strides[1], strides[3]]


def _sdpa_geometry(c: SyntheticAttentionCall) -> dict[str, tuple[list[int], list[int]]]:
    """(dims, strides) of the SDPA-facing (B, H, N, d) tensors and of their (B, N, H, d) transposes."""
    if c.input_layout == "bhnd":
        def outer(n: int, h: int, d: int) -> tuple[list[int], list[int]]:
            return [c.batch, h, n, d], _contig([c.batch, h, n, d])
    else:
        def outer(n: int, h: int, d: int) -> tuple[list[int], list[int]]:
            return _bhnd_view(c.batch, n, h, d)
    g = {"q": outer(c.seq_q, c.heads_q, c.head_dim_qk), "k": outer(c.skv, c.hkv, c.head_dim_qk),
         "v": outer(c.skv, c.hkv, c.dv), "o": outer(c.seq_q, c.heads_q, c.dv),
         "mask": ([c.batch, 1, c.seq_q, c.skv], _contig([c.batch, 1, c.seq_q, c.skv]))}
    for key in ("q", "k", "v", "o"):
        g[key + "i"] = _swap12(g[key])
    return g


def _fwd_sdpa(b: _Builder, c: SyntheticAttentionCall, fwd: _Fwd) -> None:
    at, g = _ATEN_T[c.dtype], _sdpa_geometry(c)
    seq = b.new_seq() if c.with_backward else None
    mask = _TP(g["mask"], at) if c.attn_mask else _N()
    scale = _S(c.scale) if c.scale is not None else _N()
    slots = [_TP(g["q"], at), _TP(g["k"], at), _TP(g["v"], at), mask, _S(c.dropout), _S(c.causal), scale,
             _S(c.gqa)]
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "aten::scaled_dot_product_attention",
                             None, seq)
    with b.py("transformers/integrations/sdpa_attention.py(89): sdpa_attention_forward"), \
            b.py("<built-in function scaled_dot_product_attention>"), b.instance_scope(inst), \
            b.op("aten::scaled_dot_product_attention", slots, seq=seq) as outer:
        inst.op_external_id = outer["args"]["External id"]
        _copies(b, c, c.copies_before)
        if c.flavour == "aten_flash":
            _sdpa_flash_inner(b, c, seq)
        elif c.flavour == "aten_efficient":
            _sdpa_efficient_inner(b, c, seq)
        else:
            _sdpa_cudnn_inner(b, c, seq)
        _copies(b, c, c.copies_after)
    if seq is not None:
        fwd.seqs.append((_SDPA_NODE[c.flavour], seq, outer, []))


def _sdpa_flash_inner(b: _Builder, c: SyntheticAttentionCall, seq: int | None) -> None:
    at, g, sc = _ATEN_T[c.dtype], _sdpa_geometry(c), c.softmax_scale
    slots = [_TP(g["q"], at), _TP(g["k"], at), _TP(g["v"], at), _S(c.dropout), _S(c.causal), _S(False), _S(sc)]
    qb, kb, vb = g["qi"], g["ki"], g["vi"]
    with b.op("aten::_scaled_dot_product_flash_attention", slots, seq=seq):
        for key in ("q", "k", "v"):
            _transpose(b, *g[key], at)
        inner = [_TP(qb, at), _TP(kb, at), _TP(vb, at), _N(), _N(), _S(c.seq_q), _S(c.skv), _S(c.dropout),
                 _S(c.causal), _S(False), _S(sc), _N(), _N(), _N(), _N()]
        with b.op("aten::_flash_attention_forward", inner):
            _empty_like(b, *qb, at, _SCALAR_CODE[c.dtype])
            if b.gpu.amd:
                b.runtime("hipStreamGetDevice")
                _empty(b, [c.batch * c.heads_q, c.seq_q], 6)
                if c.causal:
                    _fill_zero_int(b, _ns(c.aux_kernel_us))
                b.launch(_attn_fwd_aotriton(c, b.gpu))
                b.leaf("aten::view", [_T([c.batch * c.heads_q, c.seq_q], "float"), _L([c.batch, c.heads_q, c.seq_q])])
            else:
                _empty(b, [c.batch, c.heads_q, c.seq_q], 6)
                b.runtime("cudaStreamIsCapturing")
                _empty(b, [], 4)
                _empty(b, [], 4)
                b.runtime("cudaFuncSetAttribute")
                b.launch(_flash_fwd_kernel(c, _PYTORCH_FLASH, _ns(c.kernel_us), varlen=False))
            _empty(b, [0], _SCALAR_CODE[c.dtype])
        _transpose(b, *g["oi"], at)


def _sdpa_efficient_inner(b: _Builder, c: SyntheticAttentionCall, seq: int | None) -> None:
    at, g, sc = _ATEN_T[c.dtype], _sdpa_geometry(c), c.softmax_scale
    bias_dims = [c.batch, c.heads_q, c.seq_q, c.skv]
    bias_strides = [c.seq_q * c.skv, 0, c.skv, 1]
    bias = _T(bias_dims, at, bias_strides) if c.attn_mask else _N()
    slots = [_TP(g["q"], at), _TP(g["k"], at), _TP(g["v"], at), bias, _S(c.with_backward), _S(c.dropout),
             _S(c.causal), _S(sc)]
    qb, kb, vb = g["qi"], g["ki"], g["vi"]
    with b.op("aten::_scaled_dot_product_efficient_attention", slots, seq=seq):
        if c.attn_mask:
            with b.op("aten::expand", [_TP(g["mask"], at), _L(bias_dims), _S(False)]):
                b.leaf("aten::as_strided", [_TP(g["mask"], at), _L(bias_dims), _L(bias_strides), _N()])
        for key in ("q", "k", "v"):
            _transpose(b, *g[key], at)
        inner = [_TP(qb, at), _TP(kb, at), _TP(vb, at), bias, _N(), _N(), _N(), _N(), _S(c.dropout),
                 _S(1 if c.causal else 0), _S(c.with_backward), _S(sc), _N(), _N()]
        with b.op("aten::_efficient_attention_forward", inner):
            _empty(b, [c.batch, c.seq_q, c.heads_q, c.dv], _SCALAR_CODE[c.dtype])
            _empty(b, [c.batch, c.heads_q, _cdiv(c.seq_q, 32) * 32 if c.with_backward else 0], 6)
            if b.gpu.amd:
                b.runtime("hipStreamGetDevice")
                if c.causal:
                    _fill_zero_int(b, _ns(c.aux_kernel_us))
                b.launch(_attn_fwd_aotriton(c, b.gpu))
            else:
                b.runtime("cudaFuncSetAttribute")
                b.launch(_mem_eff_fwd(c))
        _transpose(b, *g["oi"], at)


def _sdpa_cudnn_inner(b: _Builder, c: SyntheticAttentionCall, seq: int | None) -> None:
    at, g, sc = _ATEN_T[c.dtype], _sdpa_geometry(c), c.softmax_scale
    bias = _TP(g["mask"], at) if c.attn_mask else _N()
    slots = [_TP(g["q"], at), _TP(g["k"], at), _TP(g["v"], at), bias, _S(c.with_backward), _S(c.dropout),
             _S(c.causal), _S(False), _S(sc)]
    with b.op("aten::_scaled_dot_product_cudnn_attention", slots, seq=seq):
        _empty(b, [c.batch, c.seq_q, c.heads_q, c.dv], _SCALAR_CODE[c.dtype])
        b.leaf("aten::permute", [_T([c.batch, c.seq_q, c.heads_q, c.dv], at), _L([0, 2, 1, 3])])
        if c.with_backward:
            _empty(b, [c.batch, c.heads_q, c.seq_q, 1], 6)
        b.launch(_cudnn_kernel(c, b.gpu, backward=False))


def _flash_attn_slots(c: SyntheticAttentionCall, *, varlen: bool) -> dict[str, Any]:
    at = _ATEN_T[c.dtype]
    if varlen:
        tq, tk = sum(c.q_lens), sum(c.kv_lens)
        q = ([tq, c.heads_q, c.head_dim_qk], _contig([tq, c.heads_q, c.head_dim_qk]))
        k = ([tk, c.hkv, c.head_dim_qk], _contig([tk, c.hkv, c.head_dim_qk]))
        v = ([tk, c.hkv, c.dv], _contig([tk, c.hkv, c.dv]))
        o = ([tq, c.heads_q, c.dv], _contig([tq, c.heads_q, c.dv]))
        lse = [c.heads_q, tq]
    else:
        q = _bnhd(c.batch, c.seq_q, c.heads_q, c.head_dim_qk)
        k = _bnhd(c.batch, c.skv, c.hkv, c.head_dim_qk)
        v = _bnhd(c.batch, c.skv, c.hkv, c.dv)
        o = _bnhd(c.batch, c.seq_q, c.heads_q, c.dv)
        lse = [c.batch, c.heads_q, c.seq_q]
    wl, wr = c.window if c.window is not None else (-1, -1)
    return {"q": _TP(q, at), "k": _TP(k, at), "v": _TP(v, at), "o": _TP(o, at), "lse": _T(lse, "float"),
            "cu": _T([c.batch + 1], "int"), "wl": _S(wl), "wr": _S(wr), "q_dims": q, "k_dims": k, "v_dims": v}


def _fwd_flash_attn(b: _Builder, c: SyntheticAttentionCall, fwd: _Fwd) -> None:
    varlen = c.flavour == "flash_attn_varlen"
    s, at, sc = _flash_attn_slots(c, varlen=varlen), _ATEN_T[c.dtype], c.softmax_scale
    func = "FlashAttnVarlenFunc" if varlen else "FlashAttnFunc"
    custom = "flash_attn::_flash_attn_varlen_forward" if varlen else "flash_attn::_flash_attn_forward"
    # autograd.Function.apply records every argument it can type: tensors, numbers, the window tuple
    user_scale = _S(c.scale) if c.scale is not None else _N()
    window = _L(list(c.window) if c.window is not None else [-1, -1])
    apply_args = [s["q"], s["k"], s["v"]]
    if varlen:
        apply_args += [s["cu"], s["cu"], _S(c.seq_q), _S(c.skv)]
    apply_args += [_S(c.dropout), user_scale, _S(c.causal), window, _S(0.0), _N(), _S(False), _S(False)]
    apply_args += [_N(), _S(True)] if varlen else [_S(True)]
    if varlen:
        args = [s["q"], s["k"], s["v"], s["cu"], s["cu"], _S(c.seq_q), _S(c.skv), _S(c.dropout), _S(sc),
                _S(c.causal), s["wl"], s["wr"], _S(0.0), _N(), _S(False), _N(), _N(), _N()]
    else:
        args = [s["q"], s["k"], s["v"], _S(c.dropout), _S(sc), _S(c.causal), s["wl"], s["wr"], _S(0.0), _N(),
                _S(False)]
    seq = b.new_seq() if c.with_backward else None
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, func, None, seq)
    entry = "flash_attn_varlen_func" if varlen else "flash_attn_func"
    with b.py(f"flash_attn/flash_attn_interface.py({1373 if varlen else 1196}): {entry}"), \
            b.py("torch/autograd/function.py(575): apply"), \
            b.py(f"<built-in method apply of FunctionMeta object at {_PTR}>"), b.instance_scope(inst), \
            b.op(func, apply_args, seq=seq) as outer:
        inst.op_external_id = outer["args"]["External id"]
        with b.py(f"flash_attn/flash_attn_interface.py({900 if varlen else 838}): forward"):
            _copies(b, c, c.copies_before)
            with b.py("torch/_ops.py(1158): __call__"), b.op(custom, args), \
                    b.py(f"flash_attn/flash_attn_interface.py({170 if varlen else 91}): _{custom.split('::_')[1]}"), \
                    b.py(f"<built-in method {'varlen_fwd' if varlen else 'fwd'} of PyCapsule object at {_PTR}>"):
                _empty_like(b, *s["q_dims"], at, _SCALAR_CODE[c.dtype])
                _empty(b, s["lse"][0], 6)
                _empty(b, [2], 4)
                if b.gpu.amd:
                    b.launch(_ck_fmha(c, "FmhaFwdKernel", _ns(c.kernel_us), "main",
                                      (_cdiv(c.seq_q, 128), c.heads_q, c.batch)))
                else:
                    b.runtime("cudaFuncSetAttribute")
                    b.launch(_flash_fwd_kernel(c, _FLASH_ATTN_PKG, _ns(c.kernel_us), varlen=varlen))
            _copies(b, c, c.copies_after)
    if seq is not None:
        fwd.seqs.append((f"{func}Backward", seq, outer, []))


def _fwd_unfused(b: _Builder, c: SyntheticAttentionCall, fwd: _Fwd) -> None:
    at = _ATEN_T[c.dtype]
    bh, nq, nk, d, dv = c.batch * c.heads_q, c.seq_q, c.skv, c.head_dim_qk, c.dv
    q4, k4, v4 = [c.batch, c.heads_q, nq, d], [c.batch, c.heads_q, nk, d], [c.batch, c.heads_q, nk, dv]
    s4 = [c.batch, c.heads_q, nq, nk]
    aux, main = _ns(c.aux_kernel_us), _ns(c.kernel_us)
    grad = c.with_backward
    fam = c.module_names[-1]
    src, line = _module_source(fam)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "eager_attention_forward", None,
                             None)

    def seq() -> int | None:
        return b.new_seq() if grad else None

    with b.instance_scope(inst), b.py(f"{src}({line + 40}): eager_attention_forward"):
        _copies(b, c, c.copies_before)
        if c.gqa:
            with b.py(f"{src}({line - 60}): repeat_kv"):
                for dims in ([c.batch, c.hkv, nk, d], [c.batch, c.hkv, nk, dv]):
                    group = c.heads_q // c.hkv
                    exp = [dims[0], dims[1], group, dims[2], dims[3]]
                    s_exp = seq()
                    with b.op("aten::expand", [_T([dims[0], dims[1], 1, dims[2], dims[3]], at), _L(exp), _S(False)],
                              seq=s_exp) as exp_op:
                        b.leaf("aten::as_strided", [_T(dims, at), _L(exp), _L([0] * 5), _N()])
                    if s_exp is not None:
                        fwd.seqs.append(("ExpandBackward0", s_exp, exp_op, [exp]))
                    with b.op("aten::reshape", [_T(exp, at, [0] * 5), _L([dims[0], c.heads_q, dims[2], dims[3]])]), \
                            b.op("aten::clone", [_T(exp, at, [0] * 5), _S(0)]):
                        b.leaf("aten::empty", [_L(exp), _S(_SCALAR_CODE[c.dtype]), _S(0), _N(), _N(), _N()])
                        with b.op("aten::copy_", [_T(exp, at), _T(exp, at, [0] * 5), _S(False)]):
                            b.launch(_copy_kernel(b.gpu, c.dtype, aux, math.prod(exp), role="aux"))
        s_qk = seq()
        with b.py(f"<built-in method matmul of type object at {_PTR}>"), \
                b.op("aten::matmul", [_T(q4, at), _T([*k4[:2], d, nk], at, [nk * d * c.heads_q, nk * d, 1, d])],
                     seq=s_qk) as mm1:
            b.leaf("aten::view", [_T(q4, at), _L([bh, nq, d])])
            with b.op("aten::bmm", [_T([bh, nq, d], at), _T([bh, d, nk], at, [nk * d, 1, d])], seq=s_qk):
                b.launch(_gemm_kernel(b.gpu, c.dtype, nq, nk, main, "tn", "main"))
            b.leaf("aten::_unsafe_view", [_T([bh, nq, nk], at), _L(s4)])
        if s_qk is not None:
            fwd.seqs.append(("BmmBackward0", s_qk, mm1, [[bh, nq, d], [bh, d, nk]]))
        s_mul = seq()
        with b.op("aten::mul", [_T(s4, at), _S(c.softmax_scale)], seq=s_mul) as mul:
            functor = _scalar_mul_functor(at)
            b.launch(_vec_kernel(b.gpu, functor, 2, aux, math.prod(s4), elem_bytes=_ELEM_BYTES[c.dtype]))
        if s_mul is not None:
            fwd.seqs.append(("MulBackward0", s_mul, mul, [s4]))
        if c.causal or c.attn_mask:
            mask4 = [c.batch, 1, nq, nk]
            with b.op("aten::add", [_T(s4, at), _T(mask4, at), _S(1)], seq=seq()):
                b.launch(_vec_kernel(b.gpu, f"at::native::CUDAFunctor_add<{at}>", 3, aux, math.prod(s4),
                                     elem_bytes=_ELEM_BYTES[c.dtype]))
        s_sm = seq()
        with b.py("torch/nn/functional.py(2140): softmax"), \
                b.py(f"<built-in method softmax of Tensor object at {_PTR}>"), \
                b.op("aten::softmax", [_T(s4, at), _S(-1), _N()], seq=s_sm) as sm:
            with b.op("aten::_softmax", [_T(s4, at), _S(-1), _S(False)], seq=s_sm):
                b.launch(_softmax_kernel(c.dtype, nk, main, bh * nq, backward=False, role="main"))
        if s_sm is not None:
            fwd.seqs.append(("SoftmaxBackward0", s_sm, sm, [s4]))
        if c.dropout:
            with b.op("aten::dropout", [_T(s4, at), _S(c.dropout), _S(True)], seq=seq()), \
                    b.op("aten::native_dropout", [_T(s4, at), _S(c.dropout), _S(True)]):
                name = (f"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{at}, float, unsigned int, "
                        f"1, 4, bool>(at::cuda::detail::TensorInfo<{at} const, unsigned int>, at::cuda::detail::"
                        f"TensorInfo<{at}, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned "
                        f"int, float, at::PhiloxCudaState)")
                b.launch(_Kernel(name, aux, (max(1, _cdiv(math.prod(s4), 1024)), 1, 1), (256, 1, 1)))
        s_pv = seq()
        with b.py(f"<built-in method matmul of type object at {_PTR}>"), \
                b.op("aten::matmul", [_T(s4, at), _T(v4, at)], seq=s_pv) as mm2:
            b.leaf("aten::view", [_T(s4, at), _L([bh, nq, nk])])
            with b.op("aten::bmm", [_T([bh, nq, nk], at), _T([bh, nk, dv], at)], seq=s_pv):
                b.launch(_gemm_kernel(b.gpu, c.dtype, nq, dv, main, "nn", "main"))
            b.leaf("aten::_unsafe_view", [_T([bh, nq, dv], at), _L([c.batch, c.heads_q, nq, dv])])
        if s_pv is not None:
            fwd.seqs.append(("BmmBackward0", s_pv, mm2, [[bh, nq, nk], [bh, nk, dv]]))
        _copies(b, c, c.copies_after)


def _vllm_kernels(c: SyntheticAttentionCall, gpu: _Gpu) -> tuple[_Kernel, list[_Kernel]]:
    """(reshape_and_cache_flash kernel, attention kernels) for the GPU's vLLM attention backend."""
    tokens, d = sum(c.q_lens), c.head_dim_qk
    aux, main = _ns(c.aux_kernel_us), _ns(c.kernel_us)
    cu = _HIP_T[c.dtype] if gpu.amd else _CUDA_T[c.dtype]
    cache = (f"void vllm::reshape_and_cache_flash_kernel<{cu}, {cu}, (vllm::Fp8KVCacheDataType)0>({cu} const*, "
             f"{cu} const*, {cu}*, {cu}*, long const*, long, long, long, long, long, int, int, int, float const*, "
             "float const*)")
    cache_k = _Kernel(cache, aux, (tokens, 1, 1), (min(1024, c.hkv * d), 1, 1), "native", 42, 0, "aux")
    decode = max(c.q_lens) == 1
    if gpu.amd:
        return cache_k, [_Kernel("kernel_unified_attention_2d", main, (_cdiv(tokens, 16), c.hkv, 1), (256, 1, 1),
                                 "triton", 128, 32768, "main")]
    if gpu.arch == "sm100":
        tn = {"bf16": "Bfloat16", "fp16": "Fp16"}[c.dtype]
        mask = "SlidingOrChunkedCausal" if c.window is not None else "Causal" if c.causal else "Dense"
        tail = "Q8Kv128PersistentSwapsAbForGen" if decode else "Q128Kv128PersistentContext"
        name = f"fmhaSm100aKernel_Qkv{tn}O{tn}H{d}PagedKv{mask}P{c.page_size}VarSeq{tail}"
        return cache_k, [_Kernel(name, main, (_cdiv(c.seq_q, 128), c.heads_q, c.batch), (512, 1, 1), "driver_ex",
                                 128, 42160, "main")]
    t, dd = _CUTLASS_T[c.dtype], _round_hdim(d)
    traits = (f"flash::Flash_fwd_kernel_traits<{dd}, 64, 128, 4, false, false, {t}, "
              f"flash::Flash_kernel_traits<{dd}, 64, 128, 4, {t}> >")
    local = c.window is not None and not c.causal
    splits = max(2, min(8, _cdiv(gpu.num_sms, max(1, c.batch * c.hkv)))) if decode else 1
    flags = [c.causal and not decode, local, False, False, d == dd, False, splits > 1, False]
    main_k = _Kernel(f"void flash::flash_fwd_splitkv_kernel<{traits}, {', '.join(_tf(f) for f in flags)}>"
                     f"(flash::Flash_fwd_params)", main,
                     (_cdiv(c.seq_q, 64), splits if splits > 1 else c.batch, c.batch * c.heads_q if splits > 1
                      else c.heads_q), (128, 1, 1), "native", 255, 49152, "main")
    kernels = [main_k]
    if splits > 1:
        kernels.append(_Kernel(f"void flash::flash_fwd_splitkv_combine_kernel<{traits}, 4, 3, {_tf(d == dd)}>"
                               f"(flash::Flash_fwd_params)", aux, (_cdiv(tokens * c.heads_q, 4), 1, 1), (128, 1, 1),
                               "native", 64, 0, "aux"))
    return cache_k, kernels


def _fwd_vllm(b: _Builder, c: SyntheticAttentionCall, fwd: _Fwd) -> None:
    at = _ATEN_T[c.dtype]
    tokens, d, dv = sum(c.q_lens), c.head_dim_qk, c.dv
    row = (c.heads_q + 2 * c.hkv) * d  # q, k and v are slices of one fused qkv projection
    q = _T([tokens, c.heads_q, d], at, [row, d, 1])
    k = _T([tokens, c.hkv, d], at, [row, d, 1])
    v = _T([tokens, c.hkv, dv], at, [row, dv, 1])
    out = _T([tokens, c.heads_q, dv], at)
    blocks_per_seq = [_cdiv(n, c.page_size) for n in c.kv_lens]
    num_blocks = max(1024, _cdiv(sum(blocks_per_seq), 1024) * 1024)
    cache_dims = [num_blocks, c.page_size, c.hkv, d]
    cache = _T(cache_dims, at)
    cache_k, attn_kernels = _vllm_kernels(c, b.gpu)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "vllm::unified_attention_with_output",
                             None, None)
    with b.py("vllm/attention/layer.py(290): forward"), b.py("torch/_ops.py(1244): __call__"), \
            b.py(f"<built-in method unified_attention_with_output of pybind11_builtins.pybind11_detail_function_"
                 f"record_v1_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1 object at {_PTR}>"), \
            b.instance_scope(inst), \
            b.op("vllm::unified_attention_with_output", [q, k, v, out, _N(), _N(), _N()]) as outer:
        inst.op_external_id = outer["args"]["External id"]
        backend = ("vllm/v1/attention/backends/rocm_attn.py(310): forward" if b.gpu.amd else
                   "vllm/v1/attention/backends/flashinfer.py(1064): forward" if b.gpu.arch == "sm100" else
                   "vllm/v1/attention/backends/flash_attn.py(455): forward")
        with b.py("vllm/attention/layer.py(852): unified_attention_with_output"), b.py(backend):
            _copies(b, c, c.copies_before)
            with b.py("torch/_ops.py(1244): __call__"), \
                    b.op("_C_cache_ops::reshape_and_cache_flash",
                         [k, v, cache, cache, _T([tokens], "long int"), _N(), _T([], "float"), _T([], "float")]):
                b.launch(cache_k)
            if b.gpu.amd:
                with b.py("vllm/attention/ops/triton_unified_attention.py(640): unified_attention"):
                    b.launch(attn_kernels[0])
            elif b.gpu.arch == "sm100":
                with b.py("flashinfer/prefill.py(3330): trtllm_batch_context_with_kv_cache"):
                    b.launch(attn_kernels[0])
            else:
                wl, wr = c.window if c.window is not None else (-1, -1)
                fa_args = [q, cache, cache, out, _T([c.batch + 1], "int"), _N(), _T([c.batch], "int"), _N(),
                           _T([c.batch, max(blocks_per_seq)], "int"), _N(), _S(c.seq_q), _S(c.skv), _S(0.0),
                           _S(c.softmax_scale), _S(False), _S(c.causal), _S(wl), _S(wr), _S(0.0), _S(False), _N()]
                with b.py("vllm/vllm_flash_attn/flash_attn_interface.py(233): flash_attn_varlen_func"), \
                        b.py("torch/_ops.py(1158): __call__"), b.op("_vllm_fa2_C::varlen_fwd", fa_args):
                    b.runtime("cudaFuncSetAttribute")
                    for kern in attn_kernels:
                        b.launch(kern)
            _copies(b, c, c.copies_after)


# ----------------------------------------------------------------------------------------------------
# Backward emitters (run on the autograd thread)
# ----------------------------------------------------------------------------------------------------


@contextmanager
def _node(b: _Builder, node: str, seq: int, fwd_op: dict, grad_slots: Sequence[_Slot]) -> Iterator[dict]:
    with b.op(f"autograd::engine::evaluate_function: {node}", seq=seq, fwd_tid=1) as outer:
        b.link_fwd_bwd(fwd_op, outer)
        with b.op(node, grad_slots, seq=seq, fwd_tid=1):
            yield outer


def _emit_backward(b: _Builder, fwd: _Fwd) -> None:
    c = fwd.call
    if c.flavour in _SDPA_FLAVOURS:
        _bwd_sdpa(b, fwd)
    elif c.flavour in ("flash_attn", "flash_attn_varlen"):
        _bwd_flash_attn(b, fwd)
    else:
        _bwd_unfused(b, fwd)


def _bwd_sdpa(b: _Builder, fwd: _Fwd) -> None:
    c = fwd.call
    node, seq, fwd_op, _ = fwd.seqs[0]
    at, g, sc = _ATEN_T[c.dtype], _sdpa_geometry(c), c.softmax_scale
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "bwd", c.flavour, node, None, seq)
    qb, kb, vb, ob = g["qi"], g["ki"], g["vi"], g["oi"]
    tq, tk, tv, to = (_TP(g["q"], at), _TP(g["k"], at), _TP(g["v"], at), _TP(g["o"], at))
    lse = _T([c.batch, c.heads_q, c.seq_q], "float")
    philox = _T([], "long int")
    with b.instance_scope(inst), _node(b, node, seq, fwd_op, [to]):
        inst.op_external_id = b.ops[-1]["args"]["External id"]
        if c.flavour == "aten_flash":
            slots = [to, tq, tk, tv, to, lse, _N(), _N(), _S(c.seq_q), _S(c.skv), _S(c.dropout), _S(c.causal),
                     philox, philox, _S(sc)]
            with b.op("aten::_scaled_dot_product_flash_attention_backward", slots):
                for key in ("o", "q", "k", "v", "o"):
                    _transpose(b, *g[key], at)
                inner = [_TP(ob, at), _TP(qb, at), _TP(kb, at), _TP(vb, at), _TP(ob, at), lse, _N(), _N(),
                         _S(c.seq_q), _S(c.skv), _S(c.dropout), _S(c.causal), philox, philox, _S(sc), _N(), _N()]
                with b.op("aten::_flash_attention_backward", inner):
                    for dims in (qb, kb, vb):
                        _empty_like(b, *dims, at, _SCALAR_CODE[c.dtype])
                    if b.gpu.amd:
                        _empty(b, [c.batch, c.heads_q, c.seq_q], 6)
                        for kern in _aotriton_bwd(c):
                            b.launch(kern)
                    else:
                        if c.gqa:
                            _empty(b, [c.batch, c.skv, c.heads_q, c.head_dim_qk], _SCALAR_CODE[c.dtype])
                            _empty(b, [c.batch, c.skv, c.heads_q, c.dv], _SCALAR_CODE[c.dtype])
                        _empty(b, [c.batch, c.heads_q, _cdiv(c.seq_q, 128) * 128], 6)
                        _empty(b, [c.batch, _cdiv(c.seq_q, 128) * 128, c.heads_q, _round_hdim(c.head_dim_qk)], 6)
                        for kern in _flash_bwd_kernels(c, _PYTORCH_FLASH, varlen=False):
                            b.launch(kern)
                        if c.gqa:
                            _gqa_head_sums(b, c, kb[0], vb[0])
                for dims in (qb, kb, vb):
                    _transpose(b, *dims, at)
        elif c.flavour == "aten_efficient":
            lse_e = _T([c.batch, c.heads_q, _cdiv(c.seq_q, 32) * 32], "float")
            bias = _T([c.batch, c.heads_q, c.seq_q, c.skv], at, [c.seq_q * c.skv, 0, c.skv, 1]) if c.attn_mask \
                else _N()
            slots = [to, tq, tk, tv, bias, to, lse_e, philox, philox, _S(c.dropout),
                     _L(["True", "True", "True", "False"]), _S(c.causal), _S(sc)]
            with b.op("aten::_scaled_dot_product_efficient_attention_backward", slots):
                for key in ("o", "q", "k", "v", "o"):
                    _transpose(b, *g[key], at)
                inner = [_TP(ob, at), _TP(qb, at), _TP(kb, at), _TP(vb, at), bias, _TP(ob, at), _N(), _N(), _S(c.seq_q),
                         _S(c.skv), lse_e, _S(c.dropout), philox, philox, _S(1 if c.causal else 0), _S(False),
                         _S(sc), _N(), _N(), _S(False)]
                with b.op("aten::_efficient_attention_backward", inner):
                    for dims in (qb, kb, vb):
                        _empty_like(b, *dims, at, _SCALAR_CODE[c.dtype])
                    if b.gpu.amd:
                        for kern in _aotriton_bwd(c):
                            b.launch(kern)
                    else:
                        _empty(b, [c.batch, c.heads_q, c.seq_q], 6)
                        b.runtime("cudaFuncSetAttribute")
                        b.launch(_mem_eff_bwd(c))
                for dims in (qb, kb, vb):
                    _transpose(b, *dims, at)
        else:
            slots = [to, tq, tk, tv, to, _T([c.batch, c.heads_q, c.seq_q, 1], "float"), philox, philox,
                     _TP(g["mask"], at) if c.attn_mask else _N(), _N(), _N(), _S(c.seq_q), _S(c.skv),
                     _S(c.dropout), _S(c.causal), _S(sc)]
            with b.op("aten::_scaled_dot_product_cudnn_attention_backward", slots):
                for dims in (qb, kb, vb):
                    _empty(b, dims[0], _SCALAR_CODE[c.dtype])
                b.launch(_cudnn_kernel(c, b.gpu, backward=True))


def _bwd_flash_attn(b: _Builder, fwd: _Fwd) -> None:
    c = fwd.call
    varlen = c.flavour == "flash_attn_varlen"
    node, seq, fwd_op, _ = fwd.seqs[0]
    s, at, sc = _flash_attn_slots(c, varlen=varlen), _ATEN_T[c.dtype], c.softmax_scale
    rng_state = _T([2], "long int")
    if varlen:
        args = [s["o"], s["q"], s["k"], s["v"], s["o"], s["lse"], s["q"], s["k"], s["v"], s["cu"], s["cu"],
                _S(c.seq_q), _S(c.skv), _S(c.dropout), _S(sc), _S(c.causal), s["wl"], s["wr"], _S(0.0), _N(),
                _S(False), rng_state]
        custom = "flash_attn::_flash_attn_varlen_backward"
    else:
        args = [s["o"], s["q"], s["k"], s["v"], s["o"], s["lse"], s["q"], s["k"], s["v"], _S(c.dropout), _S(sc),
                _S(c.causal), s["wl"], s["wr"], _S(0.0), _N(), _S(False), rng_state]
        custom = "flash_attn::_flash_attn_backward"
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "bwd", c.flavour, node, None, seq)
    with b.instance_scope(inst), _node(b, node, seq, fwd_op, [s["o"]]):
        inst.op_external_id = b.ops[-1]["args"]["External id"]
        with b.py("torch/autograd/function.py(307): apply"), \
                b.py(f"flash_attn/flash_attn_interface.py({970 if varlen else 880}): backward"):
            for key in ("q_dims", "k_dims", "v_dims"):
                _empty_like(b, *s[key], at, _SCALAR_CODE[c.dtype])
            with b.py("torch/_ops.py(1158): __call__"), b.op(custom, args), \
                    b.py(f"flash_attn/flash_attn_interface.py({268 if varlen else 213}): _{custom.split('::_')[1]}"), \
                    b.py(f"<built-in method {'varlen_bwd' if varlen else 'bwd'} of PyCapsule object at {_PTR}>"):
                if c.gqa:
                    _empty(b, [*s["k_dims"][0][:-2], c.heads_q, c.head_dim_qk], _SCALAR_CODE[c.dtype])
                    _empty(b, [*s["v_dims"][0][:-2], c.heads_q, c.dv], _SCALAR_CODE[c.dtype])
                _empty(b, [c.batch, c.heads_q, _cdiv(c.seq_q, 128) * 128], 6)
                if b.gpu.amd:
                    g = (_cdiv(c.seq_q, 128), c.heads_q, c.batch)
                    b.launch(_ck_fmha(c, "FmhaBwdOGradDotOKernel", _ns(c.aux_kernel_us), "aux", g))
                    b.launch(_ck_fmha(c, "FmhaBwdDQDKDVKernel", _ns(c.bwd_us), "main", (_cdiv(c.skv, 128),
                                                                                        c.heads_q, c.batch)))
                    b.launch(_ck_fmha(c, "FmhaBwdConvertQGradKernel", _ns(c.aux_kernel_us), "aux", g))
                else:
                    _empty(b, [c.batch, _cdiv(c.seq_q, 128) * 128, c.heads_q, _round_hdim(c.head_dim_qk)], 6)
                    for kern in _flash_bwd_kernels(c, _FLASH_ATTN_PKG, varlen=varlen):
                        b.launch(kern)
                if c.gqa:
                    kd, vd = s["k_dims"][0], s["v_dims"][0]
                    if varlen:  # (total, H, d) tensors: sum over the head group the same way
                        kd, vd = [1, *kd], [1, *vd]
                    _gqa_head_sums(b, c, kd, vd)


def _bwd_unfused(b: _Builder, fwd: _Fwd) -> None:
    c = fwd.call
    at = _ATEN_T[c.dtype]
    bh, nq, nk = c.batch * c.heads_q, c.seq_q, c.skv
    s4 = [c.batch, c.heads_q, nq, nk]
    aux, main = _ns(c.aux_kernel_us), _ns(c.bwd_us)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "bwd", c.flavour, "eager_attention_forward", None,
                             None)
    with b.instance_scope(inst):
        for node, seq, fwd_op, dims in reversed(fwd.seqs):
            if node == "BmmBackward0":
                # out = A @ B; dA = dOut @ B^T (m x k), dB = A^T @ dOut (k x n)
                (bh_, m, k), (_, _, n) = dims
                out_dims = [bh_, m, n]
                with _node(b, node, seq, fwd_op, [_T(out_dims, at)]):
                    b.leaf("aten::transpose", [_T(dims[1], at), _S(1), _S(2)])
                    with b.op("aten::bmm", [_T(out_dims, at), _T([bh_, n, k], at, [k * n, 1, n])]):
                        b.launch(_gemm_kernel(b.gpu, c.dtype, m, k, main, "nt", "main"))
                    b.leaf("aten::transpose", [_T(dims[0], at), _S(1), _S(2)])
                    with b.op("aten::bmm", [_T([bh_, k, m], at, [m * k, 1, k]), _T(out_dims, at)]):
                        b.launch(_gemm_kernel(b.gpu, c.dtype, k, n, main, "tn", "main"))
            elif node == "SoftmaxBackward0":
                with _node(b, node, seq, fwd_op, [_T(s4, at)]), \
                        b.op("aten::_softmax_backward_data",
                             [_T(s4, at), _T(s4, at), _S(-1), _S(_SCALAR_CODE[c.dtype])]):
                    b.launch(_softmax_kernel(c.dtype, nk, main, bh * nq, backward=True, role="main"))
            elif node == "MulBackward0":
                functor = _scalar_mul_functor(at)
                with _node(b, node, seq, fwd_op, [_T(s4, at)]), b.op("aten::mul", [_T(s4, at), _S(c.softmax_scale)]):
                    b.launch(_vec_kernel(b.gpu, functor, 2, aux, math.prod(s4), elem_bytes=_ELEM_BYTES[c.dtype]))
            elif node == "ExpandBackward0":
                (exp,) = dims
                with _node(b, node, seq, fwd_op, [_T(exp, at)]), \
                        b.op("aten::sum", [_T(exp, at), _L([2]), _S(True), _N()]):
                    b.launch(_sum_kernel(c.dtype, aux, math.prod(exp)))


# ----------------------------------------------------------------------------------------------------
# Fillers: non-attention ops between the attention calls
# ----------------------------------------------------------------------------------------------------


def _filler(b: _Builder, kind: int, dtype: str, tokens: int, hidden: int) -> None:
    """One non-attention op launching exactly one kernel (kind cycles linear, add, layer_norm, silu, mul)."""
    at = _ATEN_T[dtype]
    x = [1, tokens, hidden]
    numel = tokens * hidden
    if kind % 5 == 0:
        _linear(b, dtype, tokens, hidden, hidden, b._q(15_000, 60_000))
    elif kind % 5 == 1:
        with b.py(f"<built-in method add of Tensor object at {_PTR}>"), \
                b.op("aten::add", [_T(x, at), _T(x, at), _S(1)]):
            b.launch(_vec_kernel(b.gpu, f"at::native::CUDAFunctor_add<{at}>", 3, b._q(2_000, 8_000), numel, "filler",
                                 _ELEM_BYTES[dtype]))
    elif kind % 5 == 2:
        with b.py("torch/nn/functional.py(2900): layer_norm"), \
                b.op("aten::layer_norm", [_T(x, at), _L([hidden]), _T([hidden], at), _T([hidden], at), _S(1e-5),
                                          _S(True)]), \
                b.op("aten::native_layer_norm", [_T(x, at), _L([hidden]), _T([hidden], at), _T([hidden], at),
                                                 _S(1e-5)]):
            _empty(b, x, _SCALAR_CODE[dtype])
            _empty(b, [tokens], 6)
            _empty(b, [tokens], 6)
            name = (f"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<{at}, float>(int, float, "
                    f"{at} const*, {at} const*, {at} const*, float*, float*, {at}*)")
            b.launch(_Kernel(name, b._q(3_000, 6_000), (tokens, 1, 1), (32, 4, 1), "native", 34, 24, "filler"))
    elif kind % 5 == 3:
        lam = (f"at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::operator()"
               f"() const::{{lambda()#7}}::operator()() const::{{lambda({at})#1}}")
        with b.py("torch/nn/functional.py(2380): silu"), b.op("aten::silu", [_T(x, at)]):
            b.launch(_vec_kernel(b.gpu, lam, 2, b._q(2_000, 8_000), numel, "filler", _ELEM_BYTES[dtype]))
    else:
        functor = _mul_functor(at)
        with b.py(f"<built-in method mul of Tensor object at {_PTR}>"), \
                b.op("aten::mul", [_T(x, at), _T(x, at)]):
            b.launch(_vec_kernel(b.gpu, functor, 3, b._q(2_000, 8_000), numel, "filler", _ELEM_BYTES[dtype]))


def _linear(b: _Builder, dtype: str, tokens: int, k: int, n: int, dur_ns: int) -> None:
    at = _ATEN_T[dtype]
    with b.module("Linear"), b.py("<built-in function linear>"), \
            b.op("aten::linear", [_T([1, tokens, k], at), _T([n, k], at), _N()]):
        with b.op("aten::t", [_T([n, k], at)]):
            _transpose(b, [n, k], [k, 1], at, 0, 1)
        with b.op("aten::matmul", [_T([1, tokens, k], at), _T([k, n], at, [1, k])]):
            b.leaf("aten::view", [_T([1, tokens, k], at), _L([tokens, k])])
            with b.op("aten::mm", [_T([tokens, k], at), _T([k, n], at, [1, k])]):
                if not b.gpu.amd and b.gpu.arch in ("sm90", "sm100"):
                    b.memset(4)
                    b.runtime("cudaFuncSetAttribute")
                b.launch(_gemm_kernel(b.gpu, dtype, tokens, n, dur_ns, "tn", "filler"))
            b.leaf("aten::_unsafe_view", [_T([tokens, n], at), _L([1, tokens, n])])


def _elementwise(b: _Builder, op: str, functor: str, n_ptrs: int, dims: list[int], dtype: str, dur_ns: int,
                 extra: Sequence[_Slot] = ()) -> None:
    at = _ATEN_T[dtype]
    with b.op(op, [_T(dims, at), *extra]):
        b.launch(_vec_kernel(b.gpu, functor, n_ptrs, dur_ns, math.prod(dims), "filler", _ELEM_BYTES[dtype]))


def _rmsnorm(b: _Builder, tokens: int, hidden: int, dtype: str) -> None:
    """HF LlamaRMSNorm: to(fp32), pow, mean, add, rsqrt, mul, to(bf16), mul: eight small kernels."""
    at, x = _ATEN_T[dtype], [1, tokens, hidden]
    with b.module("LlamaRMSNorm"):
        with b.op("aten::to", [_T(x, at), _S(6), _S(False), _S(False), _N()]), \
                b.op("aten::_to_copy", [_T(x, at), _S(6), _N(), _N(), _N(), _S(False), _N()]):
            _empty_like(b, x, _contig(x), at, 6)
            with b.op("aten::copy_", [_T(x, "float"), _T(x, at), _S(False)]):
                b.launch(_copy_kernel(b.gpu, dtype, b._q(2_500, 4_000), math.prod(x), "filler"))
        pow_f = ("at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>("
                 "at::TensorIteratorBase&, float)::{lambda(float)#2}")
        _elementwise(b, "aten::pow", pow_f, 2, x, "fp32", b._q(2_000, 3_500), [_S(2)])
        mean = ("at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>")
        with b.op("aten::mean", [_T(x, "float"), _L([-1]), _S(True), _N()]):
            b.launch(_Kernel(f"void at::native::reduce_kernel<512, 1, {mean} >({mean})", b._q(2_500, 4_000),
                             (tokens, 1, 1), (32, 16, 1), "native", 32, 16, "filler"))
        _elementwise(b, "aten::add", "at::native::CUDAFunctor_add<float>", 2, [1, tokens, 1], "fp32",
                     b._q(1_500, 2_500), [_S(1e-6), _S(1)])
        rsqrt = ("at::native::(anonymous namespace)::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
                 "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}")
        _elementwise(b, "aten::rsqrt", rsqrt, 2, [1, tokens, 1], "fp32", b._q(1_500, 2_500))
        mulf = "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >"
        _elementwise(b, "aten::mul", mulf, 3, x, "fp32", b._q(2_500, 4_000), [_T([1, tokens, 1], "float")])
        with b.op("aten::to", [_T(x, "float"), _S(_SCALAR_CODE[dtype]), _S(False), _S(False), _N()]), \
                b.op("aten::_to_copy", [_T(x, "float"), _S(_SCALAR_CODE[dtype]), _N(), _N(), _N(), _S(False), _N()]):
            _empty_like(b, x, _contig(x), "float", _SCALAR_CODE[dtype])
            with b.op("aten::copy_", [_T(x, at), _T(x, "float"), _S(False)]):
                b.launch(_copy_kernel(b.gpu, dtype, b._q(2_500, 4_000), math.prod(x), "filler"))
        mul = _mul_functor(at)
        _elementwise(b, "aten::mul", mul, 3, x, dtype, b._q(2_000, 3_500), [_T([hidden], at)])


def _rope(b: _Builder, c: SyntheticAttentionCall) -> None:
    """HF apply_rotary_pos_emb on q and k: mul, neg, cat, mul, add each (ten element-wise kernels)."""
    at = _ATEN_T[c.dtype]
    src, line = _module_source(c.module_names[-1])
    with b.py(f"{src}({max(1, line - 120)}): apply_rotary_pos_emb"):
        for heads in (c.heads_q, c.hkv):
            x = [c.batch, heads, c.seq_q, c.head_dim_qk]
            half = [c.batch, heads, c.seq_q, c.head_dim_qk // 2]
            mul, cos = _mul_functor(at), [_T([1, 1, c.seq_q, c.head_dim_qk], at)]
            _elementwise(b, "aten::mul", mul, 3, x, c.dtype, b._q(2_000, 4_000), cos)
            neg = (f"at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{{lambda()#2}}::operator()() const::"
                   f"{{lambda()#8}}::operator()() const::{{lambda({at})#1}}")
            _elementwise(b, "aten::neg", neg, 2, half, c.dtype, b._q(1_500, 3_000))
            cat = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::"
                   "(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1>(at::native::(anonymous namespace)"
                   "::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::"
                   "(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous namespace)::"
                   "TensorSizeStride<unsigned int, 4u>, int, unsigned int)")
            with b.op("aten::cat", [_L([]), _S(-1)]):
                b.launch(_Kernel(cat, b._q(2_000, 4_000), (max(1, _cdiv(math.prod(x), 4096)), 2, 1), (128, 1, 1),
                                 "native", 30, 0, "filler"))
            _elementwise(b, "aten::mul", mul, 3, x, c.dtype, b._q(2_000, 4_000), cos)
            _elementwise(b, "aten::add", f"at::native::CUDAFunctor_add<{at}>", 3, x, c.dtype, b._q(2_000, 4_000),
                         [_T(x, at), _S(1)])


# ----------------------------------------------------------------------------------------------------
# build_trace
# ----------------------------------------------------------------------------------------------------


def _resolve_gpu(gpu_name: str | None, calls: Sequence[SyntheticAttentionCall]) -> _Gpu:
    named = {c.gpu for c in calls if c.gpu is not None}
    if gpu_name is None:
        if len(named) > 1:
            raise InputError(f"calls name several GPUs ({', '.join(sorted(named))}): one trace holds one GPU; "
                             "pass gpu_name or make the calls agree")
        gpu_name = named.pop() if named else DEFAULT_GPU
    elif named - {gpu_name}:
        raise InputError(f"gpu_name={gpu_name!r} disagrees with the calls' gpu {sorted(named)}: make them agree")
    gpu = _gpu(gpu_name)
    for i, c in enumerate(calls):
        if c.flavour == "aten_cudnn" and gpu.amd:
            raise InputError(f"calls[{i}].flavour='aten_cudnn' needs an NVIDIA GPU, not {gpu.name!r}")
    return gpu


def _metadata_events(b: _Builder, ts: int, with_autograd: bool) -> list[dict]:
    cpu, gpu = b.pid, 0
    events = [
        {"name": "process_name", "ph": "M", "ts": ts, "pid": cpu, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": ts, "pid": cpu, "tid": 0, "args": {"labels": "CPU"}},
        {"name": "process_sort_index", "ph": "M", "ts": ts, "pid": cpu, "tid": 0, "args": {"sort_index": cpu}},
        {"name": "process_name", "ph": "M", "ts": ts, "pid": gpu, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": ts, "pid": gpu, "tid": 0, "args": {"labels": "GPU 0"}},
        {"name": "process_sort_index", "ph": "M", "ts": ts, "pid": gpu, "tid": 0, "args": {"sort_index": 5000000}},
        {"name": "thread_name", "ph": "M", "ts": ts, "pid": gpu, "tid": b.gpu.stream,
         "args": {"name": f"stream {b.gpu.stream} "}},
        {"name": "thread_sort_index", "ph": "M", "ts": ts, "pid": gpu, "tid": b.gpu.stream,
         "args": {"sort_index": b.gpu.stream}},
        {"name": "thread_name", "ph": "M", "ts": ts, "pid": cpu, "tid": b.main_tid,
         "args": {"name": f"thread {b.main_tid} (python3)"}},
        {"name": "thread_sort_index", "ph": "M", "ts": ts, "pid": cpu, "tid": b.main_tid,
         "args": {"sort_index": b.main_tid}},
    ]
    if with_autograd:
        events += [
            {"name": "thread_name", "ph": "M", "ts": ts, "pid": cpu, "tid": b.autograd_tid,
             "args": {"name": f"thread {b.autograd_tid} (pt_autograd_0)"}},
            {"name": "thread_sort_index", "ph": "M", "ts": ts, "pid": cpu, "tid": b.autograd_tid,
             "args": {"sort_index": b.autograd_tid}},
        ]
    return events


def _span_events(start: int, end: int) -> tuple[list[dict], list[dict]]:
    span = [{"ph": "X", "cat": "Trace", "ts": start, "dur": end - start, "pid": "Spans", "tid": "PyTorch Profiler",
             "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
            {"name": "process_sort_index", "ph": "M", "ts": start, "pid": "Spans", "tid": 0,
             "args": {"sort_index": 536870912}}]
    instants = [{"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
                 "tid": "Trace PyTorch Profiler", "ts": start},
                {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": end + 1_000_000}]
    return span, instants


def _header(gpu: _Gpu, seed: int, name: str, distributed_info: dict | None) -> dict[str, Any]:
    head: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [{"id": 0, **gpu.props}], **gpu.versions}
    if distributed_info is not None:
        head["distributedInfo"] = distributed_info
    trace_id = "".join(f"{zlib.crc32(f'{name}:{seed}:{i}'.encode()):08X}" for i in range(4))
    head.update({"record_shapes": 1, "with_stack": 1, "with_modules": 1, "profile_memory": 0, "with_flops": 0,
                 "trace_id": trace_id, "displayTimeUnit": "ms", "baseTimeNanoseconds": _BASE_TIME_NS})
    return head


def _to_us(events: list[dict]) -> None:
    for ev in events:
        ev["ts"] = ev["ts"] / 1000
        if "dur" in ev:
            ev["dur"] = ev["dur"] / 1000


def _vllm_batch_annotation(c: SyntheticAttentionCall) -> str:
    """vLLM's per-step range, e.g. ``execute_context_1(888_788544)_generation_0(0)``.

    Context (prefill) requests: count, then (query tokens _ sum of query x context lengths); generation
    (decode) requests: count, then (their query tokens). The real trace's single 888-token prefill reads
    888_788544 = 888 x 888; the second context number and the generation number are our reading of it.
    """
    ctx = [(q, k) for q, k in zip(c.q_lens, c.kv_lens, strict=True) if q > 1]
    gen = [q for q in c.q_lens if q == 1]
    return (f"execute_context_{len(ctx)}({sum(q for q, _ in ctx)}_{sum(q * k for q, k in ctx)})"
            f"_generation_{len(gen)}({sum(gen)})")


def _distribute(n: int, slots: int) -> list[int]:
    """n items spread as evenly as possible over slots (earlier slots get the remainder last)."""
    return [(n * (i + 1)) // slots - (n * i) // slots for i in range(slots)]


def build_trace_with_truth(
    calls: Sequence[SyntheticAttentionCall],
    *,
    gpu_name: str | None = None,
    extra_filler_kernels: int = 0,
    seed: int = 0,
    with_profiler_step: bool = True,
    step: int = 1,
    with_memcpy: bool = True,
    distributed_info: dict | None = None,
) -> SyntheticTrace:
    """Build one profiled step; return the Kineto dict and what each attention instance contains."""
    calls = list(calls)
    for i, c in enumerate(calls):
        if not isinstance(c, SyntheticAttentionCall):
            raise InputError(f"calls[{i}] is a {type(c).__name__}: expected SyntheticAttentionCall")
    if isinstance(extra_filler_kernels, bool) or not isinstance(extra_filler_kernels, int) or extra_filler_kernels < 0:
        raise InputError(f"extra_filler_kernels={extra_filler_kernels!r} is invalid: expected an integer >= 0")
    gpu = _resolve_gpu(gpu_name, calls)
    b = _Builder(gpu, random.Random(seed))
    slots = [(ci, ri) for ci, c in enumerate(calls) for ri in range(c.repeat)]
    fillers = _distribute(extra_filler_kernels, len(slots) + 1)
    filler_kind = 0
    forwards: list[_Fwd] = []
    dtype = calls[0].dtype if calls else "bf16"
    with b.py("train.py(112): <module>"), b.py("train.py(97): main"):
        step_scope = b.annotation(f"ProfilerStep#{step}") if with_profiler_step else nullcontext()
        vllm = next((c for c in calls if c.flavour == "vllm_paged"), None)
        batch_scope = b.annotation(_vllm_batch_annotation(vllm)) if vllm is not None else nullcontext()
        with step_scope, b.py("train.py(64): run_step"), batch_scope:
            if with_memcpy:
                with b.py(f"<built-in method to of Tensor object at {_PTR}>"), \
                        b.op("aten::to", [_T([8, 2048], "long int"), _N(), _N(), _N(), _S(False), _S(False), _N()]), \
                        b.op("aten::_to_copy", [_T([8, 2048], "long int"), _S(4), _N(), _N(), _N(), _S(False), _N()]):
                    _empty(b, [8, 2048], 4)
                    with b.op("aten::copy_", [_T([8, 2048], "long int"), _T([8, 2048], "long int"), _S(False)]):
                        b.memcpy_h2d(8 * 2048 * 8)
            slot = 0
            for ci, c in enumerate(calls):
                top, leaf = c.module_names[:-2], c.module_names[-2:]
                with ExitStack() as model_frames:
                    for m in top:
                        model_frames.enter_context(b.module(m))
                    for ri in range(c.repeat):
                        for _ in range(fillers[slot]):
                            _filler(b, filler_kind, c.dtype, c.seq_q * c.batch, c.heads_q * c.head_dim_qk)
                            filler_kind += 1
                        slot += 1
                        with ExitStack() as layer_frames:
                            for m in leaf:
                                layer_frames.enter_context(b.module(m))
                            forwards.append(_emit_forward(b, c, ci, ri))
            for _ in range(fillers[-1]):
                _filler(b, filler_kind, dtype, 2048, 4096)
                filler_kind += 1
            with_bwd = [f for f in forwards if f.call.with_backward]
            if with_bwd:
                with b.py("torch/_tensor.py(648): backward"), b.py("torch/autograd/__init__.py(353): backward"), \
                        b.py("torch/autograd/graph.py(824): _engine_run_backward"), \
                        b.py(f"<built-in method run_backward of torch._C._EngineBase object at {_PTR}>"), \
                        b.thread(b.autograd_tid):
                    for fwd in reversed(with_bwd):
                        _emit_backward(b, fwd)
                        b.idle(2_000, 12_000)
            with b.py("torch/cuda/__init__.py(1040): synchronize"), b.py("<built-in function _cuda_synchronize>"):
                b.synchronize()
    events = b.ordered_events()
    start, end = b.span()
    span, instants = _span_events(start - 150_000, end + 50_000)
    events += _metadata_events(b, start - 125_000, bool(with_bwd)) + span + instants
    _to_us(events)
    trace = _header(gpu, seed, "synthetic", distributed_info)
    trace["traceEvents"] = events
    trace["traceName"] = f"synthetic_seed{seed}.json"
    return SyntheticTrace(trace, b.instances)


def build_trace(
    calls: Sequence[SyntheticAttentionCall],
    *,
    gpu_name: str | None = None,
    extra_filler_kernels: int = 0,
    seed: int = 0,
    with_profiler_step: bool = True,
    step: int = 1,
    with_memcpy: bool = True,
    distributed_info: dict | None = None,
) -> dict[str, Any]:
    """A realistic Kineto trace dict holding ``calls`` (see the module docstring for the conventions)."""
    return build_trace_with_truth(
        calls, gpu_name=gpu_name, extra_filler_kernels=extra_filler_kernels, seed=seed,
        with_profiler_step=with_profiler_step, step=step, with_memcpy=with_memcpy,
        distributed_info=distributed_info,
    ).trace


def write_trace(trace: dict[str, Any], path: Path, gz: bool | None = None) -> Path:
    """Write atomically; gzip when ``gz`` is True, or when it is None and the name ends in ``.gz``."""
    path = Path(path)
    data = orjson.dumps(trace)
    if gz if gz is not None else path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return write_bytes_atomic(path, data)


# ----------------------------------------------------------------------------------------------------
# generate_large_trace: one step built once, replicated as text with shifted times and ids
# ----------------------------------------------------------------------------------------------------

_NUM = "\ue000"
_NUM_END = "\ue001"
_INS = "\ue002"
_INS_END = "\ue003"


@dataclass
class _FieldTable:
    kinds: list[str] = field(default_factory=list)
    bases: list[int] = field(default_factory=list)

    def num(self, kind: str, base: int) -> str:
        self.kinds.append(kind)
        self.bases.append(int(base))
        return f"{_NUM}{len(self.kinds) - 1}{_NUM_END}"

    def ins(self, kind: str, base: int) -> str:
        self.kinds.append(kind)
        self.bases.append(int(base))
        return f"{_INS}{len(self.kinds) - 1}{_INS_END}"


def _templatize(events: list[dict], table: _FieldTable, py_first: int) -> list[dict]:
    """Replace per-step values (times, ids, step number) with sentinels recorded in ``table``."""
    out = []
    for ev in events:
        e = dict(ev)
        e["ts"] = table.num("time", ev["ts"])
        if "dur" in ev:  # durations are the same in every step: written once, already in µs
            e["dur"] = ev["dur"] / 1000
        if e.get("cat") in ("user_annotation",) and e["name"].startswith("ProfilerStep#"):
            e["name"] = "ProfilerStep#" + table.ins("step", int(e["name"].split("#")[1]))
        if e.get("cat") == "gpu_user_annotation":
            e["name"] = "ProfilerStep#" + table.ins("step", int(e["name"].split("#")[1]))
        if e.get("ph") in ("s", "f"):
            e["id"] = table.num("corr" if e["cat"] == "ac2g" else "flow", ev["id"])
        if "args" in ev:
            args = dict(ev["args"])
            for key, kind in (("External id", "ext"), ("correlation", "corr"), ("Python id", "py"),
                              ("Ev Idx", "ev"), ("Sequence number", "seq")):
                if key in args:
                    args[key] = table.num(kind, args[key])
            parent = args.get("Python parent id")
            if parent is not None and parent >= py_first:
                args["Python parent id"] = table.num("py", parent)
            e["args"] = args
        out.append(e)
    return out


_SENTINEL = re.compile(f'"{_NUM}(\\d+){_NUM_END}"|{_INS}(\\d+){_INS_END}')


def _compile_template(events: list[dict], table: _FieldTable) -> tuple[str, list[int]]:
    """%-format string of the step's events and the field index of each placeholder, in text order."""
    text = ",".join(orjson.dumps(e).decode() for e in events).replace("%", "%%")
    order: list[int] = []

    def sub(m: re.Match[str]) -> str:
        idx = int(m.group(1) or m.group(2))
        order.append(idx)
        return "%d.%03d" if table.kinds[idx] == "time" else "%d"

    return _SENTINEL.sub(sub, text), order


def _large_step(b: _Builder, gpu: _Gpu, layers: int, step_no: int, attn: SyntheticAttentionCall) -> None:
    tokens, hidden = attn.batch * attn.seq_q, attn.heads_q * attn.head_dim_qk
    kv_hidden = attn.hkv * attn.head_dim_qk
    dt = attn.dtype
    with b.annotation(f"ProfilerStep#{step_no}"), b.py("serve.py(41): forward_step"), b.module("LlamaForCausalLM"), \
            b.module("LlamaModel"):
        for _ in range(layers):
            with b.module("LlamaDecoderLayer"):
                _rmsnorm(b, tokens, hidden, dt)
                with b.module("LlamaAttention"):
                    _linear(b, dt, tokens, hidden, hidden, b._q(20_000, 40_000))
                    _linear(b, dt, tokens, hidden, kv_hidden, b._q(8_000, 14_000))
                    _linear(b, dt, tokens, hidden, kv_hidden, b._q(8_000, 14_000))
                    _rope(b, attn)
                    fwd = _emit_forward(b, attn, 0, 0)
                    del fwd
                    _linear(b, dt, tokens, hidden, hidden, b._q(20_000, 40_000))
                add = f"at::native::CUDAFunctor_add<{_ATEN_T[dt]}>"
                _elementwise(b, "aten::add", add, 3, [1, tokens, hidden], dt, b._q(3_000, 5_000))
                _rmsnorm(b, tokens, hidden, dt)
                with b.module("LlamaMLP"):
                    _linear(b, dt, tokens, hidden, 4 * hidden, b._q(60_000, 90_000))
                    _linear(b, dt, tokens, hidden, 4 * hidden, b._q(60_000, 90_000))
                    at = _ATEN_T[dt]
                    silu = (f"at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::"
                            f"operator()() const::{{lambda()#7}}::operator()() const::{{lambda({at})#1}}")
                    _elementwise(b, "aten::silu", silu, 2, [1, tokens, 4 * hidden], dt, b._q(6_000, 9_000))
                    mul = _mul_functor(at)
                    _elementwise(b, "aten::mul", mul, 3, [1, tokens, 4 * hidden], dt, b._q(8_000, 12_000))
                    _linear(b, dt, tokens, 4 * hidden, hidden, b._q(60_000, 90_000))
                _elementwise(b, "aten::add", add, 3, [1, tokens, hidden], dt, b._q(3_000, 5_000))
        with b.py("torch/cuda/__init__.py(1040): synchronize"), b.py("<built-in function _cuda_synchronize>"):
            b.synchronize()
    b.idle(20_000, 40_000)


def generate_large_trace(
    n_events: int,
    path: Path,
    *,
    gpu_name: str = DEFAULT_GPU,
    seed: int = 0,
    layers_per_step: int = 32,
    attention: SyntheticAttentionCall | None = None,
) -> int:
    """Write a Llama-like serving trace of at least ``n_events`` events; return the number written.

    One ProfilerStep (``layers_per_step`` decoder layers: RMSNorm, QKV/O/MLP GEMMs, RoPE, one attention
    call, residual adds) is built with the same machinery as build_trace, then repeated as text with
    every time and id shifted per step, so a million events take a few seconds. ``.gz`` paths are
    gzip-compressed (level 1).
    """
    if isinstance(n_events, bool) or not isinstance(n_events, int) or n_events < 1:
        raise InputError(f"n_events={n_events!r} is invalid: expected an integer >= 1")
    if isinstance(layers_per_step, bool) or not isinstance(layers_per_step, int) or layers_per_step < 1:
        raise InputError(f"layers_per_step={layers_per_step!r} is invalid: expected an integer >= 1")
    attn = attention or SyntheticAttentionCall(flavour="aten_flash", batch=1, heads_q=32, heads_kv=8, seq_q=1024,
                                               head_dim_qk=128, causal=True, scale=128 ** -0.5, kernel_us=70.0)
    if attn.with_backward:
        raise InputError("attention.with_backward=True is invalid for generate_large_trace: expected an inference call")
    gpu = _resolve_gpu(gpu_name, [attn])
    b = _Builder(gpu, random.Random(seed))
    with b.py("serve.py(120): <module>") as root0, b.py("serve.py(88): main") as root1:
        py_first = b.next_py
        step_start = b.now()
        _large_step(b, gpu, layers_per_step, 1, attn)
        step_end = max(b.now(), b.gpu_free)
    roots = [root0, root1]
    b.pys = [p for p in b.pys if p["args"]["Python id"] >= py_first]
    step_events = b.ordered_events(first_ev_idx=len(roots))
    table = _FieldTable()
    template, order = _compile_template(_templatize(step_events, table, py_first), table)
    per_step = len(step_events)
    fixed = 20 + len(roots)  # root frames, metadata, span and instant events
    n_steps = max(1, _cdiv(max(0, n_events - fixed), per_step))
    period = step_end - step_start + _Q * 200
    strides = {"time": period, "ext": b.next_ext - 1, "corr": b.next_corr - _FIRST_CORRELATION,
               "py": b.next_py - py_first, "ev": _ev_count(step_events), "seq": b.next_seq - _FIRST_SEQUENCE,
               "flow": b.next_flow - 1, "step": 1}
    bases = np.asarray(table.bases, dtype=np.int64)
    kinds = table.kinds
    stride_vec = np.asarray([strides[k] for k in kinds], dtype=np.int64)
    cols_field = np.asarray(order, dtype=np.int64)
    is_time = np.asarray([kinds[i] == "time" for i in order])
    values = bases[cols_field][None, :] + np.arange(n_steps, dtype=np.int64)[:, None] * stride_vec[cols_field][None, :]
    # time placeholders take two numbers (µs and the ns remainder); interleave them in text order
    width = len(order) + int(is_time.sum())
    flat = np.empty((n_steps, width), dtype=np.int64)
    pos = np.cumsum(np.where(is_time, 2, 1)) - np.where(is_time, 2, 1)
    flat[:, pos] = np.where(is_time[None, :], values // 1000, values)
    flat[:, pos[is_time] + 1] = values[:, is_time] % 1000
    template_bytes = template.encode()
    chunks = [template_bytes % tuple(row) for row in flat.tolist()]
    total_end = step_start + n_steps * period
    for r in roots:
        r["dur"] = total_end + _Q * 40 - r["ts"]
    head_events = [dict(r) for r in roots]
    for i, r in enumerate(head_events):
        r["args"] = {**r["args"], "Ev Idx": i}
    tail = _metadata_events(b, step_start - 125_000, False)
    span, instants = _span_events(min(r["ts"] for r in roots) - 150_000, total_end + 50_000)
    tail += span + instants
    _to_us(head_events)
    _to_us(tail)
    header = _header(gpu, seed, "large", None)
    header["traceEvents"] = []
    header["traceName"] = f"synthetic_large_{n_steps}steps.json"
    head_text = orjson.dumps(header).decode()
    cut = head_text.index('"traceEvents":[]') + len('"traceEvents":[')
    data = b"".join([head_text[:cut].encode(), b",".join(orjson.dumps(e) for e in head_events), b",",
                     b",".join(chunks), b",", b",".join(orjson.dumps(e) for e in tail), head_text[cut:].encode()])
    path = Path(path)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=1, mtime=0)
    write_bytes_atomic(path, data)
    return len(head_events) + n_steps * per_step + len(tail)


def _ev_count(events: list[dict]) -> int:
    """Number of events carrying an ``Ev Idx`` (CPU ops and python frames)."""
    return sum(1 for e in events if "Ev Idx" in e.get("args", {}))
