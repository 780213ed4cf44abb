"""list_architectures: the GPU table (peaks per compute spec, HBM bandwidth, the source of every number)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from perf_models.hardware import GpuSpec, get_gpu, list_gpus
from server.results import ResultModel
from server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from server.tools.common import GPU_HELP, GpuArg


class ArchsInput(ToolInput):
    gpu: Annotated[
        GpuArg,
        Field(description="one GPU to describe in full (every roof, its kind and source): " + GPU_HELP
              + "; default: the short table"),
    ] = None


class ArchSummary(ResultModel):
    key: str
    name: str
    vendor: str
    bf16_tflops: float | None = Field(None, description="the bf16 compute roof, TFLOP/s")
    bf16_kind: str | None = Field(None, description="achievable (measured with a stated method) | datasheet")
    fp8_tflops: float | None = None
    hbm_tbs: float = Field(description="the HBM bandwidth roof, TB/s")
    sm_count: int | None = Field(None, description="SMs (NVIDIA) or CUs (AMD)")


class ArchInfo(ResultModel):
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


class ArchList(ResultModel):
    count: int
    architectures: list[ArchSummary] = Field(default_factory=list, description="the short table (no gpu given)")
    details: ArchInfo | None = Field(None, description="the GPU asked for, in full")


def _summary(g: GpuSpec) -> ArchSummary:
    bf16 = g.peak_tflops("matrix_bf16") if "matrix_bf16" in g.specs() else None
    fp8 = g.peak_tflops("matrix_fp8")[0] if "matrix_fp8" in g.specs() else None
    return ArchSummary(key=g.key, name=g.name, vendor=g.vendor, bf16_tflops=bf16[0] if bf16 else None,
                       bf16_kind=bf16[1] if bf16 else None, fp8_tflops=fp8, hbm_tbs=g.peak_tbs()[0],
                       sm_count=g.sm_count)


def architecture_table(gpu: str | None = None) -> ArchList:
    """The short table of every GPU, or one GPU in full (every roof with its kind and source)."""
    gpus = list_gpus()
    if gpu is None:
        return ArchList(count=len(gpus), architectures=[_summary(g) for g in gpus])
    return ArchList(count=len(gpus), details=_details(get_gpu(gpu)))


def full_table() -> list[ArchInfo]:
    """Every GPU in full (the `sdpa://architectures` resource)."""
    return [_details(g) for g in list_gpus()]


def _details(g: GpuSpec) -> ArchInfo:
    bw, kind = g.peak_tbs()
    roofs = {spec: g.peak_tflops(spec) for spec in sorted(set(g.tflops_datasheet) | set(g.tflops_achievable))}
    unverified = {f"tflops.{s}": v for s, v in g.tflops_unverified.items()}
    if g.hbm_tbs_unverified is not None:
        unverified["hbm_tbs"] = g.hbm_tbs_unverified
    return ArchInfo(
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


def list_architectures(ctx: ToolContext, args: ArchsInput) -> ArchList:
    return architecture_table(args.gpu)


TOOL = ToolSpec(
    name="list_architectures",
    title="Known GPUs and their peaks",
    description=(
        "The GPUs the tools know: a short table of each one's bf16/fp8 compute roof, HBM bandwidth roof and SM/CU "
        "count; with gpu, that GPU in full: every roof (datasheet dense peak, or achievable measured with a stated "
        "method), its kind and source, memory, and unverified figures (never used)."
    ),
    input_model=ArchsInput,
    result_model=ArchList,
    run=list_architectures,
    cli=CliSpec("archs", positional=("gpu",)),
    agent="optional: the GPUs and peak figures the tools know",
)
