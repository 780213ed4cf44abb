"""Small vocabularies shared by the op registry and the kernel classifier."""

from __future__ import annotations

from enum import StrEnum

from sdpa_analyzer.perf_models.errors import PerfModelError


class Layout(StrEnum):
    """How q/k/v are laid out in the op's arguments (B batch, H heads, N sequence, D head dim)."""

    BHND = "BHND"  # aten SDPA ops
    BNHD = "BNHD"  # flash_attn, aiter, aten::_flash_attention_*, aten::_efficient_attention_*
    THD = "THD"  # varlen / packed tokens (total tokens, heads, dim)
    SBHD = "SBHD"  # TransformerEngine default qkv_format


class AttentionType(StrEnum):
    """What kind of attention implementation runs: five different things (docs/perf-model.md §5)."""

    FLASH = "flash"
    MEMORY_EFFICIENT = "memory_efficient"
    CUDNN = "cudnn"
    MATH = "math"  # unfused: GEMM + softmax + GEMM
    PAGED = "paged"
    UNKNOWN = "unknown"  # a dispatcher op whose backend is decided below it


class CausalRule(StrEnum):
    """How an op's causal flag maps to a mask alignment (docs/perf-model.md §1)."""

    BOTTOM_RIGHT = "bottom_right"
    TOP_LEFT = "top_left"
    FROM_MASK_TYPE = "from_mask_type"  # custom_mask_type int / TE attn_mask_type string decides


class Source(StrEnum):
    INPUT_DIMS = "input_dims"
    PERF_PARAMS = "perf_params"


class RowError(PerfModelError):
    """Why one op row cannot be turned into a config; its message becomes ParsedOp.reason."""


# Kernels replayed from a CUDA/HIP graph without the capture trace that recorded their calls: the rows are named
# GRAPH_PREFIX + the kernel's short name, and every place that explains why they have no model says this.
GRAPH_PREFIX = "cuda_graph::"
GRAPH_REPLAY_REASON = (
    "CUDA/HIP-graph replay: the replayed kernels carry no tensor shapes and no op records their call; the shapes "
    "are in the capture trace the serving profiler saves beside the replay (pass --capture-dir / capture_dir: "
    "the run's capture_traces/ folder)"
)
