"""The tools: one declaration each (server.tools.base.ToolSpec), listed once here.

The MCP server (server.mcp_server) and the CLI (server.cli) are both built from `TOOLS`; the demo, the
benchmarks and the tests call tools through `call`, the same path with the same error handling. Importing this
package loads only the declarations (each tool imports its implementation when it runs), so `--help`, the CLI's
parser and the MCP listing start without numpy or pandas (docs/internal-api.md, "Declarations start light").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import (
    analyze,
    archs,
    load,
    model,
    plot,
    rank,
    rank_summary,
    ranks,
    report,
    roofline,
    template,
    validate,
)
from sdpa_analyzer.server.tools.base import ProgressFn, ToolContext, ToolSpec, execute

TOOLS: tuple[ToolSpec[Any, Any], ...] = (
    load.TOOL,
    roofline.TOOL,
    rank.TOOL,
    template.TOOL,
    validate.TOOL,
    model.TOOL,
    plot.TOOL,
    archs.TOOL,
    analyze.TOOL,
    ranks.TOOL,
    rank_summary.TOOL,
    report.TOOL,
)
TOOLS_BY_NAME: dict[str, ToolSpec[Any, Any]] = {t.name: t for t in TOOLS}


def call(
    name: str,
    roots: DataRoots,
    progress: ProgressFn | None = None,
    *,
    settings: dict[str, Any] | None = None,
    **arguments: Any,
) -> BaseModel:
    """Run one tool by name (arguments as the MCP client would send them; `settings`: the ToolContext settings the
    CLI or server would be started with, e.g. dask_address); raises ToolFailure."""
    extra = settings or {}
    ctx = ToolContext(roots, progress, **extra) if progress is not None else ToolContext(roots, **extra)
    return execute(TOOLS_BY_NAME[name], ctx, arguments)


__all__ = ["TOOLS", "TOOLS_BY_NAME", "call"]
