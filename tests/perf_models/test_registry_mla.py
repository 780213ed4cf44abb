"""MLA latent caches in the registry: FlashMLA's own op (sgl_kernel / vLLM _flashmla_C, every signature variant), and
a paged op whose shapes are a latent cache (one KV head of 576, V its first 512: DeepSeek-V2/V3), with and without
the model config's `mla_latent` hint. Expected bytes by hand in the comments."""

from __future__ import annotations

import pytest

from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.registry import is_attention_op, parse_op
from sdpa_analyzer.perf_models.table import ConfigTable

BF16 = "c10::BFloat16"
# 4 decodes over Σk = 4000 cached tokens: SGLang's annotation counts
STEP = {"num_ctx_requests": 0, "num_gen_requests": 4, "c_sq": 0, "c_sk": 0, "g_sq": 4, "g_sk": 4000, "g_sqsq": 4,
        "g_sqsk": 4000}


def _bytes(cfg: object) -> int:
    return int(estimate_work(ConfigTable.from_configs([cfg])).bytes_compulsory[0])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete"),
    [
        # sgl_kernel::fwd_kvcache_mla(q, kv_cache, head_size_v, seqlens_k, block_table, softmax_scale, is_causal,
        #   tile_scheduler_metadata, num_splits, is_fp8, indices)
        ("sgl_kernel::fwd_kvcache_mla",
         ((4, 1, 16, 576), (1024, 64, 1, 576), (), (4,), (4, 16), (), (), (132, 8), (5,), (), ()),
         (BF16, BF16, "Scalar", "int", "int", "Scalar", "Scalar", "int", "int", "Scalar", ""),
         ("", "", "512", "", "", "0.0416", "True", "", "", "False", "")),
        # ... with the five optional tensors of the sparse variant (16 arguments)
        ("sgl_kernel::fwd_kvcache_mla",
         ((4, 1, 16, 576), (1024, 64, 1, 576), (), (4,), (4, 16), (), (), (132, 8), (5,), (), (), (), (), (), (), ()),
         (BF16, BF16, "Scalar", "int", "int", "Scalar", "Scalar", "int", "int", "Scalar", "", "", "", "", "", ""),
         ("", "", "512", "", "", "0.0416", "True", "", "", "False", "", "", "", "", "", "")),
        # vLLM's _flashmla_C::fwd_kvcache_mla(q, k_cache, head_dim_v, cache_seqlens, block_table, softmax_scale,
        #   causal, tile_scheduler_metadata, num_splits, descale_q, descale_k)
        ("_flashmla_C::fwd_kvcache_mla",
         ((4, 1, 16, 576), (1024, 64, 1, 576), (), (4,), (4, 16), (), (), (132, 8), (5,), (), ()),
         (BF16, BF16, "Scalar", "int", "int", "Scalar", "Scalar", "int", "int", "", ""),
         ("", "", "512", "", "", "0.0416", "True", "", "", "", "")),
        # the older one, with its unused V cache slot: (q, k_cache, None, head_dim_v, cache_seqlens, block_table,
        #   softmax_scale, causal, tile_scheduler_metadata, num_splits)
        ("_flashmla_C::fwd_kvcache_mla",
         ((4, 1, 16, 576), (1024, 64, 1, 576), (), (), (4,), (4, 16), (), (), (132, 8), (5,)),
         (BF16, BF16, "", "Scalar", "int", "int", "Scalar", "Scalar", "int", "int"),
         ("", "", "", "512", "", "", "0.0416", "True", "", "")),
    ],
)
def test_flashmla_signatures_are_one_latent_cache(name: str, dims: tuple, types: tuple, concrete: tuple) -> None:
    # bytes: the latent cache once, 4000 · 576 · 2 = 4,608,000; Q 4 · 16 · 576 · 2 = 73,728; O 4 · 16 · 512 · 2 =
    # 65,536 → 4,747,264 (as K then V it would be 4000 · (576 + 512) · 2 + … = 8,843,264)
    assert is_attention_op(name)
    p = parse_op(name, dims, types, concrete, STEP)
    assert p.config is not None, p.reason
    c = p.config
    assert (c.heads_q, c.heads_kv, c.head_dim_qk, c.head_dim_v, c.shared_kv) == (16, 1, 576, 512, True)
    assert p.family == "flashmla" and _bytes(c) == 4_747_264


