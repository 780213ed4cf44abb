"""Default tile sizes (Br × Bc = query rows × key columns) by kernel family, head dim and direction.

Values are the launch defaults listed in docs/perf-model.md (tile sizes) (source files and lines there).
A head dim selects the first bucket (64, 96, 128, 192, 256) that holds max(d_qk, d_v); larger dims use
the 256 bucket. Families:

* `fa2` — flash-attn 2 CUDA (sm80/sm90, no dropout, ≥ 144 KB smem variant for the backward).
  Also the default when the family is unknown (`None`), being the most common upstream kernel.
* `fa3` — flash-attn 3 Hopper; the forward has causal/local and fp8 variants, the backward a
  causal/local variant at d = 128.
* `ck` (alias `aiter`) — CK-tile FMHA. Forward: codegen tile table (bm0 × bn0). Backward: xformers'
  ck_tiled `FmhaBwdBlockTile` (64 × 128 for d ≤ 128; 128 × 128 at d = 32; larger dims not verified).
  The seed perf-model PR (docs/perf-model.md) assumed 64 × 64 at d = 128 on MI300X; pass block sizes to
  reproduce it.
* `triton` — Triton tutorial `06-fused-attention.py`. Forward autotunes BM ∈ {64, 128},
  BN ∈ {32, 64}; 128 × 64 is taken as typical (not verified per shape). Backward uses different tiles
  per phase (dK/dV: BLOCK_M1 = 32, BLOCK_N1 = 128; dQ: BLOCK_M2 = 128, BLOCK_N2 = 32); the two-pass
  byte model needs the KV block of the dK/dV phase and the Q block of the dQ phase, so 128 × 128.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from sdpa_analyzer.perf_models.errors import ConfigError

HEAD_DIM_BUCKETS = (64, 96, 128, 192, 256)
Tile = tuple[int, int]
_Row = tuple[Tile, Tile, Tile, Tile, Tile]  # one tile per head-dim bucket

_FA2_FWD: _Row = ((128, 128), (128, 64), (128, 64), (128, 64), (128, 64))
_FA2_BWD: _Row = ((128, 128), (64, 128), (64, 128), (64, 64), (64, 64))
_FA3_FWD: _Row = ((192, 192), (192, 144), (128, 176), (128, 128), (128, 80))
_FA3_FWD_MASKED: _Row = ((192, 128), (192, 144), (128, 128), (128, 128), (128, 80))
_FA3_FWD_FP8: _Row = ((192, 160), (192, 128), (128, 224), (128, 160), (128, 128))
_FA3_BWD: _Row = ((128, 128), (64, 128), (80, 128), (64, 96), (64, 80))
_FA3_BWD_MASKED: _Row = ((128, 128), (64, 128), (64, 128), (64, 96), (64, 80))
_FA3_FWD_D192_WIDE_V: Tile = (128, 112)  # FA3 fwd d_qk=192 with d_v > 128
_CK_FWD: _Row = ((128, 64), (128, 128), (128, 128), (128, 128), (128, 128))
_CK_BWD: _Row = ((64, 128), (64, 128), (64, 128), (64, 128), (64, 128))
_CK_BWD_D32: Tile = (128, 128)
_TRITON_FWD: _Row = ((128, 64),) * 5  # type: ignore[assignment]
_TRITON_BWD: _Row = ((128, 128),) * 5  # type: ignore[assignment]

_ALIASES = {"fa2": "fa2", "flash": "fa2", "fa3": "fa3", "ck": "ck", "aiter": "ck", "triton": "triton"}


def normalize_family(family: str | None) -> str:
    """Canonical family name; None means the generic default (fa2)."""
    if family is None:
        return "fa2"
    key = str(family).strip().lower()
    if key not in _ALIASES:
        raise ConfigError("family", family, f"one of {', '.join(sorted(_ALIASES))} or None")
    return _ALIASES[key]


def _pick(row: _Row, bucket: NDArray[np.intp]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    arr = np.asarray(row, dtype=np.int64)
    return arr[bucket, 0], arr[bucket, 1]


def default_blocks(
    family: str | None,
    head_dim_qk: ArrayLike,
    head_dim_v: ArrayLike,
    is_bwd: ArrayLike,
    masked: ArrayLike = False,
    fp8: ArrayLike = False,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(block_q, block_kv) per row. `masked`: causal or windowed; `fp8`: fp8 GEMMs (FA3 fwd only)."""
    fam = normalize_family(family)
    dqk, dv, bwd, msk, f8 = np.broadcast_arrays(
        np.asarray(head_dim_qk, dtype=np.int64), np.asarray(head_dim_v, dtype=np.int64),
        np.asarray(is_bwd, dtype=bool), np.asarray(masked, dtype=bool), np.asarray(fp8, dtype=bool),
    )
    hd = np.maximum(dqk, dv)
    last = len(HEAD_DIM_BUCKETS) - 1
    bucket = np.minimum(np.searchsorted(np.asarray(HEAD_DIM_BUCKETS), hd, side="left"), last)
    if fam == "fa2":
        fq, fk = _pick(_FA2_FWD, bucket)
        bq, bk = _pick(_FA2_BWD, bucket)
    elif fam == "fa3":
        fq, fk = _pick(_FA3_FWD, bucket)
        mq, mk = _pick(_FA3_FWD_MASKED, bucket)
        eq, ek = _pick(_FA3_FWD_FP8, bucket)
        fq, fk = np.where(msk, mq, fq), np.where(msk, mk, fk)
        wide_v = (bucket == 3) & (dv > 128) & ~f8
        fk = np.where(wide_v, _FA3_FWD_D192_WIDE_V[1], fk)
        fq, fk = np.where(f8, eq, fq), np.where(f8, ek, fk)
        bq, bk = _pick(_FA3_BWD, bucket)
        cq, ck = _pick(_FA3_BWD_MASKED, bucket)
        bq, bk = np.where(msk, cq, bq), np.where(msk, ck, bk)
    elif fam == "ck":
        fq, fk = _pick(_CK_FWD, bucket)
        bq, bk = _pick(_CK_BWD, bucket)
        d32 = hd <= 32
        bq, bk = np.where(d32, _CK_BWD_D32[0], bq), np.where(d32, _CK_BWD_D32[1], bk)
    else:
        fq, fk = _pick(_TRITON_FWD, bucket)
        bq, bk = _pick(_TRITON_BWD, bucket)
    return np.where(bwd, bq, fq).astype(np.int64), np.where(bwd, bk, fk).astype(np.int64)
