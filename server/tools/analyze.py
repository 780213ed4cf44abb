"""analyze_trace: a raw torch.profiler trace (Kineto JSON, plain or gzip) → the analysis folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, Field

from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ingest.errors import TraceError
from sdpa_analyzer.server.ingest.result import AnalyzeResult
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import ArchArg

TracePath = Annotated[
    str,
    Field(min_length=1, max_length=4096, description="Kineto/Chrome-trace JSON (.json or .json.gz) under a data root"),
]


class AnalyzeInput(ToolInput):
    # `model_config` is pydantic's own attribute: the field is model_config_path, and callers (MCP and CLI alike)
    # spell it by its alias, model_config, only
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    trace_path: TracePath
    output_dir: Annotated[
        str | None,
        Field(
            max_length=4096,
            description="analysis folder to write (created if missing); default: "
            "<trace name>_analysis under the first data root (for the CLI without --root: the working directory)",
        ),
    ] = None
    arch: ArchArg = None
    trace2_path: Annotated[
        str | None, Field(max_length=4096, description="a second trace of the same workload: comparative mode")
    ] = None
    capture_dir: Annotated[
        str | None,
        Field(
            max_length=4096,
            description="the serving profiler's capture_traces/ folder of a graph-replay trace (execution_details.json "
            "and the capture traces; the run folder holding capture_traces/ works too): shapes of the graph-replayed "
            "attention calls come from it, times from the trace",
        ),
    ] = None
    model_config_path: Annotated[
        str | None,
        Field(
            alias="model_config",
            max_length=4096,
            description="the model's Hugging Face config.json under a data root (sliding_window, layer_types, "
            "num_key_value_heads, head_dim, MLA ranks): resolves the per-layer sliding windows and MLA latent caches "
            "of serving attention calls, which the trace does not carry; recorded in the metadata",
        ),
    ] = None


def default_output_dir(trace: Path, roots: DataRoots) -> Path:
    """`<trace name>_analysis` under the first data root (never beside a trace that may sit in a read-only place)."""
    name = trace.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return roots.roots[0] / f"{name}_analysis"


def explicit_arch(arch: str | None, roots: DataRoots) -> str | GpuSpec:
    """The arch argument as analyze_trace takes it: "auto", a GPU table key, or an arch JSON file read (through the
    roots) and checked here, before the trace is parsed."""
    from sdpa_analyzer.server.scoring.arch import gpu_by_name_or_file

    if not arch:
        return "auto"
    if arch.lower().endswith(".json"):
        return gpu_by_name_or_file(arch, roots)[0]
    return arch


def analyze_trace(ctx: ToolContext, args: AnalyzeInput) -> AnalyzeResult:
    from sdpa_analyzer.server.ingest.analyze import analyze_trace as run_analysis  # the ingest (numpy, pandas, msgspec)

    roots = ctx.roots
    trace = roots.resolve(args.trace_path, what="trace_path")
    out_arg = args.output_dir if args.output_dir is not None else str(default_output_dir(trace, roots))
    out = roots.resolve(out_arg, what="output_dir")
    trace2 = roots.resolve(args.trace2_path, what="trace2_path") if args.trace2_path else None
    capture = roots.resolve(args.capture_dir, what="capture_dir") if args.capture_dir else None
    arch = explicit_arch(args.arch, roots)
    model = roots.resolve(args.model_config_path, what="model_config") if args.model_config_path else None
    try:
        return run_analysis(
            trace, out, arch=arch, trace2_path=trace2, progress=ctx.progress, capture_dir=capture,
            model_config=model, roots=roots,
        )
    except TraceError as exc:
        raise InputError(str(exc)) from None


TOOL = ToolSpec(
    name="analyze_trace",
    title="Analyze a raw PyTorch profiler trace",
    description=(
        "Turn a torch.profiler trace (Kineto JSON, .json or .json.gz) into the analysis folder: "
        "category_data/<category>_ops.csv, metadata/<category>_metadata.json and the manifest, for sdpa_fwd, "
        "sdpa_bwd and inferenceattention. Status NO_DATA when the trace holds no attention. For a serving trace "
        "that replays CUDA/HIP graphs, capture_dir (the profiler's capture_traces/ folder) gives the replayed "
        "calls' shapes; model_config (the model's config.json) gives each serving layer's sliding window and MLA "
        "cache. Sends progress notifications."
    ),
    input_model=AnalyzeInput,
    result_model=AnalyzeResult,
    run=analyze_trace,
    cli=CliSpec("analyze", positional=("trace_path",),
                flags={"output_dir": ("-o",), "trace2_path": ("--compare",)}),
    writes=True,
    agent="not part of this flow (it builds an analysis folder from a raw trace); use it only when your caller asks",
)
