"""aiter's flash forward as a compiled DiT runs it on ROCm (``aiter_flash``, inference only): ``aiter::fmha_v3_fwd``
on q/k/v (B, N, H, d) launching aiter's asm forward kernel, with an Inductor RoPE kernel launched just before it by
the compiled graph (its name, ``triton_poi_fused_..._fmha_v3_fwd_...``, lists the attention op it sits next to)."""

from __future__ import annotations

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import aiter_fmha_v3_kernel, inductor_rope_kernel
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    at = ATEN_TYPE[c.dtype]
    q = T([c.batch, c.seq_q, c.heads_q, c.head_dim_qk], at)
    k = T([c.batch, c.skv, c.hkv, c.head_dim_qk], at)
    v = T([c.batch, c.skv, c.hkv, c.dv], at)
    with b.py("/tmp/torchinductor_root/c3/cc3xq4.py(412): call"):
        b.launch(inductor_rope_kernel(c))
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "aiter::fmha_v3_fwd", None, None)
    # fmha_v3_fwd(q, k, v, dropout_p, softmax_scale, is_causal, window_size_left, window_size_right,
    #   return_softmax_lse, return_dropout_randval, how_v3_bf16_cvt, out, bias, alibi_slopes, gen)
    with b.py("aiter/ops/mha.py(1611): _flash_attn_forward"), b.instance_scope(inst), \
            b.op("aiter::fmha_v3_fwd", [q, k, v, S(0.0), S(c.softmax_scale), S(c.causal), S(-1), S(0 if c.causal
                                         else -1), S(True), S(False), S(1), N(), N(), N(), N()]) as op:
        inst.op_external_id = op["args"]["External id"]
        b.launch(aiter_fmha_v3_kernel(c))
