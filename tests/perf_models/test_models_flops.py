"""FLOPs: torch flop_counter formulas, backward conventions, the seed's numbers, GQA, MLA, varlen, paged."""

from __future__ import annotations

import numpy as np
import pytest

from sdpa_analyzer.perf_models.config import (
    CAUSAL_BOTTOM_RIGHT,
    CAUSAL_TOP_LEFT,
    AttentionConfig,
    BwdConvention,
    PagedInfo,
    VarlenInfo,
)
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.flops import bwd_gemm_dims, varlen_sequences
from sdpa_analyzer.perf_models.table import ConfigTable


def work(*cfgs: AttentionConfig, **kw: object):
    return estimate_work(ConfigTable.from_configs(list(cfgs)), **kw)  # type: ignore[arg-type]


# --- torch.utils.flop_counter, re-typed from torch 2.13 (flop_counter.py L285-310, L505-539) -----------
def _bmm_flop(b: int, m: int, k: int, n: int) -> int:
    return 2 * b * m * n * k  # bmm_flop: (b, m, k) @ (b, k, n)


def torch_sdpa_flop_count(b: int, h: int, s_q: int, s_k: int, d_q: int, d_v: int) -> int:
    return _bmm_flop(b * h, s_q, d_q, s_k) + _bmm_flop(b * h, s_q, s_k, d_v)


def torch_sdpa_backward_flop_count(b: int, h: int, s_q: int, s_k: int, d_q: int, d_v: int) -> int:
    total = _bmm_flop(b * h, s_q, d_q, s_k)  # step 1: recompute scores q @ kᵀ
    total += _bmm_flop(b * h, s_q, d_v, s_k)  # grad_scores = gradOut @ vᵀ
    total += _bmm_flop(b * h, s_k, s_q, d_v)  # grad_v = scoresᵀ @ gradOut
    total += _bmm_flop(b * h, s_q, s_k, d_q)  # grad_q = grad_scores @ k
    total += _bmm_flop(b * h, d_q, s_q, s_k)  # grad_k = qᵀ @ grad_scores
    return total


@pytest.mark.parametrize(("b", "h", "s_q", "s_k", "d"), [(2, 16, 1000, 1000, 64), (1, 8, 77, 513, 128)])
def test_no_mask_matches_torch_flop_counter(b: int, h: int, s_q: int, s_k: int, d: int) -> None:
    fwd = AttentionConfig(b, h, h, s_q, s_k, d, d)
    bwd = AttentionConfig(b, h, h, s_q, s_k, d, d, direction="bwd")
    w = work(fwd, bwd)
    assert w.flops_useful[0] == torch_sdpa_flop_count(b, h, s_q, s_k, d, d)
    assert w.flops_useful[1] == torch_sdpa_backward_flop_count(b, h, s_q, s_k, d, d)


def test_square_fwd_is_4bhn2d_and_bwd_is_2_5x() -> None:
    # 4·B·H·N²·d = 4·2·16·1000²·64 = 8,192,000,000; 5-GEMM backward 2.5× = 20,480,000,000.
    w = work(AttentionConfig(2, 16, 16, 1000, 1000, 64, 64),
             AttentionConfig(2, 16, 16, 1000, 1000, 64, 64, direction="bwd"))
    assert w.flops_useful.tolist() == [8_192_000_000, 20_480_000_000]


def test_seed_backward_flops() -> None:
    """seeds/002: B=1, H=32, N=1024, d=128, causal: 21.47 G (5 GEMMs) and 25.77 G (recompute_fwd).

    Those figures use P = N²/2 = 524,288 (the common approximation): 2·32·524,288·640 = 21,474,836,480 and
    2·32·524,288·768 = 25,769,803,776. We count the exact P = N(N+1)/2 = 524,800: 2·32·524,800·640 =
    21,495,808,000 and 2·32·524,800·768 = 25,794,969,600 (+1/N = 0.098 %).
    """
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, direction="bwd", mask=CAUSAL_BOTTOM_RIGHT)
    five = work(cfg)
    six = work(cfg, bwd_convention=BwdConvention.RECOMPUTE_FWD)
    seven = work(cfg, bwd_convention="two_phase")
    assert five.kept_pairs[0] == 524_800
    assert five.flops_useful[0] == 21_495_808_000
    assert six.flops_useful[0] == 25_794_969_600
    # 7 GEMMs: 2·32·524,800·(4·128 + 3·128) = 30,094,131,200 (3.5× the forward)
    assert seven.flops_useful[0] == 30_094_131_200
    # the seed's numbers come back exactly when P = N²/2 replaces the exact count
    approx = 1024 * 1024 // 2
    assert five.flops_useful[0] / 524_800 * approx == 21_474_836_480
    assert six.flops_useful[0] / 524_800 * approx == 25_769_803_776
    assert round(five.flops_useful[0] / 524_800 * approx / 1e9, 2) == 21.47
    assert round(six.flops_useful[0] / 524_800 * approx / 1e9, 2) == 25.77
    assert (five.bwd_convention, six.bwd_convention) == ("5gemm", "recompute_fwd")


