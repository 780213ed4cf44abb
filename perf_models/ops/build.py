"""Build an AttentionConfig from a row's arguments (primary path) or from perf_params (fallback)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sdpa_analyzer.perf_models.config import (
    Alignment,
    AttentionConfig,
    Direction,
    Mask,
    MaskKind,
    PagedInfo,
    VarlenInfo,
)
from sdpa_analyzer.perf_models.dtypes import matrix_compute_spec
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.ops import perf_params as pp
from sdpa_analyzer.perf_models.ops.choice import Choice, choose_signature
from sdpa_analyzer.perf_models.ops.hinted import describe_bound, read_range
from sdpa_analyzer.perf_models.ops.mla import latent_head_dim_v
from sdpa_analyzer.perf_models.ops.roles import window_list
from sdpa_analyzer.perf_models.ops.row import Row, is_blank
from sdpa_analyzer.perf_models.ops.specs import ATEN_EFFICIENT, FLASH_MLA, TRANSFORMER_ENGINE, VLLM, OpSpec, Signature
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout, RowError
from sdpa_analyzer.perf_models.ops.vllm import StepTokens, paged_info, step_tokens
from sdpa_analyzer.perf_models.traffic import flashmla_fp8_token_bytes

_ALIGN = {CausalRule.BOTTOM_RIGHT: Alignment.BOTTOM_RIGHT, CausalRule.TOP_LEFT: Alignment.TOP_LEFT}
# aten mem-efficient custom_mask_type: 0 none, 1 causal from top-left, 2 causal from bottom-right
_CUSTOM_MASK = {0: None, 1: Alignment.TOP_LEFT, 2: Alignment.BOTTOM_RIGHT}
# TransformerEngine attn_mask_type values (padding only removes padded tokens: no masked pairs)
_TE_MASK = {
    "no_mask": None,
    "padding": None,
    "causal": Alignment.TOP_LEFT,
    "padding_causal": Alignment.TOP_LEFT,
    "causal_bottom_right": Alignment.BOTTOM_RIGHT,
    "padding_causal_bottom_right": Alignment.BOTTOM_RIGHT,
}


@dataclass(frozen=True, slots=True)
class Built:
    config: AttentionConfig
    family: str
    layout: Layout
    attention_type: AttentionType
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Shapes:
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_kv: int
    d_qk: int
    d_v: int
    varlen: VarlenInfo | None = None


def _make_config(
    spec: OpSpec, shapes: _Shapes, dtypes: dict[str, str | None], mask: Mask, dropout: float, **extra: Any
) -> AttentionConfig:
    try:
        return AttentionConfig(
            batch=shapes.batch,
            heads_q=shapes.heads_q,
            heads_kv=shapes.heads_kv,
            seq_q=shapes.seq_q,
            seq_kv=shapes.seq_kv,
            head_dim_qk=shapes.d_qk,
            head_dim_v=shapes.d_v,
            dtype_q=dtypes["q"],
            dtype_k=dtypes.get("k"),
            dtype_v=dtypes.get("v"),
            dtype_o=dtypes.get("o"),
            direction=spec.direction,
            mask=mask,
            dropout_p=dropout,
            varlen=shapes.varlen,
            **extra,
        )
    except ConfigError as exc:
        raise RowError(f"inconsistent attention config: {exc}") from None


# --- primary path: Input Dims + Input type + Concrete Inputs ----------------------------------------


def build_from_row(spec: OpSpec, row: Row, params: Mapping[str, Any] | None) -> Built:
    _require_arguments(spec, row)
    choice = choose_signature(spec, row)
    sig = choice.signature
    family = sig.family or spec.family
    warnings: list[str] = list(choice.warnings)
    if row.concrete is not None and row.dims is not None and len(row.concrete) != len(row.dims):
        warnings.append(f"Concrete Inputs has {len(row.concrete)} entries, Input Dims {len(row.dims)}")
    if family == VLLM:
        return _build_vllm(spec, sig, row, params, warnings)
    if family == FLASH_MLA:
        return _build_latent(spec, sig, row, params, warnings)
    if spec.attention_type is AttentionType.PAGED:
        return _build_paged(spec, sig, row, params, warnings)

    layout = _layout(spec, sig, row, family)
    shapes = _shapes(sig, row, layout, warnings)
    if shapes.varlen is not None:
        layout = Layout.THD  # cu_seqlens given: packed tokens, whatever the op's dense layout is
    _refuse_paged(sig, row)
    if sig.dout is not None:
        dout = row.tensor_dims(sig.dout)
        q = row.tensor_dims(sig.q)
        if dout and dout[:-1] != q[:-1]:
            warnings.append(f"dout (slot {sig.dout}) shape {dout} does not match q {q}")
    dtypes = _dtypes(sig, row)
    mask = _mask(spec, sig, family, row, shapes, warnings)
    dropout = _dropout(sig, row)
    config = _make_config(spec, shapes, dtypes, mask, dropout, mask_unknown=sig.mask_unknown,
                          **_compute_specs(spec, dtypes, warnings))
    return Built(config, family, layout, spec.attention_type, tuple(warnings))


def _compute_specs(spec: OpSpec, dtypes: dict[str, str | None], warnings: list[str]) -> dict[str, Any]:
    """AttentionConfig compute_spec / compute_spec_pv of an op whose GEMMs run on their own specs (SageAttention)."""
    if spec.compute_specs is None:
        return {}
    qk, pv = spec.compute_specs
    if pv == "v":
        try:
            pv = matrix_compute_spec(dtypes.get("v") or dtypes["q"] or "bf16")
        except ConfigError as exc:
            raise RowError(f"{spec.name}: V's dtype runs no GEMM: {exc}") from None
    warnings.append(
        f"{spec.name}: Q·Kᵀ on {qk}, P·V on {pv} (the spec of V's dtype); the compute roof combines the two by "
        "their shares of the FLOPs"
    )
    if spec.note:
        warnings.append(f"{spec.name}: {spec.note}")
    return {"compute_spec": qk, "compute_spec_pv": pv}


def _require_arguments(spec: OpSpec, row: Row) -> None:
    if row.dims is None:
        raise RowError("missing Input Dims")
    first = spec.signatures[0]
    if row.concrete is None and first.causal is not None:
        raise RowError(
            f"missing Concrete Inputs for causal flag '{first.causal_name}' (slot {first.causal}); "
            f"the row records {row.n_args} arguments"
        )


def _refuse_paged(sig: Signature, row: Row) -> None:
    if sig.block_table is not None and row.tensor_dims(sig.block_table):
        raise RowError(
            f"paged KV cache (block_table, slot {sig.block_table}): the KV lengths are not in "
            "the op arguments"
        )


def _dtypes(sig: Signature, row: Row) -> dict[str, str | None]:
    return {
        "q": row.dtype(sig.q, "q"),
        "k": row.dtype(sig.k, "k"),
        "v": row.dtype(sig.v, "v"),
        "o": row.optional_dtype(sig.out) if sig.out is not None and row.tensor_dims(sig.out) else None,
    }


@dataclass(frozen=True, slots=True)
class RowPlan:
    """What build_from_row decides from a row's structure alone, never from its shape numbers.

    Structure = op name, Input type, Concrete Inputs, and the number and rank of the Input Dims entries;
    every row sharing it gets the same plan, which is what lets `ops.batch` build a whole group of rows
    with numpy. `error` is set when build_from_row fails for such a structural reason: before it reads
    the shapes (`error_after_shapes` False: every row of the group fails with it) or after (only rows
    whose shapes pass `_shapes` fail with it; the others fail there first).
    """

    choice: Choice
    family: str
    layout: Layout  # the argument layout; a varlen call (cu_seqlens given) is built as THD
    varlen: bool
    error: str | None = None
    error_after_shapes: bool = False
    dtypes: dict[str, str | None] | None = None
    causal: bool = False
    alignment: Alignment | None = None
    window: tuple[int, int] = (-1, -1)
    dropout: float = 0.0

    @property
    def signature(self) -> Signature:
        return self.choice.signature


def plan_row(spec: OpSpec, row: Row) -> RowPlan:
    """The plan of `row`'s structural group (see RowPlan).

    Raises RowError where the outcome may depend on more than the structure (no signature fits: its
    message can quote a 1-D shape or a scalar; vLLM rows, built from perf_params; a varlen op without
    cu_seqlens): callers parse such rows one by one.
    """
    first = Choice(spec.signatures[0])
    try:
        _require_arguments(spec, row)
    except RowError as exc:
        return RowPlan(first, spec.family, spec.layout, False, error=str(exc))
    choice = choose_signature(spec, row)
    sig = choice.signature
    family = sig.family or spec.family
    if family == VLLM or spec.attention_type is AttentionType.PAGED:
        raise RowError(f"{spec.name}: paged rows are built from their step's token counts, one by one")
    if spec.compute_specs is not None:
        raise RowError(f"{spec.name}: split compute specs are built one by one")
    try:
        layout = _layout(spec, sig, row, family)
    except RowError as exc:
        return RowPlan(choice, family, spec.layout, False, error=str(exc))
    varlen = len(row.tensor_dims(sig.cu_seqlens_q)) == 1  # as _shapes decides (BHND / SBHD stay dense)
    if layout is Layout.THD and not varlen:  # _shapes' error quotes the shape found instead
        raise RowError(f"{spec.name}: varlen op without cu_seqlens_q (slot {sig.cu_seqlens_q})")
    try:
        _refuse_paged(sig, row)
        dtypes = _dtypes(sig, row)
        causal, alignment, left, right = _mask_inputs(spec, sig, family, row, [])
        dropout = _dropout(sig, row)
    except RowError as exc:
        return RowPlan(choice, family, layout, varlen, error=str(exc), error_after_shapes=True)
    return RowPlan(choice, family, layout, varlen, None, False, dtypes, causal, alignment, (left, right), dropout)


def _layout(spec: OpSpec, sig: Signature, row: Row, family: str) -> Layout:
    if sig.layout_int is not None:  # SageAttention: `int tensor_layout`, 0 NHD ([B, N, H, d]), 1 HND ([B, H, N, d])
        code = row.required_int(sig.layout_int, "tensor_layout")
        if code not in _LAYOUT_CODES:
            raise RowError(f"tensor_layout={code} (slot {sig.layout_int}) is not 0 (NHD) or 1 (HND)")
        return _LAYOUT_CODES[code]
    if family != TRANSFORMER_ENGINE:
        return spec.layout
    qkv_layout = row.str_at(sig.qkv_layout_str)
    if qkv_layout is None:
        raise RowError(f"missing Concrete Inputs for qkv_layout (slot {sig.qkv_layout_str})")
    fmt = qkv_layout.split("_")[0].lower()
    if fmt.startswith("sb"):
        return Layout.SBHD
    if fmt.startswith("bs"):
        return Layout.BNHD
    if fmt.startswith("th"):
        return Layout.THD
    raise RowError(f"qkv_layout {qkv_layout!r} (slot {sig.qkv_layout_str}) is not sbhd/bshd/thd")


def _shapes(sig: Signature, row: Row, layout: Layout, warnings: list[str]) -> _Shapes:
    if sig.v_transposed:
        return _shapes_v_transposed(sig, row, layout)
    cu_q = row.tensor_dims(sig.cu_seqlens_q)
    varlen = len(cu_q) == 1
    if layout is Layout.BHND:
        q = row.require_dims(sig.q, "q", (3, 4, 5, 6))
        k = row.require_dims(sig.k, "k", (len(q),))
        v = row.require_dims(sig.v, "v", (len(q),))
        if len(q) == 3:
            warnings.append("3-D q/k/v: leading dimension read as heads, batch = 1")
        batch = math.prod(q[:-3]) if len(q) > 3 else 1
        if q[:-3] != k[:-3] or k[:-1] != v[:-1]:
            raise RowError(f"q/k/v shapes disagree: q{q} k{k} v{v}")
        return _Shapes(batch, q[-3], k[-3], q[-2], k[-2], q[-1], v[-1])
    if layout is Layout.SBHD:
        q = row.require_dims(sig.q, "q", (4,))
        k = row.require_dims(sig.k, "k", (4,))
        v = row.require_dims(sig.v, "v", (4,))
        if q[1] != k[1] or k[:-1] != v[:-1]:
            raise RowError(f"q/k/v shapes disagree: q{q} k{k} v{v}")
        return _Shapes(q[1], q[2], k[2], q[0], k[0], q[3], v[3])
    if layout is Layout.BNHD and not varlen:
        q = row.require_dims(sig.q, "q", (4,))
        k = row.require_dims(sig.k, "k", (4,))
        v = row.require_dims(sig.v, "v", (4,))
        if q[0] != k[0] or k[:-1] != v[:-1]:
            raise RowError(f"q/k/v shapes disagree: q{q} k{k} v{v}")
        return _Shapes(q[0], q[2], k[2], q[1], k[1], q[3], v[3])
    # varlen: packed tokens (total, heads, dim); mem-efficient packs them as (1, total, heads, dim)
    if not varlen:
        raise RowError(
            f"missing cu_seqlens_q (slot {sig.cu_seqlens_q}) for a varlen op: Input Dims "
            f"shows {cu_q or 'no tensor'}"
        )
    q = row.require_dims(sig.q, "q", (3, 4))
    k = row.require_dims(sig.k, "k", (len(q),))
    v = row.require_dims(sig.v, "v", (len(q),))
    if len(q) == 4:
        if q[0] != 1:
            raise RowError(f"varlen q has shape {q}: expected (1, total_q, heads, dim)")
        q, k, v = q[1:], k[1:], v[1:]
    if k[:-1] != v[:-1]:
        raise RowError(f"k/v shapes disagree: k{k} v{v}")
    cu_k = row.tensor_dims(sig.cu_seqlens_k)
    num_seqs = cu_q[0] - 1
    if cu_k and cu_k[0] != cu_q[0]:
        warnings.append(f"cu_seqlens_k has {cu_k[0]} entries, cu_seqlens_q {cu_q[0]}")
    max_q = row.int_at(sig.max_seqlen_q, "max_seqlen_q")
    max_k = row.int_at(sig.max_seqlen_k, "max_seqlen_k")
    if max_q is None or max_k is None:
        slot = sig.max_seqlen_q if max_q is None else sig.max_seqlen_k
        raise RowError(f"missing Concrete Inputs for max_seqlen (slot {slot}) of a varlen call")
    try:
        info = VarlenInfo(
            total_q=q[0], total_kv=k[0], num_seqs=num_seqs, max_seqlen_q=max_q, max_seqlen_kv=max_k
        )
    except ConfigError as exc:
        raise RowError(f"inconsistent varlen arguments: {exc}") from None
    return _Shapes(num_seqs, q[1], k[1], max_q, max_k, q[2], v[2], varlen=info)


# the multiple V's key axis is padded to (sageattention per_channel_fp8 pads to 64; its SM90 path pads to 128 first)
V_KEY_PAD = 64
V_KEY_PAD_MAX = 128


def _shapes_v_transposed(sig: Signature, row: Row, layout: Layout) -> _Shapes:
    """q and k in `layout` (BHND or BNHD), V transposed and padded (Signature.v_transposed): HND [B, H_kv, d_v, N_pad],
    NHD [B, d_v, H_kv, N_pad]. The lengths come from Q and K; V's padded axis is only checked against K's."""
    q = row.require_dims(sig.q, "q", (4,))
    k = row.require_dims(sig.k, "k", (4,))
    v = row.require_dims(sig.v, "v (transposed, padded)", (4,))
    if layout is Layout.BHND:
        (b, hq, nq, dqk), (kb, hk, nk, dk), (vb, vh, dv, npad) = q, k, v
    elif layout is Layout.BNHD:
        (b, nq, hq, dqk), (kb, nk, hk, dk), (vb, dv, vh, npad) = q, k, v
    else:
        raise RowError(f"layout {layout} has no transposed-V reading")
    if (kb, vb, vh, dk) != (b, b, hk, dqk) or npad % V_KEY_PAD or not nk <= npad < nk + V_KEY_PAD_MAX:
        raise RowError(f"q/k/v shapes disagree (v transposed, its keys padded to a multiple of {V_KEY_PAD}): "
                       f"q{q} k{k} v{v} in {layout}")
    return _Shapes(b, hq, hk, nq, nk, dqk, dv)


def _window(sig: Signature, row: Row, family: str) -> tuple[int, int]:
    if sig.window is not None:
        raw = row.raw(sig.window)
        if is_blank(raw):
            return -1, -1
        win = window_list(raw)  # (left, right[, sink]); FlashAttention-4's None edges are -1
        if win is None:
            raise RowError(
                f"Concrete Inputs slot {sig.window} (window_size) is {raw!r:.40}, expected a (left, right) list"
            )
        return win[0], win[1]
    if family == TRANSFORMER_ENGINE and sig.mask_type_str is not None and row.concrete is not None:
        # the window slot moved between TE versions: take the first (left, right) list after the mask
        for slot in range(sig.mask_type_str + 1, min(len(row.concrete), sig.mask_type_str + 4)):
            try:
                win = row.list_at(slot, "window_size")
            except RowError:
                continue
            if win is not None and len(win) == 2:
                return win[0], win[1]
        return -1, -1
    left = row.int_at(sig.window_left, "window_size_left", default=-1)
    right = row.int_at(sig.window_right, "window_size_right", default=-1)
    return (-1 if left is None else left), (-1 if right is None else right)


def _mask(spec: OpSpec, sig: Signature, family: str, row: Row, shapes: _Shapes, warnings: list[str]) -> Mask:
    causal, alignment, left, right = _mask_inputs(spec, sig, family, row, warnings)
    mask = pp.mask_from(causal, alignment, left, right, shapes.seq_kv)
    if sig.attn_mask is not None and row.tensor_dims(sig.attn_mask):
        warnings.append(attn_mask_warning(sig.attn_mask, row.tensor_dims(sig.attn_mask), mask))
    return mask


def attn_mask_warning(slot: int, dims: tuple[int, ...], mask: Mask) -> str:
    return (
        f"attn_mask/bias tensor {dims} (slot {slot}): its sparsity is unknown, pairs counted for mask "
        f"'{mask.label}'"
    )


_LAYOUT_CODES = {0: Layout.BNHD, 1: Layout.BHND}


def _causal_flag(sig: Signature, row: Row) -> bool:
    """The signature's causal flag: a bool, or (SageAttention) an int 0 / 1."""
    if sig.causal is None:
        return False
    name = f"causal flag '{sig.causal_name}'"
    if not sig.causal_int:
        return row.bool_at(sig.causal, name)
    code = row.required_int(sig.causal, name)
    if code not in (0, 1):
        raise RowError(f"Concrete Inputs slot {sig.causal} ({name}) is {code}, expected 0 or 1")
    return code == 1


