"""Non-attention ops: the fillers between attention calls, and the pieces of a Llama decoder layer
(linear, RMSNorm, RoPE, element-wise) that ``generate_large_trace`` repeats."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sdpa_analyzer.server.synthetic.builder import PTR, TraceBuilder, module_source
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import (
    POW_FLOAT_FUNCTOR,
    RSQRT_FLOAT_FUNCTOR,
    add_functor,
    cat_kernel,
    copy_kernel,
    gemm_kernel,
    layer_norm_kernel,
    mean_float_kernel,
    mul_functor,
    neg_functor,
    silu_functor,
    vec_kernel,
)
from sdpa_analyzer.server.synthetic.ops.common import empty, empty_like, transpose
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, ELEM_BYTES, SCALAR_CODE, L, N, S, Slot, T, row_major


def filler(b: TraceBuilder, kind: int, dtype: str, tokens: int, hidden: int) -> None:
    """One non-attention op launching exactly one kernel (kind cycles linear, add, layer_norm, silu, mul)."""
    at = ATEN_TYPE[dtype]
    x = [1, tokens, hidden]
    numel = tokens * hidden
    if kind % 5 == 0:
        linear(b, dtype, tokens, hidden, hidden, b.rand_ns(15_000, 60_000))
    elif kind % 5 == 1:
        with b.py(f"<built-in method add of Tensor object at {PTR}>"), \
                b.op("aten::add", [T(x, at), T(x, at), S(1)]):
            b.launch(vec_kernel(b.gpu, add_functor(at), 3, b.rand_ns(2_000, 8_000), numel, "filler",
                                ELEM_BYTES[dtype]))
    elif kind % 5 == 2:
        with b.py("torch/nn/functional.py(2900): layer_norm"), \
                b.op("aten::layer_norm", [T(x, at), L([hidden]), T([hidden], at), T([hidden], at), S(1e-5),
                                          S(True)]), \
                b.op("aten::native_layer_norm", [T(x, at), L([hidden]), T([hidden], at), T([hidden], at),
                                                 S(1e-5)]):
            empty(b, x, SCALAR_CODE[dtype])
            empty(b, [tokens], 6)
            empty(b, [tokens], 6)
            b.launch(layer_norm_kernel(dtype, b.rand_ns(3_000, 6_000), tokens))
    elif kind % 5 == 3:
        with b.py("torch/nn/functional.py(2380): silu"), b.op("aten::silu", [T(x, at)]):
            b.launch(vec_kernel(b.gpu, silu_functor(at), 2, b.rand_ns(2_000, 8_000), numel, "filler",
                                ELEM_BYTES[dtype]))
    else:
        functor = mul_functor(at)
        with b.py(f"<built-in method mul of Tensor object at {PTR}>"), \
                b.op("aten::mul", [T(x, at), T(x, at)]):
            b.launch(vec_kernel(b.gpu, functor, 3, b.rand_ns(2_000, 8_000), numel, "filler", ELEM_BYTES[dtype]))


def linear(b: TraceBuilder, dtype: str, tokens: int, k: int, n: int, dur_ns: int) -> None:
    at = ATEN_TYPE[dtype]
    with b.module("Linear"), b.py("<built-in function linear>"), \
            b.op("aten::linear", [T([1, tokens, k], at), T([n, k], at), N()]):
        with b.op("aten::t", [T([n, k], at)]):
            transpose(b, [n, k], [k, 1], at, 0, 1)
        with b.op("aten::matmul", [T([1, tokens, k], at), T([k, n], at, [1, k])]):
            b.leaf("aten::view", [T([1, tokens, k], at), L([tokens, k])])
            with b.op("aten::mm", [T([tokens, k], at), T([k, n], at, [1, k])]):
                if not b.gpu.amd and b.gpu.arch in ("sm90", "sm100"):
                    b.memset(4)
                    b.runtime("cudaFuncSetAttribute")
                b.launch(gemm_kernel(b.gpu, dtype, tokens, n, dur_ns, "tn", "filler"))
            b.leaf("aten::_unsafe_view", [T([tokens, n], at), L([1, tokens, n])])


def elementwise(b: TraceBuilder, op: str, functor: str, n_ptrs: int, dims: list[int], dtype: str, dur_ns: int,
                extra: Sequence[Slot] = ()) -> None:
    at = ATEN_TYPE[dtype]
    with b.op(op, [T(dims, at), *extra]):
        b.launch(vec_kernel(b.gpu, functor, n_ptrs, dur_ns, math.prod(dims), "filler", ELEM_BYTES[dtype]))


def rmsnorm(b: TraceBuilder, tokens: int, hidden: int, dtype: str) -> None:
    """HF LlamaRMSNorm: to(fp32), pow, mean, add, rsqrt, mul, to(bf16), mul: eight small kernels."""
    at, x = ATEN_TYPE[dtype], [1, tokens, hidden]
    with b.module("LlamaRMSNorm"):
        with b.op("aten::to", [T(x, at), S(6), S(False), S(False), N()]), \
                b.op("aten::_to_copy", [T(x, at), S(6), N(), N(), N(), S(False), N()]):
            empty_like(b, x, row_major(x), at, 6)
            with b.op("aten::copy_", [T(x, "float"), T(x, at), S(False)]):
                b.launch(copy_kernel(b.gpu, dtype, b.rand_ns(2_500, 4_000), math.prod(x), "filler"))
        elementwise(b, "aten::pow", POW_FLOAT_FUNCTOR, 2, x, "fp32", b.rand_ns(2_000, 3_500), [S(2)])
        with b.op("aten::mean", [T(x, "float"), L([-1]), S(True), N()]):
            b.launch(mean_float_kernel(b.rand_ns(2_500, 4_000), tokens))
        elementwise(b, "aten::add", add_functor("float"), 2, [1, tokens, 1], "fp32",
                    b.rand_ns(1_500, 2_500), [S(1e-6), S(1)])
        elementwise(b, "aten::rsqrt", RSQRT_FLOAT_FUNCTOR, 2, [1, tokens, 1], "fp32", b.rand_ns(1_500, 2_500))
        elementwise(b, "aten::mul", mul_functor("float"), 3, x, "fp32", b.rand_ns(2_500, 4_000),
                    [T([1, tokens, 1], "float")])
        with b.op("aten::to", [T(x, "float"), S(SCALAR_CODE[dtype]), S(False), S(False), N()]), \
                b.op("aten::_to_copy", [T(x, "float"), S(SCALAR_CODE[dtype]), N(), N(), N(), S(False), N()]):
            empty_like(b, x, row_major(x), "float", SCALAR_CODE[dtype])
            with b.op("aten::copy_", [T(x, at), T(x, "float"), S(False)]):
                b.launch(copy_kernel(b.gpu, dtype, b.rand_ns(2_500, 4_000), math.prod(x), "filler"))
        mul = mul_functor(at)
        elementwise(b, "aten::mul", mul, 3, x, dtype, b.rand_ns(2_000, 3_500), [T([hidden], at)])


def rope(b: TraceBuilder, c: SyntheticAttentionCall) -> None:
    """HF apply_rotary_pos_emb on q and k: mul, neg, cat, mul, add each (ten element-wise kernels)."""
    at = ATEN_TYPE[c.dtype]
    src, line = module_source(c.module_names[-1])
    with b.py(f"{src}({max(1, line - 120)}): apply_rotary_pos_emb"):
        for heads in (c.heads_q, c.hkv):
            x = [c.batch, heads, c.seq_q, c.head_dim_qk]
            half = [c.batch, heads, c.seq_q, c.head_dim_qk // 2]
            mul, cos = mul_functor(at), [T([1, 1, c.seq_q, c.head_dim_qk], at)]
            elementwise(b, "aten::mul", mul, 3, x, c.dtype, b.rand_ns(2_000, 4_000), cos)
            elementwise(b, "aten::neg", neg_functor(at), 2, half, c.dtype, b.rand_ns(1_500, 3_000))
            with b.op("aten::cat", [L([]), S(-1)]):
                b.launch(cat_kernel(b.rand_ns(2_000, 4_000), math.prod(x)))
            elementwise(b, "aten::mul", mul, 3, x, c.dtype, b.rand_ns(2_000, 4_000), cos)
            elementwise(b, "aten::add", add_functor(at), 3, x, c.dtype, b.rand_ns(2_000, 4_000), [T(x, at), S(1)])
