"""Roofline chart: what is drawn (coordinates, ceilings, ridge, areas), the PNG format, determinism."""

from __future__ import annotations

import io
import os
import pickle
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from matplotlib import image as mpimg
from pydantic import ValidationError

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.render.plots import (
    DIRECTION_STYLE,
    MAX_MARKER_AREA,
    MIN_MARKER_AREA,
    NO_MODELED_NOTE,
    NO_OPS_NOTE,
    Ceilings,
    RooflinePoint,
    render_roofline_png,
)
from tests.support import REPO

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# a fresh interpreter draws the points it is sent (pickled on stdin) and writes the PNG to stdout
_RENDER_FROM_STDIN = (
    "import pickle, sys\n"
    "from server.render.plots import render_roofline_png\n"
    "points, ceilings, title = pickle.load(sys.stdin.buffer)\n"
    "sys.stdout.buffer.write(render_roofline_png(points, ceilings, title=title).png)\n"
)

# Peaks picked so the ridge is worked by hand: 1000 TFLOPS / 4 TB/s = 250 FLOPs/byte.
CEIL = Ceilings(
    peak_tflops=1000.0, peak_tbs=4.0, compute_spec="matrix_bf16", gpu_name="TestGPU", peak_kind="achievable"
)


def _pt(label: str, x: float | None, y: float | None, t: float, d: str = "fwd", **kw: object) -> RooflinePoint:
    fields: dict[str, object] = {
        "label": label,
        "intensity": x,
        "achieved_tflops": y,
        "time_ms": t,
        "direction": d,
        "has_model": True,
        "name": f"aten::_scaled_dot_product_flash_attention<{label}>",
        "category": "sdpa_fwd" if d == "fwd" else "sdpa_bwd",
    }
    fields.update(kw)
    return RooflinePoint(**fields)


