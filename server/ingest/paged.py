"""Inference (paged / KV-cache) attention: the step's workload and the kernel breakdown of a call.

Serving engines annotate each step with its token counts:
- vLLM: `execute_context_<n>(<sum q>_<sum q²>)_generation_<m>(<...>)`
- SGLang: `execute_<bs>_context_<n>(sq<..>sk<..>sqsq<..>sqsk<..>)_generation_<m>(sq<..>sk<..>...)`
The enclosing annotation of a call gives perf_params keys in the registry's vocabulary (c_sq, c_sk,
c_sqsq, g_sq, g_sk, num_ctx_requests, num_gen_requests) plus the upstream sum_ctx_tokens /
sum_gen_tokens.

Kernel breakdown components (the names the upstream prompt uses): `reshape_cache` (KV-cache write),
`fwd_kernel` (prefill/context attention), `paged_attention` (decode attention), `other`.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from server.ingest import names as N
from server.ingest.calls import Call
from server.ingest.context import TraceContext
from server.ingest.events import ANN
from server.vocab import INFERENCE

_STEP_RE = re.compile(r"context_(\d+)\(([^)]*)\)_generation_(\d+)\(([^)]*)\)")
_KV_RE = re.compile(r"(sqsq|sqsk|sq|sk)(\d+)")


def parse_step_annotation(text: str) -> dict[str, int] | None:
    """Token counts of one serving step, or None when the text is not a step annotation."""
    m = _STEP_RE.search(text)
    if m is None:
        return None
    n_ctx, ctx, n_gen, gen = int(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
    out: dict[str, int] = {"num_ctx_requests": n_ctx, "num_gen_requests": n_gen}
    for prefix, body in (("c", ctx), ("g", gen)):
        pairs = _KV_RE.findall(body)
        if pairs:  # SGLang: named fields
            for key, value in pairs:
                out[f"{prefix}_{key}"] = int(value)
        else:  # vLLM: <sum q>_<sum q²>
            nums = [int(x) for x in body.split("_") if x.isdigit()]
            if nums:
                out[f"{prefix}_sq"] = nums[0]
            if len(nums) > 1:
                out[f"{prefix}_sqsq"] = nums[1]
    if "c_sq" in out and "c_sk" not in out:
        out["c_sk"] = out["c_sq"]  # vLLM's annotation records no cached prefix for prefill chunks
    if "g_sq" not in out:
        out["g_sq"] = n_gen  # one new token per decode request
    if n_gen == 0:
        out.setdefault("g_sk", 0)
    out["sum_ctx_tokens"] = out.get("c_sq", 0)
    out["sum_gen_tokens"] = out.get("g_sq", 0)
    return out


def add_workload(ctx: TraceContext, calls: list[Call]) -> None:
    """perf_params additions from the step annotation around each inference call."""
    inf = [c for c in calls if c.category == INFERENCE and c.node >= 0]
    if not inf:
        return
    is_step = ctx.name_mask(lambda n: _STEP_RE.search(n) is not None, ANN)
    if not is_step.any():
        for c in inf:
            c.warnings.append(f"{c.name}: no step annotation with token counts around the call; workload unknown")
        return
    nma = ctx.forest.nearest("step-annotation", is_step)
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
        elif role == "attention":
            parts["paged_attention" if N.is_decode_kernel(name) else "fwd_kernel"] += d
        else:
            parts["other"] += d
    pct = {f"{k}_percent": (100.0 * v / total if total > 0 else 0.0) for k, v in parts.items()}
    pct["total_us"] = total
    return pct
