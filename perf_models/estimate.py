"""estimate_work: FLOPs, pair counts, tile work and bytes for every row of a ConfigTable at once.

Pair-based quantities are totals for one query head over the batch (B·P for plain rows, Σ over the
bounding sequences for varlen rows, Σ over requests for paged rows); FLOPs and bytes are whole-op totals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.config import BwdConvention
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.flops import (
    SeqGroup,
    flops_per_pair,
    paged_pairs,
    paged_query_tokens,
    paged_window_cap,
    paged_window_floor,
    varlen_sequences,
)
from sdpa_analyzer.perf_models.limits import check_table
from sdpa_analyzer.perf_models.masks import MASK_NONE, TileSums, kept_and_tiles
from sdpa_analyzer.perf_models.objects import filled
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.perf_models.tiles import default_blocks, normalize_family
from sdpa_analyzer.perf_models.traffic import (
    TILED_BWD_MODELS,
    compulsory_bytes,
    compulsory_terms,
    fa_convention_bytes,
    score_matrix_bytes,
    tiled_bytes,
)

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

TILED_BYTES_NOTE = (
    "tiled bytes assume every tile re-read misses the cache: on NVIDIA parts most re-reads hit L2 "
    "(compulsory bytes are the better HBM estimate there); on MI300-class parts (4 MB L2 per XCD) the "
    "tiled figure is the better estimate of HBM traffic"
)


@dataclass(frozen=True, eq=False)
class WorkEstimate:
    """Per-row work arrays plus the settings they were computed with.

    kept_pairs:      exact kept pairs per query head, summed over the batch (varlen: lower bound)
    kept_pairs_upper: the upper bound of the same (= kept_pairs except varlen / paged rows)
    tile_visits:     visited Br×Bc tiles per query head over the batch (all tiles if not skipping)
    executed_pairs:  pairs inside those tiles (masked ones included, padding outside Nq×Nkv excluded)
    flops_useful:    FLOPs of the kept pairs: the efficiency numerator
    flops_executed:  FLOPs of the executed pairs (explains low efficiency on short causal shapes)
    flops_upper:     FLOPs of kept_pairs_upper
    bytes_compulsory, bytes_tiled: see traffic.py
    bytes_fa_convention: the FA benchmarks' count (traffic.fa_convention_bytes), reported beside ours
    bytes_score_matrix: what an unfused chain adds for its Nq × Nkv matrices (traffic.score_matrix_bytes)
    block_q, block_kv: the tile sizes used per row
    work_bound:      what flops_useful is: "exact"; "lower" (varlen or paged rows known only by their sums: a lower
                     bound of the pairs, so efficiency is a lower bound); "upper" (a sliding window of unknown
                     size modeled causal, or a known window over paged sums: the pairs and bytes are at most
                     this, so efficiency is an upper bound); "unknown" (both at once: no direction)
    Paged (decode) rows have no tile grid: tile_visits 0, executed_pairs = kept_pairs, tiled = compulsory.
    """

    kept_pairs: I64
    kept_pairs_upper: I64
    tile_visits: I64
    executed_pairs: I64
    flops_useful: F64
    flops_executed: F64
    flops_upper: F64
    bytes_compulsory: F64
    bytes_tiled: F64
    bytes_fa_convention: F64
    bytes_score_matrix: F64
    block_q: I64
    block_kv: I64
    bwd_convention: str
    skip_masked_tiles: bool
    tiled_bwd_model: str
    family: str  # the family asked for ('per_row' when each row named its own)
    families: NDArray[np.object_]  # the tile family each row was modeled with
    work_bound: NDArray[np.object_]  # exact | lower | upper | unknown (see above)
    tiled_note: str = TILED_BYTES_NOTE

    def __len__(self) -> int:
        return int(self.kept_pairs.shape[0])


def _family_blocks(table: ConfigTable, family: str) -> tuple[I64, I64]:
    fa3 = family == "fa3"  # only FA3 picks tiles by mask and fp8 (comparing object strings is slow)
    return default_blocks(
        family, table.head_dim_qk, table.head_dim_v, table.is_bwd,
        masked=(table.mask_code != MASK_NONE) if fa3 else False,
        fp8=(table.compute_spec == "matrix_fp8") if fa3 else False,
    )


def _blocks(table: ConfigTable, families: NDArray[np.object_], block_q: ArrayLike | None,
            block_kv: ArrayLike | None) -> tuple[I64, I64]:
    """Tile sizes per row: the given scalars/arrays, else each row's family defaults (tiles.py)."""
    n = len(table)
    names = sorted(set(families.tolist()))
    if len(names) <= 1:
        dq, dk = _family_blocks(table, names[0] if names else "fa2")
    else:
        dq, dk = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        for fam in names:
            rows = np.flatnonzero(families == fam)
            dq[rows], dk[rows] = _family_blocks(table.take(rows), fam)
    out = []
    for name, given, default in (("block_q", block_q, dq), ("block_kv", block_kv, dk)):
        arr = default if given is None else np.broadcast_to(np.asarray(given, dtype=np.int64), (n,)).copy()
        if (arr <= 0).any():
            raise ConfigError(name, int(arr[arr <= 0][0]), "a positive tile size")
        out.append(arr)
    return out[0], out[1]


