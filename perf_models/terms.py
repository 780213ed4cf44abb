"""The roofline's names and thresholds that schemas and tables name: the bytes models and the anomaly edges.

Kept apart from `perf_models.roofline` (which computes with them) and free of numpy, so that declaring a tool
(its input schema, `--help`) does not load the math: `server.vocab` gives them their schema types.
"""

from __future__ import annotations

BYTES_MODELS = ("compulsory", "tiled")
ANOMALY_PCT = 100.0  # efficiency above this % of the roofline is an anomaly, never "excellent"
ANOMALY_FLAG_PCT = 110.0  # above this it is flagged: too far above the roofline to project a gap from

__all__ = ["ANOMALY_FLAG_PCT", "ANOMALY_PCT", "BYTES_MODELS"]
