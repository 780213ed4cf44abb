"""Small op trees every flavour shares: transposes, allocations, contiguous copies, GQA head sums, and the
autograd node wrapper of a backward op; plus ``ForwardPass``, what a forward leaves for its backward."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import copy_kernel, fill_int_kernel, sum_kernel
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, SCALAR_CODE, L, N, S, Slot, T, bhnd_view, row_major
from sdpa_analyzer.server.synthetic.units import to_ns


@dataclass
class ForwardPass:
    """One emitted forward instance: what its backward pass needs."""

    call_index: int
    repeat_index: int
    call: SyntheticAttentionCall
    # (autograd node name, sequence number, forward op, dims the node's kernels work on)
    seqs: list[tuple[str, int, dict, list[list[int]]]]


def transpose(b: TraceBuilder, dims: list[int], strides: list[int], dtype: str, d0: int = 1, d1: int = 2) -> None:
    """``t.transpose(d0, d1)``: a view, so an as_strided under it and no kernel."""
    new_dims, new_strides = list(dims), list(strides)
    new_dims[d0], new_dims[d1] = dims[d1], dims[d0]
    new_strides[d0], new_strides[d1] = strides[d1], strides[d0]
    with b.op("aten::transpose", [T(dims, dtype, strides), S(d0), S(d1)]):
        b.leaf("aten::as_strided", [T(dims, dtype, strides), L(new_dims), L(new_strides), N()])


def empty(b: TraceBuilder, dims: Sequence[int], dtype_code: int) -> None:
    """An output allocation (``dtype_code``: c10::ScalarType)."""
    b.leaf("aten::empty", [L(dims), S(dtype_code), S(0), N(), N(), N()])


def empty_like(b: TraceBuilder, dims: list[int], strides: list[int], dtype: str, code: int) -> None:
    """``torch.empty_like`` of a (dims, strides) tensor of ATen type ``dtype``."""
    with b.op("aten::empty_like", [T(dims, dtype, strides), N(), N(), N(), N(), N()]):
        b.leaf("aten::empty_strided", [L(dims), L(strides), S(code), S(0), N(), N()])


def copies(b: TraceBuilder, c: SyntheticAttentionCall, n: int) -> None:
    """``t.contiguous()`` copies: aten::contiguous -> aten::clone -> aten::copy_ -> one copy kernel each."""
    at = ATEN_TYPE[c.dtype]
    dims, strides = bhnd_view(c.batch, c.seq_q, c.heads_q, c.head_dim_qk)
    numel = math.prod(dims)
    for _ in range(n):
        with b.op("aten::contiguous", [T(dims, at, strides), S(0)]), \
                b.op("aten::clone", [T(dims, at, strides), S(0)]):
            empty_like(b, dims, row_major(dims), at, SCALAR_CODE[c.dtype])
            with b.op("aten::copy_", [T(dims, at), T(dims, at, strides), S(False)]):
                b.launch(copy_kernel(b.gpu, c.dtype, to_ns(c.copy_kernel_us), numel))


def fill_zero_int(b: TraceBuilder, dur_ns: int) -> None:
    """``at::zeros({1}, kInt)``: the atomic counter ROCm's causal attention kernel needs."""
    with b.op("aten::zeros", [L([1]), S(3), S(0), N(), N()]):
        b.leaf("aten::empty", [L([1]), S(3), S(0), N(), N(), N()])
        with b.op("aten::zero_", [T([1], "int")]), b.op("aten::fill_", [T([1], "int"), S(0)]):
            b.launch(fill_int_kernel(b.gpu, dur_ns))


def gqa_head_sums(b: TraceBuilder, c: SyntheticAttentionCall, dk_dims: list[int], dv_dims: list[int]) -> None:
    """GQA backward: dK/dV are computed per query head and summed over each group (``at::sum_out``)."""
    at, group = ATEN_TYPE[c.dtype], c.heads_q // c.hkv
    for dims in (dk_dims, dv_dims):
        exp = [dims[0], dims[1], c.heads_q, dims[3]]
        grouped = [dims[0], dims[1], c.hkv, group, dims[3]]
        with b.op("aten::reshape", [T(exp, at), L(grouped)]):
            b.leaf("aten::view", [T(exp, at), L(grouped)])
        with b.op("aten::sum", [T(grouped, at), L([3]), S(False), N()]):
            b.launch(sum_kernel(c.dtype, to_ns(c.aux_kernel_us), math.prod(dims)))


@contextmanager
def autograd_node(b: TraceBuilder, node: str, seq: int, fwd_op: dict, grad_slots: Sequence[Slot]) -> Iterator[dict]:
    """The autograd engine's evaluate_function range and the node op, flow-linked to its forward op."""
    with b.op(f"autograd::engine::evaluate_function: {node}", seq=seq, fwd_tid=1) as outer:
        b.link_fwd_bwd(fwd_op, outer)
        with b.op(node, grad_slots, seq=seq, fwd_tid=1):
            yield outer


def sums_annotation(c: SyntheticAttentionCall) -> str:
    """The step range SGLang and newer vLLM record: ``execute_<tokens>_context_<n>(sq..sk..sqsq..sqsk..)`` over the
    prefill (context) requests, then ``_generation_<m>(...)`` over the decode requests (one new token each) when
    there are any; ``<tokens>`` is the step's token count, padded to the graph's batch size when one is given."""
    pairs = list(zip(c.q_lens, c.kv_lens, strict=True))
    ctx = [(q, k) for q, k in pairs if q > 1]
    gen = [(q, k) for q, k in pairs if q == 1]

    def body(reqs: list[tuple[int, int]]) -> str:
        return (f"sq{sum(q for q, _ in reqs)}sk{sum(k for _, k in reqs)}sqsq{sum(q * q for q, _ in reqs)}"
                f"sqsk{sum(q * k for q, k in reqs)}")

    tokens = c.graph_batch if c.graph_batch is not None else sum(c.q_lens)
    text = f"execute_{tokens}_context_{len(ctx)}({body(ctx)})"
    if gen or c.flavour != "sglang_prefill":
        text += f"_generation_{len(gen)}({body(gen)})"
    return text
