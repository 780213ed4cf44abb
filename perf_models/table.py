"""ConfigTable: one row per attention config, as numpy columns, so every model runs vectorized.

Build it from AttentionConfig objects (`from_configs`) or directly from arrays (`from_arrays`, for
benchmarks and bulk callers). Row conventions the models rely on:

* varlen rows (`num_seqs > 0`) take their token counts from `total_q/total_kv` (THD tensors) and their
  pair counts from per-sequence bounds; `batch`, `seq_q`, `seq_kv` are not used for them;
* paged rows (`sum_ctx > 0`) are decode-style forward calls: `sum_ctx` context tokens over
  `num_requests` requests, `sum_query_tokens` new query tokens (0 = one per request); `sum_qq` / `sum_qk`
  (Σ q², Σ q·k over the requests; 0 = unknown) make their pair count exact;
* `compute_spec` is the Q·Kᵀ GEMM's spec, `compute_spec_pv` the P·V one where it differs (None: the same);
* `window_unknown` rows are sliding-window layers modeled with a causal mask (window size not known): their
  pairs and bytes are upper bounds;
* `window_left/right` are −1 unless `mask_code == MASK_WINDOW`;
* element sizes are bytes per element of each tensor's own dtype (dO has O's dtype, dQ Q's, and so on);
  `elem_kv_cache` is the cache's bytes per element *as stored*: a layout with scales or unquantized parts
  (AttentionConfig.kv_cache_token_bytes, e.g. FlashMLA's 656-byte fp8 MLA token) gives a fractional size, so every
  K/V read is the layout's bytes per token;
* a paged decode step with a left sliding window w and known per-request context lengths k_b
  (PagedInfo.context_lens) has its window folded into the contexts: `sum_ctx` = Σ_b min(k_b, w + 1) and a
  bottom-right causal mask. A decode query under the window attends — and the kernel reads — exactly the last
  min(k_b, w + 1) keys, as a causal decode over that many keys does, so pairs and bytes are exact (with the sums
  alone they are bounds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.config import CAUSAL_BOTTOM_RIGHT, AttentionConfig, Direction, Mask, MaskKind
from sdpa_analyzer.perf_models.dtypes import element_size, matrix_compute_spec
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.masks import MASK_CODES, MASK_WINDOW, mask_code
from sdpa_analyzer.perf_models.objects import filled

_INT_COLUMNS = (
    "batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v",
    "window_left", "window_right",
    "num_seqs", "total_q", "total_kv", "max_q", "max_kv",
    "sum_ctx", "num_requests", "sum_query_tokens", "sum_qq", "sum_qk",
)
_ELEM_COLUMNS = ("elem_q", "elem_k", "elem_v", "elem_o", "elem_kv_cache")
SHAPE_COLUMNS = ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v")


@dataclass(frozen=True, eq=False)
class ConfigTable:
    """Columns of attention configs (all arrays have the same length)."""

    batch: NDArray[np.int64]
    heads_q: NDArray[np.int64]
    heads_kv: NDArray[np.int64]
    seq_q: NDArray[np.int64]
    seq_kv: NDArray[np.int64]
    head_dim_qk: NDArray[np.int64]
    head_dim_v: NDArray[np.int64]
    elem_q: NDArray[np.float64]
    elem_k: NDArray[np.float64]
    elem_v: NDArray[np.float64]
    elem_o: NDArray[np.float64]
    elem_kv_cache: NDArray[np.float64]
    is_bwd: NDArray[np.bool_]
    mask_code: NDArray[np.int8]
    window_left: NDArray[np.int64]
    window_right: NDArray[np.int64]
    num_seqs: NDArray[np.int64]
    total_q: NDArray[np.int64]
    total_kv: NDArray[np.int64]
    max_q: NDArray[np.int64]
    max_kv: NDArray[np.int64]
    sum_ctx: NDArray[np.int64]
    num_requests: NDArray[np.int64]
    sum_query_tokens: NDArray[np.int64]
    sum_qq: NDArray[np.int64]  # paged: Σ q² over the requests (0 = unknown)
    sum_qk: NDArray[np.int64]  # paged: Σ q·k over the requests (0 = unknown)
    compute_spec: NDArray[np.object_]
    compute_spec_pv: NDArray[np.object_]  # the P·V GEMM's spec where it is not compute_spec (None: the same)
    window_unknown: NDArray[np.bool_]  # sliding window of unknown size, modeled causal: an upper bound
    shared_kv: NDArray[np.bool_]  # V read as a slice of K's cache (MLA latent): see AttentionConfig.shared_kv
    mask_unknown: NDArray[np.bool_]  # the call's mask flag is unknown, modeled without a mask: an upper bound
    step_split: NDArray[np.bool_]  # a step's sums over a call that ran part of the step: an upper bound
    seq_lower_bound: NDArray[np.bool_]  # the low end of a sequence-length range: a lower bound

    def __len__(self) -> int:
        return int(self.batch.shape[0])

    # cached: the models ask for these many times (cached_property works on a frozen dataclass)
    @cached_property
    def is_varlen(self) -> NDArray[np.bool_]:
        return self.num_seqs > 0

    @cached_property
    def is_paged(self) -> NDArray[np.bool_]:
        return self.sum_ctx > 0

    @cached_property
    def varlen_rows(self) -> NDArray[np.intp]:
        return np.flatnonzero(self.is_varlen)

    @cached_property
    def paged_rows(self) -> NDArray[np.intp]:
        return np.flatnonzero(self.is_paged)

    def rows(self, rows: slice) -> ConfigTable:
        """A contiguous range of rows (views, no copy)."""
        return ConfigTable(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def take(self, idx: ArrayLike) -> ConfigTable:
        """The rows at `idx` (indices or a boolean mask), as a new table."""
        return ConfigTable(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    @classmethod
    def from_arrays(cls, *, dtype: str = "bf16", **columns: ArrayLike) -> ConfigTable:
        """Build from columns; scalars broadcast. The shape columns are required.

        Missing optional columns default to: element sizes and compute_spec from `dtype`, forward,
        no mask, windows −1, not varlen, not paged. Raises ConfigError naming the first bad row.
        """
        unknown = set(columns) - {f.name for f in fields(cls)}
        if unknown:
            allowed = ", ".join(f.name for f in fields(cls))
            raise ConfigError("column", sorted(unknown)[0], f"one of {allowed}")
        missing = [c for c in SHAPE_COLUMNS if c not in columns]
        if missing:
            raise ConfigError("column", missing[0], "present (shape columns are required)")
        n = max(np.size(v) for v in columns.values())
        out: dict[str, Any] = {}
        for name in _INT_COLUMNS:
            default = -1 if name.startswith("window") else 0
            out[name] = _column(columns.get(name, default), n, np.int64, name)
        esize = element_size(dtype)
        for name in _ELEM_COLUMNS:
            out[name] = _column(columns.get(name, esize), n, np.float64, name)
        out["is_bwd"] = _column(columns.get("is_bwd", False), n, np.bool_, "is_bwd")
        out["mask_code"] = _column(columns.get("mask_code", 0), n, np.int8, "mask_code")
        out["shared_kv"] = _column(columns.get("shared_kv", False), n, np.bool_, "shared_kv")
        out["mask_unknown"] = _column(columns.get("mask_unknown", False), n, np.bool_, "mask_unknown")
        out["step_split"] = _column(columns.get("step_split", False), n, np.bool_, "step_split")
        out["seq_lower_bound"] = _column(columns.get("seq_lower_bound", False), n, np.bool_, "seq_lower_bound")
        out["window_unknown"] = _column(columns.get("window_unknown", False), n, np.bool_, "window_unknown")
        spec = columns.get("compute_spec", matrix_compute_spec(dtype))
        out["compute_spec"] = _column(spec, n, np.object_, "compute_spec")
        out["compute_spec_pv"] = _column(columns.get("compute_spec_pv", None), n, np.object_, "compute_spec_pv")
        table = cls(**out)
        table._validate()
        return table

    @classmethod
    def from_configs(cls, configs: Sequence[AttentionConfig]) -> ConfigTable:
        """One row per AttentionConfig (already validated by its constructor)."""
        table = cls(**config_columns(configs))
        table._validate()
        return table

    def _validate(self) -> None:
        for name in ("heads_q", "heads_kv", "head_dim_qk", "head_dim_v"):
            _require(self, name, getattr(self, name) > 0, "a positive integer")
        plain = ~self.is_varlen & ~self.is_paged
        for name in ("batch", "seq_q", "seq_kv"):
            _require(self, name, ~plain | (getattr(self, name) > 0), "a positive integer")
        _require(self, "heads_kv", self.heads_q % self.heads_kv == 0, "a divisor of heads_q")
        for name in _ELEM_COLUMNS:
            _require(self, name, getattr(self, name) > 0, "a positive element size in bytes")
        _require(self, "mask_code", np.isin(self.mask_code, MASK_CODES), f"one of {MASK_CODES}")
        win = self.mask_code == MASK_WINDOW
        for name in ("window_left", "window_right"):
            col = getattr(self, name)
            _require(self, name, np.where(win, col >= -1, col == -1), ">= -1 for windows, -1 otherwise")
        _require(self, "num_seqs", self.num_seqs >= 0, ">= 0 (0 = not varlen)")
        v = self.is_varlen
        for name in ("total_q", "total_kv", "max_q", "max_kv"):
            _require(self, name, ~v | (getattr(self, name) > 0), "a positive integer on varlen rows")
        _require(self, "max_q", ~v | (self.max_q <= self.total_q), "<= total_q")
        _require(self, "max_kv", ~v | (self.max_kv <= self.total_kv), "<= total_kv")
        _require(self, "sum_ctx", self.sum_ctx >= 0, ">= 0 (0 = not paged)")
        p = self.is_paged
        _require(self, "num_requests", ~p | (self.num_requests > 0), "a positive integer on paged rows")
        _require(self, "num_requests", ~p | (self.num_requests <= self.sum_ctx), "<= sum_ctx (1+ token each)")
        _require(self, "sum_query_tokens", self.sum_query_tokens >= 0, ">= 0 (0 = one per request)")
        exact = p & (self.sum_qk > 0)
        _require(self, "sum_qq", ~exact | (self.sum_qq >= np.maximum(self.sum_query_tokens, 1)), ">= Σq on exact rows")
        _require(self, "sum_qk", ~exact | (self.sum_qk >= self.sum_qq), ">= sum_qq (k >= q per request)")
        _require(self, "is_bwd", ~(p & self.is_bwd), "False on paged rows (paged attention is forward-only)")
        _require(self, "num_seqs", ~(p & v), "0 on paged rows (a row is varlen or paged, not both)")


def config_columns(
    configs: Sequence[AttentionConfig], compute_spec: Callable[[str], str | None] = matrix_compute_spec
) -> dict[str, NDArray[Any]]:
    """The ConfigTable columns of `configs`, one row each, not validated; `compute_spec` maps dtype_q to the
    compute_spec column (ops.batch passes one that gives None where matrix_compute_spec raises)."""
    cols: dict[str, list[Any]] = {f.name: [] for f in fields(ConfigTable)}
    for cfg in configs:
        for name in SHAPE_COLUMNS:
            cols[name].append(getattr(cfg, name))
        cols["elem_q"].append(element_size(cfg.dtype_q))
        cols["elem_k"].append(element_size(cfg.dtype_k))  # type: ignore[arg-type]
        cols["elem_v"].append(element_size(cfg.dtype_v))  # type: ignore[arg-type]
        cols["elem_o"].append(element_size(cfg.dtype_o))  # type: ignore[arg-type]
        cols["elem_kv_cache"].append(_cache_element_size(cfg))
        cols["is_bwd"].append(cfg.direction is Direction.BWD)
        mask = CAUSAL_BOTTOM_RIGHT if _folded_window(cfg) else cfg.mask
        cols["mask_code"].append(mask_code(mask))
        left, right = mask_window(mask)
        cols["window_left"].append(left)
        cols["window_right"].append(right)
        v = cfg.varlen
        cols["num_seqs"].append(v.num_seqs if v else 0)
        cols["total_q"].append(v.total_q if v else 0)
        cols["total_kv"].append(v.total_kv if v else 0)
        cols["max_q"].append(v.max_seqlen_q if v else 0)
        cols["max_kv"].append(v.max_seqlen_kv if v else 0)
        p = cfg.paged
        cols["sum_ctx"].append(_attended_context(cfg) if p else 0)
        cols["num_requests"].append(p.num_requests if p else 0)
        cols["sum_query_tokens"].append((p.sum_query_tokens or 0) if p else 0)
        cols["sum_qq"].append((p.sum_query_sq or 0) if p else 0)
        cols["sum_qk"].append((p.sum_query_key or 0) if p else 0)
        cols["compute_spec"].append(cfg.compute_spec or compute_spec(cfg.dtype_q))
        cols["compute_spec_pv"].append(cfg.compute_spec_pv)
        cols["window_unknown"].append(cfg.window_unknown)
        cols["shared_kv"].append(cfg.shared_kv)
        cols["mask_unknown"].append(cfg.mask_unknown)
        cols["step_split"].append(cfg.step_split)
        cols["seq_lower_bound"].append(cfg.seq_lower_bound)
    dtypes = {name: column_dtype(name) for name in cols}
    # _column: an int beyond int64 is a ConfigError naming the row, not an OverflowError
    return {k: _column(v, len(configs), dtypes[k], k) if v else np.zeros(0, dtype=dtypes[k]) for k, v in cols.items()}


def _cache_element_size(cfg: AttentionConfig) -> float:
    """Bytes per cached element as stored: the cache dtype's size, or the layout's token bytes spread over the
    elements a token holds (d_qk for an MLA latent cache, d_qk + d_v otherwise)."""
    if cfg.kv_cache_token_bytes is None:
        return element_size(cfg.kv_dtype)
    per_token = cfg.head_dim_qk if cfg.shared_kv else cfg.head_dim_qk + cfg.head_dim_v
    return cfg.kv_cache_token_bytes / per_token


def _folded_window(cfg: AttentionConfig) -> bool:
    """A paged decode step with a left window and known per-request contexts: the window is folded into the
    contexts (see the module docstring)."""
    p = cfg.paged
    if p is None or p.context_lens is None or cfg.mask.kind is not MaskKind.SLIDING_WINDOW:
        return False
    return cfg.mask.window_left >= 0 and p.sum_query_tokens in (None, p.num_requests)


def _attended_context(cfg: AttentionConfig) -> int:
    """sum_ctx of a paged row: Σ context tokens, or Σ min(ctx, window + 1) when the window is folded in."""
    p = cfg.paged
    assert p is not None and (p.context_lens is not None or not _folded_window(cfg))
    if not _folded_window(cfg):
        return p.sum_context_tokens
    return sum(min(k, cfg.mask.window_left + 1) for k in p.context_lens or ())


def mask_window(mask: Mask) -> tuple[int, int]:
    """The window_left / window_right columns of a mask: -1, -1 unless it is a sliding window."""
    if mask.kind is MaskKind.SLIDING_WINDOW:
        return mask.window_left, mask.window_right
    return -1, -1


def column_dtype(name: str) -> type:
    if name in _ELEM_COLUMNS:
        return np.float64
    if name in ("is_bwd", "shared_kv", "window_unknown", "mask_unknown", "step_split", "seq_lower_bound"):
        return np.bool_
    if name == "mask_code":
        return np.int8
    if name in ("compute_spec", "compute_spec_pv"):
        return np.object_
    return np.int64


def _column(value: ArrayLike, n: int, dtype: type, name: str) -> NDArray[Any]:
    try:
        arr = np.asarray(value, dtype=dtype)
    except OverflowError:  # a Python int beyond int64: no real shape; one line naming the row, not a traceback
        values = np.atleast_1d(np.asarray(value, dtype=object))
        row = next(i for i, v in enumerate(values.tolist()) if isinstance(v, int) and not -(2**63) <= v < 2**63)
        raise ConfigError(f"{name}[row {row}]", values[row], "an integer below 2^63") from None
    if arr.ndim == 0:
        return filled(n, arr[()]) if arr.dtype == np.object_ else np.full(n, arr[()], dtype=dtype)
    if arr.shape != (n,):
        raise ConfigError(name, f"shape {arr.shape}", f"a scalar or a 1-D array of length {n}")
    return arr


def _require(table: ConfigTable, name: str, ok: NDArray[np.bool_], allowed: str) -> None:
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise ConfigError(f"{name}[row {row}]", getattr(table, name)[row].item(), allowed)
