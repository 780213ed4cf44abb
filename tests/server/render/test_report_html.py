"""HTML report: parsed back with html.parser, the tables' cells and the embedded chart are checked."""

from __future__ import annotations

import base64
import struct

import pytest

from sdpa_analyzer.server.render.chart_types import Ceilings, RooflinePoint
from sdpa_analyzer.server.render.plots import render_roofline_png
from sdpa_analyzer.server.render.report import (
    NO_OPS_MESSAGE,
    CategorySection,
    FindingRow,
    OpRow,
    PeakSource,
    ReportContext,
    render_report_html,
)
from tests.support import parse_html as parse

NASTY = 'flash_attn::fwd<float, 128><script>alert("x")</script>'
FLASH_KERNEL = "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4> >(Params)"
FILL_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)"


@pytest.fixture(scope="module")
def chart_png() -> bytes:
    ceil = Ceilings(peak_tflops=989.0, peak_tbs=3.35, compute_spec="matrix_bf16", gpu_name="H100", peak_kind="ach")
    pts = [
        RooflinePoint(label="B16 H16 N559 d64", intensity=140.0, achieved_tflops=85.8, time_ms=4.016,
                      direction="fwd", has_model=True, name="aten::_scaled_dot_product_flash_attention",
                      category="sdpa_fwd"),
    ]  # fmt: skip
    return render_roofline_png(pts, ceil, title="sdpa_fwd", size_px=(600, 400)).png


def make_ctx(chart_png: bytes) -> ReportContext:
    ops = [
        OpRow(
            name="aten::_scaled_dot_product_flash_attention",
            shape="fwd B16 H16 N559 d64",
            verdict="8.7 % of tensor peak; compute-bound; below the best published kernels for this shape",
            args="(16,16,559,64) bf16<br>(16,16,559,64) bf16<br>(16,16,559,64) bf16",
            count=24,
            time_ms=4.01634,
            percent_e2e=12.1225,
            efficiency_pct=8.677,
            bound="compute",
            flops=1.2345e12,
            bytes=4.5e8,
            intensity=140.04,
            achieved_tflops=85.835,
            expected_band="20–40 %",
            band_status="below",
            compute_pct=8.677,
            memory_pct=3.25,
            regime="compute",
            kernel_name=FLASH_KERNEL,
            kernel_names=[FILL_KERNEL, FLASH_KERNEL],
            module_chain=["LlamaModel", "LlamaDecoderLayer", "LlamaAttention"],
            warnings=["kernel time includes a FillFunctor<float> kernel"],
        ),
        OpRow(name=NASTY, args="", count=3, time_ms=0.5, percent_e2e=1.5, efficiency_pct=123.4, bound="memory",
              flops=2.0e9, bytes=1.0e6, intensity=2000.0, achieved_tflops=4.0, warnings=["efficiency > 110 %"]),
        OpRow(name="vllm::unified_attention", count=7, time_ms=2.25, percent_e2e=6.8,
              no_model_reason="paged KV layout not supported",
              warnings=["row not modeled: paged KV layout not supported"]),
    ]  # fmt: skip
    findings = [
        FindingRow(rank=1, bound="compute", library="FlashAttention-2", eff_bucket="0-30", impact_low=8.34,
                   impact_mid=9.73, impact_high=11.12, impact_to_band=6.5, members_within_band=0, member_count=1,
                   members=["aten::_scaled_dot_product_flash_attention"]),
        FindingRow(rank=2, bound="unmodeled", library="Unknown", eff_bucket="unknown", estimate_method="heuristic",
                   impact_low=1.02, impact_mid=2.04, impact_high=3.06, members=["vllm::unified_attention", NASTY]),
    ]  # fmt: skip
    return ReportContext(
        title="SDPA report <demo>",
        source="/data/out & co",
        e2e_ms=33.131,
        bytes_model="compulsory",
        bytes_model_note="re-reads assumed to hit L2",
        peaks=[PeakSource(gpu_name="NVIDIA H100 80GB HBM3", compute_spec="matrix_bf16", peak_tflops=989.0,
                          peak_tbs=3.35, peak_kind="achievable", source="GPU in the trace (deviceProperties)")],
        warnings=["metadata platform MI300X disagrees with the trace's GPU (H100): using H100"],
        sections=[
            CategorySection(category="sdpa_fwd", display_name="SDPA forward", chart_png=chart_png,
                            total_time_ms=6.766, percent_of_e2e=20.42, findings=findings, ops=ops),
            CategorySection(category="sdpa_bwd", display_name="SDPA backward"),
            CategorySection(category="inferenceattention", error="ops CSV row 3: Input Dims is not a tuple"),
        ],
    )  # fmt: skip


@pytest.fixture(scope="module")
def page(chart_png: bytes) -> str:
    return render_report_html(make_ctx(chart_png))


