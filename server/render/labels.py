"""Where the roofline chart's point labels go: greedy placement in display pixels, so that no label covers
another label, a marker (its own included), the ridge note, or leaves the axes.

Each label, longest op first, tries candidate offsets in rings around its marker: eight directions per ring
(right of the marker first), each ring `RING_STEP_PT` farther out. The first candidate whose box touches
nothing already placed (nor crosses, or is crossed by, a leader line, nor sends its leader line through other
markers) wins; when none is free, the one with the least overlap does. A label set off from its marker gets a
leader line back to it. Everything is plain float arithmetic in a fixed order, so the same input gives the same
placement (and the same PNG bytes).

Boxes are (x0, y0, x1, y1) in display pixels, origin at the bottom left (matplotlib's display space).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

GAP_PT = 3.0  # between a marker's edge and its label's box at the nearest ring
RING_STEP_PT = 12.0
RINGS = 10
MARGIN_PX = 2.0  # labels keep this clear of each other and of obstacles: touching reads as overlapping
LEADER_WIDTH_PX = 4.0  # a leader line under a label costs its covered length times this (an area, like overlaps)
LEADER_MIN_PX = 12.0  # a label whose box is farther than this from its marker's edge gets a leader line
# (dx, dy) unit directions in the order tried: right of the marker first (reads as its label), then the
# diagonals beside it, then the left side, then above and below.
DIRECTIONS: tuple[tuple[int, int], ...] = ((1, 0), (1, 1), (1, -1), (-1, 0), (-1, 1), (-1, -1), (0, 1), (0, -1))
_HA = {1: "left", 0: "center", -1: "right"}
_VA = {1: "bottom", 0: "center", -1: "top"}

Box = tuple[float, float, float, float]


class Placement(NamedTuple):
    """Where one label goes: its offset from the marker in points, the text alignment, and its box."""

    offset_pt: tuple[float, float]
    ha: str
    va: str
    box: Box  # the label's drawn box (text plus its bbox pad), display px
    ring: int  # 0 = next to the marker
    overlap_px2: float  # area it still overlaps (0 when it found a free spot)
    leader: bool  # far enough from its marker that a line shows which marker it names


def overlap_areas(box: Box, others: np.ndarray) -> np.ndarray:
    """Intersection area (px²) of `box` with each row (x0, y0, x1, y1) of `others`."""
    if others.size == 0:
        return np.zeros(0)
    w = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    h = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    return np.clip(w, 0.0, None) * np.clip(h, 0.0, None)


def _outside_area(box: Box, bounds: Box) -> float:
    """Area of `box` outside `bounds` (the axes): a label cut off by the frame is as bad as a covered one."""
    w, h = box[2] - box[0], box[3] - box[1]
    iw = max(0.0, min(box[2], bounds[2]) - max(box[0], bounds[0]))
    ih = max(0.0, min(box[3], bounds[3]) - max(box[1], bounds[1]))
    return w * h - iw * ih


def _box_at(
    anchor: tuple[float, float],
    offset_px: tuple[float, float],
    d: tuple[int, int],
    size: tuple[float, float],
    pad: float,
) -> Box:
    """The drawn box of a text of `size` (px, without pad) anchored at anchor + offset, aligned by direction."""
    x = anchor[0] + offset_px[0]
    y = anchor[1] + offset_px[1]
    w, h = size
    x0 = x if d[0] > 0 else (x - w if d[0] < 0 else x - w / 2)
    y0 = y if d[1] > 0 else (y - h if d[1] < 0 else y - h / 2)
    return (x0 - pad, y0 - pad, x0 + w + pad, y0 + h + pad)


def clipped_length(p: tuple[float, float], q: tuple[float, float], box: Box) -> float:
    """Length of the segment p→q inside `box` (Liang–Barsky clipping); 0 when it misses the box."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    t0, t1 = 0.0, 1.0
    for den, num in ((-dx, p[0] - box[0]), (dx, box[2] - p[0]), (-dy, p[1] - box[1]), (dy, box[3] - p[1])):
        if den == 0.0:
            if num < 0.0:
                return 0.0
            continue
        t = num / den
        if den < 0.0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 >= t1:
            return 0.0
    return (t1 - t0) * math.hypot(dx, dy)


