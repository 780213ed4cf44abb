"""load_category_data: read and validate one category of an analysis folder; summary and the top ops."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from sdpa_analyzer.server.errors import shorten_message, shorten_middle
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.numbers import finite
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import CategoryArg, OutputDir, resolve_output_dir

if TYPE_CHECKING:  # the folder reader imports pandas: a tool's declaration stays light
    from sdpa_analyzer.server.folder.read import CategoryData

TOP_OPS = 5


class LoadInput(ToolInput):
    output_dir: OutputDir
    category: CategoryArg


class TopOp(ResultModel):
    row: int = Field(description="row index in <cat>_ops.csv (0-based, header excluded)")
    name: str
    args: str = Field(description="tensor inputs as `(shape) dtype`, `<br>` between inputs")
    count: int = Field(description="instances")
    time_ms: float = Field(description="total kernel time of the row, ms")
    percent_of_total: float | None = Field(None, description="% of the E2E baseline")


class LoadResult(ResultModel):
    status: Literal["OK", "NO_DATA"] = Field(
        description="OK, or NO_DATA: the trace has no attention ops of this category (write 'No SDPA operations "
        "found in trace')"
    )
    category: str
    output_dir: str
    message: str | None = None
    rows: int = Field(0, description="rows of <cat>_ops.csv (one per op signature)")
    instances: int = Field(0, description="op calls (sum of operation_count)")
    total_kernel_time_ms: float = 0.0
    e2e_baseline_ms: float | None = Field(None, description="first-to-last GPU activity of the profiled window")
    percent_of_e2e: float | None = None
    # the time base side by side (analyze_trace's e2e_window; None for folders written without it)
    gpu_busy_ms: float | None = Field(None, description="GPU busy time of the window: union of its kernels, copies "
                                      "and memsets, ms")
    gpu_idle_ms: float | None = Field(None, description="E2E baseline minus the busy time, ms")
    percent_of_busy: float | None = Field(None, description="the category's kernel time as a % of the GPU busy time")
    attention_outside_window_us: float | None = Field(
        None, description="attention kernels that ran outside the profiled window (another step's): named, never a "
        "share of it")
    comparison_scope: str = "standalone"
    platform: str | None = None
    metadata_peaks: dict[str, Any] | None = None
    trace_path: str | None = None
    implementations: dict[str, int] = Field(default_factory=dict, description="instances per op family/attention type")
    top_ops: list[TopOp] = Field(default_factory=list, description="the longest rows by kernel time")
    warnings: list[str] = Field(default_factory=list)


def load_category_data(ctx: ToolContext, args: LoadInput) -> LoadResult:
    import numpy as np  # the folder reader and the op table: imported when the tool runs, not to declare it

    from sdpa_analyzer.perf_models.registry import lookup
    from sdpa_analyzer.server.folder.cache import cached_load
    from sdpa_analyzer.server.scoring.records import short_args

    out = resolve_output_dir(ctx.roots, args.output_dir)
    data = cached_load(out, args.category, ctx.roots)
    res = LoadResult(status=data.status, category=data.category, output_dir=str(out), warnings=list(data.warnings))
    md = data.metadata
    platform = md.get("platform") if md else (data.manifest or {}).get("platform")
    res.platform = _text_field(platform, "platform", res.warnings)
    res.trace_path = _text_field(md.get("trace_path") if md else None, "trace_path", res.warnings)
    peaks = md.get("max_achievable_tflops")
    if isinstance(peaks, dict) and peaks:
        # numbers only, a few of them: the metadata is input, the result must stay small and schema-valid
        res.metadata_peaks = {
            "max_achievable_tflops": {
                shorten_middle(str(k), 40): float(v) for k, v in list(peaks.items())[:16] if _number(v)
            },
            "peak_hbm_bw_tbs": float(md["peak_hbm_bw_tbs"]) if _number(md.get("peak_hbm_bw_tbs")) else None,
        }
    res.comparison_scope = data.comparison_scope
    if data.status == "NO_DATA":
        res.message = (
            f"No {data.category}_ops.csv in {out / layout.CATEGORY_DATA}: the trace has no attention ops of this "
            "category. Write the findings file 'No SDPA operations found in trace'."
        )
        return res
    df = data.df
    assert df is not None
    ksum = df["Kernel Time (µs)_sum"].to_numpy(dtype=float) / 1000.0
    res.rows = len(df)
    res.instances = int(df["operation_count"].sum())
    res.total_kernel_time_ms = round(float(ksum.sum()), 4)
    res.e2e_baseline_ms = finite(data.e2e_ms, 4)
    res.percent_of_e2e = finite(100.0 * ksum.sum() / data.e2e_ms, 4) if data.e2e_ms else None
    _time_base(res, data, float(ksum.sum()))

    impl: dict[str, int] = {}
    for name, cnt in zip(df["name"].astype(str), df["operation_count"].astype(int), strict=True):
        spec = lookup(name)
        kind = getattr(spec, "attention_type", None) or "unknown op"
        impl[str(kind)] = impl.get(str(kind), 0) + int(cnt)
    res.implementations = impl
    for i in np.argsort(-ksum, kind="stable")[:TOP_OPS]:
        res.top_ops.append(
            TopOp(
                row=int(i),
                name=str(df["name"].iloc[i]),
                args=short_args(data.input_dims(int(i)), data.parsed["Input type"][i]),
                count=int(df["operation_count"].iloc[i]),
                time_ms=round(float(ksum[i]), 4),
                percent_of_total=finite(100.0 * ksum[i] / data.e2e_ms, 4) if data.e2e_ms else None,
            )
        )
    return res


def _time_base(res: LoadResult, data: CategoryData, kernel_ms: float) -> None:
    """Busy and idle time of the window (CategoryData.time_base) and the attention kernels outside it, from the
    metadata analyze_trace writes (numbers only; anything else is left None)."""
    busy, idle = data.time_base()
    if busy is not None:
        res.gpu_busy_ms = finite(busy, 4)
        res.percent_of_busy = finite(100.0 * kernel_ms / busy, 4) if busy > 0 else None
    if idle is not None:
        res.gpu_idle_ms = finite(idle, 4)
    md = data.metadata
    outside = md.get("attention_outside_rows") if isinstance(md, dict) else None
    trace1 = outside.get("trace1") if isinstance(outside, dict) else None
    late = trace1.get("outside_window") if isinstance(trace1, dict) else None
    if isinstance(late, dict) and _number(late.get("time_us")):
        res.attention_outside_window_us = finite(float(late["time_us"]), 3)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _text_field(value: Any, name: str, warnings: list[str]) -> str | None:
    """A metadata text the result shows: a string (shortened when long), or None with a warning for any other
    type (a number or a list there is a malformed metadata file, not a reason to break the result's schema)."""
    if value is None or isinstance(value, str):
        return None if value is None else shorten_message(value, 200)
    warnings.append(f"metadata {name} is a {type(value).__name__}, not a string: ignored")
    return None


TOOL = ToolSpec(
    name="load_category_data",
    title="Load attention category data",
    description=(
        "Read and validate <category>_ops.csv and its metadata in an analysis folder. Returns status OK with a "
        "summary (rows, instances, kernel time, E2E baseline, % of E2E, platform, implementations) and the top "
        "ops, or status NO_DATA when the trace has no attention ops of this category (then write the findings "
        "file 'No SDPA operations found in trace'). A missing folder or a malformed file is a tool error."
    ),
    input_model=LoadInput,
    result_model=LoadResult,
    run=load_category_data,
    cli=CliSpec("load", positional=("output_dir", "category")),
    agent="step 1: load and check the category's op table and metadata",
)