def _mask_inputs(
    spec: OpSpec, sig: Signature, family: str, row: Row, warnings: list[str]
) -> tuple[bool, Alignment | None, int, int]:
    """(causal, alignment, window left, window right): everything the mask takes from the row but seq_kv."""
    causal = _causal_flag(sig, row)
    alignment = _ALIGN.get(spec.causal_rule)
    if spec.causal_rule is CausalRule.FROM_MASK_TYPE:
        if sig.custom_mask_type is not None:
            code = row.required_int(sig.custom_mask_type, "custom_mask_type")
            if code not in _CUSTOM_MASK:
                raise RowError(f"custom_mask_type={code} (slot {sig.custom_mask_type}) is not 0, 1 or 2")
            alignment = _CUSTOM_MASK[code]
        elif sig.mask_type_str is not None:
            name = row.str_at(sig.mask_type_str)
            if name is None:
                raise RowError(f"missing Concrete Inputs for attn_mask_type (slot {sig.mask_type_str})")
            if name == "arbitrary":
                warnings.append("attn_mask_type 'arbitrary': the mask's sparsity is unknown, counted as full")
                alignment = None
            elif name not in _TE_MASK:
                raise RowError(
                    f"attn_mask_type {name!r} (slot {sig.mask_type_str}) is not a known TE mask type"
                )
            else:
                alignment = _TE_MASK[name]
        elif causal:  # a causal bool and no mask-type code (aten mem-efficient 2.0): xformers' top-left mask
            alignment = Alignment.TOP_LEFT
        causal = alignment is not None
    left, right = _window(sig, row, family)
    if family == ATEN_EFFICIENT and sig.efficient_window is not None:
        win = row.int_at(sig.efficient_window, "window_size")
        if win is not None and win > 0:
            warnings.append(
                f"mem-efficient window_size={win}: modeled as a sliding window (left={win}, right=0)"
            )
            left, right = win, 0
    return causal, alignment, left, right


