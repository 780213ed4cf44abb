"""HBM bytes: compulsory and tiled models, the seed PR's 58 MB / 721 MB, dtypes, GQA, paged caches."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.config import CAUSAL_BOTTOM_RIGHT, NO_MASK, AttentionConfig, PagedInfo, VarlenInfo
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.masks import dense_tile_sums
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.perf_models.traffic import compulsory_terms, tiled_bytes

# One [1, 32, 1024, 128] bf16 tensor: 32·1024·128·2 = 8,388,608 bytes ("T" below).
T = 8_388_608
ROWS = 32 * 1024  # query rows over all heads


def seed_cfg(dtype: str = "bf16", direction: str = "bwd", **kw: object) -> AttentionConfig:
    return AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, dtype_q=dtype, direction=direction,  # type: ignore[arg-type]
                           mask=CAUSAL_BOTTOM_RIGHT, **kw)  # type: ignore[arg-type]


def work(*cfgs: AttentionConfig, **kw: object):
    return estimate_work(ConfigTable.from_configs(list(cfgs)), **kw)  # type: ignore[arg-type]


def test_forward_compulsory() -> None:
    # Q, K, V read + O written = 4T = 33,554,432; fp32 LSE 4·32·1024 = 131,072 → 33,685,504.
    assert work(seed_cfg(direction="fwd")).bytes_compulsory[0] == 4 * T + 4 * ROWS == 33_685_504


def test_backward_compulsory() -> None:
    # read Q, K, V, O, dO; write dQ, dK, dV: 8T = 67,108,864
    # + LSE 4·rows = 131,072 + D (fp32 write + read) 8·rows = 262,144
    # + fp32 dQ accumulator (zero-init + read) 8·rows·128 = 33,554,432 → 101,056,512.
    assert work(seed_cfg()).bytes_compulsory[0] == 8 * T + 12 * ROWS + 8 * ROWS * 128 == 101_056_512


def test_seed_single_pass_58mb_is_the_tensor_only_count() -> None:
    """seeds/002's "58 MB single-pass" = Q, K, V, dO read + dQ, dK, dV written: 7T = 58,720,256 B.

    That is TraceLens' bytes_bwd_func, which omits O, LSE, D and the dQ accumulator (our compulsory count
    above adds them: 101 MB).
    """
    t = compulsory_terms(ConfigTable.from_configs([seed_cfg()]))
    seed = sum(t[k][0] for k in ("q", "k", "v", "do", "dq", "dk", "dv"))
    assert seed == 7 * T == 58_720_256
    assert seed / 1e6 == pytest.approx(58.72, abs=0.005)  # "≈ 58 MB" (56 MiB)


def test_seed_two_pass_tiled_721mb() -> None:
    """seeds/002: two-pass tiled backward, Br = Bc = 64, no tile skipping → 721 MB.

    dK/dV pass: Q, O, dO re-read ⌈1024/64⌉ = 16 times → 48T; K, V once → 2T.
    dQ pass: K, V re-read 16 times → 32T; Q once → T. Writes dQ, dK, dV → 3T. Total 86T = 721,420,288.
    """
    w = work(seed_cfg(), block_q=64, block_kv=64, skip_masked_tiles=False)
    assert w.bytes_tiled[0] == 86 * T == 721_420_288
    assert (w.skip_masked_tiles, w.tiled_bwd_model) == (False, "two_pass")


def test_two_pass_with_tile_skipping() -> None:
    # 136 visited 64² tiles; each loads 64 query rows and 64 key rows per head:
    # Q,O,dO: 32·136·64·768 = 213,909,504; K,V once 2T; dQ-pass K,V: 32·136·64·512 = 142,606,336;
    # Q once T; writes 3T → 406,847,488 (vs 616 MB measured on MI300X in the seed PR).
    w = work(seed_cfg(), block_q=64, block_kv=64, skip_masked_tiles=True)
    assert w.bytes_tiled[0] == 213_909_504 + 2 * T + 142_606_336 + T + 3 * T == 406_847_488


def test_single_pass_atomic_dq() -> None:
    # preprocess: O + dO read (2T) + D write 4·rows; dQ accumulator init + convert read 8·rows·128;
    # K, V once 2T; per visited tile (all 16·1024 rows per head, no skipping): Q 256 + dO 256 + LSE 4 + D 4
    # + dQ accumulator RMW 8·128 = 1544 B per row → 32·16·1024·1544 = 809,500,672; writes 3T.
    w = work(seed_cfg(), block_q=64, block_kv=64, skip_masked_tiles=False, tiled_bwd_model="single_pass")
    expected = 2 * T + 4 * ROWS + 8 * ROWS * 128 + 2 * T + 809_500_672 + 3 * T
    assert w.bytes_tiled[0] == expected == 901_906_432


def test_fp32_doubles_the_tensor_bytes() -> None:
    # The seed's tiled model has only tensor terms: exactly 2×.
    bf16 = work(seed_cfg("bf16"), block_q=64, block_kv=64, skip_masked_tiles=False)
    fp32 = work(seed_cfg("fp32"), block_q=64, block_kv=64, skip_masked_tiles=False)
    assert fp32.bytes_tiled[0] == 2 * bf16.bytes_tiled[0] == 1_442_840_576
    # Compulsory: the 8 tensors double (16T), the fp32 LSE/D/dQ accumulator terms do not.
    assert fp32.bytes_compulsory[0] == 16 * T + 12 * ROWS + 8 * ROWS * 128 == 168_165_376
    # fp8 inputs halve them: 4T + fixed fp32 terms
    fp8 = work(seed_cfg("fp8_e4m3"))
    assert fp8.bytes_compulsory[0] == 4 * T + 12 * ROWS + 8 * ROWS * 128


def test_mixed_dtypes_use_each_tensors_size() -> None:
    # fwd, Q bf16 (T), K fp8 (T/2), V fp32 (2T), O bf16 (T), LSE: 4.5T + 131,072
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, dtype_q="bf16", dtype_k="fp8", dtype_v="fp32")
    assert work(cfg).bytes_compulsory[0] == T + T // 2 + 2 * T + T + 4 * ROWS


def test_gqa_bytes_use_kv_heads() -> None:
    # Hq=32, Hkv=8: Q = O = T; K = V = 8·1024·128·2 = 2,097,152; LSE 131,072 → 21,102,592.
    cfg = AttentionConfig(1, 32, 8, 1024, 1024, 128, 128)
    assert work(cfg).bytes_compulsory[0] == 2 * T + 2 * 2_097_152 + 4 * ROWS == 21_102_592


def test_forward_tiled_rereads_kv_per_q_block() -> None:
    # Br=128, Bc=64, no mask: K and V re-read ⌈1024/128⌉ = 8 times per head:
    # 32·8·1024·(128·2 + 128·2) = 134,217,728; plus Q and O once (2T) and LSE → 151,126,016.
    cfg = AttentionConfig(1, 32, 32, 1024, 1024, 128, 128, mask=NO_MASK)
    w = work(cfg, block_q=128, block_kv=64)
    assert w.bytes_tiled[0] == 134_217_728 + 2 * T + 4 * ROWS == 151_126_016


def test_paged_decode_bytes_and_fp8_cache() -> None:
    # 4 requests, Σctx = 1000, Hkv = 8, d = 128: bf16 cache 2·1000·8·256 = 4,096,000;
    # Q and O: 4 tokens·32 heads·128·2 B each = 32,768 + 32,768; no LSE → 4,161,536.
    p = PagedInfo(num_requests=4, sum_context_tokens=1000)
    bf16 = AttentionConfig(4, 32, 8, 1, 400, 128, 128, paged=p)
    fp8 = AttentionConfig(4, 32, 8, 1, 400, 128, 128, paged=p, dtype_kv_cache="fp8_e4m3")
    w = work(bf16, fp8)
    assert w.bytes_compulsory.tolist() == [4_161_536, 2_048_000 + 65_536]
    assert w.bytes_tiled.tolist() == w.bytes_compulsory.tolist()


def test_varlen_bytes_use_total_tokens() -> None:
    # THD tensors: Q, K, V, O each 1000 tokens·4 heads·64·2 B = 512,000; LSE 4·1000·4 = 16,000.
    v = VarlenInfo(total_q=1000, total_kv=1000, num_seqs=3, max_seqlen_q=600, max_seqlen_kv=600)
    cfg = AttentionConfig(7, 4, 4, 600, 600, 64, 64, varlen=v)  # batch is ignored on varlen rows
    assert work(cfg).bytes_compulsory[0] == 4 * 512_000 + 16_000


def test_bad_tiled_model_raises() -> None:
    with pytest.raises(ConfigError, match="tiled_bwd_model"):
        work(seed_cfg(), tiled_bwd_model="three_pass")
    table = ConfigTable.from_configs([seed_cfg()])
    with pytest.raises(ConfigError, match="tiled_bwd_model"):
        tiled_bytes(table, dense_tile_sums(table.seq_q, table.seq_kv, 64, 64), tiled_bwd_model="x")


# --- decode bytes that follow the kernel: FlashMLA's fp8 layout, per-request windows, split-KV partials ----------


def test_flashmla_fp8_cache_is_656_bytes_per_token() -> None:
    from sdpa_analyzer.perf_models.traffic import flashmla_fp8_token_bytes

    # FlashMLA README "FP8 KV Cache": 512 float8_e4m3 NoPE values + 4 float32 scales (one per 128) + 64 bf16 RoPE
    assert flashmla_fp8_token_bytes(576, 512) == 512 + 4 * 4 + 64 * 2 == 656
    # DeepSeek decode, 128 requests × 4096 tokens, 128 query heads, one latent head read once
    kw = dict(batch=128, heads_q=128, heads_kv=1, seq_q=1, seq_kv=4096, head_dim_qk=576, head_dim_v=512,
              shared_kv=True, dtype_kv_cache="fp8")
    laid_out = work(AttentionConfig(**kw, kv_cache_token_bytes=656))  # type: ignore[arg-type]
    plain_fp8 = work(AttentionConfig(**kw))  # type: ignore[arg-type]
    q_o_lse = 128 * 128 * 576 * 2 + 128 * 128 * 512 * 2 + 128 * 128 * 4
    assert laid_out.bytes_compulsory[0] == 128 * 4096 * 656 + q_o_lse == 379_650_048
    assert plain_fp8.bytes_compulsory[0] == 128 * 4096 * 576 + q_o_lse  # 576 plain fp8 elements: 12 % short
    # the same layout on the paged path (one request per context)
    paged = work(AttentionConfig(128, 128, 1, 1, 1, 576, 512, shared_kv=True, dtype_kv_cache="fp8",
                                 kv_cache_token_bytes=656,
                                 paged=PagedInfo(num_requests=128, sum_context_tokens=128 * 4096)))
    assert paged.bytes_compulsory[0] == 128 * 4096 * 656 + 128 * 128 * (576 + 512) * 2  # decode kernels: no LSE
    with pytest.raises(ConfigError, match="kv_cache_token_bytes"):
        AttentionConfig(1, 8, 8, 128, 128, 64, 64, direction="bwd", kv_cache_token_bytes=128)  # type: ignore[arg-type]


def test_paged_window_with_known_contexts_is_exact() -> None:
    from sdpa_analyzer.perf_models.config import Mask

    # 4 decode requests of 100, 200, 5000 and 8000 keys under a 4096 left window: each query sees min(k, 4097)
    lens = (100, 200, 5000, 8000)
    window = Mask("sliding_window", window_left=4096, window_right=0)
    known = PagedInfo(num_requests=4, sum_context_tokens=sum(lens), context_lens=lens)
    sums = PagedInfo(num_requests=4, sum_context_tokens=sum(lens))
    exact = work(AttentionConfig(4, 32, 8, 1, 1, 128, 128, mask=window, paged=known))
    bound = work(AttentionConfig(4, 32, 8, 1, 1, 128, 128, mask=window, paged=sums))
    keys = 100 + 200 + 4097 + 4097  # 8,494
    q_o = 2 * 4 * 32 * 128 * 2
    assert exact.kept_pairs[0] == keys and exact.work_bound[0] == "exact"
    assert exact.bytes_compulsory[0] == keys * 8 * 128 * 2 * 2 + q_o
    # from the sums alone: min(Σctx = 13,300, 4 · 4097 = 16,388) keys — 57 % too many, and a bound
    assert bound.bytes_compulsory[0] == 13_300 * 8 * 128 * 2 * 2 + q_o and bound.work_bound[0] == "upper"
    # every context shorter than the window: the whole cache, exactly
    short = (100, 200)
    w = work(AttentionConfig(2, 32, 8, 1, 1, 128, 128, mask=window,
                             paged=PagedInfo(num_requests=2, sum_context_tokens=300, context_lens=short)))
    assert w.kept_pairs[0] == 300 and w.work_bound[0] == "exact"


def test_split_kv_heuristic_matches_flash_attention_2() -> None:
    import numpy as np

    from sdpa_analyzer.perf_models.traffic import split_kv_splits

    # flash_api.cpp's own example: batch · n_heads = 48 on 108 (SM slots) -> 2 splits (0.89 beats 3 splits' 0.67).
    # Our argument is the SM count; FA2 passes 2 × SMs, so 54 SMs give its 108. With 64 key blocks the eligible
    # splits (⌈64/s⌉ changes) reach 0.981 at s = 64; 85 % of that is 0.834, first met at s = 2 (48·2/108 = 0.889)
    assert split_kv_splits(np.array([48.0]), 54, np.array([64.0]))[0] == 2
    # 500 tiles fill 0.8 × 264 slots: no split
    assert split_kv_splits(np.array([500.0]), 132, np.array([64.0]))[0] == 1
    # one key block: nothing to split
    assert split_kv_splits(np.array([1.0]), 132, np.array([1.0]))[0] == 1


def test_split_kv_partials_by_hand() -> None:
    # GQA decode: B1, Hq 32 / Hkv 8, ctx 32768, d128 on 132 SMs. FA2 packs the 4 query heads of a group into the
    # query rows: tiles = 1·8·⌈4/64⌉ = 8 < 0.8 · 264; n_blocks = 32768/128 = 256; max splits min(128, 264, 256) = 128;
    # waves 8s/264 -> best efficiency 1.0 (s = 33); smallest s with 8s/264 >= 0.85: s = 29 (0.879; eligible:
    # ⌈256/29⌉ = 9 != ⌈256/28⌉ = 10). Partials: 2 (write + read) · 4 B · 29 · 1 · 32 · 1 · (128 + 1)
    cfg = AttentionConfig(1, 32, 8, 1, 32768, 128, 128)
    with_sms = work(cfg, num_sms=132)
    assert with_sms.bytes_tiled[0] - with_sms.bytes_compulsory[0] == 2 * 4 * 29 * 32 * 129 == 957_696
    assert work(cfg).bytes_tiled[0] == work(cfg).bytes_compulsory[0]  # SM count unknown: no partials
    # MLA decode, one request of 4096 tokens, 128 heads: tiles 1·1·⌈128/64⌉ = 2; block_n 64 (d > 128) -> 64 blocks;
    # waves 2s/264 < 1 for every s <= 64, best at s = 64 (0.485); the smallest eligible s with >= 0.412 is 64
    # (55…63 all give ⌈64/s⌉ = 2, as 54 does). Partials 2·4·64·128·(512 + 1) = 33.6 MB — 7× the latent cache
    mla = work(AttentionConfig(1, 128, 1, 1, 4096, 576, 512, shared_kv=True), num_sms=132)
    assert mla.bytes_tiled[0] - mla.bytes_compulsory[0] == 2 * 4 * 64 * 128 * 513 == 33_619_968
    # a large batch fills the GPU: one split, no partials
    big = work(AttentionConfig(64, 32, 8, 1, 4096, 128, 128), num_sms=132)
    assert big.bytes_tiled[0] == big.bytes_compulsory[0]
    # paged rows use the mean context per request: 2 requests of 16384 tokens each, as the plain B2 row
    paged = work(AttentionConfig(2, 32, 8, 1, 1, 128, 128, paged=PagedInfo(num_requests=2, sum_context_tokens=32768)),
                 num_sms=132)
    plain = work(AttentionConfig(2, 32, 8, 1, 16384, 128, 128), num_sms=132)
    assert paged.bytes_tiled[0] - paged.bytes_compulsory[0] == plain.bytes_tiled[0] - plain.bytes_compulsory[0] > 0
