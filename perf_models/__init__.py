"""Pure numeric performance models for attention: shapes, masks, FLOPs, bytes, hardware peaks, roofline.

No MCP, no file I/O beyond the packaged GPU data files. Usable as a plain library.
"""

from sdpa_analyzer.perf_models.config import (
    CAUSAL_BOTTOM_RIGHT,
    CAUSAL_TOP_LEFT,
    NO_MASK,
    Alignment,
    AttentionConfig,
    BwdConvention,
    Direction,
    Mask,
    MaskKind,
    PagedInfo,
    VarlenInfo,
)
from sdpa_analyzer.perf_models.errors import ConfigError, PerfModelError, UnknownArchError

__all__ = [
    "CAUSAL_BOTTOM_RIGHT",
    "CAUSAL_TOP_LEFT",
    "NO_MASK",
    "Alignment",
    "AttentionConfig",
    "BwdConvention",
    "ConfigError",
    "Direction",
    "Mask",
    "MaskKind",
    "PagedInfo",
    "PerfModelError",
    "UnknownArchError",
    "VarlenInfo",
]