def _dropout(sig: Signature, row: Row) -> float:
    if sig.dropout is None:
        return 0.0
    value = row.float_at(sig.dropout, "dropout_p")
    if value is None:
        if sig.dropout_required:
            raise RowError(f"missing Concrete Inputs for dropout_p (slot {sig.dropout})")
        return 0.0
    return value


def _build_vllm(
    spec: OpSpec, sig: Signature, row: Row, params: Mapping[str, Any] | None, warnings: list[str]
) -> Built:
    q = row.require_dims(sig.q, "query", (2, 3))
    k = row.require_dims(sig.k, "key", (2, 3))
    v = row.require_dims(sig.v, "value", (2, 3))
    if len(q) == 2:
        raise RowError(
            f"vLLM query has shape {q} (tokens, heads*dim): the head count is not in the arguments"
        )
    if params is None:
        raise RowError(
            f"{spec.name} has no context lengths in its arguments and the row has no perf_params "
            "(c_sq/c_sk/g_sq/g_sk or sum_ctx_tokens/sum_gen_tokens) or step annotation"
        )
    tokens = step_tokens(params, warnings)
    split = _check_query_rows(tokens, q[0], warnings)
    return _vllm_built(
        spec,
        tokens,
        heads_q=q[1],
        heads_kv=k[1] if len(k) == 3 else None,
        d_qk=q[2],
        d_v=v[-1] if len(v) == 3 else q[2],
        dtypes={
            "q": row.dtype(sig.q, "query"),
            "k": row.dtype(sig.k, "key"),
            "v": row.dtype(sig.v, "value"),
            "o": row.optional_dtype(sig.out) if sig.out is not None else None,
        },
        params=params,
        warnings=warnings,
        step_split=split,
    )


