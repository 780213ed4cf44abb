"""Tensor-core FLOPs of attention, vectorized over a ConfigTable (docs/perf-model.md §2).

Every count is 2 · Hq · (pairs summed over the batch for one query head) · (sum of the GEMM inner dims):

* forward: S = QKᵀ (d_qk) and O = PV (d_v): 2·B·Hq·P·(d_qk + d_v).
* backward, default **5 GEMMs**: S = QKᵀ recomputed (d_qk), dV = Pᵀ·dO (d_v), dP = dO·Vᵀ (d_v),
  dQ = dS·K (d_qk), dK = dSᵀ·Q (d_qk): 2·B·Hq·P·(3·d_qk + 2·d_v) — 2.5× forward for equal dims,
  2.6× for MLA (192/128).

  Why 5 is the default: FA2 (CUDA), FA3, CK-tile and aiter all run exactly these five GEMMs. None of
  them recomputes O = PV: O is saved by the forward and only read by a separate preprocess kernel that
  forms D = rowsum(dO ∘ O), an elementwise reduction, not a GEMM. torch's flop counter, the CK runner
  and the FA2 benchmark count the same five.
* `recompute_fwd` (6 GEMMs, 3d_qk + 3d_v: 3.0× for equal dims) adds the PV recompute that the seed
  perf-model PR (docs/perf-model.md) assumed. No inspected kernel runs it; it exists so the seed's 25.77 G can
  be reproduced.
* `two_phase` (7 GEMMs, 4d_qk + 3d_v: 3.5×) is what Triton-tutorial-style kernels execute: the dQ
  phase recomputes S and dP again.

Pairs come in three flavours (see estimate.py): "useful" (exact kept pairs; the varlen lower bound),
"executed" (pairs inside the tiles a kernel visits) and "upper" (varlen/paged upper bound).

Varlen (cu_seqlens) rows know only total tokens T, sequence count n and max length L per side, so
pairs are bounded over the sequence lengths a trace allows (pair counts are convex in length):

* lower: one sequence of (L_q, L_kv) and the other n − 1 sharing the rest as equally as integers allow
  (the minimum for convex counts given that one sequence has length L);
* upper: k = min(⌊T_q/L_q⌋, ⌊T_kv/L_kv⌋) sequences of (L_q, L_kv) and the remainder in one (the
  greedy maximum for self-attention, T_q = T_kv and L_q = L_kv; a heuristic for cross-attention).

Paged rows: a bottom-right causal request of q new tokens over k keys keeps q·k − q(q − 1)/2 pairs, so a step
keeps exactly Σ q·k − (Σ q² − Σ q)/2 pairs per query head when its annotation gives Σ q² and Σ q·k over the
requests (`sum_qq`, `sum_qk`: SGLang and newer vLLM write them); a decode request (q = 1) adds its k, which is
the decode formula 2·Σctx·Hq·(d_qk + d_v). Without those sums only bounds follow: each request's last query
token sees its whole context, and each extra (chunked-prefill) query token sees at least one and at most
Σctx − (R − 1) keys. A sliding window of w keys (left) caps each query at w + 1 keys: with the sums alone,
min(P, Σq · (w + 1)) is an upper bound, exact for a decode step only when the sums pin every request down
(`paged_window_floor`); with per-request contexts the window is folded into them (perf_models.table) and exact.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.config import BwdConvention
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.masks import MASK_WINDOW
from sdpa_analyzer.perf_models.table import ConfigTable

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def bwd_gemm_dims(convention: BwdConvention | str, head_dim_qk: I64, head_dim_v: I64) -> I64:
    """Σ of GEMM inner dims per kept pair in a backward, by counting convention."""
    try:
        conv = BwdConvention(convention)
    except ValueError:
        allowed = ", ".join(c.value for c in BwdConvention)
        raise ConfigError("bwd_convention", convention, f"one of {allowed}") from None
    if conv is BwdConvention.FIVE_GEMM:
        return 3 * head_dim_qk + 2 * head_dim_v
    if conv is BwdConvention.RECOMPUTE_FWD:
        return 3 * head_dim_qk + 3 * head_dim_v
    return 4 * head_dim_qk + 3 * head_dim_v


def gemm_dims(table: ConfigTable, convention: BwdConvention | str = BwdConvention.FIVE_GEMM) -> I64:
    """Σ of GEMM inner dims per kept pair for each row (forward or backward)."""
    fwd = table.head_dim_qk + table.head_dim_v
    return fwd + table.is_bwd * (bwd_gemm_dims(convention, table.head_dim_qk, table.head_dim_v) - fwd)


def flops_per_pair(table: ConfigTable, convention: BwdConvention | str = BwdConvention.FIVE_GEMM) -> F64:
    """2 · Hq · Σdims: FLOPs per kept pair of one query head (a multiply-add is 2 FLOPs)."""
    return 2.0 * (table.heads_q * gemm_dims(table, convention)).astype(np.float64)


class SeqGroup(NamedTuple):
    """`count` sequences of query length `len_q` and key length `len_kv` (arrays, one per row)."""

    count: I64
    len_q: I64
    len_kv: I64


def varlen_sequences(total_q: I64, total_kv: I64, num_seqs: I64, max_q: I64, max_kv: I64,
                     bound: str) -> list[SeqGroup]:
    """The sequence lengths behind the lower or upper pair bound (see the module docstring)."""
    if bound == "lower":
        rest = np.maximum(num_seqs - 1, 0)
        div = np.maximum(rest, 1)
        rq, rk = np.maximum(total_q - max_q, 0), np.maximum(total_kv - max_kv, 0)
        pq, eq = np.where(rest > 0, rq // div, 0), np.where(rest > 0, rq % div, 0)
        pk, ek = np.where(rest > 0, rk // div, 0), np.where(rest > 0, rk % div, 0)
        both = np.minimum(eq, ek)
        one = np.ones_like(num_seqs)
        return [
            SeqGroup(one, max_q, max_kv),
            SeqGroup(both, pq + 1, pk + 1),
            SeqGroup(eq - both, pq + 1, pk),
            SeqGroup(ek - both, pq, pk + 1),
            SeqGroup(rest - np.maximum(eq, ek), pq, pk),
        ]
    if bound == "upper":
        k = np.minimum(total_q // max_q, total_kv // max_kv)
        rq, rk = total_q - k * max_q, total_kv - k * max_kv
        return [SeqGroup(k, max_q, max_kv), SeqGroup(((rq > 0) & (rk > 0)).astype(np.int64), rq, rk)]
    raise ConfigError("bound", bound, "'lower' or 'upper'")


def paged_query_tokens(table: ConfigTable) -> I64:
    """Query tokens of a paged row (0 in the column means one per request)."""
    return np.where(table.sum_query_tokens > 0, table.sum_query_tokens, table.num_requests)


def paged_exact_pairs(sum_q: I64, sum_qq: I64, sum_qk: I64) -> I64:
    """Σ q·k − (Σ q² − Σ q)/2: the bottom-right causal pairs of a step, per query head (q² − q is even)."""
    return sum_qk - (sum_qq - sum_q) // 2


def paged_pairs(table: ConfigTable) -> tuple[I64, I64]:
    """(lower, upper) pairs per query head of paged rows (see the module docstring): equal where the step's
    Σ q² and Σ q·k are known."""
    q = paged_query_tokens(table)
    extra = np.maximum(q - table.num_requests, 0)
    lower = table.sum_ctx + extra
    upper = table.sum_ctx + extra * (table.sum_ctx - table.num_requests + 1)
    exact = table.sum_qk > 0
    if exact.any():
        pairs = paged_exact_pairs(q, table.sum_qq, table.sum_qk)
        lower, upper = np.where(exact, pairs, lower), np.where(exact, pairs, upper)
    return lower, upper


def paged_window_cap(table: ConfigTable) -> tuple[I64, NDArray[np.bool_]]:
    """Σq · (w + 1) on paged rows with a known left window w (the most pairs a window lets each query keep), and
    which rows have one; other rows get a cap that never binds."""
    windowed = (table.mask_code == MASK_WINDOW) & (table.window_left >= 0)
    big = np.iinfo(np.int64).max
    cap = np.where(windowed, paged_query_tokens(table) * (np.maximum(table.window_left, 0) + 1), big)
    return cap, windowed


def paged_window_floor(table: ConfigTable) -> I64:
    """The fewest pairs a decode step (one query per request) under a left window w can keep given only its sums:
    Σ min(k_b, w + 1) is concave in each k_b, least when R − 1 requests hold one key and one holds the rest:
    (R − 1) + min(Σk − R + 1, w + 1). Equal to the cap min(Σk, R·(w + 1)) only when the sums pin it down."""
    r, w1 = table.num_requests, np.maximum(table.window_left, 0) + 1
    return (r - 1) + np.minimum(table.sum_ctx - r + 1, w1)
