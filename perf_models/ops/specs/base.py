"""What one registry entry is: an op name's `OpSpec` and the argument slots (`Signature`) of each of its versions."""

from __future__ import annotations

from dataclasses import dataclass

from sdpa_analyzer.perf_models.config import Direction
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

FWD, BWD = Direction.FWD, Direction.BWD


@dataclass(frozen=True, slots=True)
class Signature:
    """Argument slots of one version of an op. None = the version has no such argument."""

    label: str  # which library versions
    text: str  # the signature as the library declares it
    ref: str  # where it was checked
    # the number of recorded arguments the signature was seen with (min, max): fewer never fit; more fit when every
    # known slot still holds its role (libraries append optional arguments), with a warning (ops.choice)
    n_args: tuple[int, int]
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
    kv_indptr: int | None = None  # paged cache: per-request page offsets (n + 1,): the request count
    paged_cache: bool = False  # k/v are the paged cache: Hkv and d come from its layout (see ops.build)
    head_dim_v: int | None = None  # an int argument giving V's head dim (MLA: V is the first columns of the cache)
    tensors_only: str | None = None  # the recorder keeps tensor arguments only: why scalar slots are missing
    mask_type_str: int | None = None  # TransformerEngine attn_mask_type string
    qkv_layout_str: int | None = None  # TransformerEngine qkv_layout string
    family: str | None = None  # overrides OpSpec.family when a name is shared by two libraries
    dropout_required: bool = True
    # optional tensor arguments (None or a tensor, never a scalar value): a recorded scalar there means another
    # signature (FlashAttention-3's qv slot holds FlashAttention-4's window list)
    tensor_slots: tuple[int, ...] = ()
    inferred: bool = False  # read off the row's recorded roles (ops.infer), not a signature a library declares
    mask_unknown: bool = False  # inferred without a mask flag: the call is modeled without a mask (an upper bound)
    causal_int: bool = False  # the causal flag is an int, 0 or 1 (SageAttention's `int is_causal`)
    # an int argument that chooses q/k/v's layout (SageAttention's `int tensor_layout`: 0 NHD, 1 HND)
    layout_int: int | None = None
    # V passed transposed and padded (SageAttention's fp8 P·V ops, sageattention/quant.py per_channel_fp8: HND
    # [B, H_kv, d_v, N_pad], NHD [B, d_v, H_kv, N_pad], N_pad the keys rounded up to 64, or 128 on SM90): d_v and H_kv
    # are read there, the key length from K (ops.build)
    v_transposed: bool = False


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
    wrapper: bool = False  # a profiler wrapper: the attention op inside it (when recorded) is the row
    numbered: bool = False  # recorded with a per-function counter suffix (`sglang_profiler::<fn>_<n>`)
    # the GEMM specs the kernels run on when they are not the one dtype_q gives (SageAttention): (Q·Kᵀ, P·V);
    # a P·V entry "v" means the spec of V's recorded dtype (fp8 V: matrix_fp8, fp16 V: matrix_fp16)
    compute_specs: tuple[str, str] | None = None

    @property
    def is_autograd_node(self) -> bool:
        return not self.signatures

    @property
    def slots(self) -> Signature | None:
        """The newest known signature (the first one tried)."""
        return self.signatures[0] if self.signatures else None


def op_specs(names: tuple[str, ...], **kw: object) -> list[OpSpec]:
    """One OpSpec per name, all with the same fields (names that are one op under several namespaces)."""
    return [OpSpec(name=n, **kw) for n in names]  # type: ignore[arg-type]