def _check_query_rows(tokens: StepTokens, rows: int, warnings: list[str]) -> bool:
    """Whether the call ran only part of its step: a query tensor of fewer rows than the step's query tokens cannot
    hold them all (a graph pads its batch up, never down), so the step ran in more than one call per layer
    (micro-batches, or several replays of a graph captured at a smaller batch) and the step's sums are at most this
    call's work."""
    if tokens.total_q > rows:
        warnings.append(STEP_SPLIT_WARNING.format(step=tokens.total_q, rows=rows))
        return True
    if tokens.total_q != rows:
        warnings.append(f"step query tokens {tokens.total_q} differ from the query tensor's {rows} rows (padded to a "
                        "graph's batch size?)")
    return False


STEP_SPLIT_WARNING = (
    "step query tokens {step} exceed the query tensor's {rows} rows: the step ran in more than one call per layer "
    "(micro-batches, or replays of a graph captured at a smaller batch), so the step's work is an upper bound of "
    "this call's"
)


def _vllm_built(
    spec: OpSpec,
    tokens: Any,
    heads_q: int,
    heads_kv: int | None,
    d_qk: int,
    d_v: int,
    dtypes: dict[str, str | None],
    params: Mapping[str, Any],
    warnings: list[str],
    step_split: bool = False,
) -> Built:
    if heads_kv is None:
        heads_kv = pp.positive_int(params, "H_KV")
    mask, unknown = _step_mask(params, Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT), warnings)
    if not unknown and mask.kind is MaskKind.CAUSAL and params.get("layer_type") != "full_attention":
        warnings.append(
            "vLLM attention modeled as causal (bottom-right); sliding-window layers are not "
            "visible in the op arguments (see the kernel names)"
        )
    return _paged_built(spec, VLLM, tokens, (heads_q, heads_kv, d_qk, d_v), dtypes, mask, unknown,
                        pp.kv_cache_dtype(params), warnings, params=params, step_split=step_split)


