"""What a reader takes from the roofline chart (issue 22), checked on its drawing data: the legend names only the
directions drawn, an anomaly looks like one, labels give the efficiency, and on a 300-op chart the ridge note stays
readable and leader lines keep out of the cloud. Marker boxes are recomputed here from the drawn data coordinates,
the log axes and the marker areas, not taken from the placement code."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdpa_analyzer.server.render.labels import clipped_length, place_labels
from sdpa_analyzer.server.render.plots import (
    DIRECTION_STYLE,
    MARKER_ZORDER,
    Ceilings,
    RooflinePoint,
    render_roofline_png,
)
from sdpa_analyzer.server.vocab import ANOMALY_PCT

CEIL = Ceilings(peak_tflops=1000.0, peak_tbs=4.0, compute_spec="matrix_bf16", gpu_name="TestGPU", peak_kind="datasheet")
RIDGE = 1000.0 / 4.0


def _pt(label: str, x: float, y: float, t: float, d: str = "fwd", **kw: object) -> RooflinePoint:
    roof = min(x * CEIL.peak_tbs, CEIL.peak_tflops)
    fields: dict[str, object] = {
        "label": label, "intensity": x, "achieved_tflops": y, "time_ms": t, "direction": d, "has_model": True,
        "name": f"op<{label}>", "category": "sdpa_fwd", "efficiency_pct": 100.0 * y / roof,
    }  # fmt: skip
    fields.update(kw)
    return RooflinePoint(**fields)


def _marker_boxes(plot) -> list[tuple[float, float, float, float]]:
    x0, y0, x1, y1 = plot.axes_box_px
    (xl, xh), (yl, yh) = plot.x_limits, plot.y_limits
    boxes = []
    for p in plot.points:
        cx = x0 + (math.log10(p.x) - math.log10(xl)) / (math.log10(xh) - math.log10(xl)) * (x1 - x0)
        cy = y0 + (math.log10(p.y) - math.log10(yl)) / (math.log10(yh) - math.log10(yl)) * (y1 - y0)
        half = (math.sqrt(p.area) / 2 + 0.3) * 100 / 72
        boxes.append((cx - half, cy - half, cx + half, cy + half))
    return boxes


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return max(min(a[2], b[2]) - max(a[0], b[0]), 0.0) * max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)


def test_the_legend_names_only_the_directions_drawn() -> None:
    forward = render_roofline_png([_pt("a", 100.0, 50.0, 1.0), _pt("b", 400.0, 300.0, 2.0)], CEIL, title="fwd")
    assert DIRECTION_STYLE["fwd"]["name"] in forward.legend and DIRECTION_STYLE["bwd"]["name"] not in forward.legend
    both = render_roofline_png([_pt("a", 100.0, 50.0, 1.0), _pt("b", 400.0, 300.0, 2.0, "bwd")], CEIL, title="both")
    assert {DIRECTION_STYLE[d]["name"] for d in ("fwd", "bwd")} <= set(both.legend)
    backward = render_roofline_png([_pt("b", 400.0, 300.0, 2.0, "bwd")], CEIL, title="bwd")
    assert DIRECTION_STYLE["fwd"]["name"] not in backward.legend
    assert not any("anomaly" in entry for entry in forward.legend + both.legend)


def test_an_anomaly_is_drawn_as_one() -> None:
    # 1200 TFLOPS at intensity 400 (compute roof 1000): 120 % of the roofline
    pts = [_pt("ok", 400.0, 600.0, 1.0), _pt("impossible", 400.0, 1200.0, 1.0), _pt("edge", 400.0, 1000.0, 1.0)]
    plot = render_roofline_png(pts, CEIL, title="t")
    drawn = {p.label: p.anomaly for p in plot.points}
    assert drawn == {"ok": False, "impossible": True, "edge": False}  # exactly 100 % is not above it
    (entry,) = [e for e in plot.legend if "anomaly" in e]
    assert f"above {ANOMALY_PCT:g} %" in entry


def test_labels_give_the_efficiency_with_its_bound_mark() -> None:
    pts = [
        _pt("B1 H8 N4096 d128", 1000.0, 617.0, 3.0),  # 61.7 % of the 1000-TFLOPS roof
        _pt("B1 H8 N4096 d128 window", 400.0, 300.0, 2.0, work_bound="upper"),  # 30 %, at most
        _pt("varlen", 100.0, 80.0, 1.0, work_bound="lower"),  # 80 / (100 × 4) = 20 %, at least
    ]
    texts = {lab.label: lab.text for lab in render_roofline_png(pts, CEIL, title="t").labels}
    assert texts == {
        "B1 H8 N4096 d128": "B1 H8 N4096 d128 · 61.7 %",
        "B1 H8 N4096 d128 window": "B1 H8 N4096 d128 window · ≤30 %",
        "varlen": "varlen · ≥20 %",
    }


@pytest.fixture(scope="module")
def cloud():
    """300 ops around the ridge (log-normal in intensity, up to 1.2 decades under the roof)."""
    rng = np.random.default_rng(3)
    pts = []
    for i in range(300):
        x = RIDGE * 10 ** rng.normal(0.0, 0.25)
        y = min(x * CEIL.peak_tbs, CEIL.peak_tflops) * 10 ** rng.uniform(-1.2, -0.05)
        pts.append(_pt(f"B{i % 8 + 1} N{512 * (i % 16 + 1)}", x, y, float(rng.exponential(1.0))))
    return render_roofline_png(pts, CEIL, title="300 ops")


def test_the_ridge_note_stays_readable_on_a_300_op_chart(cloud) -> None:
    note = cloud.ridge_note_box_px
    assert cloud.ridge_note_zorder > MARKER_ZORDER  # drawn above every marker, on its own white box
    ax = cloud.axes_box_px
    assert ax[0] <= note[0] and note[2] <= ax[2] and ax[1] <= note[1] and note[3] <= ax[3]
    for lab in cloud.labels:
        assert _overlap(lab.box_px, note) == 0.0, lab.label


def test_leader_lines_keep_out_of_the_cloud_where_they_can() -> None:
    """A marker walled in by others (a ring of markers 20-30 px out, open straight above): no label fits next to
    it, every label one ring out is free, and only the one straight above has a leader line that crosses no other
    marker: that one is chosen (the first free spot, right of the marker, sent its leader through the wall)."""
    anchor = (500.0, 500.0)
    walls = [
        (520.0, 470.0, 530.0, 530.0), (470.0, 470.0, 480.0, 530.0), (470.0, 470.0, 530.0, 480.0),  # right, left, bottom
        (470.0, 520.0, 495.0, 530.0), (505.0, 520.0, 530.0, 530.0),  # top, with a gap at x 495-505
    ]  # fmt: skip
    own = (486.0, 486.0, 514.0, 514.0)  # the marker itself: 10 pt half-width at 100 dpi
    (placed,) = place_labels(
        anchors=[anchor], text_sizes=[(150.0, 12.0)], marker_half_pt=[10.0], marker_inner_pt=[10.0],
        obstacles=[own, *walls], bounds=(0.0, 0.0, 1000.0, 1000.0), px_per_pt=100 / 72, pad_px=2.0,
    )  # fmt: skip
    assert placed.overlap_px2 == 0.0 and placed.leader and placed.ring == 1
    centre = ((placed.box[0] + placed.box[2]) / 2, (placed.box[1] + placed.box[3]) / 2)
    assert sum(clipped_length(centre, anchor, w) for w in walls) == 0.0
    assert placed.offset_pt[0] == 0.0 and placed.offset_pt[1] > 0  # straight above, through the gap
    # control: one ring out to the right (the first direction tried) is free of every box too, by hand: 10 pt
    # marker + 3 pt gap + the 2 px pad + one 12 pt ring = 36.7 px from the centre; but its leader crosses the wall
    x0 = anchor[0] + (10 + 3 + 2 / (100 / 72) + 12) * 100 / 72 - 2.0
    right = (x0, anchor[1] - 8.0, x0 + 154.0, anchor[1] + 8.0)
    assert all(_overlap(right, (b[0] - 2, b[1] - 2, b[2] + 2, b[3] + 2)) == 0.0 for b in [own, *walls])
    assert clipped_length(((right[0] + right[2]) / 2, anchor[1]), anchor, walls[0]) == pytest.approx(10.0)


def test_leader_lines_in_a_300_op_cloud_cross_few_markers(cloud) -> None:
    """In a cloud a leader may have to cross markers; it crosses at most a few marker widths' worth."""
    boxes = _marker_boxes(cloud)
    for lab in cloud.labels:
        if not lab.leader:
            continue
        centre = ((lab.box_px[0] + lab.box_px[2]) / 2, (lab.box_px[1] + lab.box_px[3]) / 2)
        length = math.dist(centre, lab.anchor_px)
        crossed = sum(clipped_length(centre, lab.anchor_px, b) for b, p in zip(boxes, cloud.points, strict=True)
                      if not (b[0] <= lab.anchor_px[0] <= b[2] and b[1] <= lab.anchor_px[1] <= b[3]))  # fmt: skip
        assert crossed <= 0.6 * length, (lab.label, crossed, length)
