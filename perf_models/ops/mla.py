"""MLA latent caches (DeepSeek's multi-head latent attention): when a paged row's K and V are one cached vector.

An absorbed MLA decode attends every query head to ONE latent KV head: K is the cached vector (kv_lora_rank latent
columns + qk_rope_head_dim RoPE columns: 512 + 64 = 576 for DeepSeek-V2/V3) and V its first kv_lora_rank columns
(512). The kernel reads each cached token once, at d_qk (AttentionConfig.shared_kv), not K and then V: counted as
two caches the bytes are (576 + 512) / 576 = 1.89× too many, and a FlashMLA decode at its published 3,000 GB/s
(deepseek-ai/FlashMLA README, H800 SXM5) would read as ~169 % of an H100's 3.35 TB/s.

Which rows: one KV head whose head dims are the model's latent ones — the `mla_latent` perf_params hint
(`[d_qk, d_v]`, from a Hugging Face config's kv_lora_rank and qk_rope_head_dim: exact), else DeepSeek's published
576 / 512 (detected from the shapes alone, with a warning naming the assumption).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdpa_analyzer.perf_models.ops.types import RowError

# DeepSeek-V2/V3 config.json: kv_lora_rank 512, qk_rope_head_dim 64 (FlashMLA's head_dim 576, head_dim_v 512)
DEEPSEEK_LATENT = (576, 512)


def latent_hint(params: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """The `mla_latent` perf_params hint as (d_qk, d_v), None when absent; RowError when it is not two positive
    integers with d_v < d_qk."""
    raw = params.get("mla_latent") if params else None
    if raw is None:
        return None
    if (not isinstance(raw, list | tuple) or len(raw) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in raw) or raw[1] >= raw[0]):
        raise RowError(f"perf_params mla_latent={raw!r} is not [d_qk, d_v] with 0 < d_v < d_qk")
    return int(raw[0]), int(raw[1])


def latent_head_dim_v(
    heads_kv: int, d_qk: int, d_v: int, params: Mapping[str, Any] | None, warnings: list[str]
) -> int | None:
    """V's head dim when the row reads an MLA latent cache (V is its first columns), else None.

    A row with one KV head of the latent d_qk (the hint's, else DeepSeek's 576) whose V head dim is the latent one
    or the whole cached vector (an op handing the same cache as K and V) is MLA."""
    hint = latent_hint(params)
    want_qk, want_v = hint or DEEPSEEK_LATENT
    if heads_kv != 1 or d_qk != want_qk or d_v not in (want_v, want_qk):
        if hint is not None:
            warnings.append(
                f"the model config's MLA latent cache (d_qk {want_qk}, d_v {want_v}, one KV head) does not match this "
                f"row (Hkv {heads_kv}, d_qk {d_qk}, d_v {d_v}): K and V read as two caches"
            )
        return None
    source = ("the model config's kv_lora_rank and qk_rope_head_dim" if hint is not None else
              "DeepSeek's published MLA dims, detected from the shapes (pass the model's config to confirm)")
    warnings.append(
        f"MLA latent cache: one KV head of {want_qk} whose first {want_v} columns are V ({source}); each cached token "
        "is read once"
    )
    return want_v
