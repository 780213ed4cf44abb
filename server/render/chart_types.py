"""What a roofline chart is drawn from and what it drew: plain data, no matplotlib.

Kept apart from `server.render.plots` so scoring and the tools can build chart inputs without importing
matplotlib (about 40 MB and half a second), which only a plot or a report call needs.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

Direction = Literal["fwd", "bwd"]


class RooflinePoint(BaseModel):
    """One op row to place on the chart."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(description="short label drawn next to the marker, e.g. 'B16 H16 N559 d64 causal'")
    intensity: float | None = Field(description="arithmetic intensity, FLOPs/byte")
    achieved_tflops: float | None = Field(description="achieved throughput, TFLOPS")
    time_ms: float = Field(
        ge=0, allow_inf_nan=False, description="total GPU kernel time of the row, ms (sets the marker area)"
    )
    direction: Direction
    has_model: bool
    reason: str | None = Field(default=None, description="why there is no model (shown for unplotted ops)")
    name: str
    category: str
    efficiency_pct: float | None = Field(default=None, description="% of roofline (drawn on the label; > 100: anomaly)")
    work_bound: str | None = Field(
        default=None, description="exact | lower | upper | unknown: a bounded row's efficiency is a bound (≥ / ≤)"
    )


class Ceilings(BaseModel):
    """The peaks the chart's ceilings are drawn at."""

    model_config = ConfigDict(frozen=True)

    peak_tflops: float = Field(gt=0, allow_inf_nan=False, description="compute ceiling, TFLOPS")
    peak_tbs: float = Field(gt=0, allow_inf_nan=False, description="HBM bandwidth ceiling, TB/s")
    compute_spec: str = Field(description="e.g. matrix_bf16")
    gpu_name: str
    peak_kind: str = Field(description="achievable | datasheet | metadata …")


class PlottedPoint(NamedTuple):
    x: float  # FLOPs/byte, as drawn
    y: float  # TFLOPS, as drawn
    area: float  # marker area in pt², as drawn
    direction: str
    label: str
    name: str
    time_share: float  # time_ms / total time of all input points (plotted or not)
    labelled: bool  # whether its short label is drawn
    anomaly: bool = False  # drawn as an anomaly (efficiency above ANOMALY_PCT: a thick red edge), read back
    centre_px: tuple[float, float] = (0.0, 0.0)  # the marker's centre in display px


class PlacedLabel(NamedTuple):
    """A drawn point label, read back from its artist after drawing (display px, origin bottom left)."""

    label: str
    name: str
    box_px: tuple[float, float, float, float]  # the label's drawn box (x0, y0, x1, y1)
    anchor_px: tuple[float, float]  # the centre of the marker it names
    leader: bool  # moved away from its marker, with a line back to it
    overlap_px2: float  # what it still overlaps when no free spot was found (0 otherwise)
    text: str = ""  # the text drawn: the shape label and the efficiency


class UnplottedPoint(NamedTuple):
    label: str
    name: str
    direction: str
    time_ms: float
    reason: str


class RooflinePlot(BaseModel):
    """The PNG plus the exact data it shows (read back from the artists after drawing)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    png: bytes
    width_px: int
    height_px: int
    points: list[PlottedPoint]  # in input order
    unplotted: list[UnplottedPoint]  # in input order
    compute_ceiling: tuple[tuple[float, ...], tuple[float, ...]]  # (xs, ys)
    bandwidth_ceiling: tuple[tuple[float, ...], tuple[float, ...]]  # (xs, ys)
    ridge: tuple[float, float]  # (FLOPs/byte, TFLOPS)
    x_limits: tuple[float, float]
    y_limits: tuple[float, float]
    x_tick_labels: list[str]  # labelled major ticks inside the limits
    y_tick_labels: list[str]
    unplotted_text: str  # the text box contents ('' when every op is plotted)
    note: str | None  # NO_OPS_NOTE (no points) or NO_MODELED_NOTE (none plottable), drawn mid-axes
    labels: list[PlacedLabel] = Field(default_factory=list)  # longest op first
    axes_box_px: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # the plotting area (x0, y0, x1, y1)
    warning: str | None = None  # drawn in red above the chart (e.g. findings ranked on another GPU)
    legend: list[str] = Field(default_factory=list)  # the legend's entries, as drawn
    ridge_note_box_px: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # the ridge note's drawn box
    ridge_note_zorder: float = 0.0  # above the markers' (MARKER_ZORDER), so a dense cloud never hides it
