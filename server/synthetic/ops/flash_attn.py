"""The flash_attn package: ``flash_attn_func`` (``flash_attn``) and ``flash_attn_varlen_func``
(``flash_attn_varlen``), an autograd.Function around a custom op, forward and backward; FlashAttention-2
kernels on NVIDIA, CK tile FMHA on ROCm."""

from __future__ import annotations

from typing import Any

from sdpa_analyzer.server.synthetic.builder import PTR, TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import (
    FLASH_ATTN_PKG,
    ck_fmha,
    flash_bwd_kernels,
    flash_fwd_kernel,
    round_hdim,
)
from sdpa_analyzer.server.synthetic.ops.common import (
    ForwardPass,
    autograd_node,
    copies,
    empty,
    empty_like,
    gqa_head_sums,
)
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, SCALAR_CODE, TP, L, N, S, T, bnhd, row_major
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import cdiv, to_ns


def _flash_attn_slots(c: SyntheticAttentionCall, *, varlen: bool) -> dict[str, Any]:
    at = ATEN_TYPE[c.dtype]
    if varlen:
        tq, tk = sum(c.q_lens), sum(c.kv_lens)
        q = ([tq, c.heads_q, c.head_dim_qk], row_major([tq, c.heads_q, c.head_dim_qk]))
        k = ([tk, c.hkv, c.head_dim_qk], row_major([tk, c.hkv, c.head_dim_qk]))
        v = ([tk, c.hkv, c.dv], row_major([tk, c.hkv, c.dv]))
        o = ([tq, c.heads_q, c.dv], row_major([tq, c.heads_q, c.dv]))
        lse = [c.heads_q, tq]
    else:
        q = bnhd(c.batch, c.seq_q, c.heads_q, c.head_dim_qk)
        k = bnhd(c.batch, c.skv, c.hkv, c.head_dim_qk)
        v = bnhd(c.batch, c.skv, c.hkv, c.dv)
        o = bnhd(c.batch, c.seq_q, c.heads_q, c.dv)
        lse = [c.batch, c.heads_q, c.seq_q]
    wl, wr = c.window if c.window is not None else (-1, -1)
    return {"q": TP(q, at), "k": TP(k, at), "v": TP(v, at), "o": TP(o, at), "lse": T(lse, "float"),
            "cu": T([c.batch + 1], "int"), "wl": S(wl), "wr": S(wr), "q_dims": q, "k_dims": k, "v_dims": v}


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """FlashAttnFunc / FlashAttnVarlenFunc.apply -> the flash_attn custom op -> its kernels."""
    varlen = c.flavour == "flash_attn_varlen"
    s, at, sc = _flash_attn_slots(c, varlen=varlen), ATEN_TYPE[c.dtype], c.softmax_scale
    func = "FlashAttnVarlenFunc" if varlen else "FlashAttnFunc"
    custom = "flash_attn::_flash_attn_varlen_forward" if varlen else "flash_attn::_flash_attn_forward"
    # autograd.Function.apply records every argument it can type: tensors, numbers, the window tuple
    user_scale = S(c.scale) if c.scale is not None else N()
    window = L(list(c.window) if c.window is not None else [-1, -1])
    apply_args = [s["q"], s["k"], s["v"]]
    if varlen:
        apply_args += [s["cu"], s["cu"], S(c.seq_q), S(c.skv)]
    apply_args += [S(c.dropout), user_scale, S(c.causal), window, S(0.0), N(), S(False), S(False)]
    apply_args += [N(), S(True)] if varlen else [S(True)]
    if varlen:
        args = [s["q"], s["k"], s["v"], s["cu"], s["cu"], S(c.seq_q), S(c.skv), S(c.dropout), S(sc),
                S(c.causal), s["wl"], s["wr"], S(0.0), N(), S(False), N(), N(), N()]
    else:
        args = [s["q"], s["k"], s["v"], S(c.dropout), S(sc), S(c.causal), s["wl"], s["wr"], S(0.0), N(),
                S(False)]
    seq = b.new_seq() if c.with_backward else None
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, func, None, seq)
    entry = "flash_attn_varlen_func" if varlen else "flash_attn_func"
    with b.py(f"flash_attn/flash_attn_interface.py({1373 if varlen else 1196}): {entry}"), \
            b.py("torch/autograd/function.py(575): apply"), \
            b.py(f"<built-in method apply of FunctionMeta object at {PTR}>"), b.instance_scope(inst), \
            b.op(func, apply_args, seq=seq) as outer:
        inst.op_external_id = outer["args"]["External id"]
        with b.py(f"flash_attn/flash_attn_interface.py({900 if varlen else 838}): forward"):
            copies(b, c, c.copies_before)
            with b.py("torch/_ops.py(1158): __call__"), b.op(custom, args), \
                    b.py(f"flash_attn/flash_attn_interface.py({170 if varlen else 91}): _{custom.split('::_')[1]}"), \
                    b.py(f"<built-in method {'varlen_fwd' if varlen else 'fwd'} of PyCapsule object at {PTR}>"):
                empty_like(b, *s["q_dims"], at, SCALAR_CODE[c.dtype])
                empty(b, s["lse"][0], 6)
                empty(b, [2], 4)
                if b.gpu.amd:
                    b.launch(ck_fmha(c, "FmhaFwdKernel", to_ns(c.kernel_us), "main",
                                     (cdiv(c.seq_q, 128), c.heads_q, c.batch)))
                else:
                    b.runtime("cudaFuncSetAttribute")
                    b.launch(flash_fwd_kernel(c, FLASH_ATTN_PKG, to_ns(c.kernel_us), varlen=varlen))
            copies(b, c, c.copies_after)
    if seq is not None:
        fwd.seqs.append((f"{func}Backward", seq, outer, []))


