"""The garbage-collector pause of the server's bulk steps: `perf_models.gc_pause.gc_paused` (the one
implementation, which the batch op parser also uses), under the name the server's modules import."""

from __future__ import annotations

from sdpa_analyzer.perf_models.gc_pause import gc_paused

__all__ = ["gc_paused"]
