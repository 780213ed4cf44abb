"""Roofline chart: one PNG per category, deterministic bytes, and the exact data that was drawn.

Pure rendering: callers build `RooflinePoint`s (one per op row) and `Ceilings` (the resolved peaks) and
get back a `RooflinePlot` holding the PNG bytes plus the coordinates read back from the matplotlib
artists, so tests can check what was plotted rather than that a file exists.

Units: intensity in FLOPs/byte, performance in TFLOPS, bandwidth in TB/s. TB/s × FLOPs/byte = TFLOPS,
so the bandwidth ceiling is y = x · peak_tbs and the ridge point is x = peak_tflops / peak_tbs.
"""

from __future__ import annotations

import io
import math
import textwrap
import threading

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Annotation
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.render.chart_types import (
    Ceilings,
    PlacedLabel,
    PlottedPoint,
    RooflinePlot,
    RooflinePoint,
    UnplottedPoint,
)
from sdpa_analyzer.server.render.labels import Placement, overlap_areas, place_labels
from sdpa_analyzer.server.vocab import ANOMALY_PCT, BOUND_MARKS

# Marker style per direction: shape AND colour differ, so the chart reads in grayscale and for
# colour-blind readers (blue/orange is a colour-blind-safe pair).
DIRECTION_STYLE: dict[str, dict[str, str]] = {
    "fwd": {"marker": "o", "color": "#1f77b4", "name": "forward"},
    "bwd": {"marker": "^", "color": "#ff7f0e", "name": "backward"},
}
PNG_SOFTWARE = "sdpa-analyzer plot_roofline"  # the PNG's Software text: how plot_roofline knows its own files
# An anomaly (efficiency above ANOMALY_PCT of the roofline: impossible, so a wrong shape, peak or time) keeps its
# direction's shape and colour and gets a thick edge in this red, and a legend entry.
EDGES = {"normal": {"color": "#222222", "width": 0.6}, "anomaly": {"color": "#d50000", "width": 2.4}}
MARKER_ZORDER = 3
RIDGE_NOTE_ZORDER = 6  # above the markers and the labels: a dense cloud at the ridge never covers it
COMPUTE_CEILING_COLOR = "#b22222"
BANDWIDTH_CEILING_COLOR = "#2e7d32"
RIDGE_COLOR = "#000000"

# Area (pt²) of the marker of the op with the largest time; every other marker scales linearly with
# time, so area ∝ time share. The floor keeps an op with a tiny share visible as a dot.
MAX_MARKER_AREA = 1600.0
MIN_MARKER_AREA = 6.0
MIN_SIZE_PX = (300, 200)
UNPLOTTED_MAX_LINES = 28
UNPLOTTED_WRAP = 44
WARNING_FONT_PT = 8.5
WARNING_MAX_LINES = 3
WARNING_COLOR = "#b00020"
NO_OPS_NOTE = "no attention ops"
NO_MODELED_NOTE = "no op has a model: nothing to plot"

# Fixed style so the bytes do not depend on a user's matplotlibrc (DejaVu Sans ships with matplotlib).
_RC: dict[str, object] = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 9,
    "text.hinting": "force_autohint",
    "text.antialiased": True,
    "lines.antialiased": True,
    "path.simplify": False,
    "savefig.transparent": False,
}
# rcParams are process-global: serialize renders so concurrent tool calls cannot mix styles.
_RENDER_LOCK = threading.Lock()


def _decade_label(value: float, _pos: object = None) -> str:
    # Plain numbers (0.1, 1, 10, 1000, 10000) read faster than 10^x for engineers scanning a chart.
    return f"{value:.12g}"


def _unplotted_reason(point: RooflinePoint) -> str | None:
    """Why a point cannot go on log-log axes, or None when it can."""
    if not point.has_model:
        return point.reason or "no performance model for this op"
    for field, value in (("intensity", point.intensity), ("achieved TFLOPS", point.achieved_tflops)):
        if value is None:
            return point.reason or f"{field} unknown"
        if not math.isfinite(value) or value <= 0:
            return f"{field} is {value:g} (not plottable on a log axis)"
    return None


def _decade_floor(v: float) -> float:
    return float(10.0 ** math.floor(math.log10(v)))


