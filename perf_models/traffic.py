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

What a forward reads follows the kernel, not the tensor shapes:

* only the keys some query can see are read: a top-left causal mask with Nq < Nkv never reads keys past
  Nq − 1; a sliding window reads the keys of the union of its windows (decode with a 4096 window over 32k of
  context reads 4097 keys). Paged rows with a window read min(Σctx, requests × (window + query tokens)):
  exact when every context is longer than the window, an upper bound otherwise (only the sums are known);
* a K/V cache dtype (e.g. fp8) is the element size of every forward K/V read, paged or not;
* an MLA latent cache (`shared_kv`) is read once per token at d_qk: V is a slice of it.

The FA benchmarks count fewer bytes (`fa_convention_bytes`: forward Q, K, V, O; backward Q, K, V, dO, dQ, dK,
dV, all at full length): 58.7 MB where the compulsory count gives 101.1 MB for B1 H32 N1024 d128 bf16. Both are
reported; compulsory is the roofline numerator.

Tiled (what a tiled kernel moves when its re-reads miss the cache). `TileSums` says how many rows a loop
loads: dense grids when masked tiles are not skipped, only the visited tiles otherwise.

* forward: Q once, K and V once per visited (Q block, KV block) tile, O and LSE written once. The query heads
  of a GQA group are packed into the same Q tiles (FA2's `seqlenq_ngroups_swapped` for decode, FA3's
  `pack_gqa`): K/V re-reads are charged per KV head over ⌈g·Nq/Br⌉ packed tiles, so a GQA decode reads its
  cache once (tiled = compulsory), not g times;
* backward `two_pass` — exactly the seed perf-model PR's model (docs/perf-model.md), which reproduces its 721 MB: the
  dK/dV pass reads Q, O and dO once per KV block (Q-side rows of every visited tile) and K, V once; the
  dQ pass reads K, V once per Q block and Q once; dQ, dK, dV are written once. Like the seed it reads
  O at full width (a kernel that reads the precomputed D moves 4 B per row instead) and leaves out the
  fp32 LSE/D rows, the preprocess and dO in the dQ pass (together ≈ 2 % at d = 128);
* backward `single_pass` — FA2/CK style with atomic dQ: the preprocess reads O, dO and writes D; the
  main kernel reads K, V once and, per visited tile, the Q-block's Q, dO, LSE, D and an fp32 dQ
  accumulator read-modify-write (8 B per element, the worst case when atomics miss L2); dK, dV
  written once; the accumulator is zero-initialised and read by the convert kernel, which writes dQ;
* backward with GQA: FA2/CK-style kernels write dK/dV expanded to every query head and sum them
  (+ a write and a read of Hq-head dK/dV); FA3 accumulates them in fp32 per KV head (+ a zero-init write and
  a read, 8 B per element);
