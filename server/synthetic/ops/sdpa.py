"""``torch.nn.functional.scaled_dot_product_attention`` with its three fused backends: flash
(``aten_flash``), memory-efficient (``aten_efficient``) and cuDNN (``aten_cudnn``), forward and backward.

The outer ``aten::scaled_dot_product_attention`` op and the autograd node are common; each backend adds its
inner op tree and kernels (NVIDIA FlashAttention-2 / CUTLASS / cuDNN, ROCm AOTriton). Adding a backend: its
inner forward and backward functions and one ``_BACKENDS`` entry (plus the flavour's registration in
``server.synthetic.ops.registry``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import (
    PYTORCH_FLASH,
    aotriton_attn_fwd,
    aotriton_bwd,
    cudnn_kernel,
    flash_bwd_kernels,
    flash_fwd_kernel,
    mem_eff_bwd,
    mem_eff_fwd,
    round_hdim,
)
from sdpa_analyzer.server.synthetic.ops.common import (
    ForwardPass,
    autograd_node,
    copies,
    empty,
    empty_like,
    fill_zero_int,
    gqa_head_sums,
    transpose,
)
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, SCALAR_CODE, TP, L, N, S, Slot, T, bhnd_view, row_major
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import cdiv, to_ns

# (dims, strides) per tensor: q, k, v, o as SDPA gets them, qi/ki/vi/oi their (B, N, H, d) transposes, mask
_Geometry = dict[str, tuple[list[int], list[int]]]


def _swap12(pair: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
    dims, strides = pair
    return [dims[0], dims[2], dims[1], dims[3]], [strides[0], strides[2], strides[1], strides[3]]


def _sdpa_geometry(c: SyntheticAttentionCall) -> _Geometry:
    """(dims, strides) of the SDPA-facing (B, H, N, d) tensors and of their (B, N, H, d) transposes."""
    if c.input_layout == "bhnd":
        def outer(n: int, h: int, d: int) -> tuple[list[int], list[int]]:
            return [c.batch, h, n, d], row_major([c.batch, h, n, d])
    else:
        def outer(n: int, h: int, d: int) -> tuple[list[int], list[int]]:
            return bhnd_view(c.batch, n, h, d)
    g = {"q": outer(c.seq_q, c.heads_q, c.head_dim_qk), "k": outer(c.skv, c.hkv, c.head_dim_qk),
         "v": outer(c.skv, c.hkv, c.dv), "o": outer(c.seq_q, c.heads_q, c.dv),
         "mask": ([c.batch, 1, c.seq_q, c.skv], row_major([c.batch, 1, c.seq_q, c.skv]))}
    for key in ("q", "k", "v", "o"):
        g[key + "i"] = _swap12(g[key])
    return g


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """aten::scaled_dot_product_attention around the backend's op (copies_before/after inside it)."""
    at, g = ATEN_TYPE[c.dtype], _sdpa_geometry(c)
    seq = b.new_seq() if c.with_backward else None
    mask = TP(g["mask"], at) if c.attn_mask else N()
    scale = S(c.scale) if c.scale is not None else N()
    slots = [TP(g["q"], at), TP(g["k"], at), TP(g["v"], at), mask, S(c.dropout), S(c.causal), scale,
             S(c.gqa)]
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "aten::scaled_dot_product_attention",
                             None, seq)
    with b.py("transformers/integrations/sdpa_attention.py(89): sdpa_attention_forward"), \
            b.py("<built-in function scaled_dot_product_attention>"), b.instance_scope(inst), \
            b.op("aten::scaled_dot_product_attention", slots, seq=seq) as outer:
        inst.op_external_id = outer["args"]["External id"]
        copies(b, c, c.copies_before)
        _BACKENDS[c.flavour].forward(b, c, seq)
        copies(b, c, c.copies_after)
    if seq is not None:
        fwd.seqs.append((_BACKENDS[c.flavour].node, seq, outer, []))


