"""The HTML report in a real headless Chromium: no console messages, the chart visible in a screenshot.

Skipped when no Chromium is installed (Debian: `apt-get install chromium`).
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from sdpa_analyzer.server.render.chart_types import Ceilings, RooflinePoint
from sdpa_analyzer.server.render.plots import DIRECTION_STYLE, render_roofline_png
from sdpa_analyzer.server.render.report import CategorySection, OpRow, PeakSource, ReportContext, render_report_html

WINDOW = (1400, 2000)


def find_chromium() -> str | None:
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")


def screenshot(html_path: Path, tmp: Path, window: tuple[int, int] = WINDOW) -> tuple[np.ndarray, list[str]]:
    """Render html_path; return the screenshot as an (H, W, 3) uint8 array and the page's console lines."""
    png = tmp / f"{html_path.stem}.png"
    cmd = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--hide-scrollbars", "--force-device-scale-factor=1", f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr", "--v=0", f"--screenshot={png}",
        f"--window-size={window[0]},{window[1]}", html_path.resolve().as_uri(),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    # Chromium logs every page console message (errors, CSP violations, uncaught exceptions) as
    # "...:INFO:CONSOLE..." lines; the rest of stderr is browser noise (dbus, GPU probing).
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(io.BytesIO(data))
    return (img[..., :3] * 255).round().astype(np.uint8), console


def colour_pixels(img: np.ndarray, hex_colour: str, tol: int = 3) -> int:
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(img.astype(int) - rgb).max(axis=-1) <= tol).sum())


def report_page() -> str:
    ceil = Ceilings(peak_tflops=989.0, peak_tbs=3.35, compute_spec="matrix_bf16", gpu_name="H100", peak_kind="ach")
    pts = [
        RooflinePoint(label=f"N{n}", intensity=n / 4, achieved_tflops=n / 20, time_ms=n / 100,
                      direction="fwd" if i % 2 else "bwd", has_model=True, name=f"op<{n}>", category="sdpa_fwd")
        for i, n in enumerate((512, 1024, 2048, 4096))
    ]  # fmt: skip
    chart = render_roofline_png(pts, ceil, title="sdpa_fwd").png
    ops = [OpRow(name=p.name, count=1, time_ms=p.time_ms, intensity=p.intensity) for p in pts]
    return render_report_html(
        ReportContext(
            title="SDPA report",
            peaks=[PeakSource(gpu_name="H100", compute_spec="matrix_bf16", peak_tflops=989.0, peak_tbs=3.35,
                              peak_kind="achievable", source="test")],
            sections=[CategorySection(category="sdpa_fwd", chart_png=chart, ops=ops),
                      CategorySection(category="sdpa_bwd")],
        )
    )  # fmt: skip


def test_report_renders_with_chart_visible_and_no_console_errors(tmp_path: Path) -> None:
    html_path = tmp_path / "report.html"
    html_path.write_text(report_page(), encoding="utf-8")
    img, console = screenshot(html_path, tmp_path)
    assert console == []
    assert img.shape == (WINDOW[1], WINDOW[0], 3)
    assert img.std() > 10  # not blank
    # the chart's legend swatches are opaque, in the exact marker colours: the image was decoded and drawn
    for d in ("fwd", "bwd"):
        assert colour_pixels(img, DIRECTION_STYLE[d]["color"]) > 20, d


def test_checks_can_fail_on_a_broken_page(tmp_path: Path) -> None:
    """Control: a broken chart image and a script error must trip the same checks."""
    page = report_page()
    start = page.index("data:image/png;base64,") + len("data:image/png;base64,")
    end = page.index('"', start)
    broken = page[:start] + "AAAA" + page[end:]
    broken = broken.replace("</body>", '<img src="https://example.invalid/x.png"></body>')
    html_path = tmp_path / "broken.html"
    html_path.write_text(broken, encoding="utf-8")
    img, console = screenshot(html_path, tmp_path)
    assert console, "the blocked network image should be reported on the console"
    for d in ("fwd", "bwd"):
        assert colour_pixels(img, DIRECTION_STYLE[d]["color"]) == 0, d


# one colour per key column header, painted by a test-only stylesheet (exact RGB: no antialiasing on a fill)
KEY_COLOURS = {"c-op": "#fe01fe", "c-shape": "#01fefe", "c-time": "#fefe01", "c-eff": "#01fe01", "c-band": "#0101fe",
               "c-verdict": "#fe0101"}  # fmt: skip


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report of the demo's synthetic H100 trace (forward and backward), through the tools."""
    from sdpa_analyzer.server.roots import DataRoots
    from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace
    from sdpa_analyzer.server.tools import call

    base = tmp_path_factory.mktemp("demo")
    roots = DataRoots([base])
    trace = write_trace(build_trace(demo_calls()), base / "demo.json.gz")
    call("analyze_trace", roots, trace_path=str(trace), output_dir=str(base / "analysis"))
    for cat in ("sdpa_fwd", "sdpa_bwd"):
        call("rank_findings", roots, output_dir=str(base / "analysis"), category=cat)
    res = call("render_report", roots, output_dir=str(base / "analysis"))
    return Path(res.report_file).read_text(encoding="utf-8")


def _key_columns_painted(page: str) -> str:
    paint = "".join(f"th.{cls} {{ background: {colour} !important; color: {colour}; }}"
                    for cls, colour in KEY_COLOURS.items())  # fmt: skip
    return page.replace("</style>", paint + "</style>", 1)


def _columns_in_view(img: np.ndarray, right_edge: int) -> dict[str, bool]:
    """Which painted headers show whole: enough of their colour, and none of it against the scroll box's edge."""
    seen = {}
    for cls, colour in KEY_COLOURS.items():
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        _, xs = np.nonzero(np.abs(img.astype(int) - rgb).max(axis=-1) == 0)
        seen[cls] = xs.size > 300 and int(xs.max()) < right_edge - 2
    return seen


def test_the_key_columns_show_without_scrolling_at_1400_px(demo_report: str, tmp_path: Path) -> None:
    """op, shape, time, efficiency, band and verdict are on screen at 1,400 px; the table's other columns scroll."""
    html_path = tmp_path / "report.html"
    html_path.write_text(_key_columns_painted(demo_report), encoding="utf-8")
    width = 1400
    img, console = screenshot(html_path, tmp_path, (width, 4000))
    assert console == []
    body_margin = 24  # the page's CSS: the scroll box ends 24 px from the window's right edge
    seen = _columns_in_view(img, width - body_margin)
    assert all(seen.values()), seen
    # control: a narrow window does push the last key columns out of view, so the check can fail
    narrow = 700
    img, _ = screenshot(html_path, tmp_path, (narrow, 4000))
    assert not all(_columns_in_view(img, narrow - body_margin).values())