def backward(b: TraceBuilder, fwd: ForwardPass) -> None:
    """The Function's backward node on the autograd thread: the custom backward op and its kernels."""
    c = fwd.call
    varlen = c.flavour == "flash_attn_varlen"
    node, seq, fwd_op, _ = fwd.seqs[0]
    s, at, sc = _flash_attn_slots(c, varlen=varlen), ATEN_TYPE[c.dtype], c.softmax_scale
    rng_state = T([2], "long int")
    if varlen:
        args = [s["o"], s["q"], s["k"], s["v"], s["o"], s["lse"], s["q"], s["k"], s["v"], s["cu"], s["cu"],
                S(c.seq_q), S(c.skv), S(c.dropout), S(sc), S(c.causal), s["wl"], s["wr"], S(0.0), N(),
                S(False), rng_state]
        custom = "flash_attn::_flash_attn_varlen_backward"
    else:
        args = [s["o"], s["q"], s["k"], s["v"], s["o"], s["lse"], s["q"], s["k"], s["v"], S(c.dropout), S(sc),
                S(c.causal), s["wl"], s["wr"], S(0.0), N(), S(False), rng_state]
        custom = "flash_attn::_flash_attn_backward"
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "bwd", c.flavour, node, None, seq)
    with b.instance_scope(inst), autograd_node(b, node, seq, fwd_op, [s["o"]]):
        inst.op_external_id = b.ops[-1]["args"]["External id"]
        with b.py("torch/autograd/function.py(307): apply"), \
                b.py(f"flash_attn/flash_attn_interface.py({970 if varlen else 880}): backward"):
            for key in ("q_dims", "k_dims", "v_dims"):
                empty_like(b, *s[key], at, SCALAR_CODE[c.dtype])
            with b.py("torch/_ops.py(1158): __call__"), b.op(custom, args), \
                    b.py(f"flash_attn/flash_attn_interface.py({268 if varlen else 213}): _{custom.split('::_')[1]}"), \
                    b.py(f"<built-in method {'varlen_bwd' if varlen else 'bwd'} of PyCapsule object at {PTR}>"):
                if c.gqa:
                    empty(b, [*s["k_dims"][0][:-2], c.heads_q, c.head_dim_qk], SCALAR_CODE[c.dtype])
                    empty(b, [*s["v_dims"][0][:-2], c.heads_q, c.dv], SCALAR_CODE[c.dtype])
                empty(b, [c.batch, c.heads_q, cdiv(c.seq_q, 128) * 128], 6)
                if b.gpu.amd:
                    g = (cdiv(c.seq_q, 128), c.heads_q, c.batch)
                    b.launch(ck_fmha(c, "FmhaBwdOGradDotOKernel", to_ns(c.aux_kernel_us), "aux", g))
                    b.launch(ck_fmha(c, "FmhaBwdDQDKDVKernel", to_ns(c.bwd_us), "main", (cdiv(c.skv, 128),
                                                                                         c.heads_q, c.batch)))
                    b.launch(ck_fmha(c, "FmhaBwdConvertQGradKernel", to_ns(c.aux_kernel_us), "aux", g))
                else:
                    empty(b, [c.batch, cdiv(c.seq_q, 128) * 128, c.heads_q, round_hdim(c.head_dim_qk)], 6)
                    for kern in flash_bwd_kernels(c, FLASH_ATTN_PKG, varlen=varlen):
                        b.launch(kern)
                if c.gqa:
                    kd, vd = s["k_dims"][0], s["v_dims"][0]
                    if varlen:  # (total, H, d) tensors: sum over the head group the same way
                        kd, vd = [1, *kd], [1, *vd]
                    gqa_head_sums(b, c, kd, vd)
