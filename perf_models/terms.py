"""The roofline's names and thresholds that schemas and tables name: the bytes models and the anomaly edges.

Kept apart from `perf_models.roofline` (which computes with them) and free of numpy, so that declaring a tool
(its input schema, `--help`) does not load the math: `server.vocab` gives them their schema types.
"""

from __future__ import annotations

BYTES_MODELS = ("compulsory", "tiled")
ANOMALY_PCT = 100.0  # efficiency above this % of the roofline is an anomaly, never "excellent"
ANOMALY_FLAG_PCT = 110.0  # above this it is flagged: too far above the roofline to project a gap from
# above the roofline the model, not the kernel, is wrong: a row says so with the reason (perf_models.assess), never a
# verdict. The reasons by what the row is: any call; a serving call modeled from its step's token sums.
INCONSISTENT = "model inconsistent"
INCONSISTENT_REASONS = (
    "the modeled work needs more time at the roofs than the call's kernels took — shapes that are not this call's, "
    "or a measured time that misses some of its kernels",
    "a serving call modeled from its step's token sums, which may cover more than this call's kernels (a step run in "
    "several calls per layer) or layers whose sliding window or MLA latent cache the op does not record (the "
    "model's config.json resolves those)",
)

__all__ = ["ANOMALY_FLAG_PCT", "ANOMALY_PCT", "BYTES_MODELS", "INCONSISTENT", "INCONSISTENT_REASONS"]
