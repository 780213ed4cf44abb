"""What a recorded argument must be to play a role: a q/k/v slot holds an attention tensor (a float, fp8 or int8
dtype, never an index), a causal slot a bool, a softmax_scale slot a positive number, a dropout_p slot a number in
[0, 1], a window edge an integer >= -1; and whether a row's known slots hold the roles a signature gives them.

The checks are written once here: signature choice (`ops.choice`), inference (`ops.infer`) and the batch parser's
grouping (`role_fits`, so that a group's rows all choose the same signature) use them alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sdpa_analyzer.perf_models.dtypes import try_normalize_dtype
from sdpa_analyzer.perf_models.literals import (
    LiteralParseError,
    parse_bool_str,
    parse_float_str,
    parse_int_str,
    parse_literal,
)
from sdpa_analyzer.perf_models.ops.row import Row, is_blank
from sdpa_analyzer.perf_models.ops.specs import Signature

# element types of index / flag tensors (cu_seqlens, page tables, masks): never q, k, v, dout or out
INDEX_DTYPES = frozenset({"int32", "int64", "bool"})


def is_attention_dtype(raw: str | None) -> bool:
    """A tensor dtype q/k/v can have: floating point, fp8, or the int8 / uint8 of quantized attention."""
    canon = try_normalize_dtype(raw) if raw else None
    return canon is not None and canon not in INDEX_DTYPES


def is_index_dtype(raw: str | None) -> bool:
    canon = try_normalize_dtype(raw) if raw else None
    return canon in ("int32", "int64")


# --- scalar roles ------------------------------------------------------------------------------------------------


# Each test: does a non-blank recorded value fit the role? A value that reads as missing ('None', 'nan') fits here
# and is reported when it is read (the Row accessors name the slot).


def _bool(raw: Any) -> bool:
    parse_bool_str(raw)
    return True


def _int(raw: Any) -> bool:
    parse_int_str(raw)
    return True


def _scale(raw: Any) -> bool:
    value = parse_float_str(raw)
    return value is None or (math.isfinite(value) and value > 0)


def _dropout(raw: Any) -> bool:
    value = parse_float_str(raw)
    return value is None or 0.0 <= value <= 1.0


def _window_edge(raw: Any) -> bool:
    value = parse_int_str(raw)
    return value is None or value >= -1


# role -> the test a non-blank recorded value must pass to play it (a parse error is a failure)
ROLE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "causal": _bool,
    "custom_mask_type": _int,
    "dropout_p": _dropout,
    "softmax_scale": _scale,
    "window_size_left": _window_edge,
    "window_size_right": _window_edge,
    "max_seqlen_q": _int,
    "max_seqlen_k": _int,
    "window_size": _int,  # aten mem-efficient's int window
}


def role_fits(role: str, raw: Any) -> bool:
    """Whether a non-blank recorded value can play `role` (see ROLE_CHECKS); a parse error is a misfit."""
    try:
        return ROLE_CHECKS[role](raw)
    except LiteralParseError:
        return False


def window_list(raw: Any) -> tuple[int, ...] | None:
    """A (left, right[, sink]) window argument as integers (None entries, FlashAttention-4's "no limit", are -1);
    None when the value is not such a list."""
    try:
        value = parse_literal(raw) if isinstance(raw, str) else raw
    except LiteralParseError:
        return None
    if not isinstance(value, list | tuple) or len(value) not in (2, 3):
        return None
    out = []
    for x in value:
        if x is None:
            out.append(-1)
        elif isinstance(x, int) and not isinstance(x, bool) and x >= -1:
            out.append(x)
        else:
            return None
    return tuple(out)


# --- known signatures --------------------------------------------------------------------------------------------


def _scalar_slots(sig: Signature) -> tuple[tuple[int | None, str, bool], ...]:
    """(slot, role, required) of every scalar a signature reads."""
    return (
        (sig.causal, "causal", True),
        (sig.custom_mask_type, "custom_mask_type", True),
        (sig.dropout, "dropout_p", sig.dropout_required),
        (sig.scale, "softmax_scale", False),
        (sig.window_left, "window_size_left", False),
        (sig.window_right, "window_size_right", False),
        (sig.max_seqlen_q, "max_seqlen_q", False),
        (sig.max_seqlen_k, "max_seqlen_k", False),
        (sig.efficient_window, "window_size", False),
    )


def misfit(row: Row, sig: Signature, appended: bool = False) -> str | None:
    """Why `row` cannot be this signature, or None when every known slot holds its role.

    `appended`: accept more arguments than the signature was seen with (its known slots are all that is read).
    """
    n = row.n_args
    lo, hi = sig.n_args
    if n is not None and (n < lo or (n > hi and not appended)):
        return f"{n} arguments, expected {lo}..{hi}" if lo != hi else f"{n} arguments, expected {lo}"
    tensor_slots = [(sig.q, "q"), (sig.k, "k"), (sig.v, "v")]
    if sig.dout is not None:
        tensor_slots.insert(0, (sig.dout, "dout"))
    for slot, what in tensor_slots:
        if row.dims is not None and len(row.tensor_dims(slot)) < 2:
            return f"slot {slot} ({what}) is not a tensor (shape {row.tensor_dims(slot)})"
        if row.types is not None and not is_attention_dtype(row.type_at(slot)):
            return f"slot {slot} ({what}) has Input type {row.type_at(slot)!r}, not an attention tensor dtype"
    if row.concrete is None:
        return None  # nothing more to check; missing values are reported when they are read
    # A trace that records no scalar values writes '' in every slot: then only the arity can choose,
    # and the missing values are reported when they are read.
    no_values = all(is_blank(c) for c in row.concrete)
    for slot, role, required in _scalar_slots(sig):
        if slot is None:
            continue
        if slot >= len(row.concrete):
            if required:
                return f"slot {slot} ({sig.causal_name if role == 'causal' else role}) is missing"
            continue
        raw = row.concrete[slot]
        name = sig.causal_name if role == "causal" else role
        if is_blank(raw):
            if required and not no_values:
                return f"slot {slot} ({name}) is empty"
            continue
        if not role_fits(role, raw):
            return f"slot {slot} ({name}) is {raw!r:.30}"
    for slot in sig.tensor_slots:
        if slot < len(row.concrete) and not is_blank(row.concrete[slot]):
            return f"slot {slot} (a tensor argument) holds the value {row.concrete[slot]!r:.30}"
    if sig.window is not None and not is_blank(row.raw(sig.window)) and window_list(row.raw(sig.window)) is None:
        return f"slot {sig.window} (window_size) is {row.raw(sig.window)!r:.30}"
    return None
