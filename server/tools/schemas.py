"""Pydantic models of every tool's output (clients get JSON schemas and structuredContent from them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Direction = Literal["fwd", "bwd"]


class PeaksUsed(BaseModel):
    gpu_key: str
    gpu_name: str
    source: str = Field(description="argument | arch_json | trace | metadata")
    compute_spec: str | None = None
    peak_tflops: float | None = None
    peak_tflops_kind: str | None = Field(None, description="achievable | datasheet")
    peak_tbs: float
    peak_tbs_kind: str
    trace_gpu_name: str | None = None


class TopOp(BaseModel):
    row: int
    name: str
    args: str
    count: int
    time_ms: float
    percent_of_total: float | None = None


class LoadResult(BaseModel):
    status: Literal["OK", "NO_DATA", "ERROR"]
    category: str
    output_dir: str
    message: str | None = None
    rows: int = 0
    instances: int = 0
    total_kernel_time_ms: float = 0.0
    e2e_baseline_ms: float | None = None
    percent_of_e2e: float | None = None
    comparison_scope: str = "standalone"
    platform: str | None = None
    metadata_peaks: dict[str, Any] | None = None
    trace_path: str | None = None
    implementations: dict[str, int] = Field(default_factory=dict, description="instances per op family/attention type")
    top_ops: list[TopOp] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class RooflineRow(BaseModel):
    row: int
    name: str
    direction: str | None = None
    attention_type: str
    library: str
    shape: str
    mask: str | None = None
    dtype: str | None = None
    count: int
    time_ms: float
    mean_us: float | None = None
    flops_useful: float | None = None
    flops_executed: float | None = None
    bytes_compulsory: float | None = None
    bytes_tiled: float | None = None
    ideal_us: float | None = None
    intensity: float | None = Field(None, description="FLOPs per byte under the chosen bytes model")
    achieved_tflops: float | None = None
    achieved_tbs: float | None = None
    efficiency_pct: float | None = None
    bound: str | None = None
    expected_band_pct: tuple[float, float] | None = None
    in_expected_band: bool | None = None
    is_anomaly: bool = False
    gqa_ratio: int | None = None
    upstream_efficiency_pct: float | None = None
    kernel_name_trunc: str = ""
    module_chain: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class RooflineResult(BaseModel):
    category: str
    status: Literal["OK", "NO_DATA"]
    bytes_model: str
    peaks: PeaksUsed | None = None
    total_rows: int = 0
    modeled_rows: int = 0
    unmodeled_rows: int = 0
    total_time_ms: float = 0.0
    weighted_efficiency_pct: float | None = Field(None, description="ideal time / measured time over modeled rows")
    anomalies: int = 0
    offset: int = 0
    limit: int = 0
    rows: list[RooflineRow] = Field(default_factory=list, description="rows by time, descending, paged")
    roofline_file: str | None = Field(None, description="full per-row records (CSV) in the analysis folder")
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class FindingSummary(BaseModel):
    rank: int
    bound_type: str | None
    library: str
    eff_bucket: str
    estimate_method: str
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    percent_of_total: float | None = None
    member_count: int
    members: list[str] = Field(description="distinct member op names (at most 20; member_count has the total)")


class RankResult(BaseModel):
    category: str
    status: Literal["OK", "NO_DATA", "ERROR"]
    comparison_scope: str
    metrics_file: str | None = None
    total_time_ms: float | None = None
    percent_of_compute: float | None = None
    operation_count: int | None = None
    findings: list[FindingSummary] = Field(default_factory=list)
    impact_estimates: int = 0
    peaks: PeaksUsed | None = None
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)


class ModelResult(BaseModel):
    config: dict[str, Any]
    mask: str
    peaks: PeaksUsed
    kept_pairs: float = Field(description="exact kept (query, key) pairs per query head, summed over the batch")
    flops_useful: float
    flops_executed: float
    flops_upper: float
    bytes_compulsory: float
    bytes_tiled: float
    bytes_model: str
    bwd_convention: str
    block_q: int
    block_kv: int
    tile_visits: int
    intensity: float
    ridge: float
    ideal_us: float
    bound: str
    measured_us: float | None = None
    achieved_tflops: float | None = None
    achieved_tbs: float | None = None
    efficiency_pct: float | None = None
    is_anomaly: bool = False
    expected_band_pct: tuple[float, float]
    in_expected_band: bool | None = None
    notes: list[str] = Field(default_factory=list)


class ArchInfo(BaseModel):
    key: str
    name: str
    vendor: str
    device_names: list[str]
    sm_count: int | None = None
    l2_cache_mb: float | None = None
    memory_gb: float | None = None
    hbm_tbs: float
    hbm_tbs_kind: str
    tflops: dict[str, float] = Field(description="peak per compute spec (achievable where known, else datasheet)")
    tflops_datasheet: dict[str, float]
    sources: dict[str, str]


class ArchList(BaseModel):
    count: int
    architectures: list[ArchInfo]
