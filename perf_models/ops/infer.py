"""A signature read off a row's recorded roles, for an op whose arguments fit none of its known signatures (a
release that moved, inserted or renamed arguments): the row is modeled from it, with a warning naming every slot.

q/k/v are three adjacent attention tensors (a float, fp8 or int8 dtype; in every signature we know they are
adjacent) whose ranks fit the op's layout and whose dims agree: the same head dim in q and k, k and v alike but for
their last dim, the batch (dense) consistent, Hq a multiple of Hkv; a backward's q needs its dout before it (dout
comes first in every backward we know). The first such window wins. Then, after v:
- cu_seqlens / kv_indptr: the rank-1 int tensors (varlen and paged layouts); max_seqlen: the first two adjacent
  integers >= 1 after cu_seqlens_q;
- softmax_scale: a float in (0, 1] (several: the one nearest 1/sqrt(d)); dropout_p: the float in [0, 1) nearest
  before it (without a scale: the first 0.0);
- causal: a bool followed by two integers >= -1 (its window), else the bool just after dropout_p, else the one just
  after softmax_scale. Other bools (return_lse, deterministic, zero_tensors) sit elsewhere in every library; a row
  where none of these holds is modeled without a mask and says its work is an upper bound;
- TransformerEngine: qkv_layout and attn_mask_type from their string values; aten mem-efficient: custom_mask_type
  is the integer 0, 1 or 2 just after dropout_p.

Only the q/k/v window and the scale choice depend on shape numbers. Both are computed by vectorized functions
(`Inference.agrees`) that parse_op runs on its one row and the batch parser on a whole group, so the two cannot
disagree: a group row whose numbers would infer other slots is parsed by parse_op itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.config import Direction
from sdpa_analyzer.perf_models.literals import LiteralParseError, parse_bool_str, parse_float_str, parse_int_str
from sdpa_analyzer.perf_models.ops.roles import is_attention_dtype, is_index_dtype, window_list
from sdpa_analyzer.perf_models.ops.row import Row, is_blank
from sdpa_analyzer.perf_models.ops.specs import TRANSFORMER_ENGINE, VLLM, OpSpec, Signature
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

_TE_MASKS = frozenset(
    {"no_mask", "padding", "causal", "padding_causal", "causal_bottom_right", "padding_causal_bottom_right",
     "arbitrary"}
)  # fmt: skip
_MASK_CODES = (0, 1, 2)  # aten mem-efficient custom_mask_type

Matrix = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One q/k/v window: how its dims must agree (`kind`) and its slots."""

    kind: str  # bhnd | bnhd | sbhd | thd | thd4 | paged | vllm
    q: int
    k: int
    v: int
    dout: int | None = None

    def describe(self) -> str:
        d = "" if self.dout is None else f"dout={self.dout} "
        return f"{d}q={self.q} k={self.k} v={self.v}"


@dataclass(frozen=True, slots=True)
class Inference:
    signature: Signature
    warning: str
    candidates: tuple[Candidate, ...]  # every window whose ranks and dtypes fit, in slot order
    chosen: int  # the first whose dims agree
    scales: tuple[float, ...]  # the values of the softmax_scale candidates (floats in (0, 1] after v)
    scale_index: int | None  # which of them was read as softmax_scale
    max_slots: tuple[int, ...]  # the max_seqlen slots: their values change from call to call

    def agrees(self, mat: Matrix, lens: Sequence[int]) -> NDArray[np.bool_]:
        """Rows (their Input Dims numbers as one matrix, entry lengths `lens`) whose own inference picks the same
        q/k/v window and the same softmax_scale: the rest would read other slots."""
        at = _entries(mat, lens)
        ok = np.ones(len(mat), dtype=bool)
        for j, cand in enumerate(self.candidates[: self.chosen + 1]):
            passes = dims_agree(cand, at)
            ok &= passes if j == self.chosen else ~passes
        if len(self.scales) > 1:
            ok &= _scale_choice(self.scales, at(self.candidates[self.chosen].q)[:, -1]) == self.scale_index
        return ok