* paged rows: tiled = compulsory (a decode kernel streams the cache once);
* split-KV decode (`split_kv_partial_bytes`, when the GPU's compute-unit count is known): a decode call too small
  to fill the GPU splits each sequence's keys into s chunks; every chunk writes a partial O and LSE in fp32 that
  the combine kernel reads back: 2 · 4 · s · B · Hq · Nq · (round32(d_v) + 1) bytes on top of the tiled
  traffic. s follows FlashAttention-2's `num_splits_heuristic` (csrc/flash_attn/flash_api.cpp): 1 split when
  B · Hkv · ⌈g·Nq/64⌉ (the GQA group packed into the query rows) reaches 80 % of 2 × #SMs; else the smallest
  eligible s ≤ min(128, 2 × #SMs, ⌈Nkv / block_n⌉) whose wave efficiency is ≥ 85 % of the best (block_n 256 /
  128 / 64 for d ≤ 64 / ≤ 128 / larger). Paged rows known by their sums use the mean context per request.
  Small batch × long context is where it matters (FlashMLA-style MLA with 128 query heads: partials of
  128 × 513 fp32 per split and request can exceed the latent cache itself).

Cache layouts: `elem_kv_cache` is the bytes per element as stored, so a layout with scales (FlashMLA's fp8 MLA
cache, `flashmla_fp8_token_bytes`: 656 B per token) is read at its own size.

Unfused attention (matmul → softmax → matmul) also moves the score matrix: `score_matrix_bytes` counts the
passes an eager chain makes at least (forward: S written and read, P written and read; backward: P read
twice, dP written and read, dS written and read twice), at the dtype of Q.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.masks import MASK_CAUSAL_TL, MASK_WINDOW, TileSums
from sdpa_analyzer.perf_models.table import ConfigTable

F64 = NDArray[np.float64]
TILED_BWD_MODELS = ("two_pass", "single_pass")
FP32 = 4.0
DECODE_MAX_QUERY_TOKENS = 16  # a forward with at most this many query tokens per sequence is a decode step
# FlashAttention-2 split-KV (csrc/flash_attn/flash_api.cpp set_params_splitkv / num_splits_heuristic)
SPLIT_MAX = 128
SPLIT_BLOCK_M = 64
SPLIT_SM_FACTOR = 2  # "we multiply number of SMs by 2 ... 128 threads per block"
SPLIT_FILL = 0.8
SPLIT_EFFICIENCY = 0.85
# FlashMLA's fp8 "with scale" MLA cache (deepseek-ai/FlashMLA README, "FP8 KV Cache"): per token the quantized
# NoPE part (d_v fp8 values), one fp32 scale per 128 of them, and the RoPE part (d_qk - d_v values) kept in bf16.
FLASHMLA_SCALE_GROUP = 128


def flashmla_fp8_token_bytes(head_dim_qk: int = 576, head_dim_v: int = 512) -> int:
    """Bytes of one token of FlashMLA's fp8 MLA cache: d_v · 1 + 4 · ⌈d_v / 128⌉ + 2 · (d_qk − d_v) (656 for
    DeepSeek's 576 / 512)."""
    return head_dim_v + 4 * -(-head_dim_v // FLASHMLA_SCALE_GROUP) + 2 * (head_dim_qk - head_dim_v)


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


def visible_keys(table: ConfigTable) -> F64:
    """Key tokens some query can see, summed over the batch (the keys a forward must read at least once)."""
    _, tkv = token_counts(table)
    out = tkv.copy()
    nq, nk, code = table.seq_q, table.seq_kv, table.mask_code
    plain = ~table.is_varlen & ~table.is_paged
    shift = nk - nq
    wl, wr = table.window_left, table.window_right
    lo = np.where(wl >= 0, np.maximum(0, shift - wl), 0)
    hi = np.where(wr >= 0, np.minimum(nk - 1, nq - 1 + shift + wr), nk - 1)
    window_union = np.maximum(0, hi - lo + 1)
    union = np.where(code == MASK_CAUSAL_TL, np.minimum(nq, nk), np.where(code == MASK_WINDOW, window_union, nk))
    sel = plain & ((code == MASK_CAUSAL_TL) | (code == MASK_WINDOW))
    out[sel] = (table.batch * union)[sel].astype(np.float64)
    pw = table.is_paged & (code == MASK_WINDOW) & (wl >= 0)
    if pw.any():  # per-request windows, from the sums only: exact when every context exceeds the window
        req = table.num_requests[pw]
        per_req_q = np.maximum(1, np.where(table.sum_query_tokens[pw] > 0, table.sum_query_tokens[pw] // req, 1))
        out[pw] = np.minimum(table.sum_ctx[pw], req * (wl[pw] + per_req_q)).astype(np.float64)
    return out


def _kv_read_sizes(table: ConfigTable) -> tuple[F64, F64]:
    """Bytes per element of the K and V a forward reads: the cache dtype when one is given (fp8 caches), and V
    free when it is a slice of K's latent cache (MLA)."""
    ek, ev = table.elem_k.copy(), table.elem_v.copy()
    cache = table.is_paged | (~table.is_bwd & (table.elem_kv_cache != table.elem_k))
    ek[cache] = table.elem_kv_cache[cache]
    ev[cache] = table.elem_kv_cache[cache]
    ev[table.shared_kv & ~table.is_bwd] = 0.0
    return ek, ev


def compulsory_terms(table: ConfigTable) -> dict[str, F64]:
    """Bytes of each tensor touched once, by name (backward-only terms are 0 on forward rows).

    Keys: q, k, v, o, lse, do, dq, dk, dv, d (fp32 write + read), dq_accum (fp32 init + read).
    """
    tq, tkv = token_counts(table)
    rows_q = tq * table.heads_q  # query rows over all query heads
    rows_kv_read = visible_keys(table) * table.heads_kv
    rows_kv = tkv * table.heads_kv
    dqk, dv = table.head_dim_qk, table.head_dim_v
    ek, ev = _kv_read_sizes(table)
    lse = FP32 * rows_q
    pi = table.paged_rows
    if pi.size:  # decode kernels keep no LSE
        lse[pi] = 0.0
    q = rows_q * dqk * table.elem_q
    k = rows_kv_read * dqk * ek
    v = rows_kv_read * dv * ev
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
        "dk": rows_kv * dqk * table.elem_k * bwd,  # every key gets its gradient written
        "dv": rows_kv * dv * table.elem_v * bwd,
        "d": (2 * FP32) * rows_q * bwd,
        "dq_accum": (2 * FP32) * rows_q * dqk * bwd,
    }


def fa_convention_bytes(table: ConfigTable) -> F64:
    """Bytes as the FlashAttention benchmarks count them: forward Q + K + V + O, backward Q + K + V + dO + dQ +
    dK + dV, each once at its own dtype and full length (no LSE, D or fp32 accumulator)."""
    tq, tkv = token_counts(table)
    q = tq * table.heads_q * table.head_dim_qk * table.elem_q
    o = tq * table.heads_q * table.head_dim_v * table.elem_o
    ek, ev = _kv_read_sizes(table)
    kv = tkv * table.heads_kv * (table.head_dim_qk * ek + table.head_dim_v * ev)
    kv_grad = tkv * table.heads_kv * (table.head_dim_qk * table.elem_k + table.head_dim_v * table.elem_v)
    fwd = q + kv + o
    bwd = q + kv_grad + o + q + kv_grad  # Q, K, V, dO, dQ, dK, dV
    return np.where(table.is_bwd, bwd, fwd)


SCORE_PASSES_FWD = 4.0  # S written (QKᵀ) and read (softmax), P written (softmax) and read (PV)
SCORE_PASSES_BWD = 7.0  # P read (dV, softmax bwd), dP written and read, dS written and read (dQ, dK)


def score_matrix_bytes(table: ConfigTable) -> F64:
    """HBM bytes an unfused (eager matmul → softmax → matmul) attention moves for its Nq × Nkv matrices, at least."""
    rows = np.where(table.is_varlen, table.total_q * table.max_kv, table.batch * table.seq_q * table.seq_kv)
    passes = np.where(table.is_bwd, SCORE_PASSES_BWD, SCORE_PASSES_FWD)
    return passes * rows.astype(np.float64) * table.heads_q * table.elem_q


def compulsory_bytes(table: ConfigTable, terms: dict[str, F64] | None = None) -> F64:
    """Σ of compulsory_terms: the default roofline numerator."""
    t = compulsory_terms(table) if terms is None else terms
    total = np.zeros(len(table), dtype=np.float64)
    for arr in t.values():
        total += arr
    return total


def _gqa_packing(table: ConfigTable, block_q: NDArray[np.int64] | None) -> F64:
    """⌈g·Nq/Br⌉ / (g·⌈Nq/Br⌉): the share of per-query-head K/V tile loads left when a GQA group's g query heads
    share Q tiles (1 for MHA, 1/g for a decode step)."""
    g = (table.heads_q // table.heads_kv).astype(np.float64)
    if block_q is None:
        return np.ones(len(table))
    nq = np.where(table.is_varlen, np.maximum(table.max_q, 1), np.maximum(table.seq_q, 1)).astype(np.float64)
    bq = block_q.astype(np.float64)
    return np.ceil(g * nq / bq) / (g * np.ceil(nq / bq))


def decode_rows(table: ConfigTable) -> NDArray[np.bool_]:
    """Forward rows that are decode steps: paged steps of one query token per request, and plain forwards of at
    most DECODE_MAX_QUERY_TOKENS query tokens over a longer key sequence."""
    paged = table.is_paged & (np.where(table.sum_query_tokens > 0, table.sum_query_tokens, table.num_requests)
                              <= table.num_requests)
    plain = (~table.is_paged & ~table.is_bwd & ~table.is_varlen & (table.seq_q <= DECODE_MAX_QUERY_TOKENS)
             & (table.seq_kv > table.seq_q))
    return paged | plain


def split_kv_splits(tiles: F64, num_sms: int, n_blocks: F64) -> F64:
    """FlashAttention-2's num_splits_heuristic, vectorized over rows (see the module docstring)."""
    sms = float(SPLIT_SM_FACTOR * num_sms)
    need = tiles < SPLIT_FILL * sms
    splits = np.ones(len(tiles))
    if not need.any():
        return splits
    # decode rows repeat a few (tiles, key blocks) pairs: the heuristic runs once per distinct pair
    pairs, inverse = np.unique(np.stack([tiles[need], np.maximum(n_blocks[need], 1.0)]), axis=1, return_inverse=True)
    t, nb = pairs[0], pairs[1]
    lim = np.minimum(min(float(SPLIT_MAX), sms), nb)

    def efficiency(s: int) -> F64:
        waves = t * s / sms
        eligible = (s == 1) | (np.ceil(nb / s) != np.ceil(nb / (s - 1 if s > 1 else 1)))
        return np.where(eligible & (s <= lim), waves / np.ceil(waves), 0.0)

    best = np.zeros(len(t))
    for s in range(1, SPLIT_MAX + 1):
        best = np.maximum(best, efficiency(s))
    chosen = np.zeros(len(t))
    for s in range(1, SPLIT_MAX + 1):
        take = (chosen == 0) & (efficiency(s) >= SPLIT_EFFICIENCY * best) & (efficiency(s) > 0)
        chosen[take] = s
    splits[need] = np.where(chosen > 0, chosen, 1.0)[inverse.reshape(-1)]
    return splits


def split_kv_partial_bytes(table: ConfigTable, num_sms: int | None) -> F64:
    """fp32 partial O and LSE a split-KV decode writes and its combine kernel reads (0 where no split, or when the
    compute-unit count is unknown)."""
    out = np.zeros(len(table))
    if not num_sms:
        return out
    dec = decode_rows(table)
    if not dec.any():
        return out
    t = table.take(dec)
    paged = t.is_paged
    batch = np.where(paged, t.num_requests, t.batch).astype(np.float64)
    q_rows = np.where(paged, 1, t.seq_q).astype(np.float64)  # query tokens per sequence
    keys = np.where(paged, t.sum_ctx / np.maximum(t.num_requests, 1), t.seq_kv).astype(np.float64)
    group = (t.heads_q // t.heads_kv).astype(np.float64)
    tiles = batch * t.heads_kv * np.ceil(group * q_rows / SPLIT_BLOCK_M)
    block_n = np.where(t.head_dim_qk <= 64, 256.0, np.where(t.head_dim_qk <= 128, 128.0, 64.0))
    splits = split_kv_splits(tiles, num_sms, np.ceil(keys / block_n))
    width = 32.0 * np.ceil(t.head_dim_v / 32.0) + 1.0  # the rounded O row and its LSE
    partial = 2.0 * FP32 * splits * batch * t.heads_q * q_rows * width
    out[dec] = np.where(splits > 1, partial, 0.0)
    return out


def tiled_bytes(table: ConfigTable, tiles: TileSums, *, tiled_bwd_model: str = "two_pass",
                terms: dict[str, F64] | None = None, compulsory: F64 | None = None,
                block_q: NDArray[np.int64] | None = None, family: NDArray[np.object_] | None = None,
                num_sms: int | None = None) -> F64:
    """Tiled HBM traffic per row; `tiles` holds per-query-head totals over the batch (or sequences).

    `block_q` (the tiles' query rows) sets the GQA packing of forward K/V re-reads; `family` (fa2 / fa3 / ck /
    triton per row) picks how a GQA backward reduces dK/dV; `num_sms` (the GPU's SMs or CUs) adds the split-KV
    partials of decode rows.
    """
    if tiled_bwd_model not in TILED_BWD_MODELS:
        raise ConfigError("tiled_bwd_model", tiled_bwd_model, f"one of {', '.join(TILED_BWD_MODELS)}")
    t = compulsory_terms(table) if terms is None else terms
    _, tkv = token_counts(table)
    hq, hkv = table.heads_q, table.heads_kv
    dqk = table.head_dim_qk
    ek, ev = _kv_read_sizes(table)
    w_q = dqk * table.elem_q  # bytes of one query row of Q (or dQ)
    w_o = table.head_dim_v * table.elem_o  # bytes of one row of O (or dO)
    w_kv = dqk * ek + table.head_dim_v * ev  # one key row of K and V together, as read
    w_kv_grad = dqk * table.elem_k + table.head_dim_v * table.elem_v
    q_rows = hq * tiles.q_rows.astype(np.float64)  # query rows loaded over visited tiles, all heads
    kv_cols = hq * tiles.kv_cols.astype(np.float64)  # key rows loaded over visited tiles, all heads
    kv_once = hq * tkv * w_kv

    fwd = t["q"] + kv_cols * _gqa_packing(table, block_q) * w_kv + t["o"] + t["lse"]
    writes = t["dq"] + t["dk"] + t["dv"]
    if tiled_bwd_model == "two_pass":
        bwd = q_rows * (w_q + 2.0 * w_o) + kv_once + kv_cols * w_kv + t["q"] + writes
    else:
        per_row = w_q + w_o + 2 * FP32 + 2 * FP32 * dqk  # Q, dO, LSE, D, dQaccum read+write
        bwd = (t["o"] + t["do"] + t["d"] / 2) + t["dq_accum"] + kv_once + q_rows * per_row + writes
    gqa = (hq > hkv) & table.is_bwd
    if gqa.any():
        fa3 = np.zeros(len(table), dtype=bool) if family is None else (np.asarray(family, dtype=object) == "fa3")
        expanded = 2.0 * tkv * hq * w_kv_grad  # Hq-head dK/dV written, then read by the reduction
        accum = 2.0 * FP32 * tkv * hkv * (dqk + table.head_dim_v)  # fp32 per-KV-head accumulators: init + read
        bwd = bwd + np.where(gqa, np.where(fa3, accum, expanded), 0.0)
    out = fwd + table.is_bwd * (bwd - fwd)
    pi = table.paged_rows
    if pi.size:
        out[pi] = (compulsory_bytes(table, t) if compulsory is None else compulsory)[pi]
    return out + split_kv_partial_bytes(table, num_sms)
