"""MCP tools beyond the core four: trace ingestion, findings template, roofline chart; plus prompt and resources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import Field

from prompts.render import load_findings_format, render_analysis_prompt
from server.ingest.analyze import AnalyzeResult
from server.roots import DataRoots
from server.tools import findings_service, trace_service
from server.tools.plot_service import PlotResult, plot_roofline
from server.tools.schemas import ArchList


def register(mcp: MCPServer, roots: DataRoots, guarded: Callable[[str, Callable[[], Any]], Any]) -> None:
    from server.mcp_server import WRITES_OUTPUT, run_in_thread_with_progress  # app is loaded: it calls register()

    @mcp.tool(title="Analyze a raw PyTorch profiler trace", annotations=WRITES_OUTPUT)
    async def analyze_trace(
        trace_path: Annotated[str, Field(description="Kineto/Chrome-trace JSON (.json or .json.gz) under a data root")],
        output_dir: Annotated[str, Field(description="analysis folder to write (created if missing)")],
        arch: Annotated[str, Field(description="'auto' (GPU from the trace) or a GPU name / arch JSON")] = "auto",
        trace2_path: Annotated[str | None, Field(description="second trace: comparative mode")] = None,
        ctx: Context | None = None,
    ) -> AnalyzeResult:
        """Turn a torch.profiler trace into category_data/<cat>_ops.csv + metadata + manifest (sdpa_fwd,
        sdpa_bwd, inferenceattention). Status NO_DATA when the trace holds no attention."""
        return await run_in_thread_with_progress(
            ctx,
            lambda progress: guarded(
                "analyze_trace",
                lambda: trace_service.analyze(roots, trace_path, output_dir, arch, trace2_path, progress),
            ),
        )

    @mcp.tool(title="Render the findings skeleton", annotations=WRITES_OUTPUT)
    def render_findings_template(
        output_dir: Annotated[str, Field(description="analysis folder")],
        category: Annotated[str, Field(description="sdpa_fwd, sdpa_bwd or inferenceattention")],
    ) -> findings_service.TemplateResult:
        """Write category_findings/<cat>_findings.md with every heading, marker, number and table filled from
        <cat>_metrics.json (run rank_findings first). Replace each {{FILL: ...}} slot with prose, then validate.
        An existing findings file is never overwritten (the skeleton then goes to <cat>_findings.template.md)."""
        return guarded(
            "render_findings_template", lambda: findings_service.render_findings_template(roots, output_dir, category)
        )

    @mcp.tool(name="plot_roofline", title="Roofline chart (PNG)", annotations=WRITES_OUTPUT)
    def plot_roofline_tool(
        output_dir: Annotated[str, Field(description="analysis folder")],
        category: Annotated[str, Field(description="sdpa_fwd, sdpa_bwd, inferenceattention or 'all'")] = "all",
        arch: Annotated[str | None, Field(description="GPU override; default: the trace's GPU")] = None,
        bytes_model: Literal["compulsory", "tiled"] = "compulsory",
    ) -> Annotated[CallToolResult, PlotResult]:
        """Roofline chart of the category's ops (one marker per op row, area ~ time share, fwd/bwd distinct),
        returned as an image and written under <output_dir>/plots/."""
        import base64

        result, png = guarded("plot_roofline", lambda: plot_roofline(roots, output_dir, category, arch, bytes_model))
        return CallToolResult(
            content=[
                ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png"),
                TextContent(type="text", text=result.model_dump_json(indent=2)),
            ],
            structured_content=result.model_dump(mode="json"),
        )

    @mcp.prompt(title="SDPA analysis subagent instructions")
    def sdpa_analysis(
        output_dir: str, category: str, comparison_scope: str = "standalone", prefix: str | None = None
    ) -> str:
        """Instructions for an LLM subagent analyzing one attention category of an analysis folder."""
        return render_analysis_prompt(output_dir, category, comparison_scope, prefix=prefix or None)

    @mcp.resource("sdpa://findings-format", mime_type="text/markdown", title="Findings file contract")
    def findings_format() -> str:
        return load_findings_format()

    @mcp.resource("sdpa://architectures", mime_type="application/json", title="GPU table")
    def architectures() -> ArchList:
        from server.tools.service import list_architectures

        return list_architectures()
