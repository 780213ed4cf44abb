"""The spec of one synthetic attention call: what to emit, checked before anything is written.

``SyntheticAttentionCall`` names the flavour (which library and op tree), the shapes, dtype, mask, the
duration of every kernel, repeats and backward; invalid combinations raise ``InputError`` naming the field
and what is allowed. ``demo_calls()`` is the mix ``make demo`` writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.synthetic.gpus import known_gpus

FLAVOURS = (
    "aten_flash",
    "aten_efficient",
    "aten_cudnn",
    "flash_attn",
    "flash_attn_varlen",
    "unfused",
    "vllm_paged",
    "vllm_unified",
    "sglang_prefill",
    "sglang_decode",
    "sage",
    "aiter_flash",
    "flashmla",
)
DTYPES = ("bf16", "fp16", "fp32")

# flavours grouped by what they can express (the validation below and the default scale use these)
_SDPA_FLAVOURS = ("aten_flash", "aten_efficient", "aten_cudnn")
# serving engines' paged attention: per-request lengths, inference only
PAGED_FLAVOURS = ("vllm_paged", "vllm_unified", "sglang_prefill", "sglang_decode", "flashmla")
INFERENCE_ONLY = (*PAGED_FLAVOURS, "sage", "aiter_flash")
# aiter's kernels and vLLM's ROCm Triton backend
AMD_ONLY = ("sglang_prefill", "sglang_decode", "sage", "aiter_flash", "vllm_unified")
# FlashMLA's CUDA kernels (DeepSeek MLA decode: one latent KV head of head_dim_qk, V its first head_dim_v columns)
NVIDIA_ONLY = ("flashmla",)
_FLASH_ONLY_HALF = ("aten_flash", "aten_cudnn", "flash_attn", "flash_attn_varlen", *INFERENCE_ONLY)
_WINDOW_FLAVOURS = ("flash_attn", "flash_attn_varlen", "vllm_paged")
_SEQLEN_FLAVOURS = ("flash_attn_varlen", *PAGED_FLAVOURS)


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
    outermost attention op, before / after the inner op (siblings for ``unfused``; for ``sage``, between the
    quantization and the attention launch).

    ``seqlens_q`` / ``seqlens_kv`` give per-sequence lengths (``flash_attn_varlen`` and the paged serving
    flavours ``vllm_paged``, ``vllm_unified``, ``sglang_prefill``, ``sglang_decode``, ``flashmla``); when given,
    ``seq_q`` / ``seq_kv`` are replaced by their maxima. ``graph_batch``: the token count a serving step pads to (the
    captured graph's batch size), written in its step annotation; default the step's tokens. ``scale=None``
    leaves the scale argument of ``scaled_dot_product_attention`` / ``flash_attn_func`` empty (the inner ops
    still get the default scale). ``input_layout`` is the memory layout of the (B, H, N, d) tensors handed to SDPA:
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
    graph_batch: int | None = None

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
            if self.flavour not in _SEQLEN_FLAVOURS:
                raise _bad("seqlens_q", self.seqlens_q, "None unless flavour is one of " + ", ".join(_SEQLEN_FLAVOURS))
            if len(self.seqlens_q) != self.batch or min(self.seqlens_q, default=0) < 1:
                raise _bad("seqlens_q", self.seqlens_q, f"{self.batch} (batch) lengths, each >= 1")
            self._set("seq_q", max(self.seqlens_q))
        if self.seqlens_kv is not None:
            if self.flavour not in _SEQLEN_FLAVOURS:
                raise _bad("seqlens_kv", self.seqlens_kv,
                           "None unless flavour is one of " + ", ".join(_SEQLEN_FLAVOURS))
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
        if self.gpu is not None and self.gpu not in known_gpus():
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
        if fl == "flashmla":
            if self.heads_kv != 1 or not self.head_dim_v < self.head_dim_qk:
                raise _bad("heads_kv", self.heads_kv, "1, with head_dim_v < head_dim_qk, for flashmla (one latent KV "
                           "head whose first head_dim_v columns are V)")
            if len(set(self.q_lens)) != 1:
                raise _bad("seqlens_q", self.q_lens, "the same query length for every request (FlashMLA's q is "
                           "(batch, s_q, heads, d))")
        elif fl in _FLASH_ONLY_HALF and fl != "aten_cudnn" and self.head_dim_qk != self.head_dim_v:
            raise _bad("head_dim_v", self.head_dim_v, f"equal to head_dim_qk={self.head_dim_qk} for flavour {fl}")
        if fl in _FLASH_ONLY_HALF and fl not in ("aten_cudnn", "flashmla") and self.head_dim_qk > 256:
            raise _bad("head_dim_qk", self.head_dim_qk, f"<= 256 for flavour {fl}")
        if fl in ("aten_efficient", "aten_cudnn") and self.heads_kv != self.heads_q:
            raise _bad("heads_kv", self.heads_kv, f"equal to heads_q={self.heads_q} for {fl} (GQA runs aten_flash, "
                       "flash_attn or unfused)")
        if self.attn_mask and fl not in ("aten_efficient", "aten_cudnn", "unfused"):
            raise _bad("attn_mask", self.attn_mask, "False unless flavour is aten_efficient, aten_cudnn or unfused")
        if fl in INFERENCE_ONLY:
            if self.with_backward:
                raise _bad("with_backward", self.with_backward, f"False for {fl} (inference only)")
            if self.dropout:
                raise _bad("dropout", self.dropout, f"0.0 for {fl}")
        if fl in PAGED_FLAVOURS and any(q > k for q, k in zip(self.q_lens, self.kv_lens, strict=True)):
            raise _bad("seqlens_kv", self.kv_lens, f"each context length >= its query length for {fl}")
        if fl == "sglang_decode" and max(self.q_lens) != 1:
            raise _bad("seqlens_q", self.q_lens, "one query token per request for sglang_decode")
        if fl == "sage" and self.heads_kv != self.heads_q:
            raise _bad("heads_kv", self.heads_kv, "equal to heads_q for sage (DiT attention)")
        if self.graph_batch is not None and (isinstance(self.graph_batch, bool) or not isinstance(
                self.graph_batch, int) or self.graph_batch < sum(self.q_lens)):
            raise _bad("graph_batch", self.graph_batch, f"an integer >= the step's {sum(self.q_lens)} tokens")

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