def _flash_forward(b: TraceBuilder, c: SyntheticAttentionCall, seq: int | None) -> None:
    at, g, sc = ATEN_TYPE[c.dtype], _sdpa_geometry(c), c.softmax_scale
    slots = [TP(g["q"], at), TP(g["k"], at), TP(g["v"], at), S(c.dropout), S(c.causal), S(False), S(sc)]
    qb, kb, vb = g["qi"], g["ki"], g["vi"]
    with b.op("aten::_scaled_dot_product_flash_attention", slots, seq=seq):
        for key in ("q", "k", "v"):
            transpose(b, *g[key], at)
        inner = [TP(qb, at), TP(kb, at), TP(vb, at), N(), N(), S(c.seq_q), S(c.skv), S(c.dropout),
                 S(c.causal), S(False), S(sc), N(), N(), N(), N()]
        with b.op("aten::_flash_attention_forward", inner):
            empty_like(b, *qb, at, SCALAR_CODE[c.dtype])
            if b.gpu.amd:
                b.runtime("hipStreamGetDevice")
                empty(b, [c.batch * c.heads_q, c.seq_q], 6)
                if c.causal:
                    fill_zero_int(b, to_ns(c.aux_kernel_us))
                b.launch(aotriton_attn_fwd(c, b.gpu))
                b.leaf("aten::view", [T([c.batch * c.heads_q, c.seq_q], "float"), L([c.batch, c.heads_q, c.seq_q])])
            else:
                empty(b, [c.batch, c.heads_q, c.seq_q], 6)
                b.runtime("cudaStreamIsCapturing")
                empty(b, [], 4)
                empty(b, [], 4)
                b.runtime("cudaFuncSetAttribute")
                b.launch(flash_fwd_kernel(c, PYTORCH_FLASH, to_ns(c.kernel_us), varlen=False))
            empty(b, [0], SCALAR_CODE[c.dtype])
        transpose(b, *g["oi"], at)


def _efficient_forward(b: TraceBuilder, c: SyntheticAttentionCall, seq: int | None) -> None:
    at, g, sc = ATEN_TYPE[c.dtype], _sdpa_geometry(c), c.softmax_scale
    bias_dims = [c.batch, c.heads_q, c.seq_q, c.skv]
    bias_strides = [c.seq_q * c.skv, 0, c.skv, 1]
    bias = T(bias_dims, at, bias_strides) if c.attn_mask else N()
    slots = [TP(g["q"], at), TP(g["k"], at), TP(g["v"], at), bias, S(c.with_backward), S(c.dropout),
             S(c.causal), S(sc)]
    qb, kb, vb = g["qi"], g["ki"], g["vi"]
    with b.op("aten::_scaled_dot_product_efficient_attention", slots, seq=seq):
        if c.attn_mask:
            with b.op("aten::expand", [TP(g["mask"], at), L(bias_dims), S(False)]):
                b.leaf("aten::as_strided", [TP(g["mask"], at), L(bias_dims), L(bias_strides), N()])
        for key in ("q", "k", "v"):
            transpose(b, *g[key], at)
        inner = [TP(qb, at), TP(kb, at), TP(vb, at), bias, N(), N(), N(), N(), S(c.dropout),
                 S(1 if c.causal else 0), S(c.with_backward), S(sc), N(), N()]
        with b.op("aten::_efficient_attention_forward", inner):
            empty(b, [c.batch, c.seq_q, c.heads_q, c.dv], SCALAR_CODE[c.dtype])
            empty(b, [c.batch, c.heads_q, cdiv(c.seq_q, 32) * 32 if c.with_backward else 0], 6)
            if b.gpu.amd:
                b.runtime("hipStreamGetDevice")
                if c.causal:
                    fill_zero_int(b, to_ns(c.aux_kernel_us))
                b.launch(aotriton_attn_fwd(c, b.gpu))
            else:
                b.runtime("cudaFuncSetAttribute")
                b.launch(mem_eff_fwd(c))
        transpose(b, *g["oi"], at)


