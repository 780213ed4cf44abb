"""AttentionConfigs <-> ConfigTable columns: a block's columns built directly, a row's config
built back from them, and the table assembled from per-block pieces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from sdpa_analyzer.perf_models.config import AttentionConfig, Direction, Mask, VarlenInfo
from sdpa_analyzer.perf_models.dtypes import element_size, matrix_compute_spec
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.masks import mask_code
from sdpa_analyzer.perf_models.objects import filled
from sdpa_analyzer.perf_models.table import SHAPE_COLUMNS, ConfigTable, column_dtype, config_columns, mask_window

TABLE_FIELDS = tuple(f.name for f in fields(ConfigTable))


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """What config(i) needs besides the table columns."""

    dtypes: dict[str, str | None]
    direction: Direction
    dropout: float
    mask_unknown: bool = False  # the group's (inferred) signature has no mask flag: AttentionConfig.mask_unknown


def table_columns(
    cols: dict[str, NDArray[np.int64]], gplan: GroupPlan, masks: list[Mask | None], case: NDArray[np.int64]
) -> dict[str, NDArray[Any]]:
    """ConfigTable columns of a block (what from_configs would give for its configs)."""
    m = len(case)
    dtypes = gplan.dtypes
    dq = dtypes["q"]
    assert dq is not None
    dk = dtypes["k"] or dq
    sizes = [element_size(d) for d in (dq, dk, dtypes["v"] or dq, dtypes["o"] or dq, dk)]
    out: dict[str, Any] = {name: np.asarray(cols[name], dtype=np.int64) for name in SHAPE_COLUMNS}
    for name, size in zip(("elem_q", "elem_k", "elem_v", "elem_o", "elem_kv_cache"), sizes, strict=True):
        out[name] = np.full(m, size, dtype=np.float64)
    out["is_bwd"] = np.full(m, gplan.direction is Direction.BWD)
    known = [mk or Mask() for mk in masks]  # cases that do not occur get a placeholder
    out["mask_code"] = np.array([mask_code(mk) for mk in known], dtype=np.int8)[case]
    windows = np.array([mask_window(mk) for mk in known], dtype=np.int64)
    out["window_left"], out["window_right"] = windows[case, 0], windows[case, 1]
    for name in ("num_seqs", "total_q", "total_kv", "max_q", "max_kv"):
        out[name] = np.asarray(cols[name], dtype=np.int64) if name in cols else np.zeros(m, dtype=np.int64)
    for name in ("sum_ctx", "num_requests", "sum_query_tokens", "sum_qq", "sum_qk"):
        out[name] = np.zeros(m, dtype=np.int64)
    out["compute_spec"] = filled(m, _compute_spec(dq))
    out["compute_spec_pv"] = np.full(m, None, dtype=object)
    out["window_unknown"] = np.zeros(m, dtype=bool)
    out["shared_kv"] = np.zeros(m, dtype=bool)  # MLA latent caches are paged rows, built one by one
    out["mask_unknown"] = np.full(m, gplan.mask_unknown)
    out["step_split"] = np.zeros(m, dtype=bool)  # serving steps are paged rows, built one by one
    out["seq_lower_bound"] = np.zeros(m, dtype=bool)  # rows modeled from kernel hints are built one by one
    return out


def _compute_spec(dtype_q: str) -> str | None:
    """ConfigTable.from_configs' compute_spec; None for a q dtype GEMMs do not run on (it would raise)."""
    try:
        return matrix_compute_spec(dtype_q)
    except ConfigError:
        return None


# --- configs <-> columns -------------------------------------------------------------------------------


def config_from_columns(row: Mapping[str, Any], gplan: GroupPlan, mask: Mask) -> AttentionConfig:
    varlen = None
    if row["num_seqs"] > 0:
        varlen = VarlenInfo(
            total_q=int(row["total_q"]),
            total_kv=int(row["total_kv"]),
            num_seqs=int(row["num_seqs"]),
            max_seqlen_q=int(row["max_q"]),
            max_seqlen_kv=int(row["max_kv"]),
        )
    dtypes = gplan.dtypes
    return AttentionConfig(
        batch=int(row["batch"]),
        heads_q=int(row["heads_q"]),
        heads_kv=int(row["heads_kv"]),
        seq_q=int(row["seq_q"]),
        seq_kv=int(row["seq_kv"]),
        head_dim_qk=int(row["head_dim_qk"]),
        head_dim_v=int(row["head_dim_v"]),
        dtype_q=dtypes["q"],  # type: ignore[arg-type]
        dtype_k=dtypes.get("k"),
        dtype_v=dtypes.get("v"),
        dtype_o=dtypes.get("o"),
        direction=gplan.direction,
        mask=mask,
        dropout_p=gplan.dropout,
        varlen=varlen,
        mask_unknown=gplan.mask_unknown,
    )


def config_from_table(table: ConfigTable, pos: int, gplan: GroupPlan, mask: Mask) -> AttentionConfig:
    return config_from_columns({name: getattr(table, name)[pos] for name in TABLE_FIELDS}, gplan, mask)


def columns_of_configs(configs: list[AttentionConfig]) -> dict[str, NDArray[Any]]:
    """ConfigTable.from_configs' columns (compute_spec None where from_configs would raise)."""
    return config_columns(configs, compute_spec=_compute_spec)


def outside_int64(cfg: AttentionConfig) -> str | None:
    """Why a config cannot be a ConfigTable row (an int64 overflow), or None."""
    values = {name: getattr(cfg, name) for name in SHAPE_COLUMNS}
    for part in (cfg.varlen, cfg.paged):
        if part is not None:
            values.update((f.name, getattr(part, f.name)) for f in fields(part) if f.name != "context_lens")
    for name, value in values.items():
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            return f"{name}={value} does not fit a 64-bit integer: the row's shapes are not plausible"
    return None


def assemble(pieces: list[tuple[NDArray[np.intp], dict[str, NDArray[Any]]]]) -> ConfigTable:
    """One ConfigTable from per-group column pieces (disjoint row sets), rows in ascending row order."""
    rows = np.concatenate([r for r, _ in pieces]) if pieces else np.zeros(0, dtype=np.intp)
    at = np.empty(len(rows), dtype=np.intp)  # the table position of each piece row
    at[np.argsort(rows, kind="stable")] = np.arange(len(rows))
    cols = {name: np.empty(len(rows), dtype=column_dtype(name)) for name in TABLE_FIELDS}
    start = 0
    for piece_rows, piece in pieces:
        where = at[start : start + len(piece_rows)]
        for name in TABLE_FIELDS:
            cols[name][where] = piece[name]
        start += len(piece_rows)
    return ConfigTable.from_arrays(**cols)