def _entries(mat: Matrix, lens: Sequence[int]) -> Callable[[int], Matrix]:
    offsets = np.concatenate([[0], np.cumsum(np.asarray(lens, dtype=np.int64))]).astype(int)

    def at(slot: int) -> Matrix:
        return mat[:, offsets[slot] : offsets[slot + 1]]

    return at


def row_matrix(row: Row) -> tuple[Matrix, tuple[int, ...]]:
    """One row's Input Dims as a 1-row matrix and its entry lengths (the batch parser's form)."""
    dims = row.dims or ()
    flat = [d for entry in dims for d in entry]
    return np.asarray([flat], dtype=np.int64).reshape(1, len(flat)), tuple(len(e) for e in dims)


# --- dims agreement (vectorized) ----------------------------------------------------------------------------------


def _cache_heads_dim(c: Matrix, is_v: bool) -> tuple[Matrix, Matrix]:
    """(KV heads, head dim) of paged cache tensors, as ops.build reads them (3-D, 4-D, aiter's 5-D vectorized)."""
    if c.shape[1] == 3:
        return c[:, 1], c[:, 2]
    if c.shape[1] == 4:
        return c[:, 2], c[:, 3]
    return c[:, 1], (c[:, 3] if is_v else c[:, 2] * c[:, 4])


def dims_agree(cand: Candidate, at: Callable[[int], Matrix]) -> NDArray[np.bool_]:
    q, k, v = at(cand.q), at(cand.k), at(cand.v)
    nonzero = ~((q == 0).any(axis=1) | (k == 0).any(axis=1) | (v == 0).any(axis=1))
    if cand.kind == "paged":
        hk, dk = _cache_heads_dim(k, False)
        hv, _ = _cache_heads_dim(v, True)
        return nonzero & (hk == hv) & (q[:, 1] % np.maximum(hk, 1) == 0) & (q[:, 2] == dk)
    same_kv = (k[:, :-1] == v[:, :-1]).all(axis=1) & (q[:, -1] == k[:, -1])
    if cand.kind == "vllm" or cand.kind == "thd":
        heads = (q[:, -2], k[:, -2])
        batch = np.ones(len(q), dtype=bool)
    elif cand.kind == "thd4":
        heads = (q[:, 2], k[:, 2])
        batch = (q[:, 0] == 1) & (k[:, 0] == 1)
    elif cand.kind == "bhnd":
        heads = (q[:, -3], k[:, -3])
        batch = (q[:, :-3] == k[:, :-3]).all(axis=1)
    elif cand.kind == "bnhd":
        heads = (q[:, 2], k[:, 2])
        batch = q[:, 0] == k[:, 0]
    else:  # sbhd
        heads = (q[:, 2], k[:, 2])
        batch = q[:, 1] == k[:, 1]
    ok = nonzero & same_kv & batch & (heads[0] % np.maximum(heads[1], 1) == 0)
    if cand.dout is not None:
        dout = at(cand.dout)
        ok &= (dout[:, :-1] == q[:, :-1]).all(axis=1)
    return ok


def _scale_choice(values: Sequence[float], d: Matrix) -> NDArray[np.int64]:
    """Per row, the index of the value nearest 1/sqrt(d) (by ratio; ties: the first)."""
    logs = np.log(np.asarray(values, dtype=np.float64))[None, :]
    target = -0.5 * np.log(np.maximum(d, 1).astype(np.float64))[:, None]
    return np.argmin(np.abs(logs - target), axis=1)


# --- the scalars --------------------------------------------------------------------------------------------------


def _kind(raw: Any) -> tuple[str, Any]:
    """(kind, value) of one Concrete Inputs value: blank, bool, int, float, window (a list), str."""
    if type(raw) is str and len(raw) <= 64:
        return _str_kind(raw)
    return _read_kind(raw)


