"""The MCP server: every tool of `server.tools.TOOLS` registered from its declaration, plus the prompt and the
resources.

Registration is mechanical: each tool's input model's JSON schema is the MCP tool's input schema (flat
parameters: names, types, enums, defaults, descriptions), its result model's the output schema. Every call runs on
a worker thread (so one long call never blocks other clients of an HTTP server), through
`server.tools.base.execute` (one validation and one error wrapper for all tools, as the CLI), with the tool's
progress forwarded as MCP progress notifications. A failure is an `isError` result with one line.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import logging
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
import orjson
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, ImageContent, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, Field

from prompts.render import PromptArgumentError, load_findings_format, render_analysis_prompt
from server import __version__
from server.errors import shorten_message
from server.roots import DataRoots
from server.schemas import compact_input_schema, output_shape_schema
from server.tools import TOOLS
from server.tools.archs import architecture_table
from server.tools.base import ToolContext, ToolFailure, ToolSpec, execute
from server.tools.common import canonical_gpu
from server.vocab import CATEGORY_HELP, SCOPE_HELP

log = logging.getLogger("sdpa_analyzer")

INSTRUCTIONS = (
    "Attention (SDPA) performance analysis of PyTorch profiler traces. Typical flow for one category "
    "(sdpa_fwd, sdpa_bwd, inferenceattention): load_category_data -> compute_roofline -> rank_findings -> "
    "render_findings_template -> fill the {{FILL: ...}} prose slots -> validate_findings. analyze_trace turns "
    "a raw trace into the analysis folder; analyze_ranks does it for every rank trace of a distributed job, and "
    "load_rank_summary returns its cross-rank stragglers. All numbers come from the tools; never compute them "
    "yourself."
)


def _annotations(spec: ToolSpec[Any, Any]) -> ToolAnnotations:
    """Read-only tools are idempotent and touch nothing; the others write files into the analysis folder (the
    same files again on a repeat call) and never delete or overwrite a findings file."""
    return ToolAnnotations(
        read_only_hint=not spec.writes, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


def _json_text(result: BaseModel) -> str:
    # compact: the text content is the structured result again, and a client counts both against its budget
    return orjson.dumps(result.model_dump(mode="json")).decode()


def tool_listing(spec: ToolSpec[Any, Any]) -> MCPTool:
    """The MCP tool of a declaration: its input model's JSON schema as the input schema (the flat parameters a
    client fills in), the shape of its result model's as the output schema (server.schemas: the listing stays
    small; the full result schema is the resource sdpa://schemas/{tool})."""
    return MCPTool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=compact_input_schema(spec.input_model.model_json_schema()),
        output_schema=output_shape_schema(result_schema(spec)),
        annotations=_annotations(spec),
    )


def result_schema(spec: ToolSpec[Any, Any]) -> dict[str, Any]:
    """The result model's full JSON schema (every field, its type, unit and meaning)."""
    return spec.result_model.model_json_schema(mode="serialization")


class _Server(MCPServer):
    """MCPServer whose tools are our declarations (server.tools.TOOLS), registered through their schemas: the
    listing gives each input model's JSON schema, and a call is validated once, by the input model, inside
    `server.tools.base.execute`, the same error wrapper the CLI uses (one line per failure). Everything else
    (unknown tools, prompts, resources, transports) is the SDK's own."""

    def __init__(
        self, specs: list[ToolSpec[Any, Any]], roots: DataRoots, settings: dict[str, Any], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._specs = {spec.name: spec for spec in specs}
        self._listing = [tool_listing(spec) for spec in specs]
        self._roots = roots
        self._settings = settings  # server configuration the tools read (e.g. the Dask scheduler): never arguments

    async def list_tools(self) -> list[MCPTool]:
        return [*self._listing, *await super().list_tools()]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self._specs.get(name)
        if spec is None:
            return super()._tool_input_schema(name)
        return compact_input_schema(spec.input_model.model_json_schema())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:  # type: ignore[override]
        spec = self._specs.get(name)
        if spec is None:
            return await super().call_tool(name, arguments, context)

        def progress(done: float, total: float, message: str) -> None:
            if context is None:
                return
            try:
                anyio.from_thread.run(functools.partial(context.report_progress, done, total, message))
            except Exception:  # progress is best-effort; never fail the job for it
                log.debug("progress notification dropped", exc_info=True)

        try:  # a worker thread: one long call never blocks the other clients of an HTTP server
            tool_ctx = ToolContext(self._roots, progress, **self._settings)
            result = await anyio.to_thread.run_sync(execute, spec, tool_ctx, arguments)
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None
        content: list[Any] = [TextContent(type="text", text=_json_text(result))]
        if spec.image and result.png:
            content.insert(
                0, ImageContent(type="image", data=base64.b64encode(result.png).decode("ascii"), mime_type="image/png")
            )
        return CallToolResult(content=content, structured_content=result.model_dump(mode="json"))


def is_loopback(host: str) -> bool:
    """Whether `host` (as given to --host) is a loopback address: 127.0.0.0/8, ::1, or localhost."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a loopback bind, passed explicitly: the SDK turns it on by itself only for
    127.0.0.1, localhost and ::1, so --host 127.0.0.2 served a foreign Host and Origin. Allowed: the bound
    address and the usual loopback names, any port. None (no Host check) for other addresses, where the name
    clients use is not known here (the CLI warns)."""
    if not is_loopback(host):
        return None
    bare = host.strip("[]")
    named = f"[{bare}]" if ":" in bare else bare
    hosts = list(dict.fromkeys([named, "127.0.0.1", "localhost", "[::1]"]))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"http://{h}:*" for h in hosts],
    )


