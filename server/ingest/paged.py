"""Inference (paged / KV-cache) attention: the step's workload and the kernel breakdown of a call.

Serving engines annotate each step with its token counts:
- vLLM (older): `execute_context_<n>(<sum q>_<sum q²>)_generation_<m>(<...>)`
- vLLM (newer) and SGLang: `execute_<tokens>_context_<n>(sq<..>sk<..>sqsq<..>sqsk<..>)[_generation_<m>(...)]`
The enclosing annotation of a call gives perf_params keys in the registry's vocabulary (c_sq, c_sk,
c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk, num_ctx_requests, num_gen_requests, step_tokens) plus the
upstream sum_ctx_tokens / sum_gen_tokens; perf_models.ops.vllm parses them and makes the pairs exact.

Kernel breakdown components (the names the upstream prompt uses): `reshape_cache` (KV-cache write),
`fwd_kernel` (prefill/context attention), `paged_attention` (decode attention), `other`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdpa_analyzer.perf_models.ops.vllm import parse_step_annotation as _parse_step
from sdpa_analyzer.server.ingest import names as N
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import ANN
from sdpa_analyzer.server.vocab import INFERENCE


def parse_step_annotation(text: str) -> dict[str, int] | None:
    """Token counts of one serving step, or None when the text is not a step annotation (every format:
    perf_models.ops.vllm.parse_step_annotation)."""
    return _parse_step(text)


def _is_step(name: str) -> bool:
    return _parse_step(name) is not None


def add_workload(ctx: TraceContext, calls: list[Call]) -> None:
    """perf_params additions from the step annotation around each inference call."""
    inf = [c for c in calls if c.category == INFERENCE and c.node >= 0]
    if not inf:
        return
    is_step = ctx.name_mask(_is_step, ANN)
    if not is_step.any():
        for c in inf:
            c.warnings.append(f"{c.name}: no step annotation with token counts around the call; workload unknown")
        return
    nma = ctx.forest.nearest(is_step)
    for c in inf:
        node = c.top if c.top >= 0 else c.node
        a = int(nma[node])
        if a < 0:
            continue
        text = ctx.node_name(a)
        parsed = parse_step_annotation(text)
        if parsed:
            c.annotation = text
            c.extra_params.update(parsed)


def kernel_breakdown(names: list[str], durations: np.ndarray) -> dict[str, Any]:
    """Percent of a call's kernel time per component (sums of kernel durations)."""
    total = float(np.sum(durations))
    parts = {"reshape_cache": 0.0, "fwd_kernel": 0.0, "paged_attention": 0.0, "other": 0.0}
    for name, d in zip(names, durations.tolist(), strict=True):
        role = N.kernel_role(name)
        if role == "kv_cache":
            parts["reshape_cache"] += d
        elif role in ("attention", "helper"):  # a split-KV reduce is part of the decode's attention
            parts["paged_attention" if N.is_decode_kernel(name) else "fwd_kernel"] += d
        else:
            parts["other"] += d
    pct = {f"{k}_percent": (100.0 * v / total if total > 0 else 0.0) for k, v in parts.items()}
    pct["total_us"] = total
    return pct