POINTS = [
    _pt("A", 120.0, 35.5, 1.0, "fwd"),
    _pt("B", 480.0, 410.0, 4.0, "bwd"),
    _pt("nomodel", None, None, 2.0, "fwd", has_model=False, reason="unsupported signature of flash_attn::foo"),
    _pt("C", 7.5, 2.25, 2.0, "fwd"),
    _pt("zero", 40.0, 0.0, 1.0, "bwd"),
]


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk, checking each CRC."""
    assert png[:8] == PNG_SIGNATURE
    chunks, pos = [], 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        ctype = png[pos + 4 : pos + 8]
        data = png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(ctype + data), f"bad CRC in chunk {ctype!r}"
        chunks.append((ctype, data))
        pos += 12 + length
    return chunks


def png_size(png: bytes) -> tuple[int, int]:
    chunks = png_chunks(png)
    assert chunks[0][0] == b"IHDR"  # PNG requires IHDR first
    w, h = struct.unpack(">II", chunks[0][1][:8])
    return w, h


@pytest.fixture(scope="module")
def plot():
    return render_roofline_png(POINTS, CEIL, title="sdpa test roofline")


def test_plotted_points_equal_the_input_records(plot) -> None:
    # modeled + plottable: A, B, C (input order); 'nomodel' has no model and 'zero' has 0 TFLOPS
    got = [(p.label, p.x, p.y, p.direction) for p in plot.points]
    assert got == [("A", 120.0, 35.5, "fwd"), ("B", 480.0, 410.0, "bwd"), ("C", 7.5, 2.25, "fwd")]


def test_unplotted_ops_are_listed_with_reasons(plot) -> None:
    assert [(u.label, u.direction) for u in plot.unplotted] == [("nomodel", "fwd"), ("zero", "bwd")]
    assert plot.unplotted[0].reason == "unsupported signature of flash_attn::foo"
    assert "achieved TFLOPS is 0" in plot.unplotted[1].reason
    assert plot.unplotted_text.startswith("Not plotted (2 ops)")
    text = " ".join(plot.unplotted_text.split())  # undo the box's line wrapping
    assert "[fwd] 2 ms: unsupported signature of flash_attn::foo" in text
    assert "[bwd] 1 ms: achieved TFLOPS is 0" in text
    # 50-char name cut to 42 in the middle: first 20 chars + "…" + last 21 chars
    assert "• aten::_scaled_dot_pr…sh_attention<nomodel>" in text


def test_ceilings_equal_the_peaks(plot) -> None:
    xs, ys = plot.compute_ceiling
    assert all(y == 1000.0 for y in ys)
    assert xs[0] == pytest.approx(250.0)  # the flat roof starts at the ridge
    assert xs[-1] == plot.x_limits[1]
    bx, by = plot.bandwidth_ceiling
    assert len(bx) >= 3
    # y = x · 4 TB/s at every drawn x, e.g. 1 FLOP/B → 4 TFLOPS, 250 FLOPs/B → 1000 TFLOPS
    np.testing.assert_allclose(np.array(by) / np.array(bx), 4.0, rtol=1e-12)
    assert bx[-1] == pytest.approx(250.0) and by[-1] == pytest.approx(1000.0)
    assert bx[0] == plot.x_limits[0]


def test_ridge_point(plot) -> None:
    assert plot.ridge == pytest.approx((250.0, 1000.0))
    h100 = Ceilings(peak_tflops=989.0, peak_tbs=3.35, compute_spec="matrix_bf16", gpu_name="H100", peak_kind="x")
    # 989 / 3.35 = 295.2238... FLOPs/byte
    assert render_roofline_png([], h100, title="t").ridge[0] == pytest.approx(295.22388, rel=1e-6)


def test_marker_area_proportional_to_time_share(plot) -> None:
    # times of all 5 inputs: 1 + 4 + 2 + 2 + 1 = 10 ms; the largest plotted (B, 4 ms) gets the full area
    by_label = {p.label: p for p in plot.points}
    assert by_label["B"].area == pytest.approx(MAX_MARKER_AREA)
    assert by_label["A"].area == pytest.approx(MAX_MARKER_AREA / 4)
    assert by_label["C"].area == pytest.approx(MAX_MARKER_AREA / 2)
    assert [p.time_share for p in plot.points] == pytest.approx([0.1, 0.4, 0.2])
    ratios = [p.area / p.time_share for p in plot.points]
    assert max(ratios) == pytest.approx(min(ratios))


def test_tiny_share_keeps_a_visible_floor() -> None:
    r = render_roofline_png([_pt("big", 100, 10, 1000.0), _pt("tiny", 10, 1, 0.001)], CEIL, title="t")
    assert r.points[1].area == MIN_MARKER_AREA


def test_axes_contain_points_and_label_decades(plot) -> None:
    (x_lo, x_hi), (y_lo, y_hi) = plot.x_limits, plot.y_limits
    for p in plot.points:
        assert x_lo < p.x < x_hi and y_lo < p.y < y_hi
    assert y_hi > CEIL.peak_tflops
    # limits are whole decades, and every decade in between is labelled with a plain number
    n_x = round(np.log10(x_hi / x_lo)) + 1
    assert plot.x_tick_labels == [f"{10.0**k:.12g}" for k in range(round(np.log10(x_lo)), round(np.log10(x_hi)) + 1)]
    assert len(plot.x_tick_labels) == n_x
    for decade in ("1", "10", "100", "1000"):
        assert decade in plot.x_tick_labels and decade in plot.y_tick_labels


def test_top_labels_are_the_longest_ops() -> None:
    pts = [_pt(f"p{i}", 10.0 * (i + 1), 1.0 * (i + 1), t) for i, t in enumerate([3.0, 9.0, 1.0, 7.0, 5.0])]
    r = render_roofline_png(pts, CEIL, title="t", top_labels=2)
    assert [p.label for p in r.points if p.labelled] == ["p1", "p3"]  # 9 ms and 7 ms


def test_png_format_and_size(plot) -> None:
    assert plot.png[:8] == PNG_SIGNATURE
    assert png_size(plot.png) == (1200, 800) == (plot.width_px, plot.height_px)
    odd = render_roofline_png(POINTS, CEIL, title="t", size_px=(1001, 777), dpi=96)
    assert png_size(odd.png) == (1001, 777)


def test_png_has_no_version_or_time_metadata(plot) -> None:
    types = {t for t, _ in png_chunks(plot.png)}
    assert b"tIME" not in types
    texts = [d for t, d in png_chunks(plot.png) if t in (b"tEXt", b"iTXt", b"zTXt")]
    # only our marker (how plot_roofline recognizes its own files), early in the file, without a version
    assert texts == [b"Software\x00sdpa-analyzer plot_roofline"]
    assert plot.png.index(b"sdpa-analyzer plot_roofline") < 200


def test_deterministic_in_process_and_in_a_fresh_process(plot) -> None:
    again = render_roofline_png(POINTS, CEIL, title="sdpa test roofline")
    assert again.png == plot.png
    out = subprocess.run(
        [sys.executable, "-c", _RENDER_FROM_STDIN],
        input=pickle.dumps((POINTS, CEIL, "sdpa test roofline")),
        capture_output=True,
        check=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.stdout == plot.png


def test_forward_and_backward_differ_in_shape_and_colour(plot) -> None:
    fwd, bwd = DIRECTION_STYLE["fwd"], DIRECTION_STYLE["bwd"]
    assert fwd["marker"] != bwd["marker"] and fwd["color"] != bwd["color"]
    # both legend swatches are drawn opaque in their exact colours
    img = (mpimg.imread(io.BytesIO(plot.png))[..., :3] * 255).round().astype(int)
    for style in (fwd, bwd):
        rgb = np.array([int(style["color"][i : i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(img - rgb).max(axis=-1) <= 2).sum() > 20, style


def test_empty_chart_is_valid_with_a_note() -> None:
    r = render_roofline_png([], CEIL, title="empty")
    assert png_size(r.png) == (1200, 800)
    assert r.note == NO_OPS_NOTE and r.points == [] and r.unplotted == []
    assert r.compute_ceiling[1][0] == 1000.0
    img = mpimg.imread(io.BytesIO(r.png))
    assert img.std() > 0.01  # something is drawn


def test_all_unmodeled_lists_them_and_says_nothing_plotted() -> None:
    pts = [_pt("a", None, None, 1.0, has_model=False, reason="no model for X")]
    r = render_roofline_png(pts, CEIL, title="t")
    assert r.points == [] and r.note == NO_MODELED_NOTE
    assert "no model for X" in r.unplotted_text


def test_long_unplotted_list_is_truncated_with_a_count() -> None:
    pts = [_pt(f"u{i}", None, None, 1.0, has_model=False, reason="unsupported") for i in range(60)]
    r = render_roofline_png(pts, CEIL, title="t")
    assert len(r.unplotted) == 60
    assert "more (see the report table)" in r.unplotted_text


def test_nan_intensity_is_reported_not_plotted() -> None:
    r = render_roofline_png([_pt("n", float("nan"), 5.0, 1.0)], CEIL, title="t")
    assert r.points == [] and "intensity is nan" in r.unplotted[0].reason


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValidationError, match="peak_tbs"):
        Ceilings(peak_tflops=1000, peak_tbs=0, compute_spec="x", gpu_name="g", peak_kind="k")
    with pytest.raises(ValidationError, match="time_ms"):
        _pt("x", 1.0, 1.0, -1.0)
    with pytest.raises(InputError, match="size_px"):
        render_roofline_png([], CEIL, title="t", size_px=(10, 10))
    with pytest.raises(InputError, match="dpi"):
        render_roofline_png([], CEIL, title="t", dpi=0)


# Twelve ops within a few percent of each other in both intensity and throughput: the five labels cannot all
# sit at one fixed offset without covering each other and the neighbouring markers.
CLUSTER = [
    _pt(f"B{i} H16 N{1024 * (i + 1)} d128 causal", 300.0 * 1.05**i, 200.0 * 1.04**i, t, "fwd" if i % 2 else "bwd")
    for i, t in enumerate([5.0, 4.5, 4.0, 3.5, 3.0, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
]


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0.0) * max(h, 0.0)


def _marker_boxes(plot, dpi: int = 100) -> list[tuple[float, float, float, float]]:
    """Each marker's bounding square in display px, from the drawn data coordinates, the log axes and the marker
    area (pt²: the marker is sqrt(area) points wide), not from the placement code."""
    x0, y0, x1, y1 = plot.axes_box_px
    (xl, xh), (yl, yh) = plot.x_limits, plot.y_limits
    boxes = []
    for p in plot.points:
        cx = x0 + (np.log10(p.x) - np.log10(xl)) / (np.log10(xh) - np.log10(xl)) * (x1 - x0)
        cy = y0 + (np.log10(p.y) - np.log10(yl)) / (np.log10(yh) - np.log10(yl)) * (y1 - y0)
        half = (np.sqrt(p.area) / 2 + 0.3) * dpi / 72
        boxes.append((cx - half, cy - half, cx + half, cy + half))
    return boxes


@pytest.fixture(scope="module")
def cluster_plot():
    return render_roofline_png(CLUSTER, CEIL, title="clustered")


def test_labels_of_a_cluster_overlap_neither_each_other_nor_markers(cluster_plot) -> None:
    labels = cluster_plot.labels
    # the five longest (5, 4.5, 4, 3.5, 3 ms), longest first
    assert [lab.label for lab in labels] == [p.label for p in CLUSTER[:5]]
    assert [p.label for p in cluster_plot.points if p.labelled] == [p.label for p in CLUSTER[:5]]
    boxes = [lab.box_px for lab in labels]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert _overlap(boxes[i], boxes[j]) == 0.0, (labels[i].label, labels[j].label)
    markers = _marker_boxes(cluster_plot)
    for lab in labels:
        for m, p in zip(markers, cluster_plot.points, strict=True):
            assert _overlap(lab.box_px, m) == 0.0, (lab.label, p.label)
    ax = cluster_plot.axes_box_px
    for lab in labels:
        b = lab.box_px
        assert ax[0] <= b[0] and b[2] <= ax[2] and ax[1] <= b[1] and b[3] <= ax[3], lab.label
        assert lab.overlap_px2 == 0.0
    # labels set off from their marker say which marker they name
    assert any(lab.leader for lab in labels)
    # each anchor is its own marker's centre
    pairs = zip(cluster_plot.points, markers, strict=True)
    centres = {p.label: ((m[0] + m[2]) / 2, (m[1] + m[3]) / 2) for p, m in pairs}
    for lab in labels:
        assert lab.anchor_px == pytest.approx(centres[lab.label], abs=0.5)


def test_the_cluster_does_overlap_at_one_fixed_offset(cluster_plot) -> None:
    """Control: the old placement (every label 8 pt right and 6 pt above its marker) covers others here."""
    px = 100 / 72
    fixed = []
    for lab in cluster_plot.labels:
        w, h = lab.box_px[2] - lab.box_px[0], lab.box_px[3] - lab.box_px[1]
        x, y = lab.anchor_px[0] + 8 * px, lab.anchor_px[1] + 6 * px
        fixed.append((x, y, x + w, y + h))
    pairs = [(i, j) for i in range(len(fixed)) for j in range(i + 1, len(fixed)) if _overlap(fixed[i], fixed[j]) > 0]
    assert pairs


def test_a_lone_label_sits_right_of_its_marker_without_a_leader() -> None:
    r = render_roofline_png([_pt("solo", 100.0, 50.0, 1.0)], CEIL, title="t")
    (lab,) = r.labels
    assert not lab.leader
    assert lab.box_px[0] > lab.anchor_px[0]  # to the right
    assert lab.box_px[1] < lab.anchor_px[1] < lab.box_px[3]  # level with it


@pytest.mark.parametrize("seed", ["0", "4242"])
def test_cluster_png_is_the_same_across_hash_seeds(cluster_plot, seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", _RENDER_FROM_STDIN], input=pickle.dumps((CLUSTER, CEIL, "clustered")),
        capture_output=True, check=True, timeout=120, env=env, cwd=REPO,
    )  # fmt: skip
    assert out.stdout == cluster_plot.png


def test_warning_is_drawn_in_red_above_the_chart() -> None:
    plain = render_roofline_png(POINTS, CEIL, title="t")
    warned = render_roofline_png(POINTS, CEIL, title="t", warning="findings were ranked on another GPU")
    assert plain.warning is None and warned.warning == "findings were ranked on another GPU"
    img = (mpimg.imread(io.BytesIO(warned.png))[..., :3] * 255).round().astype(int)
    top = img[: int(0.1 * img.shape[0])]  # the band above the axes title
    red = (np.abs(top - np.array([0xB0, 0x00, 0x20])).max(axis=-1) <= 40).sum()
    assert red > 100
    plain_img = (mpimg.imread(io.BytesIO(plain.png))[..., :3] * 255).round().astype(int)
    assert (np.abs(plain_img[: top.shape[0]] - np.array([0xB0, 0x00, 0x20])).max(axis=-1) <= 40).sum() == 0
