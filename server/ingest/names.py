"""Op and kernel name families analyze_trace looks for (decided once per distinct name, cached).

Which ops are attention comes from the perf_models registry (`perf_models.registry.is_attention_op`);
this module adds the structural families around them: dispatcher wrappers, the pieces of unfused
attention (matmul, softmax), copies that make tensors contiguous, and kernel-name roles.
"""

from __future__ import annotations

import re
from functools import lru_cache

from perf_models.kernels import classify_kernel
from perf_models.registry import is_attention_op as registry_is_attention_op

# Ops that only dispatch to the op doing the work: the row is the op below them.
WRAPPER_OPS = frozenset({"aten::scaled_dot_product_attention"})
AUTOGRAD_EVAL_PREFIX = "autograd::engine::evaluate_function: "

MATMUL_OPS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum", "aten::mm"})
SOFTMAX_OPS = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax", "aten::special_softmax"})
COPY_OPS = frozenset({"aten::contiguous", "aten::clone", "aten::copy_"})
DROPOUT_OPS = frozenset({"aten::dropout", "aten::native_dropout", "aten::feature_dropout"})
MASK_OPS = frozenset({"aten::add", "aten::add_", "aten::masked_fill", "aten::masked_fill_", "aten::where"})
INFERENCE_OPS_PREFIXES = ("vllm::unified_attention",)
KV_CACHE_OPS_RE = re.compile(r"reshape_and_cache|store_kvcache|concat_and_cache|set_kv_buffer", re.I)

_ATTN_SUBSTRINGS = ("attention", "attn", "sdpa", "fmha", "mha_")

# kernel-name roles (fallbacks; perf_models.kernels refines them when present)
_ATTN_KERNEL_RE = re.compile(
    r"flash_fwd|flash_bwd|fmha|attn_fwd|attn_bwd|_attention|paged_attention|mha_fwd|mha_bwd|"
    r"flashattn|FlashAttn|flash_attn|efficient_attention|BatchPrefill|BatchDecode|"
    r"SinglePrefill|SingleDecode|unified_attention|xformers|cutlass.*Attention",
    re.I,
)
_KV_CACHE_KERNEL_RE = re.compile(r"reshape_and_cache|store_kvcache|concat_and_cache|set_kv_buffer|kv_cache", re.I)
_DECODE_KERNEL_RE = re.compile(r"paged_attention|decode|Decode|kernel_paged_attention_2d|ll4mi", re.I)


@lru_cache(maxsize=65536)
def is_attention_op(name: str) -> bool:
    return registry_is_attention_op(name)


def is_wrapper(name: str) -> bool:
    return name in WRAPPER_OPS or name.startswith(AUTOGRAD_EVAL_PREFIX)


_AUTOGRAD_NODE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*Backward\d*$")


def is_autograd_node(name: str) -> bool:
    """An autograd backward node (`ScaledDotProductFlashAttentionBackward0`, `BmmBackward0`, ...)."""
    return bool(_AUTOGRAD_NODE_RE.match(name))


def is_backward_name(name: str) -> bool:
    n = name.lower()
    return "backward" in n or n.endswith("_bwd") or "::bwd" in n or "mha_bwd" in n


def is_inference_op(name: str) -> bool:
    return name.startswith(INFERENCE_OPS_PREFIXES)


@lru_cache(maxsize=65536)
def keep_args(name: str) -> bool:
    """Whether a cpu_op's args (shapes) are worth keeping while streaming the trace."""
    if name in MATMUL_OPS or name in SOFTMAX_OPS or name in COPY_OPS or name in DROPOUT_OPS:
        return True
    if KV_CACHE_OPS_RE.search(name):
        return True
    low = name.lower()
    if any(s in low for s in _ATTN_SUBSTRINGS):
        return True
    return is_attention_op(name)


@lru_cache(maxsize=65536)
def kernel_role(name: str) -> str:
    """'attention' | 'kv_cache' | 'other' for one kernel name.

    Attention-internal helpers (split-KV reduce, dO·O preprocess, dQ convert) count as 'attention' here:
    they belong to the call when kernels are grouped by name (graph replays, kernel breakdowns).
    """
    role = classify_kernel(name)[0].value
    if role == "reshape_and_cache" or _KV_CACHE_KERNEL_RE.search(name):
        return "kv_cache"
    if role == "attention":
        return "attention"
    if role == "auxiliary" and _ATTN_KERNEL_RE.search(name):
        return "attention"
    return "other"


@lru_cache(maxsize=65536)
def is_decode_kernel(name: str) -> bool:
    return bool(_DECODE_KERNEL_RE.search(name))


_TEMPLATE_RE = re.compile(r"<.*", re.S)


@lru_cache(maxsize=65536)
def short_kernel_name(name: str) -> str:
    """'void ns::foo_kernel<...>(args)' -> 'foo_kernel' (for labels only)."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    s = _TEMPLATE_RE.sub("", s)
    s = s.split("(", 1)[0].strip()
    return s.rsplit("::", 1)[-1] or name[:64]
