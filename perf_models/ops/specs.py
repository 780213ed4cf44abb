"""The attention op table: one OpSpec per op name, with the argument slots of every known signature.

Every slot index below was checked against the library's real signature (quoted in the comment above
each entry, with where it came from). Libraries change signatures between versions, so an op may have
several `Signature`s; the row reader picks the first whose argument count fits AND whose scalar slots
hold the right kinds (a causal slot must hold True/False, a dropout slot a number, ...). That check is
what stops a softmax_scale of 0.088 from ever being read as `causal` (docs/perf-model.md, pitfall 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from perf_models.config import Direction
from perf_models.ops.types import AttentionType, CausalRule, Layout

FWD, BWD = Direction.FWD, Direction.BWD

# family names (ParsedOp.family)
SDPA = "aten_sdpa"  # the dispatcher: aten::scaled_dot_product_attention
SDPA_FLASH = "aten_sdpa_flash"
SDPA_EFFICIENT = "aten_sdpa_efficient"
SDPA_CUDNN = "aten_sdpa_cudnn"
SDPA_MATH = "aten_sdpa_math"
ATEN_FLASH = "aten_flash"  # aten::_flash_attention_{forward,backward}
ATEN_EFFICIENT = "aten_efficient"  # aten::_efficient_attention_{forward,backward}
FLASH_ATTN = "flash_attn"  # Dao-AILab flash-attn 2.x (and aiter's look-alike autograd wrapper)
FLASH_ATTN_3 = "flash_attn_3"
AITER = "aiter"
TRANSFORMER_ENGINE = "transformer_engine"
VLLM = "vllm"


@dataclass(frozen=True, slots=True)
class Signature:
    """Argument slots of one version of an op. None = the version has no such argument."""

    label: str  # which library versions
    text: str  # the signature as the library declares it
    ref: str  # where it was checked
    n_args: tuple[int, int]  # accepted number of recorded arguments (min, max)
    q: int
    k: int
    v: int
    dout: int | None = None
    out: int | None = None  # forward output (saved `out` of a backward, `output` of vLLM)
    dropout: int | None = None
    scale: int | None = None
    causal: int | None = None
    causal_name: str = "causal"
    window: int | None = None  # a (left, right[, sink]) list argument
    window_left: int | None = None
    window_right: int | None = None
    custom_mask_type: int | None = None  # aten mem-efficient: 0 none, 1 causal top-left, 2 bottom-right
    efficient_window: int | None = None  # aten mem-efficient `window_size`
    attn_mask: int | None = None  # optional mask/bias tensor: present -> arbitrary mask
    cu_seqlens_q: int | None = None
    cu_seqlens_k: int | None = None
    max_seqlen_q: int | None = None
    max_seqlen_k: int | None = None
    block_table: int | None = None  # paged KV cache page table
    mask_type_str: int | None = None  # TransformerEngine attn_mask_type string
    qkv_layout_str: int | None = None  # TransformerEngine qkv_layout string
    family: str | None = None  # overrides OpSpec.family when a name is shared by two libraries
    dropout_required: bool = True


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str
    family: str
    direction: Direction
    layout: Layout
    attention_type: AttentionType
    causal_rule: CausalRule
    signatures: tuple[Signature, ...]  # empty for autograd backward nodes (perf_params only)
    note: str = ""

    @property
    def is_autograd_node(self) -> bool:
        return not self.signatures

    @property
    def slots(self) -> Signature | None:
        """The newest known signature (the first one tried)."""
        return self.signatures[0] if self.signatures else None


def _spec(names: tuple[str, ...], **kw: object) -> list[OpSpec]:
    return [OpSpec(name=n, **kw) for n in names]  # type: ignore[arg-type]


_PT_YAML = "pytorch aten/src/ATen/native/native_functions.yaml (schemas as printed by torch._C op schemas)"
_FA_IFACE = "Dao-AILab/flash-attention flash_attn/flash_attn_interface.py"
_FA3_API = (
    "Dao-AILab/flash-attention hopper/flash_api.cpp TORCH_LIBRARY(flash_attn_3); hopper/flash_attn_interface"
)
_AITER = "ROCm/aiter aiter/ops/mha.py"
_TE = "NVIDIA/TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/backends.py"
_VLLM = "vllm-project/vllm vllm/attention/layer.py (direct_register_custom_op)"

SPECS: list[OpSpec] = []

# --- aten SDPA (BHND) -------------------------------------------------------------------------------
# scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
#   float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False)
# Dispatcher: the backend op below it (flash / efficient / cudnn / math) decides the kernel.
# Real rows: traces h100/*, mi300/* ('', '', '', '', '0.', 'True', '0.125', 'False').
SPECS += _spec(
    ("aten::scaled_dot_product_attention",),
    family=SDPA,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.UNKNOWN,
    causal_rule=CausalRule.TOP_LEFT,  # is_causal is documented as the top-left tril mask
    signatures=(
        Signature(
            "PyTorch >= 2.1 (enable_gqa from 2.5)",
            "scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0., "
            "is_causal=False, *, scale=None, enable_gqa=False)",
            _PT_YAML,
            (6, 8),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=4,
            causal=5,
            causal_name="is_causal",
            scale=6,
        ),
    ),
    note="dispatcher op; the attention type is that of the backend op/kernels below it",
)
# _scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0.,
#   bool is_causal=False, bool return_debug_mask=False, *, float? scale=None)
# Real rows: every h100/mi300 trace, ('', '', '', '0.', 'True', 'False', '0.125').
SPECS += _spec(
    ("aten::_scaled_dot_product_flash_attention",),
    family=SDPA_FLASH,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    # PyTorch sends causal with Nq != Nkv to flash only as causal_lower_right (bottom-right); for
    # Nq == Nkv both alignments keep the same pairs.
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_flash_attention(query, key, value, dropout_p=0., is_causal=False, "
            "return_debug_mask=False, *, scale=None)",
            _PT_YAML,
            (6, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            causal=4,
            causal_name="is_causal",
            scale=6,
        ),
    ),
)
# _scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value,
#   Tensor out, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k,
#   float dropout_p, bool is_causal, Tensor philox_seed, Tensor philox_offset, *, float? scale=None)
SPECS += _spec(
    ("aten::_scaled_dot_product_flash_attention_backward",),
    family=SDPA_FLASH,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, "
            "logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, "
            "philox_offset, *, scale=None)",
            _PT_YAML,
            (14, 15),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=10,
            causal=11,
            causal_name="is_causal",
            scale=14,
        ),
    ),
)
# _scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value,
#   float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None)
# _scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key,
#   Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *,
#   Tensor? attn_mask=None, float? scale=None)
SPECS += _spec(
    ("aten::_scaled_dot_product_flash_attention_for_cpu",),
    family=SDPA_FLASH,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.2",
            "_scaled_dot_product_flash_attention_for_cpu(query, key, value, "
            "dropout_p=0., is_causal=False, *, attn_mask=None, scale=None)",
            _PT_YAML,
            (5, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            causal=4,
            causal_name="is_causal",
            attn_mask=5,
            scale=6,
        ),
    ),
)
SPECS += _spec(
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward",),
    family=SDPA_FLASH,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.2",
            "_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, "
            "query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None, "
            "scale=None)",
            _PT_YAML,
            (8, 10),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=6,
            causal=7,
            causal_name="is_causal",
            attn_mask=8,
            scale=9,
        ),
    ),
)
# _scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias,
#   bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None)
# 2.0: _scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value,
#   bool compute_log_sumexp, bool is_causal=False, *, float? scale=None)
SPECS += _spec(
    ("aten::_scaled_dot_product_efficient_attention",),
    family=SDPA_EFFICIENT,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_efficient_attention(query, key, value, attn_bias, "
            "compute_log_sumexp, dropout_p=0., is_causal=False, *, scale=None)",
            _PT_YAML,
            (7, 8),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=5,
            causal=6,
            causal_name="is_causal",
            scale=7,
        ),
        Signature(
            "PyTorch 2.0",
            "_scaled_dot_product_efficient_attention(query, key, value, "
            "compute_log_sumexp, is_causal=False, *, scale=None)",
            "pytorch 2.0 JIT shape-analysis schema string",
            (5, 6),
            q=0,
            k=1,
            v=2,
            causal=4,
            causal_name="is_causal",
            scale=5,
            dropout_required=False,
        ),
    ),
)
# _scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key,
#   Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed,
#   Tensor philox_offset, float dropout_p, bool[4] grad_input_mask, bool is_causal=False, *,
#   float? scale=None)
SPECS += _spec(
    ("aten::_scaled_dot_product_efficient_attention_backward",),
    family=SDPA_EFFICIENT,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_scaled_dot_product_efficient_attention_backward(grad_out_, query, "
            "key, value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p, "
            "grad_input_mask, is_causal=False, *, scale=None)",
            _PT_YAML,
            (12, 13),
            dout=0,
            q=1,
            k=2,
            v=3,
            attn_mask=4,
            out=5,
            dropout=9,
            causal=11,
            causal_name="is_causal",
            scale=12,
        ),
    ),
)
# _scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias,
#   bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, bool return_debug_mask=False,
#   *, float? scale=None)            (PyTorch >= 2.5)
# 2.3/2.4: _scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value,
#   float dropout_p=0., bool is_causal=False, bool return_debug_mask=False, *, float? scale=None)
SPECS += _spec(
    ("aten::_scaled_dot_product_cudnn_attention",),
    family=SDPA_CUDNN,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.CUDNN,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.5",
            "_scaled_dot_product_cudnn_attention(query, key, value, attn_bias, "
            "compute_log_sumexp, dropout_p=0., is_causal=False, return_debug_mask=False, *, "
            "scale=None)",
            _PT_YAML,
            (8, 9),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=5,
            causal=6,
            causal_name="is_causal",
            scale=8,
        ),
        Signature(
            "PyTorch 2.3-2.4",
            "_scaled_dot_product_cudnn_attention(query, key, value, dropout_p=0., "
            "is_causal=False, return_debug_mask=False, *, scale=None)",
            _PT_YAML,
            (6, 7),
            q=0,
            k=1,
            v=2,
            dropout=3,
            causal=4,
            causal_name="is_causal",
            scale=6,
        ),
    ),
)
# _scaled_dot_product_cudnn_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value,
#   Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, Tensor attn_bias,
#   Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal,
#   *, float? scale=None)
SPECS += _spec(
    ("aten::_scaled_dot_product_cudnn_attention_backward",),
    family=SDPA_CUDNN,
    direction=BWD,
    layout=Layout.BHND,
    attention_type=AttentionType.CUDNN,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.5",
            "_scaled_dot_product_cudnn_attention_backward(grad_out, query, key, "
            "value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, "
            "max_q, max_k, dropout_p, is_causal, *, scale=None)",
            _PT_YAML,
            (15, 16),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            attn_mask=8,
            dropout=13,
            causal=14,
            causal_name="is_causal",
            scale=15,
        ),
    ),
)
# _scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
#   float dropout_p=0., bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None,
#   bool enable_gqa=False)
SPECS += _spec(
    ("aten::_scaled_dot_product_attention_math",),
    family=SDPA_MATH,
    direction=FWD,
    layout=Layout.BHND,
    attention_type=AttentionType.MATH,
    causal_rule=CausalRule.TOP_LEFT,
    signatures=(
        Signature(
            "PyTorch >= 2.0",
            "_scaled_dot_product_attention_math(query, key, value, attn_mask=None, "
            "dropout_p=0., is_causal=False, dropout_mask=None, *, scale=None, enable_gqa=False)",
            _PT_YAML,
            (6, 9),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            dropout=4,
            causal=5,
            causal_name="is_causal",
            scale=7,
        ),
    ),
)

# --- aten flash / mem-efficient primitives (BNHD; THD when cu_seqlens are given) -------------------
# _flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, Tensor? cum_seq_k,
#   SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, bool return_debug_mask, *,
#   float? scale=None, SymInt? window_size_left=None, SymInt? window_size_right=None,
#   Tensor? seqused_k=None, Tensor? alibi_slopes=None)
# (2.1-2.4 end after `scale`: same slots.) Real rows: every h100/mi300 trace (15 args).
SPECS += _spec(
    ("aten::_flash_attention_forward",),
    family=ATEN_FLASH,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, "
            "max_k, dropout_p, is_causal, return_debug_mask, *, scale=None, window_size_left=None, "
            "window_size_right=None, seqused_k=None, alibi_slopes=None)",
            _PT_YAML,
            (10, 15),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            causal=8,
            causal_name="is_causal",
            scale=10,
            window_left=11,
            window_right=12,
        ),
    ),
)
# _flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out,
#   Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p,
#   bool is_causal, Tensor rng_state, Tensor unused, *, float? scale=None,
#   SymInt? window_size_left=None, SymInt? window_size_right=None)
SPECS += _spec(
    ("aten::_flash_attention_backward",),
    family=ATEN_FLASH,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_flash_attention_backward(grad_out, query, key, value, out, logsumexp, "
            "cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, rng_state, unused, *, "
            "scale=None, window_size_left=None, window_size_right=None)",
            _PT_YAML,
            (14, 17),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=6,
            cu_seqlens_k=7,
            max_seqlen_q=8,
            max_seqlen_k=9,
            dropout=10,
            causal=11,
            causal_name="is_causal",
            scale=14,
            window_left=15,
            window_right=16,
        ),
    ),
)
# _efficient_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? bias,
#   Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt? max_seqlen_q, SymInt? max_seqlen_k,
#   float dropout_p, int custom_mask_type, bool compute_log_sumexp=False, *, float? scale=None,
#   Tensor? seqlen_k=None, int? window_size=None)                         (PyTorch >= 2.2)
# 2.1: (query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, dropout_p, custom_mask_type,
#   compute_log_sumexp=False, *, scale=None, causal_diagonal=None, seqlen_k=None)
#   (torch/_meta_registrations.py meta__efficient_attention_forward)
# q is [B, M, H, K] (BNHD): the seed PR found heads and sequence swapped when read as BHND.
SPECS += _spec(
    ("aten::_efficient_attention_forward",),
    family=ATEN_EFFICIENT,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.FROM_MASK_TYPE,
    signatures=(
        Signature(
            "PyTorch >= 2.2",
            "_efficient_attention_forward(query, key, value, bias, cu_seqlens_q, "
            "cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, "
            "compute_log_sumexp=False, *, scale=None, seqlen_k=None, window_size=None)",
            _PT_YAML,
            (10, 14),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            cu_seqlens_q=4,
            cu_seqlens_k=5,
            max_seqlen_q=6,
            max_seqlen_k=7,
            dropout=8,
            custom_mask_type=9,
            scale=11,
            efficient_window=13,
        ),
        Signature(
            "PyTorch 2.1",
            "_efficient_attention_forward(query, key, value, bias, cu_seqlens_q, "
            "cu_seqlens_k, max_seqlen_q, dropout_p, custom_mask_type, compute_log_sumexp=False, *, "
            "scale=None, causal_diagonal=None, seqlen_k=None)",
            "pytorch 2.1 torch/_meta_registrations.py",
            (9, 13),
            q=0,
            k=1,
            v=2,
            attn_mask=3,
            cu_seqlens_q=4,
            cu_seqlens_k=5,
            max_seqlen_q=6,
            dropout=7,
            custom_mask_type=8,
            scale=10,
        ),
    ),
)
# _efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor? bias,
#   Tensor out, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k,
#   Tensor logsumexp, float dropout_p, Tensor philox_seed, Tensor philox_offset, int custom_mask_type,
#   bool bias_requires_grad, *, float? scale=None, int? num_splits_key=None, int? window_size=None,
#   bool shared_storage_dqdkdv=False)
SPECS += _spec(
    ("aten::_efficient_attention_backward",),
    family=ATEN_EFFICIENT,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.MEMORY_EFFICIENT,
    causal_rule=CausalRule.FROM_MASK_TYPE,
    signatures=(
        Signature(
            "PyTorch >= 2.1",
            "_efficient_attention_backward(grad_out_, query, key, value, bias, out, "
            "cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, "
            "philox_seed, philox_offset, custom_mask_type, bias_requires_grad, *, scale=None, "
            "num_splits_key=None, window_size=None, shared_storage_dqdkdv=False)",
            _PT_YAML,
            (16, 20),
            dout=0,
            q=1,
            k=2,
            v=3,
            attn_mask=4,
            out=5,
            cu_seqlens_q=6,
            cu_seqlens_k=7,
            max_seqlen_q=8,
            max_seqlen_k=9,
            dropout=11,
            custom_mask_type=14,
            scale=16,
            efficient_window=18,
        ),
    ),
)

# --- Dao-AILab flash-attn 2.x torch custom ops (BNHD / THD) ---------------------------------------
# _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
#   softcap, alibi_slopes, return_softmax)
# Real row: traces/synthetic ('', '', '', '0.0', '0.088…', 'False', '-1', '-1', '0.0', '', 'False').
# Registered as flash_attn:: (>= 2.7) and flashattn:: (2.6.x).
SPECS += _spec(
    ("flash_attn::_flash_attn_forward", "flashattn::_flash_attn_forward"),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, "
            "window_size_left, window_size_right, softcap, alibi_slopes, return_softmax)",
            _FA_IFACE,
            (8, 11),
            q=0,
            k=1,
            v=2,
            dropout=3,
            scale=4,
            causal=5,
            window_left=6,
            window_right=7,
        ),
    ),
)
# _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p, softmax_scale, causal,
#   window_size_left, window_size_right, softcap, alibi_slopes, deterministic, rng_state=None)
# Slot 10 is softmax_scale (0.088…), slot 11 causal: the reference tool read slot 10 as causal.
SPECS += _spec(
    ("flash_attn::_flash_attn_backward", "flashattn::_flash_attn_backward"),
    family=FLASH_ATTN,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, "
            "dropout_p, softmax_scale, causal, window_size_left, window_size_right, softcap, "
            "alibi_slopes, deterministic, rng_state=None)",
            _FA_IFACE,
            (14, 18),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=9,
            scale=10,
            causal=11,
            window_left=12,
            window_right=13,
        ),
    ),
)
# _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
#   dropout_p, softmax_scale, causal, window_size_left=-1, window_size_right=-1, softcap=0.0,
#   alibi_slopes=None, return_softmax=False, block_table=None, leftpad_k=None, seqused_k=None,
#   zero_tensors=False)
SPECS += _spec(
    ("flash_attn::_flash_attn_varlen_forward", "flashattn::_flash_attn_varlen_forward"),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, "
            "max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size_left=-1, "
            "window_size_right=-1, softcap=0.0, alibi_slopes=None, return_softmax=False, "
            "block_table=None, leftpad_k=None, seqused_k=None, zero_tensors=False)",
            _FA_IFACE,
            (10, 19),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            scale=8,
            causal=9,
            window_left=10,
            window_right=11,
            block_table=15,
        ),
    ),
)
# _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k,
#   max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
#   softcap, alibi_slopes, deterministic, rng_state=None, zero_tensors=False)
SPECS += _spec(
    ("flash_attn::_flash_attn_varlen_backward", "flashattn::_flash_attn_varlen_backward"),
    family=FLASH_ATTN,
    direction=BWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn >= 2.6",
            "_flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk, "
            "dv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, "
            "causal, window_size_left, window_size_right, softcap, alibi_slopes, deterministic, "
            "rng_state=None, zero_tensors=False)",
            _FA_IFACE,
            (18, 23),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=9,
            cu_seqlens_k=10,
            max_seqlen_q=11,
            max_seqlen_k=12,
            dropout=13,
            scale=14,
            causal=15,
            window_left=16,
            window_right=17,
        ),
    ),
)
# Autograd wrappers (recorded by the profiler under the Function's class name; ctx not recorded).
# flash-attn 2.x FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size,
#   softcap, alibi_slopes, deterministic, return_softmax[, is_grad_enabled])
# aiter FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size, bias,
#   alibi_slopes, deterministic, return_lse, return_softmax, is_grad_enabled, ...)  -> same slots
# FA3 FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, qv=None, q_descale=None,
#   k_descale=None, v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, ...)
# Real row: traces/synthetic FlashAttnFunc ('', '', '', '0.0', '0.088…', 'False', '[-1, -1]', ...).
SPECS += _spec(
    ("FlashAttnFunc",),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn 2.x / aiter",
            "FlashAttnFunc.forward(ctx, q, k, v, dropout_p, softmax_scale, "
            "causal, window_size, softcap, alibi_slopes, deterministic, return_softmax, "
            "is_grad_enabled)",
            f"{_FA_IFACE}; {_AITER}",
            (6, 20),
            q=0,
            k=1,
            v=2,
            dropout=3,
            scale=4,
            causal=5,
            window=6,
        ),
        Signature(
            "FlashAttention-3 (hopper)",
            "FlashAttnFunc.forward(ctx, q, k, v, softmax_scale, causal, "
            "qv=None, q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), ...)",
            "Dao-AILab/flash-attention hopper/flash_attn_interface.py",
            (5, 20),
            q=0,
            k=1,
            v=2,
            scale=3,
            causal=4,
            window=9,
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
    ),
)
# flash-attn 2.x FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
#   max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
#   return_softmax, block_table[, is_grad_enabled])
# FA3 FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k,
#   max_seqlen_q, max_seqlen_k, softmax_scale, causal, qv=None, q_descale=None, k_descale=None,
#   v_descale=None, window_size=(-1, -1), ...)
SPECS += _spec(
    ("FlashAttnVarlenFunc",),
    family=FLASH_ATTN,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "flash-attn 2.x",
            "FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, "
            "max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap, "
            "alibi_slopes, deterministic, return_softmax, block_table)",
            _FA_IFACE,
            (10, 20),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            scale=8,
            causal=9,
            window=10,
            block_table=15,
        ),
        Signature(
            "FlashAttention-3 (hopper)",
            "FlashAttnVarlenFunc.forward(ctx, q, k, v, cu_seqlens_q, "
            "cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal, "
            "qv=None, q_descale=None, k_descale=None, v_descale=None, window_size=(-1, -1), ...)",
            "Dao-AILab/flash-attention hopper/flash_attn_interface.py",
            (11, 24),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=7,
            max_seqlen_k=8,
            scale=9,
            causal=10,
            window=15,
            family=FLASH_ATTN_3,
            dropout_required=False,
        ),
    ),
)

# --- FlashAttention-3 (hopper) torch ops -------------------------------------------------------------
# flash_attn_3::fwd(Tensor q, Tensor k, Tensor v, Tensor? k_new, Tensor? v_new, Tensor? q_v, Tensor? out,
#   Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, Tensor? cu_seqlens_k_new, Tensor? seqused_q,
#   Tensor? seqused_k, int? max_seqlen_q, int? max_seqlen_k, Tensor? page_table, Tensor? kv_batch_idx,
#   Tensor? leftpad_k, Tensor? rotary_cos, Tensor? rotary_sin, Tensor? seqlens_rotary,
#   Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, float? softmax_scale, bool is_causal,
#   int window_size_left=-1, int window_size_right=-1, int attention_chunk=0, float softcap=0.0, ...)
# sgl_kernel::fwd is sglang's build of the same hopper/flash_api.cpp (sgl-attn fork): same schema.
SPECS += _spec(
    ("flash_attn_3::fwd", "sgl_kernel::fwd"),
    family=FLASH_ATTN_3,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "FlashAttention-3",
            "fwd(q, k, v, k_new, v_new, q_v, out, cu_seqlens_q, cu_seqlens_k, "
            "cu_seqlens_k_new, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, page_table, "
            "kv_batch_idx, leftpad_k, rotary_cos, rotary_sin, seqlens_rotary, q_descale, k_descale, "
            "v_descale, softmax_scale, is_causal, window_size_left=-1, window_size_right=-1, "
            "attention_chunk=0, softcap=0.0, ...)",
            _FA3_API,
            (25, 40),
            q=0,
            k=1,
            v=2,
            out=6,
            cu_seqlens_q=7,
            cu_seqlens_k=8,
            max_seqlen_q=12,
            max_seqlen_k=13,
            block_table=14,
            scale=23,
            causal=24,
            causal_name="is_causal",
            window_left=25,
            window_right=26,
            dropout_required=False,
        ),
    ),
)
# flash_attn_3::bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor softmax_lse,
#   Tensor? dq, Tensor? dk, Tensor? dv, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, Tensor? seqused_q,
#   Tensor? seqused_k, int? max_seqlen_q, int? max_seqlen_k, float softmax_scale, bool is_causal,
#   int window_size_left=-1, int window_size_right=-1, float softcap=0.0, bool deterministic=False,
#   int sm_margin=0)
SPECS += _spec(
    ("flash_attn_3::bwd",),
    family=FLASH_ATTN_3,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "FlashAttention-3",
            "bwd(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q, "
            "cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, is_causal, "
            "window_size_left=-1, window_size_right=-1, softcap=0.0, deterministic=False, "
            "sm_margin=0)",
            _FA3_API,
            (17, 22),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=9,
            cu_seqlens_k=10,
            max_seqlen_q=13,
            max_seqlen_k=14,
            scale=15,
            causal=16,
            causal_name="is_causal",
            window_left=17,
            window_right=18,
            dropout_required=False,
        ),
    ),
)

# --- aiter (ROCm, CK tile / asm v3 kernels; BNHD / THD) -----------------------------------------------
# _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right,
#   [sink_size,] bias, alibi_slopes, [q/k/v_descale,] return_lse, return_softmax, ...)
# mha_fwd / fmha_v3_fwd(q, k, v, dropout_p, softmax_scale, is_causal, window_size_left,
#   window_size_right, [sink_size,] return_softmax_lse, return_dropout_randval, ...)
# The first eight slots are the same in every aiter version inspected (2024 .. 2026).
_AITER_FWD = Signature(
    "aiter 2024-2026",
    "(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right, ...)",
    _AITER,
    (8, 40),
    q=0,
    k=1,
    v=2,
    dropout=3,
    scale=4,
    causal=5,
    window_left=6,
    window_right=7,
)
SPECS += _spec(
    ("aiter::_flash_attn_forward", "aiter::mha_fwd", "aiter::fmha_v3_fwd"),
    family=AITER,
    direction=FWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(_AITER_FWD,),
)
# _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dbias, dropout_p, softmax_scale,
#   causal, window_size_left, window_size_right, bias, alibi_slopes, deterministic, rng_state, ...)
#   (2025+; the 2024 version has no dbias: dropout_p is slot 9, causal slot 11)
SPECS += _spec(
    ("aiter::_flash_attn_backward",),
    family=AITER,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2025+",
            "_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dbias, "
            "dropout_p, softmax_scale, causal, window_size_left, window_size_right, bias, "
            "alibi_slopes, deterministic, rng_state=None, ...)",
            _AITER,
            (15, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=10,
            scale=11,
            causal=12,
            window_left=13,
            window_right=14,
        ),
        Signature(
            "aiter 2024",
            "_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, "
            "dropout_p, softmax_scale, causal, window_size_left, window_size_right, alibi_slopes, "
            "deterministic, rng_state=None)",
            _AITER,
            (14, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=9,
            scale=10,
            causal=11,
            window_left=12,
            window_right=13,
        ),
    ),
)
# mha_bwd / fmha_v3_bwd(dout, q, k, v, out, softmax_lse, dropout_p, softmax_scale, is_causal,
#   window_size_left, window_size_right, deterministic, ...)
SPECS += _spec(
    ("aiter::mha_bwd", "aiter::fmha_v3_bwd"),
    family=AITER,
    direction=BWD,
    layout=Layout.BNHD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2024-2026",
            "mha_bwd(dout, q, k, v, out, softmax_lse, dropout_p, softmax_scale, "
            "is_causal, window_size_left, window_size_right, deterministic, ...)",
            _AITER,
            (11, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            dropout=6,
            scale=7,
            causal=8,
            causal_name="is_causal",
            window_left=9,
            window_right=10,
        ),
    ),
)
# mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, min_seqlen_q,
#   dropout_p, softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left,
#   window_size_right, ...)                                     (2025+, fmha_v3_varlen_fwd the same)
# 2024: mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
#   softmax_scale, zero_tensors, is_causal, window_size_left, window_size_right, ...)
SPECS += _spec(
    ("aiter::mha_varlen_fwd", "aiter::fmha_v3_varlen_fwd"),
    family=AITER,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2025+",
            "mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
            "max_seqlen_k, min_seqlen_q, dropout_p, softmax_scale, logits_soft_cap, zero_tensors, "
            "is_causal, window_size_left, window_size_right, ...)",
            _AITER,
            (15, 40),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=8,
            scale=9,
            causal=12,
            causal_name="is_causal",
            window_left=13,
            window_right=14,
        ),
        Signature(
            "aiter 2024",
            "mha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
            "max_seqlen_k, dropout_p, softmax_scale, zero_tensors, is_causal, window_size_left, "
            "window_size_right, ...)",
            _AITER,
            (13, 40),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=5,
            max_seqlen_k=6,
            dropout=7,
            scale=8,
            causal=10,
            causal_name="is_causal",
            window_left=11,
            window_right=12,
        ),
    ),
)
# mha_varlen_bwd / fmha_v3_varlen_bwd(dout, q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k,
#   max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, zero_tensors, is_causal, window_size_left,
#   window_size_right, deterministic, ...)
SPECS += _spec(
    ("aiter::mha_varlen_bwd", "aiter::fmha_v3_varlen_bwd"),
    family=AITER,
    direction=BWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2024-2026",
            "mha_varlen_bwd(dout, q, k, v, out, softmax_lse, cu_seqlens_q, "
            "cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, zero_tensors, "
            "is_causal, window_size_left, window_size_right, deterministic, ...)",
            _AITER,
            (16, 40),
            dout=0,
            q=1,
            k=2,
            v=3,
            out=4,
            cu_seqlens_q=6,
            cu_seqlens_k=7,
            max_seqlen_q=8,
            max_seqlen_k=9,
            dropout=10,
            scale=11,
            causal=13,
            causal_name="is_causal",
            window_left=14,
            window_right=15,
        ),
    ),
)
# _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, cu_seqlens_q_padded,
#   cu_seqlens_k_padded, max_seqlen_q, max_seqlen_k, min_seqlen_q, dropout_p, softmax_scale, causal,
#   logits_soft_cap=0.0, window_size_left=-1, window_size_right=-1, ...)        (aiter 2026)
SPECS += _spec(
    ("aiter::_flash_attn_varlen_forward",),
    family=AITER,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.FLASH,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "aiter 2026",
            "_flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, "
            "cu_seqlens_q_padded, cu_seqlens_k_padded, max_seqlen_q, max_seqlen_k, min_seqlen_q, "
            "dropout_p, softmax_scale, causal, logits_soft_cap=0.0, window_size_left=-1, "
            "window_size_right=-1, ...)",
            _AITER,
            (13, 40),
            q=0,
            k=1,
            v=2,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=7,
            max_seqlen_k=8,
            dropout=10,
            scale=11,
            causal=12,
            window_left=14,
            window_right=15,
        ),
    ),
)

# --- TransformerEngine fused attention (SBHD by default; qkv_layout string decides) ----------------
# FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv,
#   cu_seqlens_q_padded, cu_seqlens_kv_padded, page_table_k, page_table_v, q, k, v, attn_bias,
#   attn_scale, dropout_p, fast_zero_fill, qkv_layout, attn_bias_type, attn_mask_type,
#   [softmax_type,] window_size, rng_gen, fused_attention_backend, use_FAv2_bwd, fp8, fp8_meta,
#   quantizers, deterministic, ...)
SPECS += _spec(
    ("FusedAttnFunc",),
    family=TRANSFORMER_ENGINE,
    direction=FWD,
    layout=Layout.SBHD,
    attention_type=AttentionType.CUDNN,
    causal_rule=CausalRule.FROM_MASK_TYPE,
    signatures=(
        Signature(
            "TransformerEngine 2.x",
            "FusedAttnFunc.forward(ctx, is_training, max_seqlen_q, "
            "max_seqlen_kv, cu_seqlens_q, cu_seqlens_kv, cu_seqlens_q_padded, cu_seqlens_kv_padded, "
            "page_table_k, page_table_v, q, k, v, attn_bias, attn_scale, dropout_p, fast_zero_fill, "
            "qkv_layout, attn_bias_type, attn_mask_type, [softmax_type,] window_size, ...)",
            _TE,
            (20, 40),
            q=9,
            k=10,
            v=11,
            cu_seqlens_q=3,
            cu_seqlens_k=4,
            max_seqlen_q=1,
            max_seqlen_k=2,
            attn_mask=12,
            scale=13,
            dropout=14,
            qkv_layout_str=16,
            mask_type_str=18,
        ),
    ),
    note="FusedAttention (cuDNN on NVIDIA, CK/AOTriton on ROCm); the window slot moves between versions",
)

# --- vLLM (THD; context lengths are not arguments: they come from perf_params / the step annotation) --
# unified_attention(query, key, value, layer_name) -> Tensor
# unified_attention_with_output(query, key, value, output, layer_name, output_scale=None,
#   output_block_scale=None[, kv_cache_dummy_dep=None]) -> None
# Real row: traces/b200 ([888, 8, 64] fp8, [888, 1, 64], [888, 1, 64], [888, 8, 64], [], [], []).
SPECS += _spec(
    ("vllm::unified_attention",),
    family=VLLM,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "vLLM v1",
            "unified_attention(query, key, value, layer_name)",
            _VLLM,
            (4, 6),
            q=0,
            k=1,
            v=2,
            dropout_required=False,
        ),
    ),
)
SPECS += _spec(
    ("vllm::unified_attention_with_output",),
    family=VLLM,
    direction=FWD,
    layout=Layout.THD,
    attention_type=AttentionType.PAGED,
    causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(
        Signature(
            "vLLM v1",
            "unified_attention_with_output(query, key, value, output, layer_name, "
            "output_scale=None, output_block_scale=None, kv_cache_dummy_dep=None)",
            _VLLM,
            (5, 8),
            q=0,
            k=1,
            v=2,
            out=3,
            dropout_required=False,
        ),
    ),
)

# --- autograd backward nodes: no Input Dims; the linked forward's perf_params give the config ---------
_AUTOGRAD_NODES: tuple[tuple[str, str, AttentionType, CausalRule, Layout], ...] = (
    (
        "ScaledDotProductFlashAttentionBackward0",
        SDPA_FLASH,
        AttentionType.FLASH,
        CausalRule.BOTTOM_RIGHT,
        Layout.BHND,
    ),
    (
        "ScaledDotProductFlashAttentionForCpuBackward0",
        SDPA_FLASH,
        AttentionType.FLASH,
        CausalRule.TOP_LEFT,
        Layout.BHND,
    ),
    (
        "ScaledDotProductEfficientAttentionBackward0",
        SDPA_EFFICIENT,
        AttentionType.MEMORY_EFFICIENT,
        CausalRule.TOP_LEFT,
        Layout.BHND,
    ),
    (
        "ScaledDotProductCudnnAttentionBackward0",
        SDPA_CUDNN,
        AttentionType.CUDNN,
        CausalRule.TOP_LEFT,
        Layout.BHND,
    ),
    ("FlashAttnFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.BNHD),
    ("FlashAttnVarlenFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.THD),
    ("FlashAttnQKVPackedFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.BNHD),
    ("FlashAttnKVPackedFuncBackward", FLASH_ATTN, AttentionType.FLASH, CausalRule.BOTTOM_RIGHT, Layout.BNHD),
    ("FusedAttnFuncBackward", TRANSFORMER_ENGINE, AttentionType.CUDNN, CausalRule.TOP_LEFT, Layout.SBHD),
)
for _name, _family, _atype, _rule, _layout in _AUTOGRAD_NODES:
    SPECS.append(
        OpSpec(
            name=_name,
            family=_family,
            direction=BWD,
            layout=_layout,
            attention_type=_atype,
            causal_rule=_rule,
            signatures=(),
            note="autograd backward node: shapes come from the linked forward's perf_params",
        )
    )


def _index(specs: list[OpSpec]) -> dict[str, OpSpec]:
    table: dict[str, OpSpec] = {}
    for spec in specs:
        if spec.name in table:
            raise RuntimeError(f"op {spec.name!r} registered twice")
        table[spec.name] = spec
    return table


SPEC_BY_NAME: dict[str, OpSpec] = _index(SPECS)
