"""Op and kernel name families analyze_trace looks for (decided once per distinct name, cached).

Which ops are attention comes from the perf_models registry (`perf_models.registry.is_attention_op`);
this module adds the structural families around them: dispatcher wrappers, the pieces of unfused
attention (matmul, softmax), copies that make tensors contiguous, KV-cache writes. Kernel names are
classified by the one vocabulary, `perf_models.kernels` (cached here per distinct name).
"""

from __future__ import annotations

import re
from functools import lru_cache

from sdpa_analyzer.perf_models.config import Direction
from sdpa_analyzer.perf_models.kernels import HelperKind, kernel_group_role
from sdpa_analyzer.perf_models.kernels import helper_kind as kernels_helper_kind
from sdpa_analyzer.perf_models.kernels import is_decode_kernel as kernels_is_decode
from sdpa_analyzer.perf_models.ops.types import AttentionType
from sdpa_analyzer.perf_models.registry import is_attention_op as registry_is_attention_op
from sdpa_analyzer.perf_models.registry import is_wrapper_op, lookup

# Ops that only dispatch to the op doing the work: the row is the op below them.
WRAPPER_OPS = frozenset({"aten::scaled_dot_product_attention"})
AUTOGRAD_EVAL_PREFIX = "autograd::engine::evaluate_function: "

MATMUL_OPS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum", "aten::mm"})
SOFTMAX_OPS = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax", "aten::special_softmax"})
COPY_OPS = frozenset({"aten::contiguous", "aten::clone", "aten::copy_"})
DROPOUT_OPS = frozenset({"aten::dropout", "aten::native_dropout", "aten::feature_dropout"})
MASK_OPS = frozenset({"aten::add", "aten::add_", "aten::masked_fill", "aten::masked_fill_", "aten::where"})
# KV-cache writes: their own ops (vLLM's unified_kv_cache_update / reshape_and_cache_flash, SGLang's set_kv_buffer /
# store_cache) whose kernels are accounted beside the attention call they feed, never inside its time
KV_CACHE_OPS_RE = re.compile(
    r"reshape_and_cache|store_kvcache|store_cache|concat_and_cache|set_kv_buffer|unified_kv_cache_update", re.I
)
# ops that only quantize an attention call's inputs (SageAttention): their kernels are auxiliary time of the call
QUANT_OPS_RE = re.compile(r"^sage_quant_kernel(?:_\d+)?$")

_ATTN_SUBSTRINGS = ("attention", "attn", "sdpa", "fmha", "mha_")


@lru_cache(maxsize=65536)
def is_attention_op(name: str) -> bool:
    return registry_is_attention_op(name)


def is_wrapper(name: str) -> bool:
    return name in WRAPPER_OPS or name.startswith(AUTOGRAD_EVAL_PREFIX) or is_wrapper_op(name)


_AUTOGRAD_NODE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*Backward\d*$")


def is_autograd_node(name: str) -> bool:
    """An autograd backward node (`ScaledDotProductFlashAttentionBackward0`, `BmmBackward0`, ...)."""
    return bool(_AUTOGRAD_NODE_RE.match(name))


def _name_says_backward(name: str) -> bool:
    n = name.lower()
    return "backward" in n or n.endswith("_bwd") or "::bwd" in n or "mha_bwd" in n


@lru_cache(maxsize=65536)
def is_backward_name(name: str) -> bool:
    """Whether an op of a call's chain is a backward: the registry's direction for the ops it knows; the name's
    words only for the ops around them it does not (autograd evaluate_function wrappers, unknown wrappers)."""
    spec = lookup(name)
    if spec is not None:
        return spec.direction is Direction.BWD
    return _name_says_backward(name)


@lru_cache(maxsize=65536)
def is_inference_op(name: str) -> bool:
    """Whether an op is paged (serving) attention, as the registry declares it (category inferenceattention)."""
    spec = lookup(name)
    return spec is not None and spec.attention_type is AttentionType.PAGED


@lru_cache(maxsize=65536)
def keep_args(name: str) -> bool:
    """Whether a cpu_op's args (shapes) are worth keeping while streaming the trace."""
    if name in MATMUL_OPS or name in SOFTMAX_OPS or name in COPY_OPS or name in DROPOUT_OPS:
        return True
    if KV_CACHE_OPS_RE.search(name) or QUANT_OPS_RE.match(name):
        return True
    low = name.lower()
    if any(s in low for s in _ATTN_SUBSTRINGS):
        return True
    return is_attention_op(name)


@lru_cache(maxsize=65536)
def kernel_role(name: str) -> str:
    """'attention' | 'helper' | 'kv_cache' | 'other' for one kernel name (perf_models.kernels.kernel_group_role)."""
    return kernel_group_role(name)


@lru_cache(maxsize=65536)
def helper_kind(name: str) -> HelperKind | None:
    """What a helper kernel of an attention call does (perf_models.kernels.helper_kind), None for other kernels."""
    return kernels_helper_kind(name)


@lru_cache(maxsize=65536)
def is_decode_kernel(name: str) -> bool:
    return kernels_is_decode(name)


def is_kv_cache_op(name: str) -> bool:
    return bool(KV_CACHE_OPS_RE.search(name))


def is_quant_op(name: str) -> bool:
    return bool(QUANT_OPS_RE.match(name))


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