def _decade_ceil(v: float) -> float:
    return float(10.0 ** math.ceil(math.log10(v)))


Limits = tuple[tuple[float, float], tuple[float, float]]


def _axis_limits(xs: np.ndarray, ys: np.ndarray, c: Ceilings) -> Limits:
    """Whole decades around the points and the ridge, with a little headroom above the roof."""
    ridge_x = c.peak_tflops / c.peak_tbs
    x_lo = _decade_floor(min(float(xs.min()) if xs.size else ridge_x / 100, ridge_x / 10) / 1.5)
    x_hi = _decade_ceil(max(float(xs.max()) if xs.size else ridge_x * 10, ridge_x * 10) * 1.5)
    y_hi = _decade_ceil(max(float(ys.max()) if ys.size else 0.0, c.peak_tflops) * 1.5)
    # show at least two decades below the roof so the slope is visible
    y_lo = _decade_floor(min(float(ys.min()) if ys.size else c.peak_tflops, c.peak_tflops / 100) / 1.5)
    return (x_lo, x_hi), (y_lo, y_hi)


def _marker_areas(times: np.ndarray) -> np.ndarray:
    t_max = float(times.max()) if times.size else 0.0
    if t_max <= 0:
        return np.full(times.shape, MIN_MARKER_AREA)
    return np.maximum(MAX_MARKER_AREA * times / t_max, MIN_MARKER_AREA)


