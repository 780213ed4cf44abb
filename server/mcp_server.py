"""The MCP server: thin tool wrappers around server.tools.service (and the trace/findings/plot modules).

Every user-fixable failure becomes a ToolError with one line (the LLM reads it); anything unexpected
is logged with its traceback on stderr and reported as a one-line internal error, never a traceback.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from perf_models.errors import PerfModelError
from server.errors import InputError, os_error_message
from server.findings.validate import ValidationReport
from server.roots import DataRoots
from server.tools import findings_service, service
from server.tools.schemas import ArchList, LoadResult, ModelResult, RankResult, RooflineResult

log = logging.getLogger("sdpa_analyzer")
T = TypeVar("T")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# writes files into output_dir (metrics JSON, roofline table, plots), never deletes or overwrites findings
WRITES_OUTPUT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

INSTRUCTIONS = (
    "Attention (SDPA) performance analysis of PyTorch profiler traces. Typical flow for one category "
    "(sdpa_fwd, sdpa_bwd, inferenceattention): load_category_data -> compute_roofline -> rank_findings -> "
    "render_findings_template -> fill the {{FILL: ...}} prose slots -> validate_findings. analyze_trace turns "
    "a raw trace into the analysis folder. All numbers come from the tools; never compute them yourself."
)

OutputDir = Annotated[str, Field(description="analysis folder (holds category_data/ and metadata/), under a data root")]
Category = Annotated[str, Field(description="attention category: sdpa_fwd, sdpa_bwd or inferenceattention")]
ArchArg = Annotated[
    str | None,
    Field(
        description="GPU to score against (e.g. h100-sxm, mi300x, b200) or an arch JSON path; default: the trace's GPU"
    ),
]


def guarded(name: str, fn: Callable[[], T]) -> T:
    """Run fn; turn input errors into one-line ToolErrors and hide internal tracebacks from the client."""
    try:
        return fn()
    except (InputError, PerfModelError, FileNotFoundError) as exc:
        raise ToolError(" ".join(str(exc).split())) from None
    except OSError as exc:
        raise ToolError(os_error_message(exc)) from None
    except ToolError:
        raise
    except Exception as exc:  # an internal bug: log it for us, give the caller one clear line
        log.exception("tool %s failed", name)
        raise ToolError(f"internal error in {name} ({type(exc).__name__}); see the server log") from None


def create_server(roots: list[Path] | None = None) -> MCPServer:
    data_roots = DataRoots(list(roots) if roots else [Path.cwd()])
    mcp = MCPServer("sdpa-analyzer", instructions=INSTRUCTIONS, version="0.1.0")

    @mcp.tool(title="Load attention category data", annotations=READ_ONLY)
    def load_category_data(output_dir: OutputDir, category: Category) -> LoadResult:
        """Read and validate <category>_ops.csv and its metadata. Status OK, NO_DATA (no attention ops of
        this category: write 'No SDPA operations found in trace') or ERROR (the cause is in `message`)."""
        try:
            return service.load_category_data(data_roots, output_dir, category)
        except InputError as exc:
            return LoadResult(status="ERROR", category=str(category), output_dir=str(output_dir), message=str(exc))

    @mcp.tool(title="Roofline of every attention op", annotations=WRITES_OUTPUT)
    def compute_roofline(
        output_dir: OutputDir,
        category: Category,
        arch: ArchArg = None,
        bytes_model: Annotated[Literal["compulsory", "tiled"], Field(description="bytes numerator")] = "compulsory",
        limit: Annotated[int, Field(ge=0, le=200, description="rows to return (by time, descending)")] = 10,
        offset: Annotated[int, Field(ge=0, description="rows to skip (paging)")] = 0,
    ) -> RooflineResult:
        """Model every op row (FLOPs, bytes, ideal time, efficiency, bound, expected band, classification).
        Returns totals and the top rows; the full per-row table is written to category_data/<cat>_roofline.csv."""
        return guarded(
            "compute_roofline",
            lambda: service.compute_roofline(data_roots, output_dir, category, arch, bytes_model, limit, offset),
        )

    @mcp.tool(title="Rank findings and write the metrics JSON", annotations=WRITES_OUTPUT)
    def rank_findings(
        output_dir: OutputDir,
        category: Category,
        comparison_scope: Annotated[Literal["standalone", "comparative"], Field(description="scope")] = "standalone",
        arch: ArchArg = None,
        bytes_model: Literal["compulsory", "tiled"] = "compulsory",
    ) -> RankResult:
        """Impact estimates and ranked category_findings; writes category_data/<cat>_metrics.json atomically."""
        return guarded(
            "rank_findings",
            lambda: service.rank_findings(data_roots, output_dir, category, comparison_scope, arch, bytes_model),
        )

    @mcp.tool(title="Validate a findings file", annotations=READ_ONLY)
    def validate_findings(
        findings_path: Annotated[str, Field(description="category_findings/<cat>_findings.md under a data root")],
        tier: Annotated[Literal["compute", "system"], Field(description="findings tier")] = "compute",
        comparison_scope: Literal["standalone", "comparative"] | None = None,
    ) -> ValidationReport:
        """Check a findings file against the contract and the metrics JSON: every error has a rule id, a line
        and a concrete fix."""
        return guarded(
            "validate_findings",
            lambda: findings_service.validate_findings(data_roots, findings_path, tier, comparison_scope),
        )

    @mcp.tool(title="What-if roofline for explicit shapes", annotations=READ_ONLY)
    def model_attention(
        batch: Annotated[int, Field(gt=0)],
        heads_q: Annotated[int, Field(gt=0)],
        seq_q: Annotated[int, Field(gt=0, description="query length")],
        head_dim: Annotated[int, Field(gt=0, description="head dim of Q/K")],
        heads_kv: Annotated[int | None, Field(gt=0, description="K/V heads (GQA); default heads_q")] = None,
        seq_kv: Annotated[int | None, Field(gt=0, description="key length; default seq_q")] = None,
        head_dim_v: Annotated[int | None, Field(gt=0, description="head dim of V; default head_dim")] = None,
        dtype: str = "bf16",
        kv_cache_dtype: str | None = None,
        direction: Literal["fwd", "bwd"] = "fwd",
        mask: Literal["none", "causal", "sliding_window"] = "none",
        alignment: Literal["top_left", "bottom_right"] = "bottom_right",
        window_left: int = -1,
        window_right: int = -1,
        dropout_p: float = 0.0,
        arch: str = "h100-sxm",
        measured_us: Annotated[float | None, Field(gt=0, description="measured kernel time (µs)")] = None,
        bytes_model: Literal["compulsory", "tiled"] = "compulsory",
        bwd_convention: Literal["5gemm", "recompute_fwd", "two_phase"] = "5gemm",
    ) -> ModelResult:
        """Roofline of one attention call: FLOPs, bytes, ideal time, bound, and efficiency if measured_us is given."""
        return guarded(
            "model_attention",
            lambda: service.model_attention(
                data_roots,
                batch=batch,
                heads_q=heads_q,
                seq_q=seq_q,
                head_dim=head_dim,
                heads_kv=heads_kv,
                seq_kv=seq_kv,
                head_dim_v=head_dim_v,
                dtype=dtype,
                kv_cache_dtype=kv_cache_dtype,
                direction=direction,
                mask=mask,
                alignment=alignment,
                window_left=window_left,
                window_right=window_right,
                dropout_p=dropout_p,
                arch=arch,
                measured_us=measured_us,
                bytes_model=bytes_model,
                bwd_convention=bwd_convention,
            ),
        )

    @mcp.tool(title="Known GPUs and their peaks", annotations=READ_ONLY)
    def list_architectures() -> ArchList:
        """The GPU table: peaks per compute spec (achievable where known), HBM bandwidth, sources."""
        return guarded("list_architectures", service.list_architectures)

    _register_optional_tools(mcp, data_roots)
    return mcp


def _register_optional_tools(mcp: MCPServer, data_roots: DataRoots) -> None:
    """Tools whose modules live in their own packages (trace ingestion, templates, plots)."""
    from server.mcp_extra import register

    register(mcp, data_roots, guarded)


def run_in_thread_with_progress(ctx: Context | None, fn: Callable[[Callable[[float, float, str], None]], T]) -> Any:
    """Run a blocking job on a worker thread, forwarding its progress callbacks as MCP progress."""

    async def runner() -> T:
        def progress(done: float, total: float, message: str) -> None:
            if ctx is not None:
                try:
                    anyio.from_thread.run(functools.partial(ctx.report_progress, done, total, message))
                except Exception:  # progress is best-effort; never fail the job for it
                    log.debug("progress notification dropped", exc_info=True)

        return await anyio.to_thread.run_sync(lambda: fn(progress))

    return runner()