@lru_cache(maxsize=4096)
def _str_kind(raw: str) -> tuple[str, Any]:
    return _read_kind(raw)  # traces repeat the same few strings


def _read_kind(raw: Any) -> tuple[str, Any]:
    if is_blank(raw):
        return "blank", None
    for kind, parser in (("bool", parse_bool_str), ("int", parse_int_str), ("float", parse_float_str)):
        try:
            value = parser(raw)
        except LiteralParseError:
            continue
        if value is not None:
            return kind, value
    win = window_list(raw)
    if win is not None:
        return "window", win
    return "str", str(raw).strip().strip("'\"")


def _window_ints(kinds: list[tuple[str, Any]], slot: int) -> bool:
    return all(s < len(kinds) and kinds[s][0] == "int" and kinds[s][1] >= -1 for s in (slot, slot + 1))


# --- the inference ------------------------------------------------------------------------------------------------


def _layout(spec: OpSpec, kinds: list[tuple[str, Any]]) -> tuple[Layout, int | None, int | None]:
    """The argument layout, and (TransformerEngine) the qkv_layout and attn_mask_type string slots."""
    if spec.family != TRANSFORMER_ENGINE:
        return spec.layout, None, None
    layout_slot = next(
        (i for i, (kind, value) in enumerate(kinds)
         if kind == "str" and value[:2].lower() in ("sb", "bs", "th") and "hd" in value.lower()),
        None,
    )  # fmt: skip
    mask_slot = next((i for i, (kind, value) in enumerate(kinds) if kind == "str" and value in _TE_MASKS), None)
    layout = spec.layout
    if layout_slot is not None:
        head = str(kinds[layout_slot][1])[:2].lower()
        layout = {"sb": Layout.SBHD, "bs": Layout.BNHD, "th": Layout.THD}[head]
    return layout, layout_slot, mask_slot


def _window_kinds(spec: OpSpec, layout: Layout, rank: int) -> str | None:
    """The dims-agreement kind of a q/k/v window whose q has `rank`, or None when the rank does not fit."""
    if spec.family == VLLM:
        return "vllm" if rank == 3 else None
    if spec.attention_type is AttentionType.PAGED:
        return "paged" if rank == 3 else None
    if layout is Layout.BHND:
        return "bhnd" if 3 <= rank <= 6 else None
    if layout is Layout.SBHD:
        return "sbhd" if rank == 4 else None
    if layout is Layout.BNHD:
        return {4: "bnhd", 3: "thd"}.get(rank)
    return {3: "thd", 4: "thd4"}.get(rank)


def _candidates(spec: OpSpec, row: Row, layout: Layout) -> list[Candidate]:
    dims, n = row.dims or (), len(row.dims or ())
    att = [len(dims[i]) >= 2 and is_attention_dtype(row.type_at(i)) for i in range(n)]
    index1 = [len(dims[i]) == 1 and is_index_dtype(row.type_at(i)) for i in range(n)]
    out = []
    for i in range(n - 2):
        if not (att[i] and att[i + 1] and att[i + 2]):
            continue
        rank = len(dims[i])
        kind = _window_kinds(spec, layout, rank)
        if kind is None:
            continue
        if kind == "paged":
            if not 3 <= len(dims[i + 1]) <= 5 or len(dims[i + 2]) != len(dims[i + 1]):
                continue
        elif len(dims[i + 1]) != rank or len(dims[i + 2]) != rank:
            continue
        if kind == "thd" and spec.family != VLLM and not any(index1[i + 3 :]):
            continue  # packed tokens need cu_seqlens after v
        dout = None
        if spec.direction is Direction.BWD:
            dout = next((j for j in range(i) if att[j] and len(dims[j]) == rank), None)
            if dout is None:
                continue
        out.append(Candidate(kind, i, i + 1, i + 2, dout))
    return out


