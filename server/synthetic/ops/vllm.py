"""vLLM paged attention (``vllm_paged``, inference only): ``vllm::unified_attention_with_output`` with the
KV-cache write and the GPU's attention backend (FlashAttention-2 on Hopper/Ampere, FlashInfer TRT-LLM on
Blackwell, the Triton unified kernel on ROCm); and the per-step batch annotation vLLM records."""

from __future__ import annotations

from sdpa_analyzer.server.synthetic.builder import PTR, TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import vllm_kernels, vllm_unified_kernels
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass, copies, sums_annotation
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import cdiv


def forward(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """vllm::unified_attention_with_output: KV-cache write, then the backend's attention kernels."""
    at = ATEN_TYPE[c.dtype]
    tokens, d, dv = sum(c.q_lens), c.head_dim_qk, c.dv
    row = (c.heads_q + 2 * c.hkv) * d  # q, k and v are slices of one fused qkv projection
    q = T([tokens, c.heads_q, d], at, [row, d, 1])
    k = T([tokens, c.hkv, d], at, [row, d, 1])
    v = T([tokens, c.hkv, dv], at, [row, dv, 1])
    out = T([tokens, c.heads_q, dv], at)
    blocks_per_seq = [cdiv(n, c.page_size) for n in c.kv_lens]
    num_blocks = max(1024, cdiv(sum(blocks_per_seq), 1024) * 1024)
    cache_dims = [num_blocks, c.page_size, c.hkv, d]
    cache = T(cache_dims, at)
    cache_k, attn_kernels = vllm_kernels(c, b.gpu)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "vllm::unified_attention_with_output",
                             None, None)
    with b.py("vllm/attention/layer.py(290): forward"), b.py("torch/_ops.py(1244): __call__"), \
            b.py(f"<built-in method unified_attention_with_output of pybind11_builtins.pybind11_detail_function_"
                 f"record_v1_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1 object at {PTR}>"), \
            b.instance_scope(inst), \
            b.op("vllm::unified_attention_with_output", [q, k, v, out, N(), N(), N()]) as outer:
        inst.op_external_id = outer["args"]["External id"]
        backend = ("vllm/v1/attention/backends/rocm_attn.py(310): forward" if b.gpu.amd else
                   "vllm/v1/attention/backends/flashinfer.py(1064): forward" if b.gpu.arch == "sm100" else
                   "vllm/v1/attention/backends/flash_attn.py(455): forward")
        with b.py("vllm/attention/layer.py(852): unified_attention_with_output"), b.py(backend):
            copies(b, c, c.copies_before)
            with b.py("torch/_ops.py(1244): __call__"), \
                    b.op("_C_cache_ops::reshape_and_cache_flash",
                         [k, v, cache, cache, T([tokens], "long int"), N(), T([], "float"), T([], "float")]):
                b.launch(cache_k)
            if b.gpu.amd:
                with b.py("vllm/attention/ops/triton_unified_attention.py(640): unified_attention"):
                    b.launch(attn_kernels[0])
            elif b.gpu.arch == "sm100":
                with b.py("flashinfer/prefill.py(3330): trtllm_batch_context_with_kv_cache"):
                    b.launch(attn_kernels[0])
            else:
                wl, wr = c.window if c.window is not None else (-1, -1)
                fa_args = [q, cache, cache, out, T([c.batch + 1], "int"), N(), T([c.batch], "int"), N(),
                           T([c.batch, max(blocks_per_seq)], "int"), N(), S(c.seq_q), S(c.skv), S(0.0),
                           S(c.softmax_scale), S(False), S(c.causal), S(wl), S(wr), S(0.0), S(False), N()]
                with b.py("vllm/vllm_flash_attn/flash_attn_interface.py(233): flash_attn_varlen_func"), \
                        b.py("torch/_ops.py(1158): __call__"), b.op("_vllm_fa2_C::varlen_fwd", fa_args):
                    b.runtime("cudaFuncSetAttribute")
                    for kern in attn_kernels:
                        b.launch(kern)
            copies(b, c, c.copies_after)


def batch_annotation(c: SyntheticAttentionCall) -> str:
    """vLLM's per-step range, e.g. ``execute_context_1(888_788544)_generation_0(0)``.

    Context (prefill) requests: count, then (query tokens _ sum of query x context lengths); generation
    (decode) requests: count, then (their query tokens). The real trace's single 888-token prefill reads
    888_788544 = 888 x 888; the second context number and the generation number are our reading of it.
    """
    ctx = [(q, k) for q, k in zip(c.q_lens, c.kv_lens, strict=True) if q > 1]
    gen = [q for q in c.q_lens if q == 1]
    return (f"execute_context_{len(ctx)}({sum(q for q, _ in ctx)}_{sum(q * k for q, k in ctx)})"
            f"_generation_{len(gen)}({sum(gen)})")


def forward_unified(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """Newer vLLM (``vllm_unified``): the KV-cache write moved out of the attention op into
    ``vllm::unified_kv_cache_update`` (→ ``_C_cache_ops::reshape_and_cache_flash``), then
    ``vllm::unified_attention_with_output`` with its Triton kernels (as the real MI300X piecewise step shows)."""
    at = ATEN_TYPE[c.dtype]
    tokens, d, dv = sum(c.q_lens), c.head_dim_qk, c.dv
    row = (c.heads_q + 2 * c.hkv) * d
    q = T([tokens, c.heads_q, d], at, [row, d, 1])
    k = T([tokens, c.hkv, d], at, [row, d, 1])
    v = T([tokens, c.hkv, dv], at, [row, dv, 1])
    out = T([tokens, c.heads_q, dv], at)
    blocks = max(1024, cdiv(sum(cdiv(n, c.page_size) for n in c.kv_lens), 1024) * 1024)
    cache = T([blocks, c.page_size, c.hkv, d], at)
    cache_k, attn_kernels = vllm_unified_kernels(c, b.gpu)
    with b.py("vllm/model_executor/layers/attention/attention.py(644): unified_kv_cache_update"), \
            b.op("vllm::unified_kv_cache_update", [k, v, N()]), \
            b.op("_C_cache_ops::reshape_and_cache_flash",
                 [k, v, cache, cache, T([tokens], "long int"), N(), T([], "float"), T([], "float")]):
        b.launch(cache_k)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "vllm::unified_attention_with_output",
                             None, None)
    with b.py("vllm/model_executor/layers/attention/attention.py(685): unified_attention_with_output"), \
            b.instance_scope(inst), \
            b.op("vllm::unified_attention_with_output", [q, k, v, out, N(), N(), N(), T([0], at)]) as op:
        inst.op_external_id = op["args"]["External id"]
        with b.py("aiter/ops/triton/attention/unified_attention.py(103): unified_attention"):
            for kern in attn_kernels:
                b.launch(kern)


def sums_batch_annotation(c: SyntheticAttentionCall) -> str:
    """Newer vLLM's step range, e.g. ``execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(
    sq37sk34489sqsq37sqsk34489)`` (the real MI300X piecewise step)."""
    return sums_annotation(c)
