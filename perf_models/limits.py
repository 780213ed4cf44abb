"""Size limits of an attention config: the largest work the models still count exactly.

Element and byte counts are float64 (exact for integers up to 2^53) and tile and pair counts int64 (up to
2^63 - 1). A config beyond that would not fail: int64 products wrap (a batch of 2^40 gave 0 FLOPs and a
339,615,546,103 % efficiency) and float64 rounds. No real call comes near (2^53 bf16 elements are 16 PiB;
2^63 FLOPs take an H100 three months), so such a config is refused instead:

* every tensor (Q, K, V, O, the K/V cache) holds at most MAX_ELEMENTS elements;
* the dense pair count per query head (batch · Nq · Nkv, or its varlen/paged bound) is at most MAX_ELEMENTS;
* the dense FLOPs under the costliest backward convention, 2 · Hq · pairs · (4·d_qk + 3·d_v), are at most
  MAX_WORK.

The limits are checked where the counting happens, on a ConfigTable (every config is modeled as one):
`estimate_work` refuses a table with such a row (`check_table`: a one-line ConfigError naming the quantity and
the row), and a caller that wants the other rows scored excludes them first (`oversized` says why for each row;
server.scoring does this, so one absurd CSV row is reported unmodeled instead of failing its category). The
products are compared in float64: near the limits they only need comparing, not counting. (AttentionConfig
itself does not refuse them, so a parsed config and the bulk parser's table row of it always agree.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.errors import ConfigError

MAX_ELEMENTS = 2**53
MAX_WORK = 2**63 - 1
_MAX_DIMS_FACTOR = (4, 3)  # Σ GEMM inner dims per pair of the two_phase backward: 4·d_qk + 3·d_v (the largest)


def _checks(
    b: Any, hq: Any, hkv: Any, nq: Any, nkv: Any, dqk: Any, dv: Any, tokens_q: Any, tokens_kv: Any, pairs: Any
) -> list[tuple[str, Any, Any]]:
    """(what, value, limit) of every bounded quantity; works on Python ints and on float64 arrays alike."""
    flops = 2 * hq * pairs * (_MAX_DIMS_FACTOR[0] * dqk + _MAX_DIMS_FACTOR[1] * dv)
    return [
        ("q elements (tokens·heads_q·head_dim_qk)", tokens_q * hq * dqk, MAX_ELEMENTS),
        ("o elements (tokens·heads_q·head_dim_v)", tokens_q * hq * dv, MAX_ELEMENTS),
        ("k elements (tokens·heads_kv·head_dim_qk)", tokens_kv * hkv * dqk, MAX_ELEMENTS),
        ("v elements (tokens·heads_kv·head_dim_v)", tokens_kv * hkv * dv, MAX_ELEMENTS),
        ("pairs per query head (batch·seq_q·seq_kv)", pairs, MAX_ELEMENTS),
        ("dense FLOPs (2·heads_q·pairs·(4·head_dim_qk+3·head_dim_v))", flops, MAX_WORK),
    ]


def _table_checks(table: Any) -> list[tuple[str, NDArray[np.float64], int]]:
    f = {name: np.asarray(getattr(table, name), dtype=np.float64) for name in (
        "batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v",
        "total_q", "total_kv", "max_kv", "sum_ctx", "num_requests", "sum_query_tokens",
    )}  # fmt: skip
    varlen = np.asarray(table.num_seqs) > 0
    paged = np.asarray(table.sum_ctx) > 0
    queries = np.where(f["sum_query_tokens"] > 0, f["sum_query_tokens"], f["num_requests"])
    tokens_q = np.where(paged, queries, np.where(varlen, f["total_q"], f["batch"] * f["seq_q"]))
    tokens_kv = np.where(paged, f["sum_ctx"], np.where(varlen, f["total_kv"], f["batch"] * f["seq_kv"]))
    pairs = np.where(
        paged,
        queries * f["sum_ctx"],
        np.where(varlen, f["total_q"] * f["max_kv"], f["batch"] * f["seq_q"] * f["seq_kv"]),
    )
    return _checks(
        f["batch"], f["heads_q"], f["heads_kv"], f["seq_q"], f["seq_kv"], f["head_dim_qk"], f["head_dim_v"],
        tokens_q, tokens_kv, pairs,
    )  # fmt: skip


def oversized(table: Any) -> NDArray[np.object_]:
    """Per row of a ConfigTable: why it is over the limits (a one-line reason), or None."""
    reasons = np.full(len(table), None, dtype=object)
    for what, value, limit in reversed(_table_checks(table)):  # the first check over its limit is reported
        over = value > float(limit)
        reasons[over] = [f"{what} is {v:.3g}, over {_power(limit)}: not a plausible shape" for v in value[over]]
    return reasons


def check_table(table: Any) -> None:
    """Raise ConfigError naming the first row of a ConfigTable over the limits (for bulk callers that did not
    exclude such rows themselves: no row is ever counted wrong)."""
    for what, value, limit in _table_checks(table):
        over = np.flatnonzero(value > float(limit))
        if len(over):
            row = int(over[0])
            raise ConfigError(f"{what}[row {row}]", float(value[row]), f"at most {_power(limit)}")


def _power(limit: int) -> str:
    return "2^53" if limit == MAX_ELEMENTS else "2^63-1"