def _paged_built(
    spec: OpSpec,
    family: str,
    tokens: StepTokens,
    heads: tuple[int, int, int, int],
    dtypes: dict[str, str | None],
    mask: Mask,
    window_unknown: bool,
    cache_dtype: str | None,
    warnings: list[str],
    paged: PagedInfo | None = None,
    params: Mapping[str, Any] | None = None,
    step_split: bool = False,
    **latent: Any,
) -> Built:
    """A paged row's config; `latent`: shared_kv / kv_cache_token_bytes of an op that is MLA by itself (FlashMLA),
    else an MLA latent cache is recognized from the shapes (perf_models.ops.mla)."""
    heads_q, heads_kv, d_qk, d_v = heads
    if not latent:
        latent_v = latent_head_dim_v(heads_kv, d_qk, d_v, params, warnings)
        if latent_v is not None:
            d_v, latent = latent_v, {"shared_kv": True}
    n = tokens.num_requests
    if n > 1 or not tokens.exact_requests:
        warnings.append(
            "batch/seq_q/seq_kv are per-request means (rounded); exact token sums are in config.paged"
        )
    if tokens.sum_qk is None and tokens.total_q > n:
        warnings.append(
            "the step's Σq² and Σq·k are not known: prefill pairs are a lower bound (the row's work_bound)"
        )
    shapes = _Shapes(
        n, heads_q, heads_kv, max(1, round(tokens.total_q / n)), max(1, round(tokens.total_kv / n)), d_qk, d_v
    )
    config = _make_config(
        spec,
        shapes,
        dtypes,
        mask,
        0.0,
        paged=paged or paged_info(tokens),
        dtype_kv_cache=cache_dtype,
        window_unknown=window_unknown,
        step_split=step_split,
        **latent,
    )
    return Built(config, family, Layout.THD, AttentionType.PAGED, tuple(warnings))


