"""One attention call found in a trace (fused op, unfused pattern, or graph-replayed kernels)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Call:
    category: str
    name: str  # the row's op name
    kind: str  # fused | unfused | graph
    node: int  # host node of the row op (-1: graph-replayed kernels)
    top: int  # host node whose subtree launched the kernels (-1: graph)
    thread: int  # thread code of the CPU side
    ts: float  # CPU span start (µs)
    dur: float  # CPU duration of the row op (µs)
    ordinal: int  # event index of the row op in the trace (ex_UID)
    dims: tuple[Any, ...] | None = None
    types: tuple[Any, ...] | None = None
    strides: tuple[Any, ...] | None = None
    concrete: tuple[Any, ...] | None = None
    kernels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # gpu rows
    # KV-cache write kernels feeding this call (inside its op, or a sibling write op just before it): accounted
    # in their own columns, never in the call's kernel time
    kv_kernels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    captured: bool = False  # made while a CUDA/HIP graph was being captured: its kernels run in the replay
    launched: tuple[str, ...] = ()  # captured calls: the kernel names its launches named (ROCm runtime args)
    direction: str = "fwd"
    chain: list[str] = field(default_factory=list)  # op names from the call's top op down to the row op
    seq_keys: list[tuple[Any, int]] = field(default_factory=list)  # (tid, Sequence number) of chain ops
    fwd_key: tuple[Any, int] | None = None  # backward: (Fwd thread id, Sequence number)
    forward: Call | None = None  # backward: the linked forward call
    attention_type: str | None = None  # hint when the call itself says (unfused, paged)
    extra_params: dict[str, Any] = field(default_factory=dict)  # perf_params additions (vLLM sums, ...)
    annotation: str | None = None
    copy_us: float = 0.0
    copy_count: int = 0
    anchor: int = -1  # host node used to match calls across traces (module / parent op)
    warnings: list[str] = field(default_factory=list)

    @property
    def has_shapes(self) -> bool:
        return has_tensor_shapes(self.dims)


def has_tensor_shapes(dims: Any) -> bool:
    if not isinstance(dims, tuple):
        return False
    return any(isinstance(d, tuple) and len(d) > 0 and all(isinstance(v, int) for v in d) for d in dims)


def tensor_shapes(dims: Any) -> list[tuple[int, ...]]:
    """The non-empty integer shapes among an op's Input Dims, in argument order."""
    if not isinstance(dims, tuple):
        return []
    return [d for d in dims if isinstance(d, tuple) and d and all(isinstance(v, int) for v in d)]


def held_gpu_events(calls: Iterable[Call], n_gpu: int) -> np.ndarray:
    """A mask over the trace's `n_gpu` GPU events: those some call holds (its kernels or its KV-cache writes)."""
    held = np.zeros(n_gpu, dtype=bool)
    for c in calls:
        held[c.kernels] = True
        held[c.kv_kernels] = True
    return held
