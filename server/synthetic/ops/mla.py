"""FlashMLA (``flashmla``, inference only, NVIDIA): DeepSeek's MLA decode as SGLang's FlashMLA backend runs it.

``sgl_kernel::fwd_kvcache_mla`` (sgl-project/sglang sgl-kernel/csrc/common_extension.cc) with q (B, s_q, Hq, d_qk),
ONE latent KV cache (blocks, 64, 1, d_qk) whose first head_size_v columns are V, the requests' cache lengths and
block table (tensors: their values are not in the trace), and SGLang's step annotation with the token sums.
"""

from __future__ import annotations

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import flashmla_kernels
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import cdiv

_PAGE = 64  # FlashMLA's page block size


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    at, s_q = ATEN_TYPE[c.dtype], c.q_lens[0]
    max_blocks = cdiv(max(c.kv_lens), _PAGE)
    blocks = max(1024, cdiv(sum(cdiv(k, _PAGE) for k in c.kv_lens), 1024) * 1024)
    q = T([c.batch, s_q, c.heads_q, c.head_dim_qk], at)
    cache = T([blocks, _PAGE, c.hkv, c.head_dim_qk], at)
    slots = [q, cache, S(c.dv), T([c.batch], "int"), T([c.batch, max_blocks], "int"), S(c.softmax_scale),
             S(c.causal), T([b.gpu.num_sms, 8], "int"), T([c.batch + 1], "int"), S(False), N()]
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "sgl_kernel::fwd_kvcache_mla", None,
                             None)
    with b.py("sglang/srt/layers/attention/flashmla_backend.py(473): forward_decode"), \
            b.py("sgl_kernel/flash_mla.py(88): flash_mla_with_kvcache"), b.instance_scope(inst), \
            b.op("sgl_kernel::fwd_kvcache_mla", slots) as op:
        inst.op_external_id = op["args"]["External id"]
        for k in flashmla_kernels(c):
            b.launch(k)