def test_ops_table_rows_and_values(page: str) -> None:
    rows = parse(page).tables["ops-sdpa_fwd"]
    # what a reader looks for first comes first (op, shape, time, efficiency, band, verdict), the rest after
    assert rows[0] == [
        "op", "shape", "count", "time ms", "%E2E", "efficiency %", "expected band", "verdict", "compute %",
        "memory %", "regime", "bound", "module", "args", "FLOPs", "bytes", "FLOPs/byte", "achieved TFLOPS", "kernel",
        "warnings / no-model reason",
    ]  # fmt: skip
    assert len(rows) == 1 + 3
    r = rows[1]
    # formatting worked by hand: 4.01634 → 4.016; 8.677 → 8.7; 3.25 → 3.2 (round half even); 1.2345e12 → 1.23 TFLOP
    assert r[:18] == [
        "aten::_scaled_dot_product_flash_attention", "fwd B16 H16 N559 d64", "24", "4.016", "12.12", "8.7",
        "20–40 % (below)", "8.7 % of tensor peak; compute-bound; below the best published kernels for this shape",
        "8.7", "3.2", "compute", "compute", "LlamaModel > LlamaDecoderLayer > LlamaAttention",
        "(16,16,559,64) bf16\n(16,16,559,64) bf16\n(16,16,559,64) bf16", "1.23 TFLOP", "450 MB", "140.0", "85.83",
    ]  # fmt: skip
    assert r[-1] == "kernel time includes a FillFunctor<float> kernel"
    # the kernel cell: the dominant kernel cut to 60 characters in a <summary>, every kernel in full below it
    assert r[18].startswith(FLASH_KERNEL[:59] + "… +1")
    assert FILL_KERNEL in r[18] and FLASH_KERNEL in r[18]
    assert rows[2][0] == NASTY  # the template / tag text round-trips as text
    assert rows[2][1] == rows[2][12] == rows[2][13] == "—"  # no shape, no module chain, no args
    assert rows[2][14:16] == ["2 GFLOP", "1 MB"]
    no_model = rows[3]
    assert no_model[0] == "vllm::unified_attention"
    assert no_model[5] == "—" and no_model[8:10] == ["—"] * 2 and no_model[14:18] == ["—"] * 4  # unknown rates
    assert no_model[-1] == "no model: paged KV layout not supported"


def test_bounded_rows_carry_their_marks(chart_png: bytes) -> None:
    """A sliding-window row (work an upper bound) reads ≤ beside its exact causal twin, as in the CLI table."""
    twin = {"count": 1, "time_ms": 1.0, "efficiency_pct": 40.0, "compute_pct": 40.0, "memory_pct": 5.0,
            "achieved_tflops": 395.6}  # fmt: skip
    ops = [OpRow(name="causal", work_bound="exact", **twin), OpRow(name="window", work_bound="upper", **twin),
           OpRow(name="varlen", work_bound="lower", **twin)]  # fmt: skip
    page = render_report_html(ReportContext(title="t", sections=[CategorySection(category="sdpa_fwd", ops=ops)]))
    rows = {r[0]: r for r in parse(page).tables["ops-sdpa_fwd"][1:]}
    rated = (5, 8, 9, 17)  # efficiency, compute %, memory %, achieved TFLOPS
    assert [rows["causal"][i] for i in rated] == ["40.0", "40.0", "5.0", "395.60"]
    assert [rows["window"][i] for i in rated] == ["≤40.0", "≤40.0", "≤5.0", "≤395.60"]
    assert [rows["varlen"][i] for i in rated] == ["≥40.0", "≥40.0", "≥5.0", "≥395.60"]
    assert "≥ / ≤ / ~: the row&#x27;s work is a lower bound" in page
    assert "All ops (3 rows)" in page
    one = render_report_html(ReportContext(title="t", sections=[CategorySection(category="sdpa_fwd", ops=ops[:1])]))
    assert "All ops (1 row)" in one and "work is a lower bound" not in one


def test_full_kernel_name_in_a_tooltip_and_details(page: str) -> None:
    p = parse(page)
    titles = [v for tag, k, v in p.attrs if tag == "summary" and k == "title"]
    assert FLASH_KERNEL in titles  # the full dominant name on hover
    assert "details" in p.start_tags  # the kernel list opens without a script


def test_findings_table(page: str) -> None:
    rows = parse(page).tables["findings-sdpa_fwd"]
    assert rows[0] == ["rank", "bound", "library", "eff bucket", "method", "impact low (% of E2E)",
                       "impact mid (% of E2E)", "impact high (% of E2E)", "to band (% of E2E)", "members within band",
                       "members", "levers (ms saved, largest first)"]  # fmt: skip
    # the impact figures with the metrics JSON's digits (6.5, not a re-rounded 6.50)
    assert rows[1][:11] == ["1", "compute", "FlashAttention-2", "0-30", "quantified", "8.34", "9.73", "11.12", "6.5",
                            "0 of 1", "aten::_scaled_dot_product_flash_attention"]  # fmt: skip
    assert rows[2][:10] == ["2", "unmodeled", "Unknown", "unknown", "heuristic", "1.02", "2.04", "3.06", "—", "—"]
    assert rows[2][10].split("\n") == ["vllm::unified_attention", NASTY]
    levers = {r[0]: r[11] for r in rows[1:]}
    assert all(isinstance(v, str) for v in levers.values())
    assert "Impact figures are in % of E2E" in "".join(parse(page).text)


