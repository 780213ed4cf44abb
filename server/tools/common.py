"""Parameter types and result pieces several tools share (each written once, described once).

Like every tool module, it imports only what declaring the tools needs (pydantic, server.vocab, the GPU table):
`--help`, the CLI's parser and the MCP listing are built without numpy or pandas; what scores imports them when it
runs (tests/server/cli/test_start_imports.py).

The types are `Annotated` so an input model field is one line: its JSON schema (enum, unit, meaning) and its
validation come with it. Closed sets are enums in the schema; an arch name is normalized before validation so
`H100` and `MI300X` are accepted and the schema still lists the canonical keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StringConstraints

from sdpa_analyzer.perf_models.dtypes import try_normalize_dtype
from sdpa_analyzer.perf_models.errors import UnknownArchError
from sdpa_analyzer.perf_models.hardware import GpuSpec, get_gpu
from sdpa_analyzer.server.errors import shorten_message
from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.vocab import (
    BYTES_MODEL_HELP,
    CATEGORY_HELP,
    CHART_COMPUTE_SPEC,
    SCOPE_HELP,
    BytesModel,
    Category,
    Scope,
)

if TYPE_CHECKING:
    from sdpa_analyzer.server.scoring.arch import ResolvedArch
    from sdpa_analyzer.server.scoring.records import RooflineTable

OutputDir = Annotated[
    str,
    StringConstraints(min_length=1, max_length=4096),
    Field(description="analysis folder (category_data/, metadata/) under a data root; relative to the first root"),
]
CategoryArg = Annotated[Category, Field(description=CATEGORY_HELP)]
ScopeArg = Annotated[Scope, Field(description=SCOPE_HELP)]
BytesModelArg = Annotated[BytesModel, Field(description=BYTES_MODEL_HELP)]


def canonical_arch(value: Any) -> Any:
    """A GPU name in any spelling the table knows (`H100`, `mi300x`, a trace device name) → its key; a path to
    an arch JSON file is left as it is; anything else is refused naming the known keys."""
    if value is None or not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower().endswith(".json"):
        return value  # a path keeps its exact characters (the roots refuse a line break in it)
    return canonical_gpu(text)


def canonical_gpu(value: Any) -> Any:
    """A GPU name in any spelling the table knows → its key; anything else (an arch JSON path included) is
    refused naming the known keys."""
    if value is None or not isinstance(value, str):
        return value
    try:
        return get_gpu(value.strip()).key
    except UnknownArchError as exc:
        raise ValueError(f"unknown GPU; {exc.hint}") from None


# The schema is a plain string, not an enum of the table's keys: the server takes every spelling the table knows
# (`H100`, `MI300X`, a trace's device name) and normalizes it to a key before validation, so an enum would make a
# schema-validating client refuse what the server accepts. Unknown names get one line listing the keys.
_ArchText = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
GPU_HELP = "a list_architectures key (h100-sxm, mi300x, …) or another spelling (H100, a trace's device name)"
ARCH_HELP = f"GPU: {GPU_HELP}, or a TraceLens arch JSON file (.json) under a data root"
ArchArg = Annotated[
    _ArchText | None,
    BeforeValidator(canonical_arch),
    Field(description=ARCH_HELP + "; default: the trace's GPU, else the metadata's platform"),
]
RequiredArch = Annotated[_ArchText, BeforeValidator(canonical_arch), Field(description=ARCH_HELP)]
GpuArg = Annotated[_ArchText | None, BeforeValidator(canonical_gpu), Field(description=GPU_HELP)]


def _canonical_dtype(value: Any) -> Any:
    if isinstance(value, str):
        return try_normalize_dtype(value) or value
    return value


AttentionDtype = Literal["bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2"]
DtypeArg = Annotated[
    AttentionDtype,
    BeforeValidator(_canonical_dtype),
    Field(description="element type of Q/K/V (aten spellings such as c10::BFloat16 are accepted)"),
]
KvCacheDtype = Literal["bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2", "int8"]
KvCacheDtypeArg = Annotated[
    KvCacheDtype | None,
    BeforeValidator(_canonical_dtype),
    Field(
        description="element type of the K/V cache read by decode/paged kernels (fp8 halves the bytes); "
        "default: the dtype of K/V"
    ),
]


def resolve_output_dir(roots: DataRoots, output_dir: str) -> Path:
    """The analysis folder, checked under the data roots."""
    return roots.resolve(output_dir, what="output_dir")


# kinds (perf_models.hardware.ROOF_KINDS): sustained = datasheet rate at the part's sustained clock; achievable = a
# user's peaks with no built-in match. Short: every result schema carries it (the listing-size budget)
ROOF_KIND_HELP = "datasheet | sustained | achievable"
ACHIEVABLE_HELP = "measured, shown beside the roof, never in a ratio"


class PeaksUsed(ResultModel):
    """The roofs a result was scored against (datasheet dense peaks), what they are and where they come from, and
    where the GPU came from."""

    gpu_key: str
    gpu_name: str
    source: str = Field(description="where the GPU came from: argument | arch_json | trace | metadata")
    source_detail: str | None = Field(
        None, description="for metadata: why the trace's GPU was not used (e.g. trace_path outside the data roots)"
    )
    compute_spec: str | None = Field(None, description="the compute spec with the most kernel time")
    compute_note: str | None = Field(
        None, description="why there is no compute roof (no modeled row has a dtype), and the one the chart draws"
    )
    peak_tflops: float | None = Field(None, description="compute roof of that spec, TFLOP/s")
    peak_tflops_kind: str | None = Field(None, description=ROOF_KIND_HELP)
    peak_tflops_source: str | None = Field(None, description="where the compute roof comes from")
    peak_tflops_datasheet: float | None = Field(None, description="the datasheet dense peak of that spec, TFLOP/s")
    peak_tflops_achievable: float | None = Field(None, description=f"TFLOP/s, {ACHIEVABLE_HELP}")
    peak_tbs: float = Field(description="HBM bandwidth roof, TB/s")
    peak_tbs_kind: str = Field(description=ROOF_KIND_HELP)
    peak_tbs_source: str | None = Field(None, description="where the bandwidth roof comes from")
    peak_tbs_datasheet: float | None = Field(None, description="the datasheet HBM bandwidth, TB/s")
    trace_gpu_name: str | None = Field(None, description="the GPU named in the trace's deviceProperties")


SOURCE_LIMIT = 600  # a source is kept whole (ours are shorter); an arch JSON's own text is cut between words


def peaks_of(gpu: GpuSpec, source: str, spec: str | None, *, detail: str | None = None,
             trace_gpu_name: str | None = None) -> PeaksUsed:
    """PeaksUsed of a GPU for one compute spec (None: no modeled row), with every roof's kind and source."""
    from sdpa_analyzer.perf_models.assess import (
        spec_roof,  # the roofline math (numpy): only the tools that score need it
    )

    bw = gpu.bandwidth_roof()
    roof = spec_roof(gpu, spec) if spec is not None else None
    note = None
    if roof is None:
        drawn = spec_roof(gpu, CHART_COMPUTE_SPEC)
        note = "no modeled row has a dtype to choose the compute spec, so no number uses a compute roof" + (
            f"; the chart draws {CHART_COMPUTE_SPEC}'s {drawn.value:g} TFLOPS ({drawn.kind})" if drawn else ""
        )
    return PeaksUsed(
        gpu_key=gpu.key,
        gpu_name=gpu.name,
        source=source,
        source_detail=detail,
        compute_spec=spec,
        compute_note=note,
        peak_tflops=roof.value if roof else None,
        peak_tflops_kind=roof.kind if roof else None,
        peak_tflops_source=shorten_message(roof.source, SOURCE_LIMIT) if roof else None,
        peak_tflops_datasheet=roof.datasheet if roof else None,
        peak_tflops_achievable=roof.achievable if roof else None,
        peak_tbs=bw.value,
        peak_tbs_kind=bw.kind,
        peak_tbs_source=shorten_message(bw.source, SOURCE_LIMIT),
        peak_tbs_datasheet=bw.datasheet,
        trace_gpu_name=trace_gpu_name,
    )


def peaks_used(arch: ResolvedArch, table: RooflineTable | None) -> PeaksUsed:
    """The roofs behind a table's numbers: the GPU's bandwidth and the roof of its dominant compute spec."""
    spec = table.dominant_compute_spec() if table is not None else None
    return peaks_of(arch.gpu, arch.source, spec, detail=arch.trace_note, trace_gpu_name=arch.trace_gpu_name)