def _stacked(groups: list[SeqGroup], bq: I64, bk: I64, code: NDArray[np.int8], wl: I64, wr: I64,
             skip: bool) -> tuple[I64, TileSums]:
    """Σ_groups count · (kept pairs, tile work), with every group evaluated in one vectorized call."""
    k = len(groups)
    n = bq.shape[0]
    count = np.concatenate([g.count for g in groups])
    kept, tiles = kept_and_tiles(
        np.concatenate([g.len_q for g in groups]), np.concatenate([g.len_kv for g in groups]),
        np.tile(bq, k), np.tile(bk, k), np.tile(code, k), np.tile(wl, k), np.tile(wr, k),
        skip_masked_tiles=skip,
    )

    def total(x: I64) -> I64:
        return (count * x).reshape(k, n).sum(axis=0)

    return total(kept), TileSums(*(total(x) for x in tiles))


def _row_totals(table: ConfigTable, bq: I64, bk: I64, skip: bool) -> tuple[I64, I64, TileSums, NDArray[np.bool_]]:
    """(useful pairs, upper pairs, tile work, rows whose pairs are an upper bound) per query head, summed over the
    batch / sequences / requests."""
    kept, tiles = kept_and_tiles(table.seq_q, table.seq_kv, bq, bk, table.mask_code, table.window_left,
                                 table.window_right, skip_masked_tiles=skip)
    b = table.batch
    useful = b * kept
    tiles = TileSums(*(b * x for x in tiles))
    upper = useful.copy()
    vi = table.varlen_rows
    if vi.size:
        names = ("total_q", "total_kv", "num_seqs", "max_q", "max_kv")
        tq, tk, ns, mq, mk = (getattr(table, c)[vi] for c in names)
        code, wl, wr = table.mask_code[vi], table.window_left[vi], table.window_right[vi]
        lower = [g for g in varlen_sequences(tq, tk, ns, mq, mk, "lower") if g.count.any()]
        useful[vi], sums = _stacked(lower, bq[vi], bk[vi], code, wl, wr, skip)
        for full, part in zip(tiles, sums, strict=True):
            full[vi] = part
        high = [g for g in varlen_sequences(tq, tk, ns, mq, mk, "upper") if g.count.any()]
        upper[vi] = _stacked(high, bq[vi], bk[vi], code, wl, wr, True)[0] if high else 0
    capped = np.zeros(len(table), dtype=bool)
    pi = table.paged_rows
    if pi.size:  # a decode kernel streams the cache: its pairs are its work, no tile grid
        paged = table.take(pi)
        low, high = paged_pairs(paged)
        cap, windowed = paged_window_cap(paged)
        useful[pi], upper[pi] = np.minimum(low, cap), np.minimum(high, cap)
        one_query = paged_query_tokens(paged) <= paged.num_requests
        loose = np.where(one_query, paged_window_floor(paged) < np.minimum(high, cap), np.minimum(high, cap) < high)
        # one request: its q new tokens over k keys are the sums themselves, so the window's pairs are exact
        single = np.flatnonzero(windowed & (paged.num_requests == 1) & (low == high))
        if single.size:
            q, k = paged_query_tokens(paged)[single], paged.sum_ctx[single]
            exact, _ = kept_and_tiles(q, k, np.ones_like(q), np.ones_like(q), paged.mask_code[single],
                                      paged.window_left[single], paged.window_right[single])
            useful[pi[single]] = upper[pi[single]] = exact
            loose[single] = False
        capped[pi] = windowed & loose
        tiles.visits[pi] = 0
        tiles.pairs[pi] = useful[pi]
    return useful, upper, tiles, capped


CHUNK_ROWS = 32768
_INT_OUTPUTS = ("kept_pairs", "kept_pairs_upper", "tile_visits", "executed_pairs")
_OUTPUTS = (*_INT_OUTPUTS, "flops_useful", "flops_executed", "flops_upper", "bytes_compulsory", "bytes_tiled",
            "bytes_fa_convention", "bytes_score_matrix")