def test_mla_bwd_over_fwd_is_2_6() -> None:
    # d_qk=192, d_v=128: fwd dims 320, 5-GEMM bwd dims 3·192 + 2·128 = 832; 832/320 = 2.6.
    fwd = AttentionConfig(2, 16, 16, 512, 512, 192, 128, mask=CAUSAL_BOTTOM_RIGHT)
    bwd = AttentionConfig(2, 16, 16, 512, 512, 192, 128, direction="bwd", mask=CAUSAL_BOTTOM_RIGHT)
    w = work(fwd, bwd)
    # P = 512·513/2 = 131,328; fwd = 2·2·16·131,328·320 = 2,689,597,440
    assert w.flops_useful[0] == 2_689_597_440
    assert w.flops_useful[1] / w.flops_useful[0] == pytest.approx(2.6, abs=1e-15)
    assert int(bwd_gemm_dims("5gemm", np.int64(192), np.int64(128))) == 832


def test_gqa_flops_use_query_heads() -> None:
    mha = AttentionConfig(1, 32, 32, 1024, 2048, 128, 128, mask=CAUSAL_TOP_LEFT)
    gqa = AttentionConfig(1, 32, 8, 1024, 2048, 128, 128, mask=CAUSAL_TOP_LEFT)
    mqa = AttentionConfig(1, 32, 1, 1024, 2048, 128, 128, mask=CAUSAL_TOP_LEFT)
    w = work(mha, gqa, mqa)
    # TL, Nq ≤ Nkv: P = 1024·1025/2 = 524,800; 2·32·524,800·256 = 8,598,323,200 for all three
    assert w.flops_useful.tolist() == [8_598_323_200] * 3


def test_executed_flops_tile_granular() -> None:
    # N=1024 causal with 128² tiles: 36 tiles × 16,384 pairs = 589,824 pairs (0.5625 of dense);
    # fwd 2·1·8·589,824·128 = 1,207,959,552 vs useful 2·8·524,800·128 = 1,074,790,400.
    cfg = AttentionConfig(1, 8, 8, 1024, 1024, 64, 64, mask=CAUSAL_BOTTOM_RIGHT)
    w = work(cfg, block_q=128, block_kv=128)
    assert (w.tile_visits[0], w.executed_pairs[0]) == (36, 589_824)
    assert w.flops_executed[0] == 1_207_959_552
    assert w.flops_useful[0] == 1_074_790_400
    # without tile skipping the kernel executes the dense grid
    dense = work(cfg, block_q=128, block_kv=128, skip_masked_tiles=False)
    assert (dense.tile_visits[0], dense.executed_pairs[0]) == (64, 1024 * 1024)