def infer_signature(spec: OpSpec, row: Row, misfits: Sequence[str]) -> Inference | None:
    """The signature `row`'s roles give (module docstring), or None when no q/k/v window is recognized.

    Requires Input Dims and Input type: without dtypes an index tensor cannot be told from q."""
    if row.dims is None or row.types is None or not spec.signatures:
        return None
    n = len(row.dims)
    kinds = [_kind(row.raw(i)) for i in range(max(n, len(row.concrete or ())))]
    layout, layout_slot, mask_slot = _layout(spec, kinds)
    candidates = _candidates(spec, row, layout)
    if not candidates or any(d >= 2**62 for entry in row.dims for d in entry):
        return None  # (a dim beyond int64 is no real shape)
    mat, lens = row_matrix(row)
    at = _entries(mat, lens)
    passing = [bool(dims_agree(c, at)[0]) for c in candidates]
    if not any(passing):
        return None
    chosen = passing.index(True)
    cand = candidates[chosen]
    dims = row.dims
    rank = len(dims[cand.q])
    slots: dict[str, Any] = {"dout": cand.dout, "q": cand.q, "k": cand.k, "v": cand.v}
    notes: list[str] = []

    if spec.direction is Direction.BWD or spec.family == VLLM:
        slots["out"] = next(
            (j for j in range(cand.v + 1, n) if len(dims[j]) == rank and is_attention_dtype(row.type_at(j))), None
        )
    index1 = [j for j in range(cand.v + 1, n) if len(dims[j]) == 1 and is_index_dtype(row.type_at(j))]
    max_slots: tuple[int, ...] = ()
    if cand.kind in ("thd", "thd4", "paged") and spec.family != VLLM and index1:
        slots["cu_seqlens_q"] = index1[0]
        second = index1[1] if len(index1) > 1 else None
        slots["kv_indptr" if cand.kind == "paged" else "cu_seqlens_k"] = second
        pair = next(
            (j for j in range(index1[0] + 1, len(kinds) - 1)
             if all(kinds[s][0] == "int" and kinds[s][1] >= 1 for s in (j, j + 1))),
            None,
        )  # fmt: skip
        if pair is not None:
            slots["max_seqlen_q"], slots["max_seqlen_k"] = pair, pair + 1
            max_slots = (pair, pair + 1)
    if cand.kind == "paged":
        slots["paged_cache"] = True

    after = range(cand.v + 1, len(kinds))
    unit = [(j, kinds[j][1]) for j in after if kinds[j][0] == "float" and 0.0 <= kinds[j][1] <= 1.0]
    scales = tuple((j, x) for j, x in unit if x > 0.0)
    scale_index = None
    if scales:
        scale_index = 0 if len(scales) == 1 else int(_scale_choice([x for _, x in scales], at(cand.q)[:, -1])[0])
        slots["scale"] = scales[scale_index][0]
        before = [j for j, x in unit if j < slots["scale"] and x < 1.0]
        if before:
            slots["dropout"] = before[-1]
    elif unit:
        slots["dropout"] = next((j for j, x in unit if x == 0.0), None)
    noted = len(notes)
    _mask_slots(spec, kinds, slots, layout_slot, mask_slot, notes)
    mask_unknown = any("modeled without a mask" in n for n in notes[noted:])

    sig = Signature(
        label="inferred from the recorded roles",
        text=", ".join(
            f"{_SHOWN.get(key, key)}={value}" for key, value in sorted(slots.items(), key=lambda kv: _order(kv[1]))
            if value is not None and key != "paged_cache"
        ),
        ref="the row's own shapes, dtypes and values",
        n_args=(n, n),
        q=cand.q,
        k=cand.k,
        v=cand.v,
        dout=slots.get("dout"),
        out=slots.get("out"),
        dropout=slots.get("dropout"),
        scale=slots.get("scale"),
        causal=slots.get("causal"),
        window=slots.get("window"),
        window_left=slots.get("window_left"),
        window_right=slots.get("window_right"),
        custom_mask_type=slots.get("custom_mask_type"),
        cu_seqlens_q=slots.get("cu_seqlens_q"),
        cu_seqlens_k=slots.get("cu_seqlens_k"),
        max_seqlen_q=slots.get("max_seqlen_q"),
        max_seqlen_k=slots.get("max_seqlen_k"),
        kv_indptr=slots.get("kv_indptr"),
        paged_cache=bool(slots.get("paged_cache")),
        qkv_layout_str=layout_slot if spec.family == TRANSFORMER_ENGINE else None,
        mask_type_str=mask_slot if spec.family == TRANSFORMER_ENGINE else None,
        dropout_required=False,
        tensors_only=spec.signatures[0].tensors_only,
        inferred=True,
        mask_unknown=mask_unknown,
    )
    known = ", ".join(sorted({m.split(":", 1)[0] for m in misfits})) or "none"
    warning = (
        f"{spec.name} with {n} arguments: no known signature fits ({known}); modeled from {sig.text} "
        f"({'paged ' if cand.kind == 'paged' else ''}{_layout_label(cand, layout)})"
        + "".join(f"; {note}" for note in notes)
    )
    return Inference(
        sig, warning, tuple(candidates), chosen, tuple(x for _, x in scales), scale_index, max_slots
    )