def http_app(server: MCPServer, host: str) -> Any:
    """The streamable-HTTP ASGI app of `server` (endpoint /mcp) with the Host/Origin checks for `host`."""
    return server.streamable_http_app(transport_security=transport_security(host), host=host)


def create_server(roots: list[Path] | None = None, *, settings: dict[str, Any] | None = None) -> MCPServer:
    """`settings`: the ToolContext settings of whoever starts the server (e.g. `dask_address`), never a tool
    argument (server.tools.base.Setting)."""
    data_roots = DataRoots(list(roots) if roots else [Path.cwd()])
    chosen = {k: v for k, v in (settings or {}).items() if v is not None}
    server = _Server(
        [spec for spec in TOOLS if spec.mcp], data_roots, chosen, name="sdpa-analyzer", instructions=INSTRUCTIONS,
        version=__version__,
    )

    @server.prompt(title="SDPA analysis subagent instructions")
    def sdpa_analysis(
        output_dir: Annotated[str, Field(description="the analysis folder (as the tools take it)")],
        category: Annotated[str, Field(description=CATEGORY_HELP)],
        comparison_scope: Annotated[str, Field(description=SCOPE_HELP)] = "standalone",
        prefix: Annotated[
            str | None,
            Field(
                description="command prefix with one {CMD} slot, when the folder is "
                "on another host or in a container (e.g. 'docker exec -i c {CMD}')"
            ),
        ] = None,
    ) -> str:
        """Instructions for an LLM subagent that analyzes one attention category of an analysis folder and writes
        its findings file."""
        try:
            return render_analysis_prompt(output_dir, category, comparison_scope, prefix=prefix or None)
        except PromptArgumentError as exc:
            raise MCPError(INVALID_PARAMS, shorten_message(str(exc))) from None

    @server.resource(
        "sdpa://findings-format",
        mime_type="text/markdown",
        title="Findings file contract",
        description="The findings-file contract validate_findings enforces: sections, P-items, "
        "candidate blocks, Data tables, impact markers, with the rule ids.",
    )
    def findings_format() -> str:
        return load_findings_format()

    @server.resource(
        "sdpa://architectures",
        mime_type="application/json",
        title="GPU table",
        description="Every known GPU: key, name, bf16/fp8 compute roof and its kind, HBM roof, SMs/CUs (the short "
        "table of list_architectures). One GPU in full, every roof with its kind and source: "
        "sdpa://architectures/{gpu}.",
    )
    def architectures() -> str:
        return orjson.dumps(architecture_table().model_dump(mode="json")).decode()

    @server.resource(
        "sdpa://architectures/{gpu}",
        mime_type="application/json",
        title="One GPU in full",
        description="One GPU (a key of sdpa://architectures, or another spelling such as H100): every compute roof "
        "per spec with its kind (datasheet or achievable) and source, HBM bandwidth, memory, unverified figures.",
    )
    def architecture(gpu: str) -> str:
        try:
            key = canonical_gpu(gpu)
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, f"sdpa://architectures/{gpu}: {exc}") from None
        return orjson.dumps(architecture_table(key).model_dump(mode="json")["details"]).decode()

    tool_specs = {spec.name: spec for spec in TOOLS if spec.mcp}

    @server.resource(
        "sdpa://schemas/{tool}",
        mime_type="application/schema+json",
        title="A tool's result schema in full",
        description="The full JSON schema of a tool's structured result: every field, nested ones included, with "
        "its type, unit and meaning (the tools/list output schemas give each top-level field's type only).",
    )
    def tool_result_schema(tool: str) -> str:
        spec = tool_specs.get(tool)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"sdpa://schemas/{tool}: no such tool; pass one of {', '.join(tool_specs)}")
        return orjson.dumps(result_schema(spec)).decode()

    return server