def _cudnn_forward(b: TraceBuilder, c: SyntheticAttentionCall, seq: int | None) -> None:
    at, g, sc = ATEN_TYPE[c.dtype], _sdpa_geometry(c), c.softmax_scale
    bias = TP(g["mask"], at) if c.attn_mask else N()
    slots = [TP(g["q"], at), TP(g["k"], at), TP(g["v"], at), bias, S(c.with_backward), S(c.dropout),
             S(c.causal), S(False), S(sc)]
    with b.op("aten::_scaled_dot_product_cudnn_attention", slots, seq=seq):
        empty(b, [c.batch, c.seq_q, c.heads_q, c.dv], SCALAR_CODE[c.dtype])
        b.leaf("aten::permute", [T([c.batch, c.seq_q, c.heads_q, c.dv], at), L([0, 2, 1, 3])])
        if c.with_backward:
            empty(b, [c.batch, c.heads_q, c.seq_q, 1], 6)
        b.launch(cudnn_kernel(c, b.gpu, backward=False))


def backward(b: TraceBuilder, fwd: ForwardPass) -> None:
    """The SDPA backward node and the backend's backward op tree."""
    c = fwd.call
    node, seq, fwd_op, _ = fwd.seqs[0]
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "bwd", c.flavour, node, None, seq)
    grad_out = TP(_sdpa_geometry(c)["o"], ATEN_TYPE[c.dtype])
    with b.instance_scope(inst), autograd_node(b, node, seq, fwd_op, [grad_out]):
        inst.op_external_id = b.ops[-1]["args"]["External id"]
        _BACKENDS[c.flavour].backward(b, c)


def _grad_inputs(c: SyntheticAttentionCall) -> tuple[str, _Geometry, float, list[Slot]]:
    """ATen type, geometry, scale and the (q, k, v, out) slots every backend's backward op takes."""
    at, g = ATEN_TYPE[c.dtype], _sdpa_geometry(c)
    return at, g, c.softmax_scale, [TP(g["q"], at), TP(g["k"], at), TP(g["v"], at), TP(g["o"], at)]


def _flash_backward(b: TraceBuilder, c: SyntheticAttentionCall) -> None:
    at, g, sc, (tq, tk, tv, to) = _grad_inputs(c)
    qb, kb, vb, ob = g["qi"], g["ki"], g["vi"], g["oi"]
    lse = T([c.batch, c.heads_q, c.seq_q], "float")
    philox = T([], "long int")
    slots = [to, tq, tk, tv, to, lse, N(), N(), S(c.seq_q), S(c.skv), S(c.dropout), S(c.causal),
             philox, philox, S(sc)]
    with b.op("aten::_scaled_dot_product_flash_attention_backward", slots):
        for key in ("o", "q", "k", "v", "o"):
            transpose(b, *g[key], at)
        inner = [TP(ob, at), TP(qb, at), TP(kb, at), TP(vb, at), TP(ob, at), lse, N(), N(),
                 S(c.seq_q), S(c.skv), S(c.dropout), S(c.causal), philox, philox, S(sc), N(), N()]
        with b.op("aten::_flash_attention_backward", inner):
            for dims in (qb, kb, vb):
                empty_like(b, *dims, at, SCALAR_CODE[c.dtype])
            if b.gpu.amd:
                empty(b, [c.batch, c.heads_q, c.seq_q], 6)
                for kern in aotriton_bwd(c):
                    b.launch(kern)
            else:
                if c.gqa:
                    empty(b, [c.batch, c.skv, c.heads_q, c.head_dim_qk], SCALAR_CODE[c.dtype])
                    empty(b, [c.batch, c.skv, c.heads_q, c.dv], SCALAR_CODE[c.dtype])
                empty(b, [c.batch, c.heads_q, cdiv(c.seq_q, 128) * 128], 6)
                empty(b, [c.batch, cdiv(c.seq_q, 128) * 128, c.heads_q, round_hdim(c.head_dim_qk)], 6)
                for kern in flash_bwd_kernels(c, PYTORCH_FLASH, varlen=False):
                    b.launch(kern)
                if c.gqa:
                    gqa_head_sums(b, c, kb[0], vb[0])
        for dims in (qb, kb, vb):
            transpose(b, *dims, at)


