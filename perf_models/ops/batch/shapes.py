"""build_from_row's shape reading and its number checks, vectorized over a block of rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.ops.batch.groups import NO_INT
from sdpa_analyzer.perf_models.ops.build import RowPlan
from sdpa_analyzer.perf_models.ops.row import Row
from sdpa_analyzer.perf_models.ops.specs import Signature
from sdpa_analyzer.perf_models.ops.types import Layout, RowError

_BATCH_LIMIT = 2.0**62  # a product of batch dims at or above this is left to Python's exact ints


@dataclass
class ShapeCols:
    """Shape columns of a block: `bad` rows fail in build's `_shapes`, `quirk` rows need parse_op for another reason."""

    cols: dict[str, NDArray[np.int64]]
    attn_mask: NDArray[np.int64] | None  # the attn_mask/bias entry of each row, when the op has one
    bad: NDArray[np.bool_]
    quirk: NDArray[np.bool_]

    def take(self, keep: NDArray[np.bool_]) -> ShapeCols:
        attn = None if self.attn_mask is None else self.attn_mask[keep]
        return ShapeCols({k: v[keep] for k, v in self.cols.items()}, attn, self.bad[keep], self.quirk[keep])


def block_shapes(
    plan: RowPlan,
    mat: NDArray[np.int64],
    lens: tuple[int, ...],
    ints: dict[int, NDArray[np.int64]],
    rep_concrete: Any,
    rep_types: Any,
) -> ShapeCols | None:
    """build_from_row's `_shapes` (and the later number checks) over a block; None when every row fails."""
    sig = plan.signature
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(int)
    m = len(mat)

    def entry(slot: int | None) -> NDArray[np.int64]:
        if slot is None or slot >= len(lens):
            return mat[:, 0:0]
        return mat[:, offsets[slot] : offsets[slot + 1]]

    q_full, k_full, v_full = entry(sig.q), entry(sig.k), entry(sig.v)
    lq = q_full.shape[1]
    quirk = np.zeros(m, dtype=bool)
    if plan.layout is Layout.BHND:
        dense = _dense_bhnd(q_full, k_full, v_full)
    elif plan.layout is Layout.SBHD:
        dense = _dense_4d(q_full, k_full, v_full, batch_axis=1, seq_axis=0)
    elif plan.layout is Layout.BNHD and not plan.varlen:
        dense = _dense_4d(q_full, k_full, v_full, batch_axis=0, seq_axis=1)
    else:
        row = Row(dims=None, types=rep_types, concrete=rep_concrete)
        cu_q, cu_k = entry(sig.cu_seqlens_q), entry(sig.cu_seqlens_k)
        varlen = _varlen(sig, q_full, k_full, v_full, cu_q, cu_k, ints, row)
        if varlen is None:
            return None
        cols, bad, quirk = varlen
        dense = cols, bad
    if dense is None:
        return None
    cols, bad = dense
    if sig.dout is not None and entry(sig.dout).shape[1]:
        dout = entry(sig.dout)
        if dout.shape[1] != lq:
            quirk = np.ones(m, dtype=bool)  # every row warns, quoting its shapes
        else:
            quirk = quirk | (dout[:, :-1] != q_full[:, :-1]).any(axis=1)
    quirk = quirk | (cols["heads_q"] % np.maximum(cols["heads_kv"], 1) != 0)
    attn = entry(sig.attn_mask) if sig.attn_mask is not None and entry(sig.attn_mask).shape[1] else None
    return ShapeCols(cols, attn, bad, quirk & ~bad)


def _zero(*arrays: NDArray[np.int64]) -> NDArray[np.bool_]:
    out = np.zeros(len(arrays[0]), dtype=bool)
    for a in arrays:
        out |= (a == 0).any(axis=1)
    return out


