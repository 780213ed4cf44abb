"""SGLang on ROCm (``sglang_prefill``, ``sglang_decode``, inference only): aiter's kernels under SGLang's profiler
wrappers, the KV-cache write SGLang runs before each layer's attention, and SGLang's step annotation.

What the real MI300X traces show (``inference/sglang_decode/``): ``sglang_profiler::<module>_<fn>_<n>`` ops holding
only the function's tensor arguments (kernel_shape_profiler.py); the decode call
``sglang_profiler::attention_paged_attention_ragged_<n>`` launching aiter's ll4mi QKV and reduce kernels; the KV write
``sglang_profiler::memory_pool__set_kv_buffer_impl_<n>`` → ``sglang::store_cache`` → ``store_kvcache`` just before it.
The prefill call is ``sglang_profiler::mha__mha_batch_prefill_<n>`` wrapping ``aiter::mha_batch_prefill`` (whose
Concrete Inputs hold is_causal), with aiter's CK FmhaBatchPrefillWithPagedKVCacheKernel.
"""

from __future__ import annotations

from sdpa_analyzer.server.synthetic.builder import TraceBuilder
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.synthetic.kernels import (
    aiter_batch_prefill_kernel,
    aiter_paged_decode_kernels,
    store_kvcache_kernel,
)
from sdpa_analyzer.server.synthetic.ops.common import ForwardPass, sums_annotation
from sdpa_analyzer.server.synthetic.slots import ATEN_TYPE, N, S, T
from sdpa_analyzer.server.synthetic.truth import SyntheticInstance
from sdpa_analyzer.server.synthetic.units import cdiv

_SLOTS = 835874  # the real trace's cache slots (page size 1)


def _kv_write(b: TraceBuilder, c: SyntheticAttentionCall) -> None:
    at, tokens, d = ATEN_TYPE[c.dtype], sum(c.q_lens), c.head_dim_qk
    k = T([tokens, c.hkv, d], at)
    cache = T([_SLOTS, c.hkv, d], at)
    slots = [k, k, cache, cache, T([tokens], "long int")]
    with b.py("sglang/srt/mem_cache/memory_pool.py(612): set_kv_buffer"), \
            b.op("sglang_profiler::memory_pool__set_kv_buffer_impl_353", slots), \
            b.op("sglang::store_cache", [T([tokens, c.hkv * d], at), T([tokens, c.hkv * d], at),
                                         T([_SLOTS, c.hkv * d], at), T([_SLOTS, c.hkv * d], at),
                                         T([tokens], "long int"), N(), N()]):
        b.launch(store_kvcache_kernel(c))


def prefill(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """One layer's prefill: the KV write, then aiter::mha_batch_prefill under SGLang's wrapper."""
    at, tokens, d, n = ATEN_TYPE[c.dtype], sum(c.q_lens), c.head_dim_qk, c.batch
    q = T([tokens, c.heads_q, d], at)
    pages = cdiv(sum(c.kv_lens), c.page_size)
    cache = T([max(1024, pages), c.page_size, c.hkv, d], at)
    out = T([tokens, c.heads_q, c.dv], at)
    cu, indptr, indices = T([n + 1], "int"), T([n + 1], "int"), T([pages], "int")
    _kv_write(b, c)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour, "aiter::mha_batch_prefill", None, None)
    with b.py("sglang/srt/layers/attention/aiter_backend.py(1121): forward_extend"), b.instance_scope(inst), \
            b.op("sglang_profiler::mha__mha_batch_prefill_12", [q, cache, cache, cu, indptr, indices, N(), out]), \
            b.op("aiter::mha_batch_prefill",
                 [q, cache, cache, cu, indptr, indices, S(max(c.q_lens)), S(max(c.kv_lens)), S(0.0),
                  S(c.softmax_scale), S(0.0), S(False), S(c.causal), S(-1), S(-1), S(False), S(False), out, N(),
                  N()]) as op:
        inst.op_external_id = op["args"]["External id"]
        b.launch(aiter_batch_prefill_kernel(c))


def decode(b: TraceBuilder, c: SyntheticAttentionCall, fwd: ForwardPass) -> None:
    """One layer's decode: the KV write, then aiter's paged_attention_ragged under SGLang's wrapper (12 tensors)."""
    at, bs, d = ATEN_TYPE[c.dtype], c.batch, c.head_dim_qk
    q = T([bs, c.heads_q, d], at)
    cache = T([_SLOTS, 1, c.hkv, d], at)
    _kv_write(b, c)
    inst = SyntheticInstance(fwd.call_index, fwd.repeat_index, "fwd", c.flavour,
                             "sglang_profiler::attention_paged_attention_ragged_100", None, None)
    slots = [q, T([10905190400], "unsigned char"), q, cache, cache, T([bs + 1], "int"), T([20971520], "int"),
             T([4096], "int"), N(), T([1], "float"), T([1], "float"), N()]
    with b.py("sglang/srt/layers/attention/aiter_backend.py(2638): forward_decode"), b.instance_scope(inst), \
            b.op("sglang_profiler::attention_paged_attention_ragged_100", slots) as op:
        inst.op_external_id = op["args"]["External id"]
        for k in aiter_paged_decode_kernels(c):
            b.launch(k)


def step_annotation(c: SyntheticAttentionCall) -> str:
    """SGLang's step range: ``execute_<tokens>_context_<n>(sq..sk..sqsq..sqsk..)[_generation_<m>(...)]``."""
    return sums_annotation(c)