def _shorten(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _shorten_middle(s: str, n: int) -> str:
    # op names differ at both ends (namespace, template arguments): keep both, cut the middle
    if len(s) <= n:
        return s
    head = (n - 1) // 2
    return s[:head] + "…" + s[len(s) - (n - 1 - head) :]


def _unplotted_box_text(unplotted: list[UnplottedPoint]) -> str:
    if not unplotted:
        return ""
    lines = [f"Not plotted ({len(unplotted)} op{'s' if len(unplotted) != 1 else ''}):"]
    for i, u in enumerate(unplotted):
        # the name on its own (shortened) line so wrapping never splits it mid-identifier
        detail = textwrap.wrap(
            f"[{u.direction}] {u.time_ms:.3g} ms: {u.reason}",
            width=UNPLOTTED_WRAP,
            initial_indent="   ",
            subsequent_indent="   ",
        )
        entry = [f"• {_shorten_middle(u.name, UNPLOTTED_WRAP - 2)}", *detail]
        if len(lines) + len(entry) > UNPLOTTED_MAX_LINES - 1:
            lines.append(f"… and {len(unplotted) - i} more (see the report table)")
            break
        lines.extend(entry)
    return "\n".join(lines)


def _validate_size(size_px: tuple[int, int], dpi: int) -> None:
    w, h = size_px
    if not (isinstance(w, int) and isinstance(h, int)) or w < MIN_SIZE_PX[0] or h < MIN_SIZE_PX[1]:
        raise InputError(f"size_px={size_px!r}: need integer pixels of at least {MIN_SIZE_PX}")
    if not isinstance(dpi, int) or not 20 <= dpi <= 600:
        raise InputError(f"dpi={dpi!r}: need an integer between 20 and 600")


def render_roofline_png(
    points: list[RooflinePoint],
    ceilings: Ceilings,
    *,
    title: str,
    bytes_model: str = "compulsory",
    top_labels: int = 5,
    size_px: tuple[int, int] = (1200, 800),
    dpi: int = 100,
    warning: str | None = None,
) -> RooflinePlot:
    """Draw the roofline of `points` against `ceilings`; same input → same PNG bytes.

    `warning` (e.g. "findings were ranked on another GPU") is drawn in red above the chart."""
    _validate_size(size_px, dpi)
    if top_labels < 0:
        raise InputError(f"top_labels={top_labels}: need 0 or more")
    with _RENDER_LOCK, mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams.update(_RC)
        return _render(points, ceilings, title, bytes_model, top_labels, size_px, dpi, warning)


def _render(
    points: list[RooflinePoint],
    c: Ceilings,
    title: str,
    bytes_model: str,
    top_labels: int,
    size_px: tuple[int, int],
    dpi: int,
    warning: str | None,
) -> RooflinePlot:
    reasons = [_unplotted_reason(p) for p in points]
    plotted_idx = np.array([i for i, r in enumerate(reasons) if r is None], dtype=np.int64)
    unplotted = [
        UnplottedPoint(p.label, p.name, p.direction, p.time_ms, r)
        for p, r in zip(points, reasons, strict=True)
        if r is not None
    ]
    times_all = np.array([p.time_ms for p in points], dtype=np.float64)
    total_time = float(times_all.sum())
    xs = np.array([points[i].intensity for i in plotted_idx], dtype=np.float64)
    ys = np.array([points[i].achieved_tflops for i in plotted_idx], dtype=np.float64)
    times = times_all[plotted_idx] if plotted_idx.size else np.zeros(0)
    areas = _marker_areas(times)
    dirs = np.array([points[i].direction for i in plotted_idx], dtype=object)
    # top ops by time; ties broken by input order so the choice is deterministic
    order = np.lexsort((np.arange(times.size), -times))
    labelled = np.zeros(times.size, dtype=bool)
    labelled[order[:top_labels]] = True

    # +0.25 px: Agg truncates figure size to whole pixels, and w/dpi*dpi can land just below w.
    fig = Figure(figsize=((size_px[0] + 0.25) / dpi, (size_px[1] + 0.25) / dpi), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.075, 0.09, 0.64, 0.80))
    ax.set_xscale("log")
    ax.set_yscale("log")
    (x_lo, x_hi), (y_lo, y_hi) = _axis_limits(xs, ys, c)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10.0, numticks=40))
        axis.set_major_formatter(FuncFormatter(_decade_label))
        axis.set_minor_locator(LogLocator(base=10.0, subs=tuple(range(2, 10)), numticks=40))
        axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="#cccccc", linewidth=0.8)
    ax.grid(True, which="minor", color="#eeeeee", linewidth=0.5)
    ax.set_axisbelow(True)
    ax.set_xlabel("Arithmetic intensity (FLOPs/byte)")
    ax.set_ylabel("Achieved throughput (TFLOPS)")
    ax.set_title(title, loc="left")

    ridge_x = c.peak_tflops / c.peak_tbs
    compute_line = ax.plot(
        [ridge_x, x_hi], [c.peak_tflops, c.peak_tflops], color=COMPUTE_CEILING_COLOR, linewidth=2, zorder=2
    )[0]
    bw_x = np.geomspace(x_lo, ridge_x, 9)
    bandwidth_line = ax.plot(bw_x, bw_x * c.peak_tbs, color=BANDWIDTH_CEILING_COLOR, linewidth=2, zorder=2)[0]
    ridge_marker = ax.plot(
        [ridge_x], [c.peak_tflops], linestyle="none", marker="D", markersize=7, color=RIDGE_COLOR, zorder=4
    )[0]
    collections = {}
    anomalous = np.array([_is_anomaly(points[i]) for i in plotted_idx], dtype=bool)
    for d in ("fwd", "bwd"):
        sel = np.flatnonzero(dirs == d)
        # draw large markers first so small ones stay on top and visible
        sel = sel[np.lexsort((sel, -areas[sel]))]
        style = DIRECTION_STYLE[d]
        edge = [EDGES["anomaly" if a else "normal"] for a in anomalous[sel].tolist()]
        coll = ax.scatter(
            xs[sel],
            ys[sel],
            s=areas[sel],
            marker=style["marker"],
            c=style["color"],
            alpha=0.7,
            edgecolors=[e["color"] for e in edge],
            linewidths=[e["width"] for e in edge],
            zorder=MARKER_ZORDER,
        )
        collections[d] = (sel, coll)

    marker_boxes = _marker_boxes_px(ax, xs, ys, areas, anomalous)
    ridge_label = _draw_ridge_note(ax, fig, ridge_x, c.peak_tflops, marker_boxes)
    label_artists = _draw_labels(
        ax, fig, points, plotted_idx, xs, ys, areas, order[:top_labels], ridge_label, marker_boxes
    )

    note = None
    if not points:
        note = NO_OPS_NOTE
    elif plotted_idx.size == 0:
        note = NO_MODELED_NOTE
    if note is not None:
        ax.text(
            0.5,
            0.5,
            note,
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=16,
            color="#555555",
        )

    peak_label = f"{c.compute_spec}, {c.peak_kind}"
    # a direction is in the legend only when the chart has a marker of it (a forward-only chart says nothing
    # about backward ops), and so is the anomaly edge
    present = [d for d in ("fwd", "bwd") if (dirs == d).any()]
    handles = [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=DIRECTION_STYLE[d]["marker"],
            color=DIRECTION_STYLE[d]["color"],
            markersize=9,
            markeredgecolor=EDGES["normal"]["color"],
            label=DIRECTION_STYLE[d]["name"],
        )
        for d in present
    ]
    if anomalous.any():
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker=DIRECTION_STYLE[present[0]]["marker"] if len(present) == 1 else "s",
                color="#ffffff",
                markersize=9,
                markeredgecolor=EDGES["anomaly"]["color"],
                markeredgewidth=EDGES["anomaly"]["width"],
                label=f"anomaly: above {ANOMALY_PCT:g} % of\nthe roofline (check the row)",
            )
        )
    handles += [
        Line2D(
            [],
            [],
            color=COMPUTE_CEILING_COLOR,
            linewidth=2,
            label=f"compute {c.peak_tflops:.4g} TFLOPS\n({peak_label})",
        ),
        Line2D([], [], color=BANDWIDTH_CEILING_COLOR, linewidth=2, label=f"HBM {c.peak_tbs:.4g} TB/s"),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="D",
            color=RIDGE_COLOR,
            markersize=6,
            label=f"ridge {ridge_x:.3g} FLOPs/byte",
        ),
    ]
    legend = fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.75, 0.89), frameon=True)
    fig.text(0.75, 0.975, f"{_shorten(c.gpu_name, 40)}\nbytes model: {bytes_model}", fontsize=10, va="top")
    fig.text(0.75, 0.555, "marker area ∝ share of time", fontsize=8.5, va="top", color="#444444")
    box_text = _unplotted_box_text(unplotted)
    if box_text:
        fig.text(
            0.75,
            0.52,
            box_text,
            fontsize=7.5,
            va="top",
            family="DejaVu Sans",
            bbox={"boxstyle": "round,pad=0.4", "fc": "#fff8e1", "ec": "#c8a200"},
        )

    if warning:
        _draw_warning(fig, warning, size_px, dpi)

    buf = io.BytesIO()
    # Software names us without a version (the bytes stay deterministic; Agg writes no timestamp): plot_roofline
    # replaces only a PNG that carries it (server.writers.owned)
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": PNG_SOFTWARE})
    png = buf.getvalue()

    return RooflinePlot(
        png=png,
        width_px=int(fig.bbox.width),
        height_px=int(fig.bbox.height),
        points=_read_back_points(points, plotted_idx, collections, times, total_time, labelled, ax),
        unplotted=unplotted,
        compute_ceiling=_line_xy(compute_line),
        bandwidth_ceiling=_line_xy(bandwidth_line),
        ridge=(float(ridge_marker.get_xdata()[0]), float(ridge_marker.get_ydata()[0])),
        x_limits=(x_lo, x_hi),
        y_limits=(y_lo, y_hi),
        x_tick_labels=_tick_labels(ax.xaxis, x_lo, x_hi),
        y_tick_labels=_tick_labels(ax.yaxis, y_lo, y_hi),
        unplotted_text=box_text,
        note=note,
        labels=_read_back_labels(fig, ax, points, plotted_idx, label_artists),
        axes_box_px=tuple(float(v) for v in ax.get_window_extent().extents),
        warning=warning,
        legend=[t.get_text() for t in legend.get_texts()],
        ridge_note_box_px=_box_of(ridge_label.get_bbox_patch() or ridge_label, fig),
        ridge_note_zorder=float(ridge_label.get_zorder()),
    )