def _dense_bhnd(
    q: NDArray[np.int64], k: NDArray[np.int64], v: NDArray[np.int64]
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.bool_]] | None:
    lq = q.shape[1]
    if lq not in (3, 4, 5, 6) or k.shape[1] != lq or v.shape[1] != lq:
        return None  # require_dims fails for every row, quoting its shape
    bad = _zero(q, k, v) | (q[:, :-3] != k[:, :-3]).any(axis=1) | (k[:, :-1] != v[:, :-1]).any(axis=1)
    if lq > 3:
        lead = q[:, :-3]
        bad |= lead.astype(np.float64).prod(axis=1) >= _BATCH_LIMIT
        batch = np.where(bad[:, None], 1, lead).prod(axis=1) if lq > 4 else lead[:, 0].copy()
    else:
        batch = np.ones(len(q), dtype=np.int64)
    cols = {
        "batch": batch, "heads_q": q[:, -3], "heads_kv": k[:, -3], "seq_q": q[:, -2], "seq_kv": k[:, -2],
        "head_dim_qk": q[:, -1], "head_dim_v": v[:, -1],
    }  # fmt: skip
    return cols, bad


def _dense_4d(
    q: NDArray[np.int64], k: NDArray[np.int64], v: NDArray[np.int64], batch_axis: int, seq_axis: int
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.bool_]] | None:
    if q.shape[1] != 4 or k.shape[1] != 4 or v.shape[1] != 4:
        return None
    bad = _zero(q, k, v) | (q[:, batch_axis] != k[:, batch_axis]) | (k[:, :-1] != v[:, :-1]).any(axis=1)
    cols = {
        "batch": q[:, batch_axis], "heads_q": q[:, 2], "heads_kv": k[:, 2], "seq_q": q[:, seq_axis],
        "seq_kv": k[:, seq_axis], "head_dim_qk": q[:, 3], "head_dim_v": v[:, 3],
    }  # fmt: skip
    return cols, bad


def _varlen(
    sig: Signature,
    q: NDArray[np.int64],
    k: NDArray[np.int64],
    v: NDArray[np.int64],
    cu_q: NDArray[np.int64],
    cu_k: NDArray[np.int64],
    ints: dict[int, NDArray[np.int64]],
    row: Row,
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.bool_], NDArray[np.bool_]] | None:
    lq = q.shape[1]
    if lq not in (3, 4) or k.shape[1] != lq or v.shape[1] != lq or cu_q.shape[1] != 1:
        return None
    m = len(q)
    bad = _zero(q, k, v)
    if lq == 4:
        bad |= q[:, 0] != 1
        q, k, v = q[:, 1:], k[:, 1:], v[:, 1:]
    bad |= (k[:, :-1] != v[:, :-1]).any(axis=1)
    quirk = (cu_k[:, 0] != cu_q[:, 0]) if cu_k.shape[1] else np.zeros(m, dtype=bool)
    maxes = []
    for slot in (sig.max_seqlen_q, sig.max_seqlen_k):
        if slot is None:
            return None  # "missing max_seqlen" for every row
        if slot in ints:
            maxes.append(ints[slot])
            continue
        try:
            value = row.int_at(slot, "max_seqlen")
        except RowError:
            return None
        if value is None or not -(2**62) < value < 2**62:
            return None
        maxes.append(np.full(m, value, dtype=np.int64))
    max_q, max_k = maxes
    num_seqs = cu_q[:, 0] - 1
    total_q, total_kv = q[:, 0], k[:, 0]
    bad |= (max_q == NO_INT) | (max_k == NO_INT) | (num_seqs <= 0) | (max_q <= 0) | (max_k <= 0)
    bad |= (max_q > total_q) | (max_k > total_kv)
    cols = {
        "batch": num_seqs, "heads_q": q[:, 1], "heads_kv": k[:, 1], "seq_q": max_q, "seq_kv": max_k,
        "head_dim_qk": q[:, 2], "head_dim_v": v[:, 2], "num_seqs": num_seqs, "total_q": total_q,
        "total_kv": total_kv, "max_q": max_q, "max_kv": max_k,
    }  # fmt: skip
    return cols, bad, quirk
