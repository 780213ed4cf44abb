"""Eager (unfused) attention as HF's ``eager_attention_forward`` runs it: repeat_kv for GQA, matmul, scale,
mask add, softmax, dropout, matmul; and the backward of each autograd node."""

from __future__ import annotations

import math

from sdpa_analyzer.server.synthetic.builder import PTR, TraceBuilder, module_source
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import (
    add_functor,
    copy_kernel,
    dropout_kernel,
    gemm_kernel,
    scalar_mul_functor,
    softmax_kernel,
    sum_kernel,
    vec_kernel,
)
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass, autograd_node, copies
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, ELEM_BYTES, SCALAR_CODE, L, N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import to_ns


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """One autograd node per op (when with_backward): matmul, mul, add, softmax, dropout, matmul."""
    at = ATEN_TYPE[c.dtype]
    bh, nq, nk, d, dv = c.batch * c.heads_q, c.seq_q, c.skv, c.head_dim_qk, c.dv
    q4, k4, v4 = [c.batch, c.heads_q, nq, d], [c.batch, c.heads_q, nk, d], [c.batch, c.heads_q, nk, dv]
    s4 = [c.batch, c.heads_q, nq, nk]
    aux, main = to_ns(c.aux_kernel_us), to_ns(c.kernel_us)
    grad = c.with_backward
    fam = c.module_names[-1]
    src, line = module_source(fam)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "eager_attention_forward", None,
                             None)

    def seq() -> int | None:
        return b.new_seq() if grad else None

    with b.instance_scope(inst), b.py(f"{src}({line + 40}): eager_attention_forward"):
        copies(b, c, c.copies_before)
        if c.gqa:
            with b.py(f"{src}({line - 60}): repeat_kv"):
                for dims in ([c.batch, c.hkv, nk, d], [c.batch, c.hkv, nk, dv]):
                    group = c.heads_q // c.hkv
                    exp = [dims[0], dims[1], group, dims[2], dims[3]]
                    s_exp = seq()
                    with b.op("aten::expand", [T([dims[0], dims[1], 1, dims[2], dims[3]], at), L(exp), S(False)],
                              seq=s_exp) as exp_op:
                        b.leaf("aten::as_strided", [T(dims, at), L(exp), L([0] * 5), N()])
                    if s_exp is not None:
                        fwd.seqs.append(("ExpandBackward0", s_exp, exp_op, [exp]))
                    with b.op("aten::reshape", [T(exp, at, [0] * 5), L([dims[0], c.heads_q, dims[2], dims[3]])]), \
                            b.op("aten::clone", [T(exp, at, [0] * 5), S(0)]):
                        b.leaf("aten::empty", [L(exp), S(SCALAR_CODE[c.dtype]), S(0), N(), N(), N()])
                        with b.op("aten::copy_", [T(exp, at), T(exp, at, [0] * 5), S(False)]):
                            b.launch(copy_kernel(b.gpu, c.dtype, aux, math.prod(exp), role="aux"))
        s_qk = seq()
        with b.py(f"<built-in method matmul of type object at {PTR}>"), \
                b.op("aten::matmul", [T(q4, at), T([*k4[:2], d, nk], at, [nk * d * c.heads_q, nk * d, 1, d])],
                     seq=s_qk) as mm1:
            b.leaf("aten::view", [T(q4, at), L([bh, nq, d])])
            with b.op("aten::bmm", [T([bh, nq, d], at), T([bh, d, nk], at, [nk * d, 1, d])], seq=s_qk):
                b.launch(gemm_kernel(b.gpu, c.dtype, nq, nk, main, "tn", "main"))
            b.leaf("aten::_unsafe_view", [T([bh, nq, nk], at), L(s4)])
        if s_qk is not None:
            fwd.seqs.append(("BmmBackward0", s_qk, mm1, [[bh, nq, d], [bh, d, nk]]))
        s_mul = seq()
        with b.op("aten::mul", [T(s4, at), S(c.softmax_scale)], seq=s_mul) as mul:
            functor = scalar_mul_functor(at)
            b.launch(vec_kernel(b.gpu, functor, 2, aux, math.prod(s4), elem_bytes=ELEM_BYTES[c.dtype]))
        if s_mul is not None:
            fwd.seqs.append(("MulBackward0", s_mul, mul, [s4]))
        if c.causal or c.attn_mask:
            mask4 = [c.batch, 1, nq, nk]
            with b.op("aten::add", [T(s4, at), T(mask4, at), S(1)], seq=seq()):
                b.launch(vec_kernel(b.gpu, add_functor(at), 3, aux, math.prod(s4), elem_bytes=ELEM_BYTES[c.dtype]))
        s_sm = seq()
        with b.py("torch/nn/functional.py(2140): softmax"), \
                b.py(f"<built-in method softmax of Tensor object at {PTR}>"), \
                b.op("aten::softmax", [T(s4, at), S(-1), N()], seq=s_sm) as sm:
            with b.op("aten::_softmax", [T(s4, at), S(-1), S(False)], seq=s_sm):
                b.launch(softmax_kernel(c.dtype, nk, main, bh * nq, backward=False, role="main"))
        if s_sm is not None:
            fwd.seqs.append(("SoftmaxBackward0", s_sm, sm, [s4]))
        if c.dropout:
            with b.op("aten::dropout", [T(s4, at), S(c.dropout), S(True)], seq=seq()), \
                    b.op("aten::native_dropout", [T(s4, at), S(c.dropout), S(True)]):
                b.launch(dropout_kernel(c.dtype, aux, math.prod(s4)))
        s_pv = seq()
        with b.py(f"<built-in method matmul of type object at {PTR}>"), \
                b.op("aten::matmul", [T(s4, at), T(v4, at)], seq=s_pv) as mm2:
            b.leaf("aten::view", [T(s4, at), L([bh, nq, nk])])
            with b.op("aten::bmm", [T([bh, nq, nk], at), T([bh, nk, dv], at)], seq=s_pv):
                b.launch(gemm_kernel(b.gpu, c.dtype, nq, dv, main, "nn", "main"))
            b.leaf("aten::_unsafe_view", [T([bh, nq, dv], at), L([c.batch, c.heads_q, nq, dv])])
        if s_pv is not None:
            fwd.seqs.append(("BmmBackward0", s_pv, mm2, [[bh, nq, nk], [bh, nk, dv]]))
        copies(b, c, c.copies_after)


