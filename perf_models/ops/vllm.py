"""Serving-step statistics: the per-step token counts a paged-attention op needs but does not take.

`vllm::unified_attention(_with_output)`, aiter's `mha_batch_prefill` and SGLang's paged decode receive only the
packed tokens of this step (THD) and a paged cache; how many requests there are and how long their contexts
are lives in the engine's batch. Traces carry it in the engine's step annotation, in one of these formats:

* vLLM (older): `execute_context_1(888_788544)_generation_0(0)`: context requests (Σ q _ Σ q²), generation
  requests (...); no Σ k: a prefill with a cached prefix cannot be told from one without;
* vLLM (newer) and SGLang: `execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489
  sqsq37sqsk34489)`: the (padded) token count of the step, then Σ q, Σ k, Σ q², Σ q·k of the context requests
  and of the generation requests; an SGLang prefill step may have no generation part.

The upstream tool's perf_params carry the same as c_sq/c_sk/c_sqsq/c_sqsk/g_sq/g_sk/g_sqsq/g_sqsk or as
sum_ctx_tokens/sum_gen_tokens. With Σ q² and Σ q·k the step's causal pairs are exact (perf_models.flops).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sdpa_analyzer.perf_models.config import PagedInfo
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.ops.perf_params import optional_int
from sdpa_analyzer.perf_models.ops.types import RowError

# execute_context_<n_ctx>(<sum q>_<sum q^2>)_generation_<n_gen>(<numbers>)
_ANNOTATION = re.compile(r"context_(\d+)\(([\d_]*)\)_generation_(\d+)\(([\d_]*)\)")
# any of the formats: [execute_[<tokens>_]]context_<n>(<body>)[_generation_<m>(<body>)]
STEP_ANNOTATION = re.compile(
    r"(?:execute_(?:(\d+)_)?)?context_(\d+)\(([^)]*)\)(?:_generation_(\d+)\(([^)]*)\))?"
)
_NAMED = re.compile(r"(?:[cg]_)?(sqsq|sqsk|sq|sk)\s*[=:]?\s*(\d+)")


def parse_step_annotation(text: str) -> dict[str, int] | None:
    """Token counts of one serving step (every format in the module docstring), or None when `text` is none.

    Keys: num_ctx_requests, num_gen_requests, c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk (those the
    format gives), step_tokens (the leading token count of `execute_<tokens>_...`, padded to the graph's batch
    size when graphs run), and the upstream sum_ctx_tokens / sum_gen_tokens. Nothing is assumed here: the older
    vLLM format gives no c_sk, and `step_tokens` (the function) says what it assumes for it.
    """
    m = STEP_ANNOTATION.search(text)
    if m is None or not text.lstrip().startswith(("execute_", "context_")):
        return None
    padded, n_ctx, ctx, n_gen, gen = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
    out: dict[str, int] = {"num_ctx_requests": n_ctx, "num_gen_requests": int(n_gen or 0)}
    if padded is not None:
        out["step_tokens"] = int(padded)
    for prefix, body in (("c", ctx), ("g", gen)):
        if body is None:
            continue
        named = _NAMED.findall(body)
        if named:  # sq<..>sk<..>sqsq<..>sqsk<..>
            for key, value in named:
                out[f"{prefix}_{key}"] = int(value)
        else:  # older vLLM: <sum q>_<sum q²>
            nums = [int(x) for x in body.split("_") if x.strip().isdigit()]
            if nums:
                out[f"{prefix}_sq"] = nums[0]
            if len(nums) > 1 and prefix == "c":
                out[f"{prefix}_sqsq"] = nums[1]
    if "g_sq" not in out:
        out["g_sq"] = out["num_gen_requests"]  # one new token per decode request
    if out["num_gen_requests"] == 0:
        out.setdefault("g_sk", 0)
    out["sum_ctx_tokens"] = out.get("c_sq", 0)
    out["sum_gen_tokens"] = out.get("g_sq", 0)
    return out


def parse_vllm_annotation(text: str) -> dict[str, int]:
    """Step counts from a vLLM `execute_context_…_generation_…` annotation.

    Returns num_ctx_requests, c_sq (prefill query tokens), c_sk (= c_sq: the annotation records no
    cached prefix), c_sqsq (sum of squared chunk lengths), num_gen_requests and g_sq (one query token
    per decode request). Decode context lengths are not in this annotation format, so g_sk is only
    present when there are no decode requests. Raises RowError when the text has no such annotation.
    """
    m = _ANNOTATION.search(text)
    if m is None:
        raise RowError(f"not a vLLM step annotation: {text[:60]!r}")
    n_ctx, ctx_nums, n_gen, _gen_nums = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    parts = [int(x) for x in ctx_nums.split("_") if x]
    c_sq = parts[0] if parts else 0
    c_sqsq = parts[1] if len(parts) > 1 else 0
    out = {
        "num_ctx_requests": n_ctx,
        "c_sq": c_sq,
        "c_sk": c_sq,
        "c_sqsq": c_sqsq,
        "c_sqsk": c_sqsq,
        "num_gen_requests": n_gen,
        "g_sq": n_gen,
    }
    if n_gen == 0:
        out["g_sk"] = 0
    return out


@dataclass(frozen=True, slots=True)
class StepTokens:
    num_requests: int
    total_q: int
    total_kv: int
    exact_requests: bool
    sum_qq: int | None = None  # Σ q² over the step's requests (None: unknown)
    sum_qk: int | None = None  # Σ q·k over the step's requests (None: unknown)


def step_tokens(params: Mapping[str, Any], warnings: list[str]) -> StepTokens:
    """Requests and token sums of one vLLM step from perf_params (or parsed annotation) keys."""
    c_sq = optional_int(params, "c_sq", "sum_ctx_tokens")
    g_sq = optional_int(params, "g_sq", "sum_gen_tokens")
    if c_sq is None and g_sq is None:
        raise RowError(
            "vLLM unified attention has no context lengths in its arguments; pass perf_params with "
            "c_sq/c_sk/g_sq/g_sk (or sum_ctx_tokens/sum_gen_tokens) or the step annotation"
        )
    c_sq, g_sq = c_sq or 0, g_sq or 0
    c_sk = optional_int(params, "c_sk")
    if c_sk is None:
        c_sk = c_sq
        if c_sq:
            warnings.append("perf_params has no c_sk: prefill chunks assumed to have no cached prefix")
    g_sk = optional_int(params, "g_sk")
    if g_sk is None:
        if g_sq:
            n_kv = optional_int(params, "N_KV")
            if n_kv is None or n_kv < c_sk:
                raise RowError("vLLM decode requests present but their context lengths (g_sk) are unknown")
            g_sk = n_kv - c_sk
            warnings.append("decode context tokens taken as N_KV - c_sk")
        else:
            g_sk = 0
    n_ctx = optional_int(params, "num_ctx_requests", "n_ctx")
    n_gen = optional_int(params, "num_gen_requests", "n_gen")
    exact = True
    if n_gen is None:
        n_gen = g_sq  # one query token per decode request (no speculative decoding)
        if g_sq:
            warnings.append("decode request count taken as g_sq (one query token per decode request)")
    if n_ctx is None:
        c_sqsq = optional_int(params, "c_sqsq")
        if c_sq == 0:
            n_ctx = 0
        elif c_sqsq and c_sqsq == c_sq * c_sq:
            n_ctx = 1  # sum of squares equals the squared sum only for a single chunk
        elif c_sqsq:
            # equal chunks would give c_sq^2 / c_sqsq requests: the fewest consistent with the sums
            n_ctx = max(1, math.ceil(c_sq * c_sq / c_sqsq))
            exact = False
            warnings.append(f"prefill request count estimated as {n_ctx} from c_sq^2 / c_sqsq")
        else:
            raise RowError("vLLM prefill tokens present but the number of prefill requests is unknown")
    num_requests = n_ctx + n_gen
    if num_requests <= 0:
        raise RowError("vLLM step has no requests (c_sq = g_sq = 0)")
    sum_qq, sum_qk = _exact_sums(params, c_sq, c_sk, g_sq, g_sk, n_gen)
    return StepTokens(num_requests, c_sq + g_sq, c_sk + g_sk, exact, sum_qq, sum_qk)


def _exact_sums(
    params: Mapping[str, Any], c_sq: int, c_sk: int, g_sq: int, g_sk: int, n_gen: int
) -> tuple[int | None, int | None]:
    """(Σ q², Σ q·k) over the step's requests when the sums decide them, else (None, None).

    Context part: given as c_sqsq / c_sqsk; when Σ k = Σ q every request has k = q (k >= q each), so Σ q·k = Σ q²
    exactly. Generation part: g_sqsq / g_sqsk, or, with one new token per decode request (g_sq = requests),
    Σ q² = g_sq and Σ q·k = g_sk.
    """
    if c_sq:
        c_qq = optional_int(params, "c_sqsq")
        c_qk = optional_int(params, "c_sqsk")
        if c_qk is None and c_qq is not None and c_sk == c_sq:
            c_qk = c_qq
        if c_qq is None or c_qk is None:
            return None, None
    else:
        c_qq = c_qk = 0
    if g_sq:
        g_qq = optional_int(params, "g_sqsq")
        g_qk = optional_int(params, "g_sqsk")
        if g_sq == n_gen:
            g_qq = g_sq if g_qq is None else g_qq
            g_qk = g_sk if g_qk is None else g_qk
        if g_qq is None or g_qk is None:
            return None, None
    else:
        g_qq = g_qk = 0
    qq, qk = c_qq + g_qq, c_qk + g_qk
    total_q, total_kv = c_sq + g_sq, c_sk + g_sk
    if qq < total_q or qk < qq or qk > total_q * total_kv:
        return None, None  # sums that no set of requests can have: not used
    return qq, qk


def paged_info(tokens: StepTokens) -> PagedInfo:
    try:
        return PagedInfo(
            num_requests=tokens.num_requests,
            sum_context_tokens=tokens.total_kv,
            sum_query_tokens=tokens.total_q,
            sum_query_sq=tokens.sum_qq,
            sum_query_key=tokens.sum_qk,
        )
    except ConfigError as exc:
        raise RowError(str(exc)) from None