def _step_mask(params: Mapping[str, Any] | None, default: Mask, warnings: list[str]) -> tuple[Mask, bool]:
    """The mask of a paged row, and whether its window size is unknown: perf_params `sliding_window` (an integer:
    the layer's window in keys, vLLM's and Hugging Face's convention: each query sees the last w keys; "unknown":
    the kernel name says sliding but no size is known; "unresolved": the row's layers may be sliding or full and
    the trace does not tell) overrides the op's own mask."""
    hint = params.get("sliding_window") if params else None
    if hint is None:
        return default, False
    if isinstance(hint, int) and not isinstance(hint, bool) and hint > 0:
        return Mask(MaskKind.SLIDING_WINDOW, Alignment.BOTTOM_RIGHT, hint - 1, 0), False
    if hint == "chunked":
        warnings.append(
            "chunked-attention layer (the model config's layer_types): modeled causal, so its FLOPs and bytes are "
            "upper bounds (work_bound 'upper')"
        )
    elif hint == "unresolved":
        warnings.append(
            "layers of different kinds (sliding-window and full attention) may share this row and the trace does "
            "not say which call is which: modeled causal, so its FLOPs and bytes are upper bounds (work_bound "
            "'upper'); the model's config.json (--model-config) resolves each layer"
        )
    else:
        warnings.append(
            "sliding-window layer (its kernel says so) whose window size is not in the trace (it is the model's "
            "config): modeled causal, so its FLOPs and bytes are upper bounds (work_bound 'upper'); the model's "
            "config.json (--model-config) gives the window"
        )
    return Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT), True


# --- paged ops other than vLLM's (aiter batch prefill, SGLang's paged decode) ---------------------------------


def _cache_layout(dims: tuple[int, ...], what: str, slot: int, is_v: bool) -> tuple[int, int]:
    """(KV heads, head dim) of a paged cache tensor: (total, H, d), (pages, page_size, H, d) or aiter's vectorized
    (blocks, H, d/x, block_size, x) for K and (blocks, H, block_size/x, d, x) for V."""
    if len(dims) == 3:
        return dims[1], dims[2]
    if len(dims) == 4:
        return dims[2], dims[3]
    if len(dims) == 5:
        return dims[1], (dims[3] if is_v else dims[2] * dims[4])
    raise RowError(f"unparseable Input Dims: paged {what} (slot {slot}) has shape {dims}, expected 3-D to 5-D")