_SHOWN = {"scale": "softmax_scale", "dropout": "dropout_p", "causal": "causal", "window": "window_size"}


def _order(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1 << 30


def _layout_label(cand: Candidate, layout: Layout) -> str:
    return {"thd": "THD", "thd4": "THD", "vllm": "THD", "paged": "THD"}.get(cand.kind, layout.value)


def _mask_slots(
    spec: OpSpec,
    kinds: list[tuple[str, Any]],
    slots: dict[str, Any],
    layout_slot: int | None,
    mask_slot: int | None,
    notes: list[str],
) -> None:
    """The causal / mask-type and window slots (module docstring), into `slots`; what was not found, into `notes`."""
    if spec.family == VLLM:
        return  # vLLM's mask comes from the step annotation
    if spec.attention_type is AttentionType.PAGED and not any(kind == "bool" for kind, _ in kinds):
        return  # a paged call without flags: ops.build reads it as a decode (one query token each)
    if spec.family == TRANSFORMER_ENGINE:
        if mask_slot is None:
            notes.append(
                "no attn_mask_type string recognized: modeled without a mask, so its FLOPs and bytes are upper bounds"
            )
        slots["qkv_layout"], slots["attn_mask_type"] = layout_slot, mask_slot
        return
    v, dropout, scale = slots["v"], slots.get("dropout"), slots.get("scale")
    if spec.causal_rule is CausalRule.FROM_MASK_TYPE and dropout is not None:
        follow = dropout + 1
        if follow < len(kinds) and kinds[follow][0] == "int" and kinds[follow][1] in _MASK_CODES:
            slots["custom_mask_type"] = follow
            return
    bools = [j for j in range(v + 1, len(kinds)) if kinds[j][0] == "bool"]
    causal = next(
        (j for j in bools if _window_ints(kinds, j + 1) or (j + 1 < len(kinds) and kinds[j + 1][0] == "window")), None
    )
    if causal is None and dropout is not None and dropout + 1 in bools:
        causal = dropout + 1
    if causal is None and scale is not None and scale + 1 in bools:
        causal = scale + 1
    if causal is None:
        notes.append(
            "no causal flag recognized: modeled without a mask, so its FLOPs and bytes are upper bounds (a causal call "
            "does about half)"
        )
    else:
        slots["causal"] = causal
        if _window_ints(kinds, causal + 1):
            slots["window_left"], slots["window_right"] = causal + 1, causal + 2
            return
        if causal + 1 < len(kinds) and kinds[causal + 1][0] == "window":
            slots["window"] = causal + 1
            return
    win = next((j for j in range(v + 1, len(kinds)) if kinds[j][0] == "window"), None)
    if win is not None:
        slots["window"] = win
