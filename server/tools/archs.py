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
    hbm_tbs: float
    hbm_tbs_kind: str
    tflops: dict[str, float] = Field(description="peak per compute spec (achievable where known, else datasheet)")
    tflops_datasheet: dict[str, float]
    sources: dict[str, str]


class ArchList(BaseModel):
    count: int
    architectures: list[ArchInfo]


def architecture_table() -> ArchList:
    archs = []
    for g in list_gpus():
        bw, kind = g.peak_tbs()
        tflops = {spec: g.peak_tflops(spec)[0] for spec in sorted(set(g.tflops_datasheet) | set(g.tflops_achievable))}
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
                tflops=tflops,
                tflops_datasheet=dict(g.tflops_datasheet),
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
        "The GPU table: dense peaks per compute spec (achievable where measured, else datasheet), HBM bandwidth, "
        "SM/CU count, memory, and the source of every number."
    ),
    input_model=ArchsInput,
    result_model=ArchList,
    run=list_architectures,
    cli=CliSpec("archs"),
)