def _ragged(k_last: int, v_last: int, heads_kv: int = 1) -> tuple[list, list, list]:
    # SGLang's paged decode wrapper (12 tensors: out, workspace, query, key_cache, value_cache, kv_indptr, ...) over a
    # cache of (slots, 1, Hkv, d)
    q = [4, 16, k_last]
    dims = [q, [1000], q, [50000, 1, heads_kv, k_last], [50000, 1, heads_kv, v_last], [5], [4000], [4], [], [1],
            [1], []]
    types = [BF16, "unsigned char", BF16, BF16, BF16, "int", "int", "int", "", "float", "float", ""]
    return dims, types, [""] * 12


def test_a_paged_row_with_the_latent_shapes_is_mla() -> None:
    # one KV head of 576 and V handed as the same cache: DeepSeek's latent layout, detected from the shapes
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(576, 576), STEP)
    assert p.config is not None, p.reason
    assert p.config.shared_kv and p.config.head_dim_v == 512 and _bytes(p.config) == 4_747_264
    assert any("detected from the shapes" in w for w in p.warnings)
    # the config's ranks say the same, now as the model's own numbers
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(576, 576),
                 {**STEP, "mla_latent": [576, 512]})
    assert p.config is not None and p.config.shared_kv and any("model config's kv_lora_rank" in w for w in p.warnings)


def test_a_latent_layout_of_other_ranks_needs_the_config() -> None:
    # MiniCPM3-style ranks (kv_lora_rank 256 + qk_rope_head_dim 32 = 288): not DeepSeek's, so without the config the
    # row is an MQA cache read as K and V; with it, one latent cache. bytes: 4000 · 288 · 2 = 2,304,000 once, Q
    # 4 · 16 · 288 · 2 = 36,864, O 4 · 16 · 256 · 2 = 32,768 → 2,373,632
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(288, 288), STEP)
    assert p.config is not None and not p.config.shared_kv
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(288, 288),
                 {**STEP, "mla_latent": [288, 256]})
    assert p.config is not None and p.config.shared_kv and p.config.head_dim_v == 256
    assert _bytes(p.config) == 2_373_632


def test_an_mqa_cache_or_a_mismatching_config_is_not_mla() -> None:
    # one KV head of 128 (MQA): K and V are two caches
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(128, 128), STEP)
    assert p.config is not None and not p.config.shared_kv
    # a config's latent 576/512 on 8 KV heads of 576: it is not this row's, and the row says so
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(576, 576, heads_kv=8),
                 {**STEP, "mla_latent": [576, 512]})
    assert p.config is not None and not p.config.shared_kv
    assert any("does not match this row" in w for w in p.warnings)
    # a malformed hint is the row's reason, never a guess
    p = parse_op("sglang_profiler::attention_paged_attention_ragged_7", *_ragged(576, 576),
                 {**STEP, "mla_latent": [512, 576]})
    assert p.config is None and "mla_latent" in p.reason


def test_flashmla_fp8_cache_reads_656_bytes_per_token() -> None:
    # FlashMLA's fp8 cache: uint8 (…, 1, 656) per token = 512 fp8 latent + 4 fp32 scales + 64 bf16 RoPE values.
    # bytes: 524,288 · 656 = 343,932,928 + Q + O 35,651,584 = 379,584,512
    dims = ((128, 1, 128, 576), (8192, 64, 1, 656), (), (128,), (128, 64), (), (), (132, 8), (129,), (), ())
    types = ("c10::BFloat16", "unsigned char", "Scalar", "int", "int", "Scalar", "Scalar", "int", "int", "Scalar", "")
    concrete = ("", "", "512", "", "", "0.0416", "True", "", "", "True", "")
    params = {"num_ctx_requests": 0, "num_gen_requests": 128, "c_sq": 0, "c_sk": 0, "g_sq": 128, "g_sk": 524288}
    cfg = parse_op("sgl_kernel::fwd_kvcache_mla", dims, types, concrete, params).config
    assert cfg is not None and cfg.shared_kv and cfg.kv_cache_token_bytes == 656 and cfg.head_dim_v == 512
    assert _bytes(cfg) == 379_584_512


def test_flashmla_without_a_step_annotation_says_what_is_missing() -> None:
    dims = ((128, 1, 128, 576), (8192, 64, 1, 576), (), (128,), (128, 64), (), (), (132, 8), (129,), (), ())
    types = ("c10::BFloat16", "c10::BFloat16", "Scalar", "int", "int", "Scalar", "Scalar", "int", "int", "Scalar", "")
    p = parse_op("sgl_kernel::fwd_kvcache_mla", dims, types, ("", "", "512", "", "", "0.04", "True", "", "", "", ""))
    assert p.config is None and "cache_seqlens" in p.reason and "step annotation" in p.reason