def _is_anomaly(p: RooflinePoint) -> bool:
    return p.efficiency_pct is not None and math.isfinite(p.efficiency_pct) and p.efficiency_pct > ANOMALY_PCT


def _box_of(artist: object, fig: Figure) -> tuple[float, float, float, float]:
    ext = artist.get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    return (float(ext.x0), float(ext.y0), float(ext.x1), float(ext.y1))


def _marker_boxes_px(ax: Axes, xs: np.ndarray, ys: np.ndarray, areas: np.ndarray, anomalous: np.ndarray) -> np.ndarray:
    """Each marker's bounding square (x0, y0, x1, y1) in display px: sqrt(area) points wide plus its edge line."""
    if xs.size == 0:
        return np.zeros((0, 4))
    px_per_pt = ax.figure.dpi / 72.0
    centres = ax.transData.transform(np.column_stack([xs, ys]))
    edge = np.where(anomalous, EDGES["anomaly"]["width"], EDGES["normal"]["width"])
    half = (np.sqrt(areas) / 2.0 + edge / 2.0) * px_per_pt
    return np.column_stack([centres[:, 0] - half, centres[:, 1] - half, centres[:, 0] + half, centres[:, 1] + half])


# Where the ridge note may go, around the ridge point (offset in points, alignment), in the order tried: below
# right of the point first (clear of the roofs' lines), then the other corners, then farther out.
RIDGE_NOTE_SPOTS: tuple[tuple[float, float, str, str], ...] = tuple(
    (sx * r, sy * r, "left" if sx > 0 else "right", "top" if sy < 0 else "bottom")
    for r in (8.0, 22.0, 40.0)
    for sx, sy in ((1, -1), (-1, -1), (1, 1), (-1, 1))
)