def _chunk(table: ConfigTable, bq: I64, bk: I64, conv: BwdConvention, skip: bool,
           tiled_bwd_model: str, families: NDArray[np.object_], num_sms: int | None) -> dict[str, NDArray[np.generic]]:
    useful, upper, tiles, capped = _row_totals(table, bq, bk, skip)
    per_pair = flops_per_pair(table, conv)
    terms = compulsory_terms(table)
    compulsory = compulsory_bytes(table, terms)
    return {
        "kept_pairs": useful,
        "kept_pairs_upper": upper,
        "tile_visits": tiles.visits,
        "executed_pairs": tiles.pairs,
        "flops_useful": per_pair * useful,
        "flops_executed": per_pair * tiles.pairs,
        "flops_upper": per_pair * upper,
        "bytes_compulsory": compulsory,
        "bytes_tiled": tiled_bytes(table, tiles, tiled_bwd_model=tiled_bwd_model, terms=terms,
                                   compulsory=compulsory, block_q=bq, family=families, num_sms=num_sms),
        "bytes_fa_convention": fa_convention_bytes(table),
        "bytes_score_matrix": score_matrix_bytes(table),
        "work_bound": _work_bound((useful < upper) | table.seq_lower_bound,
                                  capped | table.window_unknown | table.mask_unknown | table.step_split),
    }


def _work_bound(lower: NDArray[np.bool_], upper: NDArray[np.bool_]) -> NDArray[np.object_]:
    code = lower.astype(np.int8) + 2 * upper.astype(np.int8)
    return np.asarray(WORK_BOUNDS, dtype=object)[code]


WORK_BOUNDS = ("exact", "lower", "upper", "unknown")


def estimate_work(
    table: ConfigTable,
    *,
    bwd_convention: BwdConvention | str = BwdConvention.FIVE_GEMM,
    block_q: ArrayLike | None = None,
    block_kv: ArrayLike | None = None,
    skip_masked_tiles: bool = True,
    tiled_bwd_model: str = "two_pass",
    family: str | ArrayLike | None = None,
    num_sms: int | None = None,
) -> WorkEstimate:
    """FLOPs, pairs and bytes for every row. Block sizes: scalars/arrays, or defaults by family (one for every
    row, or one per row: the kernel family a row's kernels belong to). `num_sms` (the GPU's SMs or CUs) adds the
    split-KV partials of small decode calls to the tiled bytes (traffic.split_kv_partial_bytes).

    `skip_masked_tiles=False` models a kernel that visits every tile: executed pairs become dense and
    the tiled re-reads cover the whole grid (the seed PR's 721 MB assumes this).
    """
    try:
        conv = BwdConvention(bwd_convention)
    except ValueError:
        allowed = ", ".join(c.value for c in BwdConvention)
        raise ConfigError("bwd_convention", bwd_convention, f"one of {allowed}") from None
    if tiled_bwd_model not in TILED_BWD_MODELS:
        raise ConfigError("tiled_bwd_model", tiled_bwd_model, f"one of {', '.join(TILED_BWD_MODELS)}")
    check_table(table)  # a row beyond the exact-count limits would come out silently wrong (int64 wraps)
    n = len(table)
    if family is None or isinstance(family, str):
        fam = normalize_family(family)
        families = filled(n, fam)
    else:
        raw = np.broadcast_to(np.asarray(family, dtype=object), (n,)).tolist()
        canon = {f: normalize_family(f) for f in set(raw)}
        families = np.array([canon[f] for f in raw], dtype=object)
        fam = "per_row"
    skip = bool(skip_masked_tiles)
    bq, bk = _blocks(table, families, block_q, block_kv)
    out: dict[str, NDArray[np.generic]] = {
        name: np.empty(n, dtype=np.int64 if name in _INT_OUTPUTS else np.float64) for name in _OUTPUTS
    }
    out["work_bound"] = np.empty(n, dtype=object)
    # Row chunks keep every temporary cache-sized: on 1M rows this is ~2× faster than whole columns,
    # which spend much of their time faulting in fresh pages for each temporary.
    for start in range(0, n, CHUNK_ROWS):
        rows = slice(start, min(start + CHUNK_ROWS, n))
        chunk = _chunk(table.rows(rows), bq[rows], bk[rows], conv, skip, tiled_bwd_model, families[rows], num_sms)
        for name, arr in chunk.items():
            out[name][rows] = arr
    return WorkEstimate(
        **out,  # type: ignore[arg-type]
        block_q=bq,
        block_kv=bk,
        bwd_convention=conv.value,
        skip_masked_tiles=bool(skip_masked_tiles),
        tiled_bwd_model=tiled_bwd_model,
        family=fam,
        families=families,
    )
