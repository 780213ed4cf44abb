"""HBM bytes of attention, vectorized over a ConfigTable (docs/perf-model.md §3).

Element sizes come from each tensor's dtype column (dO has O's dtype, dQ/dK/dV those of Q/K/V); LSE,
D and the dQ accumulator are fp32 whatever the inputs are. Token counts: B·N for plain rows, the THD
totals for varlen rows, the query tokens and Σctx for paged rows.

Compulsory (each tensor touched once; the default roofline numerator):

* forward: read Q [B,Hq,Nq,d_qk], K [B,Hkv,Nkv,d_qk], V [B,Hkv,Nkv,d_v]; write O [B,Hq,Nq,d_v] and
  the fp32 LSE [B,Hq,Nq];
* backward: read Q, K, V, O, dO, LSE; write dQ, dK, dV; D = rowsum(dO∘O) in fp32 (written by the
  preprocess, read by the main kernel: 8 B per row); the fp32 dQ accumulator of FA2/FA3/CK
  (zero-init write + final read: 8·B·Hq·Nq·d_qk);
* paged: the KV cache e_kv·Σctx·Hkv·(d_qk + d_v) (fp8 caches count 1 B) plus Q and O; no LSE; the
  block table (4 B per page) is left out (< 0.1 % at 16-token pages and d ≥ 64).

Tiled (what a tiled kernel moves when its re-reads miss the cache). Re-reads are charged per query
head (each head's CTAs stream their own K/V tiles; no L2 sharing across a GQA group is assumed), and
`TileSums` says how many rows a loop loads: dense grids when masked tiles are not skipped, only the
visited tiles otherwise.

* forward: Q once, K and V once per visited (Q block, KV block) tile, O and LSE written once;
* backward `two_pass` — exactly the seed perf-model PR's model (docs/perf-model.md), which reproduces its 721 MB: the
  dK/dV pass reads Q, O and dO once per KV block (Q-side rows of every visited tile) and K, V once; the
  dQ pass reads K, V once per Q block and Q once; dQ, dK, dV are written once. Like the seed it reads
  O at full width (a kernel that reads the precomputed D moves 4 B per row instead) and leaves out the
  fp32 LSE/D rows, the preprocess and dO in the dQ pass (together ≈ 2 % at d = 128);
* backward `single_pass` — FA2/CK style with atomic dQ: the preprocess reads O, dO and writes D; the
  main kernel reads K, V once and, per visited tile, the Q-block's Q, dO, LSE, D and an fp32 dQ
  accumulator read-modify-write (8 B per element, the worst case when atomics miss L2); dK, dV
  written once; the accumulator is zero-initialised and read by the convert kernel, which writes dQ;
* paged rows: tiled = compulsory (a decode kernel streams the cache once).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from perf_models.errors import ConfigError
from perf_models.masks import TileSums
from perf_models.table import ConfigTable

F64 = NDArray[np.float64]
TILED_BWD_MODELS = ("two_pass", "single_pass")
FP32 = 4.0


def token_counts(table: ConfigTable) -> tuple[F64, F64]:
    """(query tokens, key tokens) per row: B·N, the varlen totals, or paged query tokens and Σctx."""
    tq = (table.batch * table.seq_q).astype(np.float64)
    tkv = (table.batch * table.seq_kv).astype(np.float64)
    vi, pi = table.varlen_rows, table.paged_rows
    if vi.size:
        tq[vi], tkv[vi] = table.total_q[vi], table.total_kv[vi]
    if pi.size:
        sq = table.sum_query_tokens[pi]
        tq[pi] = np.where(sq > 0, sq, table.num_requests[pi])
        tkv[pi] = table.sum_ctx[pi]
    return tq, tkv


def compulsory_terms(table: ConfigTable) -> dict[str, F64]:
    """Bytes of each tensor touched once, by name (backward-only terms are 0 on forward rows).

    Keys: q, k, v, o, lse, do, dq, dk, dv, d (fp32 write + read), dq_accum (fp32 init + read).
    """
    tq, tkv = token_counts(table)
    rows_q = tq * table.heads_q  # query rows over all query heads
    rows_kv = tkv * table.heads_kv
    dqk, dv = table.head_dim_qk, table.head_dim_v
    ek, ev = table.elem_k, table.elem_v
    lse = FP32 * rows_q
    pi = table.paged_rows
    if pi.size:  # the cache dtype (e.g. fp8) is what a paged kernel reads; decode kernels keep no LSE
        ek, ev = ek.copy(), ev.copy()
        ek[pi] = ev[pi] = table.elem_kv_cache[pi]
        lse[pi] = 0.0
    q = rows_q * dqk * table.elem_q
    k = rows_kv * dqk * ek
    v = rows_kv * dv * ev
    o = rows_q * dv * table.elem_o
    bwd = table.is_bwd  # multiplying by the flag is cheaper than np.where on mixed rows
    return {
        "q": q,
        "k": k,
        "v": v,
        "o": o,
        "lse": lse,
        "do": o * bwd,
        "dq": q * bwd,
        "dk": k * bwd,
        "dv": v * bwd,
        "d": (2 * FP32) * rows_q * bwd,
        "dq_accum": (2 * FP32) * rows_q * dqk * bwd,
    }


def compulsory_bytes(table: ConfigTable, terms: dict[str, F64] | None = None) -> F64:
    """Σ of compulsory_terms: the default roofline numerator."""
    t = compulsory_terms(table) if terms is None else terms
    total = np.zeros(len(table), dtype=np.float64)
    for arr in t.values():
        total += arr
    return total


def tiled_bytes(table: ConfigTable, tiles: TileSums, *, tiled_bwd_model: str = "two_pass",
                terms: dict[str, F64] | None = None, compulsory: F64 | None = None) -> F64:
    """Tiled HBM traffic per row; `tiles` holds per-query-head totals over the batch (or sequences)."""
    if tiled_bwd_model not in TILED_BWD_MODELS:
        raise ConfigError("tiled_bwd_model", tiled_bwd_model, f"one of {', '.join(TILED_BWD_MODELS)}")
    t = compulsory_terms(table) if terms is None else terms
    _, tkv = token_counts(table)
    hq = table.heads_q
    dqk = table.head_dim_qk
    w_q = dqk * table.elem_q  # bytes of one query row of Q (or dQ)
    w_o = table.head_dim_v * table.elem_o  # bytes of one row of O (or dO)
    w_kv = dqk * table.elem_k + table.head_dim_v * table.elem_v  # one key row of K and V together
    q_rows = hq * tiles.q_rows.astype(np.float64)  # query rows loaded over visited tiles, all heads
    kv_cols = hq * tiles.kv_cols.astype(np.float64)  # key rows loaded over visited tiles, all heads
    kv_once = hq * tkv * w_kv

    fwd = t["q"] + kv_cols * w_kv + t["o"] + t["lse"]
    writes = t["dq"] + t["dk"] + t["dv"]
    if tiled_bwd_model == "two_pass":
        bwd = q_rows * (w_q + 2.0 * w_o) + kv_once + kv_cols * w_kv + t["q"] + writes
    else:
        per_row = w_q + w_o + 2 * FP32 + 2 * FP32 * dqk  # Q, dO, LSE, D, dQaccum read+write
        bwd = (t["o"] + t["do"] + t["d"] / 2) + t["dq_accum"] + kv_once + q_rows * per_row + writes
    out = fwd + table.is_bwd * (bwd - fwd)
    pi = table.paged_rows
    if pi.size:
        out[pi] = (compulsory_bytes(table, t) if compulsory is None else compulsory)[pi]
    return out