def _draw_ridge_note(ax: Axes, fig: Figure, ridge_x: float, peak: float, markers: np.ndarray) -> Annotation:
    """The ridge note where it covers the fewest markers (and stays inside the axes), drawn above them on a
    white box so that even a cloud of ops at the ridge leaves it readable."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    bounds = ax.get_window_extent(renderer)
    best: tuple[float, int] | None = None
    note = None
    for k, (dx, dy, ha, va) in enumerate(RIDGE_NOTE_SPOTS):
        note = ax.annotate(
            f"ridge {ridge_x:.3g} FLOPs/B", (ridge_x, peak), xytext=(dx, dy), textcoords="offset points",
            fontsize=9, ha=ha, va=va, zorder=RIDGE_NOTE_ZORDER,
            bbox={"boxstyle": f"round,pad={RIDGE_NOTE_PAD}", "fc": "white", "ec": "none", "alpha": 0.9},
        )  # fmt: skip
        box = _note_box(note, fig)
        cost = float(overlap_areas(box, markers).sum()) + _outside(box, bounds)
        note.remove()
        if best is None or cost < best[0]:
            best = (cost, k)
        if cost == 0.0:
            break
    assert best is not None
    dx, dy, ha, va = RIDGE_NOTE_SPOTS[best[1]]
    return ax.annotate(
        f"ridge {ridge_x:.3g} FLOPs/B", (ridge_x, peak), xytext=(dx, dy), textcoords="offset points",
        fontsize=9, ha=ha, va=va, zorder=RIDGE_NOTE_ZORDER,
        bbox={"boxstyle": f"round,pad={RIDGE_NOTE_PAD}", "fc": "white", "ec": "none", "alpha": 0.9},
    )  # fmt: skip


RIDGE_NOTE_PAD = 0.2  # of the font size: the note's white box around its text


def _note_box(note: Annotation, fig: Figure) -> tuple[float, float, float, float]:
    """The note's box before drawing: its text's extent plus the box pad (the patch is placed at draw time)."""
    x0, y0, x1, y1 = _box_of(note, fig)
    pad = RIDGE_NOTE_PAD * note.get_fontsize() * fig.dpi / 72.0
    return (x0 - pad, y0 - pad, x1 + pad, y1 + pad)


def _outside(box: tuple[float, float, float, float], bounds: object) -> float:
    w, h = box[2] - box[0], box[3] - box[1]
    iw = max(0.0, min(box[2], bounds.x1) - max(box[0], bounds.x0))  # type: ignore[attr-defined]
    ih = max(0.0, min(box[3], bounds.y1) - max(box[1], bounds.y0))  # type: ignore[attr-defined]
    return w * h - iw * ih


def label_text(p: RooflinePoint) -> str:
    """A point's label: its shape, then its efficiency (≥ / ≤ when the row's work is a bound)."""
    text = _shorten(p.label, 40)
    if p.efficiency_pct is None or not math.isfinite(p.efficiency_pct):
        return text
    mark = BOUND_MARKS.get(p.work_bound or "", "")
    return f"{text} · {mark}{p.efficiency_pct:.3g} %"


def _draw_warning(fig: Figure, warning: str, size_px: tuple[int, int], dpi: int) -> None:
    """The warning in red above the axes title, left of the legend column, wrapped to the room there."""
    font_px = WARNING_FONT_PT * dpi / 72.0
    # bold DejaVu Sans averages about 0.7 em per character; the column is 0.075 → 0.73 of the width
    width = max(20, int(0.655 * size_px[0] / (0.7 * font_px)))
    title_px = 1.7 * 12.0 * dpi / 72.0  # the axes title (12 pt) and its pad
    room = int((0.11 * size_px[1] - title_px) / (1.25 * font_px))
    max_lines = min(WARNING_MAX_LINES, max(1, room))
    lines = textwrap.wrap(warning, width=width)
    if len(lines) > max_lines:
        # the rest on the last line, cut between words (a word cut in two reads as another word)
        lines = [*lines[: max_lines - 1], textwrap.shorten(" ".join(lines[max_lines - 1 :]), width, placeholder=" …")]
    fig.text(0.075, 0.99, "\n".join(lines), fontsize=WARNING_FONT_PT, va="top", color=WARNING_COLOR, weight="bold")


LABEL_FONT_PT = 8.0
LABEL_PAD = 0.2  # the label box's pad, as a fraction of the font size (matplotlib's boxstyle pad)
MARKER_EDGE_PT = 0.6
# how far each marker shape reaches sideways at mid-height, as a share of its half-width: a circle all the
# way, the triangle ('^', apex up) half of it
MARKER_INNER = {"fwd": 1.0, "bwd": 0.5}


def _draw_labels(
    ax: Axes,
    fig: Figure,
    points: list[RooflinePoint],
    plotted_idx: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    areas: np.ndarray,
    chosen: np.ndarray,
    ridge_label: Annotation,
    marker_boxes: np.ndarray,
) -> list[tuple[int, Annotation, Placement]]:
    """Label the chosen points (longest first) where they cover nothing (server.render.labels)."""
    if chosen.size == 0:
        return []
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    px_per_pt = fig.dpi / 72.0
    centres = ax.transData.transform(np.column_stack([xs, ys]))
    # scatter sizes are areas in pt²: the marker is sqrt(area) pt wide, plus its edge line
    half_pt = np.sqrt(areas) / 2.0 + MARKER_EDGE_PT / 2.0
    obstacles = [tuple(float(v) for v in b) for b in marker_boxes.tolist()]
    obstacles.append(_note_box(ridge_label, fig))
    texts = [label_text(points[plotted_idx[k]]) for k in chosen.tolist()]
    sizes = []
    for t in texts:  # the text's extent does not depend on where it goes: measure it once
        probe = ax.text(0, 0, t, fontsize=LABEL_FONT_PT, transform=None)
        ext = probe.get_window_extent(renderer)
        sizes.append((float(ext.width), float(ext.height)))
        probe.remove()
    bounds = ax.get_window_extent(renderer)
    inner_pt = [float(half_pt[k]) * MARKER_INNER[points[plotted_idx[k]].direction] for k in chosen.tolist()]
    placements = place_labels(
        anchors=[(float(centres[k, 0]), float(centres[k, 1])) for k in chosen.tolist()],
        text_sizes=sizes,
        marker_half_pt=[float(half_pt[k]) for k in chosen.tolist()],
        marker_inner_pt=[
            float(half_pt[k] * MARKER_INNER[str(points[plotted_idx[k]].direction)]) for k in chosen.tolist()
        ],
        obstacles=obstacles,
        bounds=(bounds.x0, bounds.y0, bounds.x1, bounds.y1),
        px_per_pt=px_per_pt,
        pad_px=LABEL_PAD * LABEL_FONT_PT * px_per_pt,
    )
    out = []
    for k, text, pl, inner in zip(chosen.tolist(), texts, placements, inner_pt, strict=True):
        # the leader stops at the marker's edge
        arrow = (
            {"arrowstyle": "-", "color": "#555555", "linewidth": 0.8, "shrinkA": 0.0, "shrinkB": inner}
            if pl.leader
            else None
        )
        ann = ax.annotate(
            text,
            (xs[k], ys[k]),
            xytext=pl.offset_pt,
            textcoords="offset points",
            ha=pl.ha,
            va=pl.va,
            fontsize=LABEL_FONT_PT,
            zorder=5,
            bbox={"boxstyle": f"round,pad={LABEL_PAD}", "fc": "white", "ec": "#999999", "alpha": 0.85},
            arrowprops=arrow,
        )
        out.append((k, ann, pl))
    return out


def _read_back_labels(
    fig: Figure,
    ax: Axes,
    points: list[RooflinePoint],
    plotted_idx: np.ndarray,
    drawn: list[tuple[int, Annotation, Placement]],
) -> list[PlacedLabel]:
    """Each label's box as drawn (its bbox patch after the draw), and the marker centre it names."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    out = []
    for k, ann, pl in drawn:
        patch = ann.get_bbox_patch()
        ext = patch.get_window_extent(renderer) if patch is not None else ann.get_window_extent(renderer)
        cx, cy = ax.transData.transform((ann.xy[0], ann.xy[1]))
        p = points[plotted_idx[k]]
        out.append(
            PlacedLabel(
                p.label,
                p.name,
                (float(ext.x0), float(ext.y0), float(ext.x1), float(ext.y1)),
                (float(cx), float(cy)),
                pl.leader,
                pl.overlap_px2,
                ann.get_text(),
            )
        )
    return out


