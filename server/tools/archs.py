"""list_architectures: the GPU table (peaks per compute spec, HBM bandwidth, the source of every number)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sdpa_analyzer.perf_models.hardware import GpuSpec, get_gpu, list_gpus
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import ACHIEVABLE_HELP, GPU_HELP, ROOF_KIND_HELP, GpuArg


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
    bf16_kind: str | None = Field(None, description=ROOF_KIND_HELP)
    bf16_achievable: float | None = Field(None, description=f"TFLOP/s, {ACHIEVABLE_HELP}")
    fp8_tflops: float | None = None
    hbm_tbs: float = Field(description="the HBM bandwidth roof, TB/s")
    sm_count: int | None = Field(None, description="SMs (NVIDIA) or CUs (AMD)")
    memory_gb: float | None = None
    arch: str | None = Field(None, description="sm_90, gfx942, ...")


class ArchInfo(ResultModel):
    key: str
    name: str
    vendor: str
    device_names: list[str]
    sm_count: int | None = None
    l2_cache_mb: float | None = None
    memory_gb: float | None = None
    hbm_tbs: float = Field(description="the bandwidth roof, TB/s")
    hbm_tbs_kind: str = Field(description=ROOF_KIND_HELP)
    hbm_tbs_achievable: float | None = Field(None, description=f"TB/s, {ACHIEVABLE_HELP}")
    tflops: dict[str, float] = Field(description="the compute roof per spec, TFLOP/s (see tflops_kind)")
    tflops_kind: dict[str, str] = Field(description="per spec: " + ROOF_KIND_HELP)
    tflops_datasheet: dict[str, float]
    tflops_achievable: dict[str, float] = Field(default_factory=dict, description=f"per spec, {ACHIEVABLE_HELP}")
    boost_clock_ghz: float | None = Field(None, description="the rated boost clock the datasheet rates are quoted at")
    sustained_clock_ghz: float | None = Field(
        None, description="the clock the part holds above its rated boost (its compute roofs use it: kind sustained)"
    )
    achievable_method: str | None = Field(None, description="how the achievable figures were measured")
    unverified: dict[str, float] = Field(
        default_factory=dict, description="figures without a stated method: shown for reference, never a roof"
    )
    sources: dict[str, str]


class ArchList(ResultModel):
    count: int
    architectures: list[ArchSummary] = Field(default_factory=list, description="the short table (no gpu given)")
    details: ArchInfo | None = Field(None, description="the GPU asked for, in full")


def _summary(g: GpuSpec) -> ArchSummary:
    bf16 = g.compute_roof("matrix_bf16") if "matrix_bf16" in g.specs() else None
    fp8 = g.peak_tflops("matrix_fp8")[0] if "matrix_fp8" in g.specs() else None
    return ArchSummary(key=g.key, name=g.name, vendor=g.vendor, bf16_tflops=bf16.value if bf16 else None,
                       bf16_kind=bf16.kind if bf16 else None, bf16_achievable=bf16.achievable if bf16 else None,
                       fp8_tflops=fp8, hbm_tbs=g.peak_tbs()[0], sm_count=g.sm_count, memory_gb=g.memory_gb,
                       arch=g.arch)


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
        hbm_tbs_achievable=g.hbm_tbs_achievable,
        tflops={s: v for s, (v, _) in roofs.items()},
        tflops_kind={s: k for s, (_, k) in roofs.items()},
        tflops_datasheet=dict(g.tflops_datasheet),
        tflops_achievable=dict(g.tflops_achievable),
        boost_clock_ghz=g.boost_clock_ghz,
        sustained_clock_ghz=g.sustained_clock_ghz,
        achievable_method=g.achievable_method,
        unverified=unverified,
        sources=dict(g.sources),
    )


TABLE_BEGIN = "<!-- gpu-table: generated from perf_models/data/gpus by server.tools.archs.markdown_table -->"
TABLE_END = "<!-- /gpu-table -->"


def markdown_table() -> str:
    """The GPU table of docs/gpus.md (tests/server/tools/test_gpu_docs.py keeps the page equal to it)."""
    head = ("| key | name | arch | SMs / CUs | memory GB | bf16 roof TFLOPS (kind) | fp8 roof | memory TB/s | "
            "achievable bf16 (beside) |\n|---|---|---|---|---|---|---|---|---|")
    lines = [TABLE_BEGIN, head]
    for g in list_gpus():
        bf16 = g.compute_roof("matrix_bf16") if "matrix_bf16" in g.specs() else None
        fp8 = f"{g.peak_tflops('matrix_fp8')[0]:.4g}" if "matrix_fp8" in g.specs() else "—"
        roof = f"{bf16.value:.4g} ({bf16.kind})" if bf16 else "—"
        beside = f"{bf16.achievable:g}" if bf16 and bf16.achievable else ""
        units = "?" if g.sm_count is None else f"{g.sm_count} {'CUs' if g.vendor == 'amd' else 'SMs'}"
        memory = "?" if g.memory_gb is None else f"{g.memory_gb:g}"
        lines.append(f"| `{g.key}` | {g.name} | {g.arch or '?'} | {units} | {memory} | {roof} | {fp8} | "
                     f"{g.hbm_tbs_datasheet:g} | {beside} |")
    lines.append(TABLE_END)
    return "\n".join(lines)


def list_architectures(ctx: ToolContext, args: ArchsInput) -> ArchList:
    return architecture_table(args.gpu)


TOOL = ToolSpec(
    name="list_architectures",
    title="Known GPUs and their peaks",
    description=(
        "The GPUs the tools know: a short table of bf16/fp8 roofs, bandwidth, SMs/CUs, memory; with gpu, that GPU "
        "in full: every roof (datasheet dense peak) with kind and source, measured figures beside it (never a roof)."
    ),
    input_model=ArchsInput,
    result_model=ArchList,
    run=list_architectures,
    cli=CliSpec("archs", positional=("gpu",)),
    agent="optional: the GPUs and peak figures the tools know",
)
