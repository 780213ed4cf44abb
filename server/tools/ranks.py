"""analyze_ranks: every rank trace of one distributed job → one analysis folder per rank + a cross-rank summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from sdpa_analyzer.server.errors import InputError
from sdpa_analyzer.server.ranks.discover import list_trace_dir
from sdpa_analyzer.server.ranks.result import RanksResult
from sdpa_analyzer.server.tools.base import CliSpec, Setting, ToolContext, ToolInput, ToolSpec
from sdpa_analyzer.server.tools.common import ArchArg
from sdpa_analyzer.server.vocab import STRAGGLER_RATIO

MAX_TRACES = 100_000
PathText = Annotated[str, StringConstraints(min_length=1, max_length=4096)]


class AnalyzeRanksInput(ToolInput):
    trace_paths: Annotated[
        list[PathText] | None,
        Field(
            max_length=MAX_TRACES,
            description="the rank traces (Kineto JSON, .json or .json.gz) under a data root; a single folder "
            "stands for trace_dir",
        ),
    ] = None
    trace_dir: Annotated[
        str | None, Field(max_length=4096, description="a folder of rank traces (its *.json and *.json.gz files)")
    ] = None
    output_dir: Annotated[
        str,
        Field(
            min_length=1,
            max_length=4096,
            description="folder to write: rank_<r>/ per rank (as analyze_trace writes it) and ranks_summary.json",
        ),
    ]
    workers: Annotated[
        int | None, Field(ge=1, le=4096, description="parallel workers (pool processes or LocalCluster workers); "
                                                     "default: the CPU count")
    ] = None  # fmt: skip
    engine: Annotated[
        Literal["pool", "dask"] | None,
        Field(
            description="pool: processes on this machine; dask: a dask.distributed cluster (needs the cluster extra): "
            "the scheduler the server or CLI was started with (--dask-address), else a private local cluster; "
            "default: dask when a scheduler was configured, else pool"
        ),
    ] = None
    arch: ArchArg = None
    overwrite: Annotated[
        bool, Field(description="replace the rank folders and summary an earlier run left in output_dir")
    ] = False
    limit: Annotated[int, Field(ge=0, le=100, description="stragglers to return (all are in the summary file)")] = 10

    @model_validator(mode="after")
    def _one_source(self) -> AnalyzeRanksInput:
        if bool(self.trace_paths) == bool(self.trace_dir):
            raise ValueError("pass either trace_paths (the rank traces) or trace_dir (their folder), not both")
        return self


DASK_ADDRESS = Setting(
    field="dask_address",
    flag="--dask-address",
    env="SDPA_DASK_ADDRESS",
    metavar="ADDR",
    help="the Dask scheduler analyze_ranks runs on (tls://host:8786; default: a private local cluster). A scheduler "
    "and its workers can run code as you: give only one you trust (not an MCP argument: see README, Security)",
)


def _trace_files(ctx: ToolContext, args: AnalyzeRanksInput) -> list[Path]:
    roots = ctx.roots
    if args.trace_dir:
        folder = roots.resolve(args.trace_dir, what="trace_dir")
    else:
        paths = [roots.resolve(p, what="trace_paths") for p in args.trace_paths or []]
        if len(paths) != 1 or not roots.is_dir(paths[0], what="trace_paths"):
            return paths
        folder = paths[0]
    return list_trace_dir(folder, roots)  # each file checked again: a link in the folder must not lead out


def _arch_spec(arch: str | None, ctx: ToolContext) -> dict[str, Any] | None:
    """An arch JSON file's content, read and checked through the roots here (the workers get plain data)."""
    from sdpa_analyzer.server.scoring.arch import read_arch_file

    if not arch or not arch.lower().endswith(".json"):
        return None
    data, _ = read_arch_file(arch, ctx.roots)
    if not isinstance(data.get("name"), str) or not data["name"].strip():
        data = {**data, "name": Path(arch).stem}  # the name read_arch_file gave the GPU
    return data


def analyze_ranks(ctx: ToolContext, args: AnalyzeRanksInput) -> RanksResult:
    traces = _trace_files(ctx, args)
    if not traces:
        raise InputError("no rank traces given — pass trace_paths or trace_dir")
    out = ctx.roots.resolve(args.output_dir, what="output_dir")
    engine = args.engine or ("dask" if ctx.dask_address else "pool")
    arch_spec = _arch_spec(args.arch, ctx)
    from sdpa_analyzer.server.ranks.forkserver import start_fork_server  # multiprocessing: only when the tool runs

    if engine == "pool":
        start_fork_server()  # it imports the analysis while this process does the same on the next line
    from sdpa_analyzer.server.ranks.run import (
        analyze_ranks as run_ranks,  # the engines and the ingest: when the tool runs
    )

    return run_ranks(
        traces,
        out,
        roots=ctx.roots,
        workers=args.workers,
        engine=engine,
        dask_address=ctx.dask_address if engine == "dask" else None,
        arch=args.arch,
        arch_spec=arch_spec,
        overwrite=args.overwrite,
        limit=args.limit,
        progress=ctx.progress,
    )


TOOL = ToolSpec(
    name="analyze_ranks",
    title="Analyze every rank of a distributed job and compare the ranks",
    description=(
        "Run analyze_trace on every rank trace of one job in parallel (a process pool, or with engine=dask the "
        "Dask cluster the server was configured with, else a private local one): output_dir/rank_<r>/ per rank, "
        "the same folder analyze_trace writes, so every other tool works on it. Ranks come from the traces' "
        "distributedInfo or their file names (rank_3…). Writes "
        "ranks_summary.json/.csv and ranks_shapes.csv: per rank and category calls, kernel time, % of E2E and "
        f"efficiency; per attention shape the time per rank and the stragglers (over {STRAGGLER_RATIO:g} × the "
        "median). Returns "
        "the totals, the top stragglers and each failed rank's one-line error. Sends a progress notification "
        "per rank."
    ),
    input_model=AnalyzeRanksInput,
    result_model=RanksResult,
    run=analyze_ranks,
    cli=CliSpec("analyze-ranks", positional=("trace_paths",), flags={"output_dir": ("-o",)}, settings=(DASK_ADDRESS,)),
    writes=True,
    # not for the subagent: an orchestrator's step (a whole job's traces on a pool or a cluster), not one category's
)
