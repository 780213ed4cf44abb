"""What analyze_trace returns (the tool's result model), apart from the ingest so the tool is declared without it."""

from __future__ import annotations

from pydantic import Field

from sdpa_analyzer.server.results import ResultModel


class CategoryResult(ResultModel):
    name: str
    display_name: str
    rows: int
    instances: int
    kernel_time_ms: float
    percent_of_e2e: float | None = None
    percent_of_busy: float | None = Field(None, description="kernel time as a % of the GPU busy time of the window")
    unfused_instances: int = 0
    files: list[str] = Field(default_factory=list)


class GpuResult(ResultModel):
    device_name: str | None = None
    arch: str | None = Field(None, description="GPU table key used for the peaks (None: no peaks written)")
    name: str | None = None
    source: str = Field("none", description="argument | arch_json | trace | none")


class E2EResult(ResultModel):
    total_time_ms: float
    window_source: str = Field(description="gpu_profiler_step | cpu_profiler_step | gpu_activity")
    steps: list[str] = Field(default_factory=list)
    computation_time_percent: float
    exposed_comm_time_percent: float
    exposed_memcpy_time_percent: float
    idle_time_percent: float
    busy_time_ms: float = Field(0.0, description="GPU busy time of the window: union of its kernels, copies, memsets")
    idle_time_ms: float = Field(0.0, description="E2E minus busy: the window's GPU idle time")


class UnlinkedResult(ResultModel):
    kernels_without_cpu_launch: int = 0
    time_without_cpu_launch_us: float = 0.0
    in_window: int = 0
    in_window_time_us: float = 0.0
    gpu_events_outside_window: int = 0
    outside_window_time_us: float = 0.0
    attention_kernels_without_cpu_launch: int = 0
    attention_time_without_cpu_launch_us: float = 0.0
    attention_kernels_outside_rows: int = Field(
        0, description="attention kernels (by their own names) that no row accounts for, CPU launch or not"
    )
    attention_time_outside_rows_us: float = 0.0
    attention_kernels_outside_window: int = Field(
        0, description="of those, the kernels that ran outside the profiled window (another step's, no CPU launch)"
    )
    attention_time_outside_window_us: float = 0.0


class AnalyzeResult(ResultModel):
    status: str = Field(description="OK, or NO_DATA when the trace has no attention calls")
    trace_path: str
    output_dir: str
    events: int
    categories: list[CategoryResult] = Field(default_factory=list)
    gpu: GpuResult
    e2e: E2EResult
    unlinked: UnlinkedResult
    comparison_scope: str = "standalone"
    trace2_path: str | None = None
    trace2_e2e: E2EResult | None = None
    trace2_unlinked: UnlinkedResult | None = Field(
        None, description="comparative mode: trace 2's GPU events without a launch and attention kernels outside its "
        "rows or its window, as `unlinked` says them for trace 1"
    )
    config_json: str | None = Field(None, description="the model config.json whose layer hints were used")
    warnings: list[str] = Field(default_factory=list)
    files_written: list[str] = Field(default_factory=list)
    seconds: float = 0.0


__all__ = ["AnalyzeResult", "CategoryResult", "E2EResult", "GpuResult", "UnlinkedResult"]
