"""Where a row's shapes came from, and what stays unknown.

Sources, best first: the op's recorded inputs (Input Dims: the call's own op, or the captured op of a graph replay),
the linked forward op (a shapeless autograd backward), the kernels (their names: head dim, dtype, tiles, a stated
causal mask, perf_models.kernels.kernel_shape_hints; their launch grids where the library fixes the grid's meaning:
batch, query heads, a sequence-length range, grid_shape_hints), none. A row that has no full config says which
fields stayed unknown, and its advice names the recording that gives them (docs/recording.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdpa_analyzer.perf_models.kernels import grid_shape_hints, kernel_shape_hints
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.grids import unpack_grid

RECORDED = "recorded inputs"
LINKED_FORWARD = "linked forward"
KERNEL_NAMES = "kernel names"
NONE = "none"

# the fields of an attention config (perf_params keys) a kernel name can give, and those it never gives
_FROM_KERNEL = {"head_dim": "d_h_qk", "head_dim_v": "d_h_v", "dtype": "dtype", "causal": "causal", "batch": "B",
                "heads_q": "H_Q"}
CONFIG_FIELDS = ("B", "H_Q", "H_KV", "N_Q", "N_KV", "d_h_qk", "d_h_v", "dtype", "causal")

RECORDING_DOC = "docs/recording.md"
RECORDING_HINT = (
    "record the trace with torch.profiler(activities=[CPU, CUDA], record_shapes=True) around one step run outside "
    f"a CUDA graph ({RECORDING_DOC})"
)


def main_kernel_hints(ctx: TraceContext, calls: list[Call]) -> dict[str, Any]:
    """What the calls' longest attention kernel says: its name (kernel_shape_hints) and, when every launch of it in
    these calls had one launch grid, the grid (grid_shape_hints: batch, query heads, a sequence-length range); {}
    when nothing."""
    rows = np.concatenate([c.kernels for c in calls]).astype(np.int64) if calls else np.zeros(0, np.int64)
    if len(rows) == 0:
        return {}
    names = ctx.ev.gpu["name"][rows]
    dur = np.maximum(ctx.ev.gpu["dur"][rows], 0.0)
    totals: dict[int, float] = {}
    for code, us in zip(names.tolist(), dur.tolist(), strict=True):
        totals[code] = totals.get(code, 0.0) + us
    for code in sorted(totals, key=lambda k: -totals[k]):
        name = ctx.ev.names[code]
        hints = kernel_shape_hints(name)
        if not hints:
            continue
        grids = np.unique(ctx.ev.gpu["grid"][rows[names == code]])
        grid = unpack_grid(int(grids[0])) if len(grids) == 1 else None
        if grid is not None:
            hints.update(grid_shape_hints(name, grid))
        return hints
    return {}


def describe(c: Call, has_config: bool, perf_params: dict[str, Any] | None,
             hints: dict[str, Any]) -> tuple[str, list[str]]:  # fmt: skip
    """(shape source, the config fields still unknown) of a row whose first call is `c`."""
    if c.has_shapes:
        return RECORDED, []
    if c.direction == "bwd" and c.forward is not None and perf_params:
        return LINKED_FORWARD, []
    if has_config:
        return RECORDED, []
    known = {_FROM_KERNEL[k] for k in hints if k in _FROM_KERNEL}
    if "d_h_qk" in known and "d_h_v" not in known:
        known.add("d_h_v")  # one head dim in the name: V's is Q·K's
    unknown = [f for f in CONFIG_FIELDS if f not in known]
    return (KERNEL_NAMES if hints else NONE), unknown


def advice(c: Call, source: str, hints: dict[str, Any], unknown: list[str]) -> str | None:
    """What a row without full shapes says (beside the registry's reason): whose kernels, what the kernel names gave,
    what stays unknown, and the recording that gives the rest. None for a row whose shapes are known."""
    if not unknown:
        return None
    said = ", ".join(f"{k} {v}" for k, v in hints.items()) or "nothing of the shape"
    missing = ", ".join(unknown)
    if c.kind == "graph":
        return (
            f"replayed from a CUDA/HIP graph: the kernels give {said}; {missing} stay unknown. A serving "
            "profiler's capture folder gives them (capture_dir); for a graph the model captures itself "
            f"(torch.cuda.graph / CUDAGraph) there is none: {RECORDING_HINT}"
        )
    shapes = "no Input Dims" if c.dims is None else "Input Dims the registry cannot read"
    where = (f"launched under {c.name!r}, an op the registry does not know ({shapes})" if c.kind == "kernel"
             else f"{c.name} has no Input Dims")
    return f"{where}: the kernels give {said}; {missing} stay unknown — {RECORDING_HINT}"
