"""The attention op registry: which ops are attention, and how to read a config out of one op row. Its public
name is `perf_models.registry` (which re-exports this module); it lives inside `perf_models.ops` so the batch parser
(`perf_models.ops.batch`, one level down) reads it without importing upward.

`parse_op` turns one ops-CSV row or trace `cpu_op` event (op name, `Input Dims`, `Input type`,
`Concrete Inputs`, optionally the upstream `perf_params`) into a `ParsedOp`. It never returns a silent
None: when no config can be built, `reason` says why in one line ("unknown op 'x'", "missing Concrete
Inputs for causal flag 'is_causal' (slot 4)", "unparseable Input Dims: ...").

An op name the registry does not know is modeled only from perf_params that hold a full config, a `direction` and an
`attention_type` (what the trace reader writes for a backward launched under a model's own autograd node: its linked
forward's config): read with the autograd spec of that attention type. Any other unknown op keeps the reason.

Conventions of the returned `AttentionConfig`:
- dense ops: logical batch / heads / sequence lengths, whatever the op's argument layout (`layout`).
- varlen ops (cu_seqlens): batch = number of sequences, seq_q/seq_kv = the max lengths; the totals are in
  `config.varlen` (a varlen model gives lower/upper bounds from them).
- vLLM unified attention: batch = requests, seq_q/seq_kv = per-request means; exact sums in `config.paged`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from sdpa_analyzer.perf_models.config import AttentionConfig, Direction
from sdpa_analyzer.perf_models.ops import perf_params as pp
from sdpa_analyzer.perf_models.ops.build import Built, build_from_perf_params, build_from_row
from sdpa_analyzer.perf_models.ops.perf_params import SHAPE_KEYS, as_mapping
from sdpa_analyzer.perf_models.ops.row import Row
from sdpa_analyzer.perf_models.ops.specs import (
    SPEC_BY_NAME,
    UNFUSED_BWD,
    UNFUSED_BWD_PREFIX,
    UNFUSED_FWD,
    UNFUSED_PREFIX,
    OpSpec,
    Signature,
)
from sdpa_analyzer.perf_models.ops.types import (
    GRAPH_PREFIX,
    GRAPH_REPLAY_REASON,
    AttentionType,
    CausalRule,
    Layout,
    RowError,
    Source,
)

__all__ = [
    "ATTENTION_OP_NAMES",
    "GRAPH_PREFIX",
    "GRAPH_REPLAY_REASON",
    "AttentionType",
    "CausalRule",
    "Layout",
    "OpSpec",
    "ParsedOp",
    "Signature",
    "Source",
    "is_attention_op",
    "is_wrapper_op",
    "lookup",
    "parse_op",
]

ATTENTION_OP_NAMES: frozenset[str] = frozenset(SPEC_BY_NAME)


@dataclass(frozen=True, slots=True)
class ParsedOp:
    """What one op row says about its attention call. Exactly one of `config` / `reason` is None."""

    name: str
    config: AttentionConfig | None
    reason: str | None
    family: str | None = None
    layout: Layout | None = None
    attention_type: AttentionType | None = None
    direction: Direction | None = None
    warnings: tuple[str, ...] = ()
    source: Source | None = None

    @property
    def ok(self) -> bool:
        return self.config is not None


_COUNTER = re.compile(r"_\d+$")


def _canonical(name: str) -> str:
    name = str(name).strip()
    if name.endswith(".default"):  # an OpOverload name, as torch.ops prints it
        name = name[: -len(".default")]
    return name


@lru_cache(maxsize=65536)
def _numbered(name: str) -> OpSpec | None:
    """The spec of a name recorded with a per-function counter (`sglang_profiler::mha__mha_batch_prefill_12`)."""
    base = _COUNTER.sub("", name)
    spec = SPEC_BY_NAME.get(base) if base != name else None
    return spec if spec is not None and spec.numbered else None


def lookup(name: str) -> OpSpec | None:
    """The OpSpec of an attention op name, or None.

    `autograd::engine::evaluate_function: FlashAttnFuncBackward` is deliberately not an attention op: it
    wraps the `FlashAttnFuncBackward` node, and counting both would count the backward twice.
    """
    canon = _canonical(name)
    spec = SPEC_BY_NAME.get(canon)
    if spec is None and canon.startswith(UNFUSED_PREFIX):
        return UNFUSED_BWD if canon.startswith(UNFUSED_BWD_PREFIX) else UNFUSED_FWD
    if spec is None:
        spec = _numbered(canon)
    return spec


def is_wrapper_op(name: str) -> bool:
    """A profiler wrapper whose inner attention op, when recorded, is the row (counted once)."""
    spec = lookup(name)
    return spec is not None and spec.wrapper


def is_attention_op(name: str) -> bool:
    return lookup(name) is not None


def parse_op(
    name: str,
    input_dims: Any,
    input_types: Any,
    concrete_inputs: Any,
    perf_params: Mapping[str, Any] | str | None = None,
) -> ParsedOp:
    """Parse one op row. Cells may be CSV strings, trace-arg lists, or already-parsed tuples.

    Order: the op's own arguments first (source='input_dims'); when that fails and perf_params are
    given, the config is built from them (source='perf_params') and the first failure is kept as a
    warning. Autograd backward nodes have no arguments and always use perf_params (direction=bwd).
    """
    if all(isinstance(x, str | None) for x in (input_dims, input_types, concrete_inputs, perf_params)):
        return _parse_cached(str(name), input_dims, input_types, concrete_inputs, perf_params)
    return _parse(str(name), input_dims, input_types, concrete_inputs, perf_params)


@lru_cache(maxsize=4096)
def _parse_cached(
    name: str, dims: str | None, types: str | None, concrete: str | None, params: str | None
) -> ParsedOp:
    # Ops CSVs and traces repeat the same cells many times: parse each distinct row once.
    return _parse(name, dims, types, concrete, params)


def _parse(name: str, input_dims: Any, input_types: Any, concrete_inputs: Any, perf_params: Any) -> ParsedOp:
    spec = lookup(name)
    if spec is None and name.startswith(GRAPH_PREFIX):
        return ParsedOp(name=name, config=None, reason=GRAPH_REPLAY_REASON, family="graph")
    if spec is None:
        return _unknown_op(name, perf_params)
    base = {
        "name": name,
        "family": spec.family,
        "layout": spec.layout,
        "attention_type": spec.attention_type,
        "direction": spec.direction,
    }
    try:
        params = as_mapping(perf_params)
        params_error = None
    except RowError as exc:
        params, params_error = None, str(exc)

    primary_error: str | None = None
    if spec.is_autograd_node:
        primary_error = (
            f"{spec.name} is an autograd backward node: it has no Input Dims, its config comes "
            "from the linked forward op's perf_params"
        )
    else:
        try:
            row = Row.parse(input_dims, input_types, concrete_inputs)
            return _ok(base, build_from_row(spec, row, params), Source.INPUT_DIMS, ())
        except RowError as exc:
            primary_error = str(exc)

    if params is None:
        why = params_error or "no perf_params to fall back on"
        return ParsedOp(config=None, reason=f"{primary_error}; {why}", **base)
    try:
        built = build_from_perf_params(spec, params)
    except RowError as exc:
        return ParsedOp(config=None, reason=f"{primary_error}; perf_params fallback failed: {exc}", **base)
    note = (
        f"config from perf_params: {primary_error}"
        if not spec.is_autograd_node
        else f"config from perf_params of the linked forward op ({spec.name} has no Input Dims)"
    )
    return _ok(base, built, Source.PERF_PARAMS, (note,))


def _ok(base: dict[str, Any], built: Built, source: Source, extra: tuple[str, ...]) -> ParsedOp:
    fields = {**base, "family": built.family, "layout": built.layout, "attention_type": built.attention_type}
    return ParsedOp(
        config=built.config, reason=None, warnings=extra + built.warnings, source=source, **fields
    )


# Per attention type, the autograd backward node that reads a config of that type from perf_params alone: the first
# the registry declares. An op the registry does not know is read with it (its causal rule when perf_params state no
# alignment, its layout), in the direction the row states.
_AUTOGRAD_BY_TYPE: dict[AttentionType, OpSpec] = {}
for _spec in SPEC_BY_NAME.values():
    if _spec.is_autograd_node:
        _AUTOGRAD_BY_TYPE.setdefault(_spec.attention_type, _spec)


def _unknown_op(name: str, perf_params: Any) -> ParsedOp:
    """An op name the registry does not know. Its row is still modeled when its perf_params hold a full config (the
    ingest writes its linked forward's config, and the row's own direction from its kernels' family, there for a
    backward launched under a model's own autograd node): read with the autograd spec of the config's attention type
    and the stated direction. Anything less is the one-line reason, never a guess."""
    unknown = f"unknown op {name!r}: not an attention op in the registry"
    try:
        params = as_mapping(perf_params)
    except RowError as exc:
        return ParsedOp(name=name, config=None, reason=f"{unknown}; {exc}")
    if not params or not any(key in params for key in SHAPE_KEYS):
        return ParsedOp(name=name, config=None, reason=unknown)  # no config to fall back on (annotations, hints)
    try:
        direction = pp.direction(params)
        atype = pp.attention_type(params)
        template = _AUTOGRAD_BY_TYPE.get(atype)
        if template is None:
            known = ", ".join(t.value for t in _AUTOGRAD_BY_TYPE)
            raise RowError(f"perf_params attention_type={atype.value!r} has no autograd spec to read it with ({known})")
        spec = replace(template, name=name, direction=direction, note=f"unknown op read as {template.name}")
        built = build_from_perf_params(spec, params)
    except RowError as exc:
        return ParsedOp(name=name, config=None, reason=f"{unknown}, and its perf_params give no config: {exc}")
    note = (
        f"config from perf_params: {name!r} is not in the registry, so its perf_params were read with "
        f"{template.name}'s rules in the direction the row states ({direction.value})"
    )
    return ParsedOp(
        name=name, config=built.config, reason=None, family=None, layout=built.layout,
        attention_type=built.attention_type, direction=direction, warnings=(note, *built.warnings),
        source=Source.PERF_PARAMS,
    )