class TestVarlen:
    # T=1000 tokens, n=3 sequences, L=600 (self-attention).
    # causal f(L) = L(L+1)/2. lower: f(600) + 2·f(200) = 180,300 + 2·20,100 = 220,500.
    #                         upper: k = 1 full sequence, remainder 400: 180,300 + 80,200 = 260,500.
    # no mask f(L) = L²:  lower 360,000 + 2·40,000 = 440,000; upper 360,000 + 160,000 = 520,000.
    V = VarlenInfo(total_q=1000, total_kv=1000, num_seqs=3, max_seqlen_q=600, max_seqlen_kv=600)

    def cfg(self, mask=CAUSAL_BOTTOM_RIGHT, varlen: VarlenInfo | None = None) -> AttentionConfig:
        return AttentionConfig(1, 4, 4, 600, 600, 64, 64, mask=mask, varlen=varlen or self.V)

    def test_causal_bounds(self) -> None:
        w = work(self.cfg())
        assert (w.kept_pairs[0], w.kept_pairs_upper[0]) == (220_500, 260_500)
        # FLOPs: 2·Hq·P·(dqk+dv) = 2·4·P·128
        assert (w.flops_useful[0], w.flops_upper[0]) == (2 * 4 * 220_500 * 128, 2 * 4 * 260_500 * 128)

    def test_dense_bounds(self) -> None:
        from sdpa_analyzer.perf_models.config import NO_MASK

        w = work(self.cfg(mask=NO_MASK))
        assert (w.kept_pairs[0], w.kept_pairs_upper[0]) == (440_000, 520_000)

    def test_uneven_split(self) -> None:
        # T=1001: the other two share 401 as 201 + 200: 180,300 + 201·202/2 + 200·201/2 = 220,701;
        # upper: 180,300 + 401·402/2 = 260,901.
        v = VarlenInfo(total_q=1001, total_kv=1001, num_seqs=3, max_seqlen_q=600, max_seqlen_kv=600)
        w = work(self.cfg(varlen=v))
        assert (w.kept_pairs[0], w.kept_pairs_upper[0]) == (220_701, 260_901)

    def test_single_sequence_is_exact(self) -> None:
        v = VarlenInfo(total_q=600, total_kv=600, num_seqs=1, max_seqlen_q=600, max_seqlen_kv=600)
        w = work(self.cfg(varlen=v))
        assert (w.kept_pairs[0], w.kept_pairs_upper[0]) == (180_300, 180_300)

    def test_executed_tiles_per_sequence(self) -> None:
        # lower-bound sequences 600, 200, 200 with 128² tiles, causal:
        # 600: 5 q-blocks; full blocks i=0..3 visit i+1 key blocks (10), the ragged last one 5 → 15 tiles;
        #      pairs 128·128·(1+2+3+4) + 88·600 = 163,840 + 52,800 = 216,640.
        # 200: 2 q-blocks → 1 + 2 = 3 tiles; pairs 128·128 + 72·200 = 30,784.
        w = work(self.cfg(), block_q=128, block_kv=128)
        assert w.tile_visits[0] == 15 + 2 * 3
        assert w.executed_pairs[0] == 216_640 + 2 * 30_784

    def test_sequence_groups(self) -> None:
        one = np.array([1])
        low = varlen_sequences(one * 1001, one * 1001, one * 3, one * 600, one * 600, "lower")
        lengths = sorted((int(g.len_q[0]), int(g.len_kv[0])) for g in low for _ in range(int(g.count[0])))
        assert lengths == [(200, 200), (201, 201), (600, 600)]
        with pytest.raises(ConfigError, match="bound"):
            varlen_sequences(one, one, one, one, one, "middle")


class TestPaged:
    # 4 requests, contexts 100+200+300+400 = 1000 tokens, Hq=32, Hkv=8, d=128.
    def cfg(self, sum_query_tokens: int | None = None) -> AttentionConfig:
        p = PagedInfo(num_requests=4, sum_context_tokens=1000, context_lens=(100, 200, 300, 400),
                      sum_query_tokens=sum_query_tokens)
        return AttentionConfig(4, 32, 8, 1, 400, 128, 128, paged=p)

    def test_decode_flops(self) -> None:
        # 2·Σctx·Hq·(dqk+dv) = 2·1000·32·256 = 16,384,000
        w = work(self.cfg())
        assert w.flops_useful[0] == 16_384_000 == w.flops_upper[0] == w.flops_executed[0]

    def test_chunked_prefill_bounds(self) -> None:
        # 10 query tokens over 4 requests: 6 extra tokens each see >= 1 and <= 1000 − 3 keys.
        # lower 1000 + 6 = 1006 pairs; upper 1000 + 6·997 = 6982 pairs (per query head)
        w = work(self.cfg(sum_query_tokens=10))
        assert (w.kept_pairs[0], w.kept_pairs_upper[0]) == (1006, 6982)


def test_bad_convention_raises() -> None:
    with pytest.raises(ConfigError, match="bwd_convention"):
        work(AttentionConfig(1, 1, 1, 8, 8, 8, 8), bwd_convention="4gemm")