def clipped_lengths(p: tuple[float, float], q: tuple[float, float], boxes: np.ndarray) -> np.ndarray:
    """`clipped_length` of the segment p→q in each row (x0, y0, x1, y1) of `boxes`, vectorized."""
    if boxes.size == 0:
        return np.zeros(0)
    d = np.array([q[0] - p[0], q[1] - p[1]])
    t0 = np.zeros(len(boxes))
    t1 = np.ones(len(boxes))
    inside = np.ones(len(boxes), dtype=bool)
    for axis, lo, hi in ((0, 0, 2), (1, 1, 3)):
        if d[axis] == 0.0:  # parallel to this pair of edges: inside them or not at all
            inside &= (boxes[:, lo] <= p[axis]) & (p[axis] <= boxes[:, hi])
            continue
        a = (boxes[:, lo] - p[axis]) / d[axis]
        b = (boxes[:, hi] - p[axis]) / d[axis]
        t0 = np.maximum(t0, np.minimum(a, b))
        t1 = np.minimum(t1, np.maximum(a, b))
    return np.where(inside & (t1 > t0), (t1 - t0) * math.hypot(d[0], d[1]), 0.0)


def _distance(p: tuple[float, float], box: Box) -> float:
    """From p to the nearest point of box (0 inside)."""
    dx = max(box[0] - p[0], 0.0, p[0] - box[2])
    dy = max(box[1] - p[1], 0.0, p[1] - box[3])
    return math.hypot(dx, dy)


def _centre(box: Box) -> tuple[float, float]:
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def _grow(box: Box, m: float) -> Box:
    return (box[0] - m, box[1] - m, box[2] + m, box[3] + m)


def place_labels(
    anchors: list[tuple[float, float]],
    text_sizes: list[tuple[float, float]],
    marker_half_pt: list[float],
    marker_inner_pt: list[float],
    obstacles: list[Box],
    bounds: Box,
    px_per_pt: float,
    pad_px: float,
) -> list[Placement]:
    """One placement per label, in the order given (the caller passes the longest op first).

    anchors: marker centres (px); text_sizes: each text's (w, h) without its pad (px); marker_half_pt: half the
    marker's width (points), so the first ring clears it; marker_inner_pt: how far the marker's shape reaches
    sideways from its centre (a triangle is half as wide at mid-height as its box), which decides whether the
    label is far enough from it to need a leader line; obstacles: boxes nothing may cover (every marker,
    the ridge note); bounds: the axes box.
    """
    fixed = np.array(obstacles, dtype=np.float64).reshape(-1, 4)
    placed: list[Box] = []
    leaders: list[tuple[tuple[float, float], tuple[float, float]]] = []
    out: list[Placement] = []
    for anchor, size, half, inner in zip(anchors, text_sizes, marker_half_pt, marker_inner_pt, strict=True):
        taken = np.array([_grow(b, MARGIN_PX) for b in placed], dtype=np.float64).reshape(-1, 4)
        # the obstacles a leader to this anchor may not cross: all but those around the anchor itself (its own
        # marker and the ones it sits under, which any leader to it must enter)
        around = (fixed[:, 0] <= anchor[0]) & (anchor[0] <= fixed[:, 2]) & (fixed[:, 1] <= anchor[1])
        crossable = fixed[~(around & (anchor[1] <= fixed[:, 3]))]
        best: Placement | None = None
        for ring in range(RINGS):
            # the text sits `pad` inside its box: offset by it too, so the gap is between box and marker
            dist = half + GAP_PT + pad_px / px_per_pt + ring * RING_STEP_PT
            for d in DIRECTIONS:
                off_pt = (d[0] * dist, d[1] * dist)
                box = _box_at(anchor, (off_pt[0] * px_per_pt, off_pt[1] * px_per_pt), d, size, pad_px)
                cost = float(overlap_areas(_grow(box, MARGIN_PX), fixed).sum() + overlap_areas(box, taken).sum())
                cost += _outside_area(box, bounds)
                leader = _distance(anchor, box) - inner * px_per_pt > LEADER_MIN_PX
                # a leader must not run under a placed label or through other markers (the cloud it names one
                # marker of), nor this label cover a placed leader
                if leader:
                    cost += LEADER_WIDTH_PX * sum(clipped_length(_centre(box), anchor, b) for b in placed)
                    cost += LEADER_WIDTH_PX * float(clipped_lengths(_centre(box), anchor, crossable).sum())
                cost += LEADER_WIDTH_PX * sum(clipped_length(p, q, box) for p, q in leaders)
                if best is None or cost < best.overlap_px2:
                    best = Placement(off_pt, _HA[d[0]], _VA[d[1]], box, ring, cost, leader)
                if cost == 0.0:
                    break
            if best is not None and best.overlap_px2 == 0.0:
                break
        assert best is not None
        placed.append(best.box)
        if best.leader:
            leaders.append((_centre(best.box), anchor))
        out.append(best)
    return out
