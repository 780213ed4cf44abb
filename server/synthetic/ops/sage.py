"""SageAttention as xDiT runs it on ROCm (``sage``, inference only): aiter's Triton SageAttention v1.

The quantization launch (``sage_quant_kernel``: int8 Q and K per block, fp8 V per channel) and the attention
launch (``sage_fwd``: int8 Q·Kᵀ, fp8 P·V), each recorded as a ``<kernel>_<n>`` op with its tensor arguments,
Q/K/V [B, H, N, d]. ``copies_before`` puts layout copies between the two launches (real replays have other kernels
there, which must not split the call).
"""

from __future__ import annotations

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import sage_kernels
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass, copies
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import cdiv

INT8, FP8 = "signed char", "c10::Float8_e4m3fnuz"  # gfx942 runs fp8 as e4m3fnuz


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    at = ATEN_TYPE[c.dtype]
    shape = [c.batch, c.heads_q, c.seq_q, c.head_dim_qk]
    kshape = [c.batch, c.hkv, c.skv, c.head_dim_qk]
    blocks_q, blocks_k = cdiv(c.seq_q, 128), cdiv(c.skv, 64)
    q_scale, k_scale = T([c.batch, c.heads_q, blocks_q], "float"), T([c.batch, c.hkv, blocks_k], "float")
    v_scale = T([c.batch, c.hkv, c.dv], "float")
    quant, attn = sage_kernels(c)
    with b.py("xfuser/model_executor/layers/attention_processor.py(811): __call__"), \
            b.py("aiter/ops/triton/attention/fav3_sage.py(402): fav3_sage"):
        with b.op("sage_quant_kernel_7", [T(shape, at), T(shape, INT8), q_scale, T(kshape, at), T(kshape, INT8),
                                          k_scale, T(kshape, at), T(kshape, FP8), v_scale]):
            b.launch(quant)
        copies(b, c, c.copies_before)  # a layout copy between the quantization and the attention launch
        inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "sage_fwd_8", None, None)
        strides = [S(0)] * 8  # stride_qsz .. stride_vsh of the descale tensors
        with b.instance_scope(inst), \
                b.op("sage_fwd_8", [T(shape, INT8), T(kshape, INT8), T(kshape, FP8), N(), q_scale, k_scale, v_scale,
                                    *strides, N(), T([c.batch, c.heads_q, c.seq_q, c.dv], at)]) as op:
            inst.op_external_id = op["args"]["External id"]
            b.launch(attn)