def backward(b: TraceBuilder, fwd: ForwardPass) -> None:
    """The forward's autograd nodes in reverse order, each with its backward kernels."""
    c = fwd.call
    at = ATEN_TYPE[c.dtype]
    bh, nq, nk = c.batch * c.heads_q, c.seq_q, c.skv
    s4 = [c.batch, c.heads_q, nq, nk]
    aux, main = to_ns(c.aux_kernel_us), to_ns(c.bwd_us)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "bwd", c.flavour, "eager_attention_forward", None,
                             None)
    with b.instance_scope(inst):
        for node, seq, fwd_op, dims in reversed(fwd.seqs):
            if node == "BmmBackward0":
                # out = A @ B; dA = dOut @ B^T (m x k), dB = A^T @ dOut (k x n)
                (bh_, m, k), (_, _, n) = dims
                out_dims = [bh_, m, n]
                with autograd_node(b, node, seq, fwd_op, [T(out_dims, at)]):
                    b.leaf("aten::transpose", [T(dims[1], at), S(1), S(2)])
                    with b.op("aten::bmm", [T(out_dims, at), T([bh_, n, k], at, [k * n, 1, n])]):
                        b.launch(gemm_kernel(b.gpu, c.dtype, m, k, main, "nt", "main"))
                    b.leaf("aten::transpose", [T(dims[0], at), S(1), S(2)])
                    with b.op("aten::bmm", [T([bh_, k, m], at, [m * k, 1, k]), T(out_dims, at)]):
                        b.launch(gemm_kernel(b.gpu, c.dtype, k, n, main, "tn", "main"))
            elif node == "SoftmaxBackward0":
                with autograd_node(b, node, seq, fwd_op, [T(s4, at)]), \
                        b.op("aten::_softmax_backward_data",
                             [T(s4, at), T(s4, at), S(-1), S(SCALAR_CODE[c.dtype])]):
                    b.launch(softmax_kernel(c.dtype, nk, main, bh * nq, backward=True, role="main"))
            elif node == "MulBackward0":
                functor = scalar_mul_functor(at)
                with autograd_node(b, node, seq, fwd_op, [T(s4, at)]), \
                        b.op("aten::mul", [T(s4, at), S(c.softmax_scale)]):
                    b.launch(vec_kernel(b.gpu, functor, 2, aux, math.prod(s4), elem_bytes=ELEM_BYTES[c.dtype]))
            elif node == "ExpandBackward0":
                (exp,) = dims
                with autograd_node(b, node, seq, fwd_op, [T(exp, at)]), \
                        b.op("aten::sum", [T(exp, at), L([2]), S(True), N()]):
                    b.launch(sum_kernel(c.dtype, aux, math.prod(exp)))