def _build_paged(
    spec: OpSpec, sig: Signature, row: Row, params: Mapping[str, Any] | None, warnings: list[str]
) -> Built:
    family = sig.family or spec.family
    q = row.require_dims(sig.q, "q", (3,))
    k = row.require_dims(sig.k, "k cache", (3, 4, 5))
    v = row.require_dims(sig.v, "v cache", (3, 4, 5))
    heads_kv, d_qk = _cache_layout(k, "k cache", sig.k, False)
    heads_kv_v, d_v = _cache_layout(v, "v cache", sig.v, True)
    if heads_kv != heads_kv_v:
        raise RowError(f"k/v caches disagree on the KV heads: k{k} v{v}")
    if q[1] % heads_kv:
        raise RowError(f"q has {q[1]} heads, not a multiple of the cache's {heads_kv} KV heads (k{k})")
    if d_qk != q[2]:
        warnings.append(f"q head dim {q[2]} differs from the k cache's {d_qk} (k{k})")
    dtypes = {
        "q": row.dtype(sig.q, "q"),
        "k": row.dtype(sig.k, "k cache"),
        "v": row.dtype(sig.v, "v cache"),
        "o": row.optional_dtype(sig.out) if sig.out is not None and row.tensor_dims(sig.out) else None,
    }
    if sig.causal is None and sig.tensors_only is not None:
        raise RowError(f"{sig.tensors_only} (the attention op it calls, when recorded, carries them)")
    if sig.causal is not None:
        causal = row.bool_at(sig.causal, f"causal flag '{sig.causal_name}'")
        left = row.int_at(sig.window_left, "window_size_left", default=-1)
        right = row.int_at(sig.window_right, "window_size_right", default=-1)
        dropout = _dropout(sig, row)
        if dropout:
            raise RowError(f"dropout_p={dropout} on a paged inference call: not modeled")
        base = pp.mask_from(causal, Alignment.BOTTOM_RIGHT, -1 if left is None else left,
                            -1 if right is None else right, 2**62)
    else:
        base = Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT)  # a decode kernel's mask (one query token each)
    mask, unknown = _step_mask(params, base, warnings)
    paged = None
    split = False
    if params is not None and any(params.get(key) is not None for key in ("c_sq", "g_sq", "sum_ctx_tokens")):
        tokens = step_tokens(params, warnings)
        split = _check_query_rows(tokens, q[0], warnings)
    else:
        tokens, paged = _tokens_from_arguments(spec, sig, row, q[0], warnings)
    if mask.kind is MaskKind.NONE and tokens.sum_qk is None and tokens.total_q > tokens.num_requests:
        raise RowError(f"{spec.name}: a non-causal paged call without the step's Σ q·k: pairs unknown")
    return _paged_built(spec, family, tokens, (q[1], heads_kv, d_qk, d_v), dtypes, mask, unknown,
                        pp.kv_cache_dtype(params) if params else None, warnings, paged, params=params,
                        step_split=split)


def _build_latent(
    spec: OpSpec, sig: Signature, row: Row, params: Mapping[str, Any] | None, warnings: list[str]
) -> Built:
    """FlashMLA's decode: q (B, s_q, Hq, d_qk), one latent cache (blocks, page, Hkv, d_qk) — or FlashMLA's fp8
    layout, uint8 (…, 656): fp8 latent, fp32 scales, bf16 RoPE — whose first head_dim_v columns are V."""
    q = row.require_dims(sig.q, "q", (4,))
    cache = row.require_dims(sig.k, "kv cache", (4,))
    assert sig.head_dim_v is not None
    d_v = row.required_int(sig.head_dim_v, "head_dim_v")
    batch, s_q, heads_q, d_qk = q
    heads_kv, width = cache[2], cache[3]
    if heads_q % heads_kv or d_v >= d_qk:
        raise RowError(f"{spec.name}: q {q} and cache {cache} with head_dim_v {d_v} are not an MLA latent layout")
    cache_dtype = row.dtype(sig.k, "kv cache")
    latent: dict[str, Any] = {"shared_kv": True}
    if cache_dtype in ("uint8", "int8") and width == flashmla_fp8_token_bytes(d_qk, d_v):
        latent["kv_cache_token_bytes"] = width
        cache_dtype = "fp8_e4m3"
    elif width != d_qk:
        raise RowError(f"{spec.name}: the cache holds {width} values per token, q {d_qk}: not a latent cache")
    if not row.bool_at(sig.causal, f"causal flag '{sig.causal_name}'") and s_q > 1:
        raise RowError(f"{spec.name}: a non-causal decode of {s_q} query tokens per request: pairs unknown")
    if params is None or all(params.get(key) is None for key in ("c_sq", "g_sq", "sum_ctx_tokens")):
        raise RowError(
            f"{spec.name}: the requests' cache lengths (cache_seqlens) are a tensor whose values the trace does not "
            "record, and no step annotation (execute_..._generation_...) gives the step's tokens"
        )
    tokens = step_tokens(params, warnings)
    split = _check_query_rows(tokens, batch * s_q, warnings)
    mask, unknown = _step_mask(params, Mask(MaskKind.CAUSAL, Alignment.BOTTOM_RIGHT), warnings)
    dtypes = {"q": row.dtype(sig.q, "q"), "k": row.dtype(sig.q, "q"), "v": row.dtype(sig.q, "q")}
    warnings.append(f"MLA latent cache: {heads_kv} KV head(s) of {d_qk}, V its first {d_v} columns; each cached "
                    "token is read once")
    return _paged_built(spec, FLASH_MLA, tokens, (heads_q, heads_kv, d_qk, d_v), dtypes, mask, unknown,
                        None if cache_dtype == dtypes["q"] else cache_dtype, warnings, params=params,
                        step_split=split, **latent)


