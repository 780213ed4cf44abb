"""estimate_work over mixed tables: row independence, chunking, block defaults and settings."""

from __future__ import annotations

import numpy as np
import pytest

import sdpa_analyzer.perf_models.estimate as estimate_mod
from sdpa_analyzer.perf_models.config import (
    CAUSAL_BOTTOM_RIGHT,
    CAUSAL_TOP_LEFT,
    NO_MASK,
    AttentionConfig,
    Mask,
    MaskKind,
    PagedInfo,
    VarlenInfo,
)
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.estimate import WorkEstimate, estimate_work
from sdpa_analyzer.perf_models.table import ConfigTable

ARRAY_FIELDS = ("kept_pairs", "kept_pairs_upper", "tile_visits", "executed_pairs", "flops_useful",
                "flops_executed", "flops_upper", "bytes_compulsory", "bytes_tiled", "block_q", "block_kv")


def mixed_configs() -> list[AttentionConfig]:
    return [
        AttentionConfig(2, 16, 4, 512, 2048, 128, 128, mask=CAUSAL_TOP_LEFT, direction="bwd"),
        AttentionConfig(1, 8, 8, 1000, 1000, 64, 64, mask=NO_MASK),
        AttentionConfig(1, 8, 1, 300, 700, 192, 128, mask=Mask(MaskKind.SLIDING_WINDOW, window_left=64,
                                                               window_right=0)),
        AttentionConfig(1, 4, 4, 600, 600, 64, 64, mask=CAUSAL_BOTTOM_RIGHT, direction="bwd",
                        varlen=VarlenInfo(1000, 1000, 3, 600, 600)),
        AttentionConfig(4, 32, 8, 1, 400, 128, 128, paged=PagedInfo(4, 1000), dtype_kv_cache="fp8"),
    ]


def as_rows(w: WorkEstimate) -> list[tuple[float, ...]]:
    return [tuple(float(getattr(w, f)[i]) for f in ARRAY_FIELDS) for i in range(len(w))]


def test_rows_are_independent_of_their_neighbours() -> None:
    cfgs = mixed_configs()
    together = as_rows(estimate_work(ConfigTable.from_configs(cfgs)))
    alone = [as_rows(estimate_work(ConfigTable.from_configs([c])))[0] for c in cfgs]
    assert together == alone


def test_chunking_does_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    cfgs = mixed_configs() * 7  # 35 rows
    whole = as_rows(estimate_work(ConfigTable.from_configs(cfgs)))
    monkeypatch.setattr(estimate_mod, "CHUNK_ROWS", 4)  # chunk edges fall inside varlen/paged runs
    chunked = as_rows(estimate_work(ConfigTable.from_configs(cfgs)))
    assert chunked == whole


def test_hand_values_in_a_mixed_table() -> None:
    w = estimate_work(ConfigTable.from_configs(mixed_configs()))
    # row 0: TL 512×2048, B=2: 2·131,328 pairs per head; bwd FLOPs 2·16·262,656·640 = 5,379,194,880
    assert w.kept_pairs[0] == 262_656 and w.flops_useful[0] == 5_379_194_880
    # row 1: dense 1000²
    assert w.kept_pairs[1] == 1_000_000 == w.executed_pairs[1]
    # row 2: window wl=64, wr=0, Nq=300, Nkv=700 (s=400): every row sees 65 keys → 19,500
    assert w.kept_pairs[2] == 300 * 65
    # row 3: varlen causal lower/upper (see test_models_flops)
    assert (w.kept_pairs[3], w.kept_pairs_upper[3]) == (220_500, 260_500)
    # row 4: paged decode: Σctx pairs, no tiles
    assert (w.kept_pairs[4], w.tile_visits[4], w.executed_pairs[4]) == (1000, 0, 1000)


def test_block_defaults_and_overrides() -> None:
    t = ConfigTable.from_configs(mixed_configs())
    w = estimate_work(t)
    # fa2 defaults: bwd d=128 → 64×128; fwd d=64 → 128×128; fwd d=192 → 128×64; bwd d=64 → 128×128
    assert w.block_q[:4].tolist() == [64, 128, 128, 128] and w.block_kv[:4].tolist() == [128, 128, 64, 128]
    assert w.family == "fa2"
    fa3 = estimate_work(t, family="fa3")
    assert (fa3.block_q[0], fa3.block_kv[0], fa3.family) == (64, 128, "fa3")  # bwd, causal, d=128
    fixed = estimate_work(t, block_q=32, block_kv=np.arange(1, 6) * 16)
    assert fixed.block_q.tolist() == [32] * 5 and fixed.block_kv.tolist() == [16, 32, 48, 64, 80]
    with pytest.raises(ConfigError, match="block_kv"):
        estimate_work(t, block_kv=0)
    with pytest.raises(ConfigError, match="family"):
        estimate_work(t, family="nope")


def test_settings_are_reported() -> None:
    w = estimate_work(ConfigTable.from_configs(mixed_configs()[:1]), bwd_convention="two_phase",
                      skip_masked_tiles=False, tiled_bwd_model="single_pass")
    assert (w.bwd_convention, w.skip_masked_tiles, w.tiled_bwd_model) == ("two_phase", False, "single_pass")
    assert "MI300" in w.tiled_note and "L2" in w.tiled_note
    assert len(w) == 1


def test_random_rows_bracket_and_scale() -> None:
    """Invariants on many random rows: useful ≤ executed ≤ dense; skipping tiles never adds traffic."""
    rng = np.random.default_rng(5)
    n = 20_000
    code = rng.integers(0, 4, n)
    win = code == 3
    t = ConfigTable.from_arrays(
        batch=rng.integers(1, 4, n), heads_q=8, heads_kv=rng.choice([1, 2, 8], n),
        seq_q=rng.integers(1, 5000, n), seq_kv=rng.integers(1, 5000, n), head_dim_qk=128, head_dim_v=128,
        is_bwd=rng.random(n) < 0.5, mask_code=code,
        window_left=np.where(win, rng.integers(-1, 500, n), -1),
        window_right=np.where(win, rng.integers(-1, 50, n), -1),
    )
    w = estimate_work(t)
    dense = t.batch * t.seq_q * t.seq_kv
    assert (w.kept_pairs <= w.executed_pairs).all() and (w.executed_pairs <= dense).all()
    assert (w.kept_pairs_upper == w.kept_pairs).all()
    assert (w.flops_executed >= w.flops_useful).all()
    assert (w.bytes_compulsory > 0).all() and (w.bytes_tiled > 0).all()
    no_skip = estimate_work(t, skip_masked_tiles=False)
    assert (no_skip.bytes_tiled >= w.bytes_tiled).all()
    assert (no_skip.executed_pairs == dense).all()
