"""list_architectures: the GPU table (peaks per compute spec, HBM bandwidth, the source of every number)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from perf_models.hardware import list_gpus
from server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec


class ArchsInput(ToolInput):
    pass


class ArchInfo(BaseModel):
    key: str
    name: str
    vendor: str
    device_names: list[str]
    sm_count: int | None = None
    l2_cache_mb: float | None = None
    memory_gb: float | None = None
    hbm_tbs: float = Field(description="the bandwidth roof, TB/s")
    hbm_tbs_kind: str = Field(description="achievable (measured with a stated method) | datasheet")
    tflops: dict[str, float] = Field(description="the compute roof per spec, TFLOP/s (see tflops_kind)")
    tflops_kind: dict[str, str] = Field(description="per spec: achievable (measured with a stated method) | datasheet")
    tflops_datasheet: dict[str, float]
    achievable_method: str | None = Field(None, description="how the achievable roofs were measured")
    unverified: dict[str, float] = Field(
        default_factory=dict, description="figures without a stated method: shown for reference, never a roof"
    )
    sources: dict[str, str]


class ArchList(BaseModel):
    count: int
    architectures: list[ArchInfo]


def architecture_table() -> ArchList:
    archs = []
    for g in list_gpus():
        bw, kind = g.peak_tbs()
        roofs = {spec: g.peak_tflops(spec) for spec in sorted(set(g.tflops_datasheet) | set(g.tflops_achievable))}
        unverified = {f"tflops.{s}": v for s, v in g.tflops_unverified.items()}
        if g.hbm_tbs_unverified is not None:
            unverified["hbm_tbs"] = g.hbm_tbs_unverified
        archs.append(
            ArchInfo(
                key=g.key,
                name=g.name,
                vendor=g.vendor,
                device_names=list(g.device_names),
                sm_count=g.sm_count,
                l2_cache_mb=g.l2_cache_mb,
                memory_gb=g.memory_gb,
                hbm_tbs=bw,
                hbm_tbs_kind=kind,
                tflops={s: v for s, (v, _) in roofs.items()},
                tflops_kind={s: k for s, (_, k) in roofs.items()},
                tflops_datasheet=dict(g.tflops_datasheet),
                achievable_method=g.achievable_method,
                unverified=unverified,
                sources=dict(g.sources),
            )
        )
    return ArchList(count=len(archs), architectures=archs)


def list_architectures(ctx: ToolContext, args: ArchsInput) -> ArchList:
    return architecture_table()


TOOL = ToolSpec(
    name="list_architectures",
    title="Known GPUs and their peaks",
    description=(
        "The GPU table: the roofs per compute spec and the HBM bandwidth roof (datasheet dense peaks, or achievable "
        "peaks measured with a stated method), their kinds, SM/CU count, memory, unverified figures (never used) "
        "and the source of every number."
    ),
    input_model=ArchsInput,
    result_model=ArchList,
    run=list_architectures,
    cli=CliSpec("archs"),
)