def _tokens_from_arguments(
    spec: OpSpec, sig: Signature, row: Row, total_q: int, warnings: list[str]
) -> tuple[StepTokens, PagedInfo]:
    """Bounds of the step's token counts from the arguments alone (no step annotation): the request count from
    cu_seqlens_q / kv_indptr, Σq from the query rows, Σk at least max(Σq, max_seqlen_k + Σq − max_seqlen_q)."""
    cu = row.tensor_dims(sig.cu_seqlens_q) or row.tensor_dims(sig.kv_indptr)
    max_q = row.int_at(sig.max_seqlen_q, "max_seqlen_q")
    max_k = row.int_at(sig.max_seqlen_k, "max_seqlen_k")
    if len(cu) != 1 or max_k is None:
        raise RowError(
            f"{spec.name}: the paged cache's per-request lengths are not in the arguments (the values of "
            "kv_indptr are not recorded) and no step annotation (execute_..._context_...) gives the step's tokens"
        )
    n = max(1, cu[0] - 1)
    max_q = total_q if max_q is None else min(max_q, total_q)
    keys = max(total_q, max_k + total_q - max_q, n)
    warnings.append(
        f"no step annotation: Σk bounded below by max_seqlen_k ({max_k}) and the {total_q} query tokens; "
        "FLOPs and bytes are lower bounds (work_bound 'lower')"
    )
    tokens = StepTokens(n, total_q, keys, True)
    try:
        return tokens, PagedInfo(num_requests=n, sum_context_tokens=keys, sum_query_tokens=total_q)
    except ConfigError as exc:
        raise RowError(str(exc)) from None


# --- fallback: perf_params -------------------------------------------------------------------------


def build_from_perf_params(spec: OpSpec, params: Mapping[str, Any]) -> Built:
    warnings: list[str] = []
    if spec.family == VLLM:
        tokens = step_tokens(params, warnings)
        dtype_q, dtype_k = pp.dtypes(params)
        dtype_k = dtype_k or pp.kv_cache_dtype(params)  # the upstream dtype_KV is the K/V (cache) dtype
        if params.get("causal") is False:
            warnings.append(
                "perf_params says causal=False for vLLM attention (the upstream tool hard-codes "
                "it); modeled as causal"
            )
        return _vllm_built(
            spec,
            tokens,
            heads_q=pp.positive_int(params, "H_Q"),
            heads_kv=pp.positive_int(params, "H_KV"),
            d_qk=pp.positive_int(params, "d_h_qk"),
            d_v=pp.positive_int(params, "d_h_v"),
            dtypes={"q": dtype_q, "k": dtype_k, "v": dtype_k},
            params=params,
            warnings=warnings,
        )
    b, nq, hq, nkv, hkv, dqk, dv = (pp.positive_int(params, key) for key in pp.SHAPE_KEYS)
    causal = pp.causal_flag(params)
    alignment = _ALIGN.get(spec.causal_rule)
    if spec.causal_rule is CausalRule.FROM_MASK_TYPE:
        code = params.get("custom_mask_type")
        if code in _CUSTOM_MASK:
            alignment = _CUSTOM_MASK[code]
            causal = alignment is not None
        else:
            alignment = Alignment.TOP_LEFT
            if causal and nq != nkv:
                warnings.append("perf_params gives no mask type: causal assumed top-left")
    stated = params.get("causal_alignment")  # written by our own trace reader: it knew the op's rule
    if stated in (Alignment.TOP_LEFT.value, Alignment.BOTTOM_RIGHT.value):
        alignment = Alignment(stated)
    left, right = pp.window(params)
    mask = pp.mask_from(causal, alignment, left, right, nkv)
    dtype_q, dtype_k = pp.dtypes(params)
    bounded = read_range(params, nq, nkv)
    # a quantized bound config (perf_models.ops.hinted) states V's and O's dtypes and its GEMMs' specs
    dtypes = {"q": dtype_q, "k": dtype_k, "v": pp.optional_dtype(params, "dtype_V") or dtype_k,
              "o": pp.optional_dtype(params, "dtype_O")}
    specs = pp.compute_specs(params)
    config = _make_config(
        spec,
        _Shapes(b, hq, hkv, nq, nkv, dqk, dv, varlen=_perf_params_varlen(params, warnings)),
        dtypes,
        mask,
        pp.dropout(params, warnings),
        seq_lower_bound=bounded,
        **(_compute_specs(replace(spec, compute_specs=specs), dtypes, warnings) if specs else {}),
    )
    if bounded:
        warnings.append(describe_bound(params))
    if spec.direction is Direction.BWD and spec.is_autograd_node:
        warnings.append("backward node: config of the linked forward op (perf_params), direction=bwd")
    return Built(config, spec.family, spec.layout, spec.attention_type, tuple(warnings))


def _perf_params_varlen(params: Mapping[str, Any], warnings: list[str]) -> VarlenInfo | None:
    if not params.get("varlen"):
        return None
    total_q, total_kv = pp.optional_int(params, "total_q"), pp.optional_int(params, "total_kv")
    if total_q is None or total_kv is None:
        warnings.append("varlen call without total_q/total_kv in perf_params: modeled as a padded batch")
        return None
    try:
        return VarlenInfo(
            total_q=total_q,
            total_kv=total_kv,
            num_seqs=pp.positive_int(params, "num_seqs"),
            max_seqlen_q=pp.positive_int(params, "max_seqlen_q"),
            max_seqlen_kv=pp.positive_int(params, "max_seqlen_kv"),
        )
    except ConfigError as exc:
        raise RowError(f"inconsistent varlen perf_params: {exc}") from None
