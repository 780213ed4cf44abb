"""Ground truth: what each emitted attention instance contains, for tests to compare the analysis against."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SyntheticInstance:
    """What one emitted call instance contains (forward or backward), for tests to compare against."""

    call_index: int
    repeat_index: int
    direction: str  # "fwd" | "bwd"
    flavour: str
    op_name: str  # the op whose subtree holds every kernel of the instance
    op_external_id: int | None
    sequence_number: int | None
    kernel_names: list[str] = field(default_factory=list)
    kernel_dur_ns: list[int] = field(default_factory=list)
    kernel_correlations: list[int] = field(default_factory=list)
    graph: str | None = None  # None (eager) | "capture" (recorded into a graph: no kernel ran) | "replay"

    @property
    def kernel_us(self) -> float:
        return sum(self.kernel_dur_ns) / 1000


@dataclass
class SyntheticTrace:
    """A built trace (the Kineto dict) and the ground truth of every attention instance in it."""

    trace: dict[str, Any]
    instances: list[SyntheticInstance]