def test_peaks_table_says_where_peaks_came_from(page: str) -> None:
    rows = parse(page).tables["peaks"]
    # ridge = 989 / 3.35 = 295.22… FLOPs/byte
    assert rows[1] == ["NVIDIA H100 80GB HBM3", "matrix_bf16", "989", "3.35", "295.2", "achievable",
                       "GPU in the trace (deviceProperties)"]  # fmt: skip


def test_embedded_chart_is_the_png(page: str, chart_png: bytes) -> None:
    imgs = parse(page).imgs
    assert len(imgs) == 1
    src = imgs[0]["src"] or ""
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix)
    raw = base64.b64decode(src[len(prefix) :], validate=True)
    assert raw == chart_png
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", raw[16:24]) == (600, 400)


def test_self_contained_and_escaped(page: str) -> None:
    p = parse(page)
    assert "<script" not in page.lower()
    assert "script" not in p.start_tags
    assert "http://" not in page and "https://" not in page
    assert not {"link", "iframe", "object", "embed", "base", "form"} & set(p.start_tags)
    for tag, key, value in p.attrs:
        if key in ("src", "href", "action", "srcset", "poster"):
            assert (value or "").startswith(("data:", "#")), (tag, key, value)
    assert "url(" not in page  # no CSS fetches
    assert "&lt;script&gt;" in page and "SDPA report &lt;demo&gt;" in page and "/data/out &amp; co" in page


def test_empty_and_failed_categories(page: str) -> None:
    text = "".join(parse(page).text)
    assert text.count(NO_OPS_MESSAGE) == 1  # sdpa_bwd only
    assert "Analysis failed: ops CSV row 3: Input Dims is not a tuple" in text
    assert "ops-sdpa_bwd" not in parse(page).tables


def test_context_lines(page: str) -> None:
    text = "".join(parse(page).text)
    assert "E2E baseline: 33.131 ms" in text
    assert "Bytes model: compulsory (re-reads assumed to hit L2)" in text
    assert "metadata platform MI300X disagrees" in text
    assert "GPU kernel time 6.766 ms · 20.42 % of E2E" in text


def test_anomalous_efficiency_is_highlighted(page: str) -> None:
    assert '<td class="num anomaly">123.4</td>' in page
    assert '<td class="num">8.7</td>' in page


def test_report_without_sections_says_no_ops() -> None:
    page = render_report_html(ReportContext(title="t"))
    assert NO_OPS_MESSAGE in page and "No peaks were resolved" in page
    assert parse(page).imgs == []


def test_consistency_alert_and_no_findings_reason_render() -> None:
    op = OpRow(name="aten::x", count=1, time_ms=1.0, t2_time_ms=1.5, t2_count=2, difference_ms=0.5)
    sec = CategorySection(
        category="sdpa_fwd", ops=[op], comparative=True, no_findings_reason="trace 2 is not faster <here>",
        consistency_warnings=["findings were ranked on GPU <A> but this report shows GPU B"],
    )  # fmt: skip
    page = render_report_html(ReportContext(title="t", sections=[sec]))
    text = "".join(parse(page).text)
    assert 'role="alert"' in page and "findings were ranked on GPU <A> but this report shows GPU B" in text
    assert "No findings: trace 2 is not faster <here>." in text
    rows = parse(page).tables["ops-sdpa_fwd"]
    # the trace-2 columns follow the key columns (op … verdict)
    assert rows[0][7:11] == ["verdict", "T2 time ms", "T2 count", "Δ ms (T2 − T1)"]
    assert rows[1][8:11] == ["1.500", "2", "+0.500"]
    # without a reason the page still says that it does not know why
    bare = render_report_html(ReportContext(title="t", sections=[CategorySection(category="sdpa_fwd", ops=[op])]))
    assert "No findings: the report was not told why." in "".join(parse(bare).text)
    assert "alert" not in bare.split("<style>")[0] + bare.split("</style>")[1]


def test_every_lever_reaches_the_findings_table_in_order() -> None:
    from sdpa_analyzer.server.render.report import FindingRow

    levers = ["drop_copies: 2.766 ms (7.93 % of E2E), an upper bound",
              "match_reference: 1.531 ms (4.39 % of E2E), as computed", "head_dim_128: 0.405 ms (1.16 % of E2E), as "
              "computed", "fp8: 0.1 ms (0.29 % of E2E), at most"]  # fmt: skip
    row = FindingRow(rank=1, bound="memory", library="L", eff_bucket="0-30", impact_low=4.72, impact_mid=5.5,
                     impact_high=6.29, members=["op"], levers=levers)  # fmt: skip
    section = CategorySection(category="sdpa_fwd", findings=[row], ops=[OpRow(name="op", count=1, time_ms=1.0)])
    page = render_report_html(ReportContext(title="t", sections=[section]))
    cells = parse(page).tables["findings-sdpa_fwd"][1]
    assert cells[11].split("\n") == levers  # all four, the largest saving first
    assert cells[5:8] == ["4.72", "5.5", "6.29"]