def _efficient_backward(b: TraceBuilder, c: SyntheticAttentionCall) -> None:
    at, g, sc, (tq, tk, tv, to) = _grad_inputs(c)
    qb, kb, vb, ob = g["qi"], g["ki"], g["vi"], g["oi"]
    philox = T([], "long int")
    lse_e = T([c.batch, c.heads_q, cdiv(c.seq_q, 32) * 32], "float")
    bias = T([c.batch, c.heads_q, c.seq_q, c.skv], at, [c.seq_q * c.skv, 0, c.skv, 1]) if c.attn_mask else N()
    slots = [to, tq, tk, tv, bias, to, lse_e, philox, philox, S(c.dropout),
             L(["True", "True", "True", "False"]), S(c.causal), S(sc)]
    with b.op("aten::_scaled_dot_product_efficient_attention_backward", slots):
        for key in ("o", "q", "k", "v", "o"):
            transpose(b, *g[key], at)
        inner = [TP(ob, at), TP(qb, at), TP(kb, at), TP(vb, at), bias, TP(ob, at), N(), N(), S(c.seq_q),
                 S(c.skv), lse_e, S(c.dropout), philox, philox, S(1 if c.causal else 0), S(False),
                 S(sc), N(), N(), S(False)]
        with b.op("aten::_efficient_attention_backward", inner):
            for dims in (qb, kb, vb):
                empty_like(b, *dims, at, SCALAR_CODE[c.dtype])
            if b.gpu.amd:
                for kern in aotriton_bwd(c):
                    b.launch(kern)
            else:
                empty(b, [c.batch, c.heads_q, c.seq_q], 6)
                b.runtime("cudaFuncSetAttribute")
                b.launch(mem_eff_bwd(c))
        for dims in (qb, kb, vb):
            transpose(b, *dims, at)


def _cudnn_backward(b: TraceBuilder, c: SyntheticAttentionCall) -> None:
    at, g, sc, (tq, tk, tv, to) = _grad_inputs(c)
    qb, kb, vb = g["qi"], g["ki"], g["vi"]
    philox = T([], "long int")
    slots = [to, tq, tk, tv, to, T([c.batch, c.heads_q, c.seq_q, 1], "float"), philox, philox,
             TP(g["mask"], at) if c.attn_mask else N(), N(), N(), S(c.seq_q), S(c.skv),
             S(c.dropout), S(c.causal), S(sc)]
    with b.op("aten::_scaled_dot_product_cudnn_attention_backward", slots):
        for dims in (qb, kb, vb):
            empty(b, dims[0], SCALAR_CODE[c.dtype])
        b.launch(cudnn_kernel(c, b.gpu, backward=True))


@dataclass(frozen=True)
class _Backend:
    """One SDPA backend: the autograd node its forward op records, and its inner forward / backward op trees."""

    node: str
    forward: Callable[[TraceBuilder, SyntheticAttentionCall, int | None], None]  # (builder, call, sequence number)
    backward: Callable[[TraceBuilder, SyntheticAttentionCall], None]


_BACKENDS = {
    "aten_flash": _Backend("ScaledDotProductFlashAttentionBackward0", _flash_forward, _flash_backward),
    "aten_efficient": _Backend("ScaledDotProductEfficientAttentionBackward0", _efficient_forward, _efficient_backward),
    "aten_cudnn": _Backend("ScaledDotProductCudnnAttentionBackward0", _cudnn_forward, _cudnn_backward),
}