def _line_xy(line: Line2D) -> tuple[tuple[float, ...], tuple[float, ...]]:
    xy = np.asarray(line.get_xydata(), dtype=np.float64)
    return tuple(xy[:, 0].tolist()), tuple(xy[:, 1].tolist())


def _tick_labels(axis: object, lo: float, hi: float) -> list[str]:
    """Texts of the labelled major ticks inside the axis limits (the locator also returns outside ones)."""
    locs = axis.get_majorticklocs()  # type: ignore[attr-defined]
    labels = axis.get_majorticklabels()  # type: ignore[attr-defined]
    return [lab.get_text() for loc, lab in zip(locs, labels, strict=True) if lo * (1 - 1e-9) <= loc <= hi * (1 + 1e-9)]


def _read_back_points(
    points: list[RooflinePoint],
    plotted_idx: np.ndarray,
    collections: dict[str, tuple[np.ndarray, object]],
    times: np.ndarray,
    total_time: float,
    labelled: np.ndarray,
    ax: Axes,
) -> list[PlottedPoint]:
    """Coordinates, areas and edges as the scatter artists hold them, back in input order."""
    n = plotted_idx.size
    drawn_x = np.zeros(n)
    drawn_y = np.zeros(n)
    drawn_area = np.zeros(n)
    drawn_anomaly = np.zeros(n, dtype=bool)
    anomaly_rgba = np.array(mpl.colors.to_rgba(EDGES["anomaly"]["color"]))
    for sel, coll in collections.values():
        if sel.size == 0:
            continue
        offsets = np.asarray(coll.get_offsets(), dtype=np.float64)  # type: ignore[attr-defined]
        sizes = np.broadcast_to(np.asarray(coll.get_sizes(), dtype=np.float64), (sel.size,))  # type: ignore[attr-defined]
        edges = np.broadcast_to(np.asarray(coll.get_edgecolors(), dtype=np.float64), (sel.size, 4))  # type: ignore[attr-defined]
        drawn_x[sel] = offsets[:, 0]
        drawn_y[sel] = offsets[:, 1]
        drawn_area[sel] = sizes
        drawn_anomaly[sel] = np.all(np.abs(edges[:, :3] - anomaly_rgba[:3]) < 1e-6, axis=1)
    centres = ax.transData.transform(np.column_stack([drawn_x, drawn_y])) if n else np.zeros((0, 2))
    shares = times / total_time if total_time > 0 else np.zeros(n)
    return [
        PlottedPoint(
            x=float(drawn_x[k]),
            y=float(drawn_y[k]),
            area=float(drawn_area[k]),
            direction=points[i].direction,
            label=points[i].label,
            name=points[i].name,
            time_share=float(shares[k]),
            labelled=bool(labelled[k]),
            anomaly=bool(drawn_anomaly[k]),
            centre_px=(float(centres[k, 0]), float(centres[k, 1])),
        )
        for k, i in enumerate(plotted_idx.tolist())
    ]
