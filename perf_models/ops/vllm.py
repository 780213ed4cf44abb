"""vLLM step statistics: the per-step token counts a unified-attention op needs but does not take.

`vllm::unified_attention(_with_output)` receives only the packed tokens of this step (THD); how many
requests there are and how long their contexts are lives in vLLM's forward context. Traces carry it
in the step annotation (`execute_context_1(888_788544)_generation_0(0)`), and the upstream tool's
perf_params carry it as c_sq/c_sk/g_sq/g_sk (context/generation sums of query and key lengths) or as
sum_ctx_tokens/sum_gen_tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perf_models.config import PagedInfo
from perf_models.errors import ConfigError
from perf_models.ops.perf_params import optional_int
from perf_models.ops.types import RowError

# execute_context_<n_ctx>(<sum q>_<sum q^2>)_generation_<n_gen>(<numbers>)
_ANNOTATION = re.compile(r"context_(\d+)\(([\d_]*)\)_generation_(\d+)\(([\d_]*)\)")


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
    return StepTokens(num_requests, c_sq + g_sq, c_sk + g_sk, exact)


def paged_info(tokens: StepTokens) -> PagedInfo:
    try:
        return PagedInfo(
            num_requests=tokens.num_requests,
            sum_context_tokens=tokens.total_kv,
            sum_query_tokens=tokens.total_q,
        )
    except ConfigError as exc:
        raise RowError(str(exc)) from None
