"""Which model layer each serving attention call is, and what that layer's attention is (sliding window, full, MLA).

A paged attention op carries no window and no layer index, so a call's layer is its position among its step's
attention calls modulo the model's attention layers (server.ingest.model_config.ModelHints): a step runs every
layer once per forward, in order. The call then gets its layer's perf_params hints, read by the perf_models
registry: `sliding_window` (the window in keys) and `layer_type` for every call — so the rows of sliding and full
layers are separate — and `mla_latent` ([d_qk, d_v] of the latent cache). Kernel names that state the mask (TRT-LLM's
`…SlidingOrChunked…` against `…Causal…`) decide where they exist; a disagreement with the position is a warning.

Where the position cannot decide (a step whose calls are not a whole number of forwards through the config's
layers, e.g. one pipeline stage's layers), and the config's layers differ, the calls' layers stay unresolved:
perf_params `sliding_window: "unresolved"`, an upper bound (never exact).
"""

from __future__ import annotations

import numpy as np

from sdpa_analyzer.perf_models.config import AttentionConfig
from sdpa_analyzer.perf_models.kernels import kernel_window_hint
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.events import ANN
from sdpa_analyzer.server.ingest.model_config import CHUNKED, FULL, SLIDING, ModelHints
from sdpa_analyzer.server.ingest.paged import parse_step_annotation
from sdpa_analyzer.server.vocab import INFERENCE

UNRESOLVED = "unresolved"  # perf_params sliding_window: the call's layer kind is not known (perf_models.ops.build)
CHUNKED_HINT = "chunked"  # perf_params sliding_window of a chunked-attention layer (modeled causal: an upper bound)


def apply_model_hints(ctx: TraceContext, calls: list[Call], hints: ModelHints | None) -> list[str]:
    """Give every forward inference call its layer's hints; returns the warnings (trace-wide)."""
    if hints is None:
        return []
    eligible = [c for c in calls if c.category == INFERENCE and c.direction == "fwd"]
    if not eligible:
        return [f"model_config {hints.source}: the trace has no serving (paged) attention call, whose ops are the "
                "ones that carry no window: nothing taken from it"]
    warnings: list[str] = []
    if hints.mla_latent is not None:
        for c in eligible:
            c.extra_params["mla_latent"] = list(hints.mla_latent)
    layers = hints.attention_layers
    uneven = disagree = 0
    for group in _step_groups(ctx, eligible):
        by_position = len(group) % len(layers) == 0
        uneven += 0 if by_position else len(group)
        for i, c in enumerate(group):
            stated = _kernel_kind(ctx, c)
            kind = layers[i % len(layers)] if by_position else (layers[0] if len(hints.kinds) == 1 else None)
            if stated is not None and kind is not None and (stated == SLIDING) != (kind in (SLIDING, CHUNKED)):
                disagree += 1
            _set_kind(c, stated if stated is not None else kind, hints)
    if uneven:
        warnings.append(
            f"model_config {hints.source}: {uneven} serving attention calls are in steps whose call count is not a "
            f"multiple of the config's {len(layers)} attention layers (a pipeline stage? another model?): their "
            "layers are not known"
            + (" and their rows are upper bounds" if len(hints.kinds) > 1 else "")
        )
    if disagree:
        warnings.append(
            f"model_config {hints.source}: at {disagree} calls the kernel's name states another mask than the "
            "config's layer at that position: the kernel's is used (is the config this model's?)"
        )
    pattern = hints.metadata()
    warnings.append(
        f"model_config {hints.source}: {len(eligible)} serving attention calls matched to its {len(layers)} attention "
        f"layers ({pattern['layer_pattern']}; {', '.join(f'{v} {k}' for k, v in pattern['layer_kinds'].items())}"
        + (f", window {hints.sliding_window}" if hints.sliding_window else "")
        + (f"; MLA latent {hints.mla_latent[0]}/{hints.mla_latent[1]}" if hints.mla_latent else "") + ")"
    )
    return warnings


def _set_kind(c: Call, kind: str | None, hints: ModelHints) -> None:
    if kind is None:
        c.extra_params["sliding_window"] = UNRESOLVED
        return
    c.extra_params["layer_type"] = kind
    if kind == SLIDING:
        c.extra_params["sliding_window"] = hints.sliding_window
    elif kind == CHUNKED:
        c.extra_params["sliding_window"] = CHUNKED_HINT
    else:
        c.extra_params.pop("sliding_window", None)  # a full layer (the kernel's "unknown" window, if any, is moot)


def _kernel_kind(ctx: TraceContext, c: Call) -> str | None:
    """SLIDING or FULL when the call's attention kernels state their mask, else None."""
    names, codes = ctx.ev.names, ctx.ev.gpu["name"]
    stated = {kernel_window_hint(names[int(k)]) for k in codes[c.kernels].tolist()} - {None}
    if stated == {"sliding"}:
        return SLIDING
    if stated == {"full"}:
        return FULL
    return None


def _step_groups(ctx: TraceContext, calls: list[Call]) -> list[list[Call]]:
    """The calls of each forward step, in time order: under one step annotation (a serving engine's execute_…
    range, else a ProfilerStep#), on one thread."""
    f = ctx.forest
    is_step = ctx.name_mask(lambda n: parse_step_annotation(n) is not None or n.startswith("ProfilerStep#"), ANN)
    nma = f.nearest(is_step) if is_step.any() else np.full(len(f), -1, dtype=np.int64)
    groups: dict[tuple[int, int], list[Call]] = {}
    for c in calls:
        node = c.top if c.top >= 0 else c.node
        step = int(nma[node]) if node >= 0 else -1
        groups.setdefault((step, c.thread), []).append(c)
    return [sorted(g, key=lambda c: c.ts) for _, g in sorted(groups.items())]


def check_shapes(hints: ModelHints | None, configs: list[AttentionConfig]) -> list[str]:
    """Warnings where the serving rows' shapes contradict the config (a config of another model): KV heads that are
    not the config's split evenly over tensor-parallel ranks (or replicated, when the ranks outnumber them), a head
    dim that is not the config's. MLA rows are checked by their latent dims (perf_models.ops.mla)."""
    if hints is None:
        return []
    c = hints.config
    seen: set[str] = set()
    for cfg in configs:
        if cfg.shared_kv:
            continue
        if c.num_key_value_heads is not None and cfg.heads_kv != 1 and c.num_key_value_heads % cfg.heads_kv:
            seen.add(f"{cfg.heads_kv} KV heads, which do not divide the config's num_key_value_heads "
                     f"{c.num_key_value_heads}")
        if c.head_dim is not None and cfg.head_dim_qk != c.head_dim:
            seen.add(f"head dim {cfg.head_dim_qk}, not the config's head_dim {c.head_dim}")
    return [f"model_config {hints.source}: serving rows have {why}: is it this model's config?" for why in sorted(seen)]
