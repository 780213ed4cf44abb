"""Where a row's shapes came from, and what stays unknown.

Sources, best first: the op's recorded inputs (Input Dims: the call's own op, or the captured op of a graph replay),
the linked forward op (a shapeless autograd backward), the kernels (their names: head dim, dtype, tiles, the causal
flag of the template or a stated causal mask, perf_models.kernel_shapes: `kernel names`; with their launch grids
where the family's launch code fixes the grid's meaning: batch, heads, a sequence-length range,
perf_models.kernel_grids: `kernel names and launch grid`), none. A row that has no full config says which
fields stayed unknown, and its advice names the recording that gives them (docs/recording.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdpa_analyzer.perf_models.kernel_grids import grid_shape_hints
from sdpa_analyzer.perf_models.kernel_shapes import kernel_shape_hints
from sdpa_analyzer.perf_models.kernels import KernelRole, classify_kernel
from sdpa_analyzer.perf_models.ops.hinted import RANGE_KEY, assumed_fields, bounded_params
from sdpa_analyzer.perf_models.ops.types import AttentionType
from sdpa_analyzer.perf_models.registry import lookup
from sdpa_analyzer.server.ingest.calls import Call
from sdpa_analyzer.server.ingest.context import TraceContext
from sdpa_analyzer.server.ingest.grids import unpack_grid
from sdpa_analyzer.server.ingest.kernel_calls import NO_OP

RECORDED = "recorded inputs"
LINKED_FORWARD = "linked forward"
KERNEL_NAMES = "kernel names"
KERNEL_GRID = "kernel names and launch grid"
NONE = "none"

# the fields of an attention config (perf_params keys) a kernel's name or launch grid can give
_FROM_KERNEL = {"head_dim": "d_h_qk", "head_dim_v": "d_h_v", "dtype": "dtype", "causal": "causal", "batch": "B",
                "heads_q": "H_Q", "heads_kv": "H_KV"}
# what only a launch grid gives (perf_models.kernel_grids): a row with one of these has its shape from the grid too
_FROM_GRID = ("batch", "heads_q", "heads_kv", "heads_x_batch", "heads_x_splits", "splits", "seq_q_range",
              "seq_kv_range", "seq_q_max_range", "q_tiles", "kv_tiles", "q_tiles_max",
              "q_tiles_packed")
GRID_SAYS = "grid_says"  # why a launch grid gave no shape (perf_models.kernel_grids.grid_shape_hints)
CONFIG_FIELDS = ("B", "H_Q", "H_KV", "N_Q", "N_KV", "d_h_qk", "d_h_v", "dtype", "causal")

RECORDING_DOC = "docs/recording.md"
RECORDING_HINT = (
    "record the trace with torch.profiler(activities=[CPU, CUDA], record_shapes=True) around one step run outside "
    f"a CUDA graph ({RECORDING_DOC})"
)


def main_kernel_hints(ctx: TraceContext, calls: list[Call]) -> dict[str, Any]:
    """What the calls' longest attention kernel says: its name (kernel_shape_hints) and, when every launch of it in
    these calls had one launch grid, the grid read by its family's declared layout (grid_shape_hints: batch, heads,
    a sequence-length range; or `grid_says`: why the grid holds none); {} when nothing."""
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
        if classify_kernel(name)[0] is not KernelRole.ATTENTION:
            continue
        hints: dict[str, Any] = kernel_shape_hints(name)
        grids = np.unique(ctx.ev.gpu["grid"][rows[names == code]])
        grids = grids[grids >= 0]
        if len(grids) == 1:
            hints.update(grid_shape_hints(name, unpack_grid(int(grids[0]))))  # type: ignore[arg-type]
        elif len(grids) > 1:
            hints[GRID_SAYS] = f"its launches ran on {len(grids)} different grids (calls of several shapes)"
        return hints
    return {}


def bound_params(c: Call, hints: dict[str, Any], attention_type: str | None) -> tuple[dict[str, Any] | None, str]:
    """(perf_params of a lower-bound config, what it assumes) for a call whose kernel gives all of its shape but the
    sequence length, which its grid gives as a range (perf_models.ops.hinted); (None, why not) otherwise."""
    atype = attention_type if attention_type in {t.value for t in AttentionType} else AttentionType.FLASH.value
    return bounded_params(hints, c.direction or "fwd", str(atype), _fixed_length_caller(c))


def _fixed_length_caller(c: Call) -> bool:
    """Whether the op around the call is a known one that passes one length for every sequence: in the registry,
    with no cu_seqlens, paged cache or page table among its arguments, and not a varlen autograd node."""
    spec = lookup(c.name) if c.kind != "graph" else None
    if spec is None or spec.attention_type is AttentionType.PAGED or "varlen" in spec.name.lower():
        return False
    return not any(s.cu_seqlens_q is not None or s.kv_indptr is not None or s.block_table is not None or s.paged_cache
                   for s in spec.signatures)  # fmt: skip


def describe(c: Call, has_config: bool, perf_params: dict[str, Any] | None,
             hints: dict[str, Any]) -> tuple[str, list[str]]:  # fmt: skip
    """(shape source, the config fields still unknown) of a row whose first call is `c`. A call made from its kernels
    under an op the registry does not know may carry that op's Input Dims (record_shapes on): they are the caller's
    arguments, not an attention config the registry read, so its shapes still come from the kernels. A row modeled
    as a lower bound from its kernel (perf_params with a sequence-length range) lists the fields its bound assumed."""
    bounded = bool(perf_params) and RANGE_KEY in perf_params  # type: ignore[operator]
    if c.has_shapes and (has_config or c.kind != "kernel") and not bounded:
        return RECORDED, []
    if c.direction == "bwd" and c.forward is not None and perf_params:
        return LINKED_FORWARD, assumed_fields(perf_params)  # a bound forward's assumptions are the backward's too
    if has_config and not bounded:
        return RECORDED, []
    known = {_FROM_KERNEL[k] for k in hints if k in _FROM_KERNEL}
    if "d_h_qk" in known and "d_h_v" not in known:
        known.add("d_h_v")  # one head dim in the name: V's is Q·K's
    unknown = [f for f in CONFIG_FIELDS if f not in known]
    if any(k in hints for k in _FROM_GRID):
        return KERNEL_GRID, unknown
    return (KERNEL_NAMES if any(k != GRID_SAYS for k in hints) else NONE), unknown


def advice(c: Call, source: str, hints: dict[str, Any], unknown: list[str]) -> str | None:
    """What a row without full shapes says (beside the registry's reason): whose kernels, what the kernel names gave,
    what stays unknown, and the recording that gives the rest. None for a row whose shapes are known."""
    if not unknown:
        return None
    said = ", ".join(f"{k} {v}" for k, v in hints.items() if k != GRID_SAYS) or "nothing of the shape"
    if GRID_SAYS in hints:
        said += f" (the launch grid gives nothing: {hints[GRID_SAYS]})"
    missing = ", ".join(unknown)
    if c.kind == "graph":
        return (
            f"replayed from a CUDA/HIP graph: the kernels give {said}; {missing} stay unknown. A serving "
            "profiler's capture folder gives them (capture_dir); for a graph the model captures itself "
            f"(torch.cuda.graph / CUDAGraph) there is none: {RECORDING_HINT}"
        )
    shapes = "no Input Dims" if c.dims is None else "Input Dims the registry cannot read"
    if c.kind == "kernel" and c.node == NO_OP:
        # no host event around the launch: an extension called from Python through pybind11 (as SageAttention's CUDA
        # kernels are in its pybind releases) records no op, so no recording gives its shapes
        where = ("launched outside every op (an extension called through pybind11 records no op, so no Input Dims; "
                 "torch.profiler.record_function around the call names it)")
        return f"{where}: the kernels give {said}; {missing} stay unknown"
    if c.kind == "kernel" and c.node < 0:
        return f"its launch record is missing (lost runtime events): the kernels give {said}; {missing} stay unknown"
    where = (f"launched under {c.name!r}, an op the registry does not know ({shapes})" if c.kind == "kernel"
             else f"{c.name} has no Input Dims")
    return f"{where}: the kernels give {said}; {missing} stay unknown — {RECORDING_HINT}"
