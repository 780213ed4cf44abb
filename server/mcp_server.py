"""The MCP server, on the SDK's low-level `Server` (`mcp.server.Server`, as the SDK's own example builds one): its
handlers serve every tool of `server.tools.TOOLS` from its declaration, the prompt and the resources.

Tools: each tool's input model's JSON schema is the MCP tool's input schema (flat parameters: names, types, enums,
defaults, descriptions), its result model's the output schema. Every call runs on a worker thread (so one long
call never blocks other clients of an HTTP server), through `server.tools.base.execute` (one validation and one
error wrapper for all tools, as the CLI), with the tool's progress forwarded as MCP progress notifications. A
failure is an `isError` result with one line. The prompt and the resources are declared below as data
(`PROMPT_ARGUMENTS`, `_resources`); a bad prompt argument or resource URI is a JSON-RPC invalid-params error.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import orjson
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    ImageContent,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, Field

from sdpa_analyzer.prompts.render import PromptArgumentError, load_findings_format, render_analysis_prompt
from sdpa_analyzer.server import __version__
from sdpa_analyzer.server.errors import shorten_message
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.schemas import compact_input_schema, output_shape_schema
from sdpa_analyzer.server.tools import TOOLS
from sdpa_analyzer.server.tools.archs import architecture_table
from sdpa_analyzer.server.tools.base import ToolContext, ToolFailure, ToolSpec, execute
from sdpa_analyzer.server.tools.common import canonical_gpu
from sdpa_analyzer.server.vocab import CATEGORY_HELP, SCOPE_HELP

log = logging.getLogger("sdpa_analyzer")

SERVER_NAME = "sdpa-analyzer"
INSTRUCTIONS = (
    "Attention (SDPA) performance analysis of PyTorch profiler traces. Typical flow for one category "
    "(sdpa_fwd, sdpa_bwd, inferenceattention): load_category_data -> compute_roofline -> rank_findings -> "
    "render_findings_template -> fill the {{FILL: ...}} prose slots -> validate_findings. analyze_trace turns "
    "a raw trace into the analysis folder; analyze_ranks does it for every rank trace of a distributed job, and "
    "load_rank_summary returns its cross-rank stragglers. All numbers come from the tools; never compute them "
    "yourself."
)
Context = ServerRequestContext[Any, Any]


# ------------------------------------------------------------------ tools
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


def _error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class ToolHandlers:
    """tools/list and tools/call of our declarations. A call is validated once, by the input model, inside
    `server.tools.base.execute`, the same error wrapper the CLI uses (one line per failure)."""

    def __init__(self, specs: list[ToolSpec[Any, Any]], roots: DataRoots, settings: dict[str, Any]) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self._listing = [tool_listing(spec) for spec in specs]
        self._roots = roots
        self._settings = settings  # server configuration the tools read (e.g. the Dask scheduler): never arguments

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """A tool's input schema by name (the SDK checks Mcp-Param headers of streamable HTTP against it)."""
        listed = next((t for t in self._listing if t.name == name), None)
        return None if listed is None else listed.input_schema

    async def list_tools(self, ctx: Context, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=self._listing)

    async def call_tool(self, ctx: Context, params: CallToolRequestParams) -> CallToolResult:
        spec = self.specs.get(params.name)
        if spec is None:
            return _error_result(f"unknown tool {params.name!r}: pass one of {', '.join(self.specs)}")

        def progress(done: float, total: float, message: str) -> None:
            # through the request's session: it reaches stdio, HTTP and in-process clients alike (the context's own
            # report_progress reached no in-process client in mcp 2.3.0)
            try:
                anyio.from_thread.run(functools.partial(ctx.session.report_progress, done, total, message))
            except Exception:  # progress is best-effort; never fail the job for it
                log.debug("progress notification dropped", exc_info=True)

        try:  # a worker thread: one long call never blocks the other clients of an HTTP server
            tool_ctx = ToolContext(self._roots, progress, **self._settings)
            result = await anyio.to_thread.run_sync(execute, spec, tool_ctx, params.arguments or {})
        except ToolFailure as exc:
            return _error_result(str(exc))
        content: list[TextContent | ImageContent] = [TextContent(type="text", text=_json_text(result))]
        if spec.image and result.png:
            png = base64.b64encode(result.png).decode("ascii")
            content.insert(0, ImageContent(type="image", data=png, mime_type="image/png"))
        return CallToolResult(content=content, structured_content=result.model_dump(mode="json"))


# ------------------------------------------------------------------ the prompt
PROMPT_NAME = "sdpa_analysis"
PROMPT_TITLE = "SDPA analysis subagent instructions"
PROMPT_DESCRIPTION = (
    "Instructions for an LLM subagent that analyzes one attention category of an analysis folder and writes its "
    "findings file."
)


class PromptArguments(BaseModel):
    """The arguments of the prompt `sdpa_analysis` (MCP prompt arguments are strings)."""

    output_dir: str = Field(description="the analysis folder (as the tools take it)")
    category: str = Field(description=CATEGORY_HELP)
    comparison_scope: str = Field(default="standalone", description=SCOPE_HELP)
    prefix: str | None = Field(
        default=None,
        description="command prefix with one {CMD} slot, when the folder is on another host or in a container "
        "(e.g. 'docker exec -i c {CMD}')",
    )


def _prompt_listing() -> Prompt:
    arguments = [
        PromptArgument(name=name, description=field.description, required=field.is_required())
        for name, field in PromptArguments.model_fields.items()
    ]
    return Prompt(name=PROMPT_NAME, title=PROMPT_TITLE, description=PROMPT_DESCRIPTION, arguments=arguments)


def _prompt_arguments(given: dict[str, str] | None) -> PromptArguments:
    """The prompt's arguments, or one invalid-params line naming what is missing or unknown."""
    given = dict(given or {})
    fields = PromptArguments.model_fields
    unknown = sorted(set(given) - set(fields))
    missing = [name for name, field in fields.items() if field.is_required() and name not in given]
    if unknown or missing:
        what = f"unknown argument(s) {', '.join(unknown)}" if unknown else f"missing {', '.join(missing)}"
        required = " and ".join(name for name, field in fields.items() if field.is_required())
        raise MCPError(INVALID_PARAMS, f"{PROMPT_NAME}: {what}: pass {', '.join(fields)} ({required} required)")
    return PromptArguments.model_validate(given)


async def _list_prompts(ctx: Context, params: PaginatedRequestParams | None) -> ListPromptsResult:
    return ListPromptsResult(prompts=[_prompt_listing()])


async def _get_prompt(ctx: Context, params: GetPromptRequestParams) -> GetPromptResult:
    if params.name != PROMPT_NAME:
        raise MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r}: pass {PROMPT_NAME}")
    args = _prompt_arguments(params.arguments)
    try:
        text = render_analysis_prompt(args.output_dir, args.category, args.comparison_scope, prefix=args.prefix or None)
    except PromptArgumentError as exc:
        raise MCPError(INVALID_PARAMS, shorten_message(str(exc))) from None
    message = PromptMessage(role="user", content=TextContent(type="text", text=text))
    return GetPromptResult(description=PROMPT_DESCRIPTION, messages=[message])


# ------------------------------------------------------------------ resources
@dataclass(frozen=True)
class _Resource:
    """One resource, or a template whose URI ends in one `{name}` (a single path segment)."""

    uri: str
    name: str
    title: str
    description: str
    mime_type: str
    read: Callable[..., str]  # () -> text, or (the template's value) -> text

    @property
    def is_template(self) -> bool:
        return self.uri.endswith("}")

    def match(self, uri: str) -> str | None:
        """The template's value in `uri` (None: not this resource)."""
        if not self.is_template:
            return "" if uri == self.uri else None
        stem = self.uri[: self.uri.rindex("{")]
        value = uri[len(stem) :] if uri.startswith(stem) else ""
        return value if re.fullmatch(r"[^/\\\x00]+", value) and value not in (".", "..") else None


def _architecture(gpu: str) -> str:
    try:
        key = canonical_gpu(gpu)
    except ValueError as exc:
        raise MCPError(INVALID_PARAMS, f"sdpa://architectures/{gpu}: {exc}") from None
    return orjson.dumps(architecture_table(key).model_dump(mode="json")["details"]).decode()


def _resources(tool_specs: dict[str, ToolSpec[Any, Any]]) -> list[_Resource]:
    def tool_result_schema(tool: str) -> str:
        spec = tool_specs.get(tool)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"sdpa://schemas/{tool}: no such tool; pass one of {', '.join(tool_specs)}")
        return orjson.dumps(result_schema(spec)).decode()

    return [
        _Resource(
            "sdpa://findings-format", "findings_format", "Findings file contract",
            "The findings-file contract validate_findings enforces: sections, P-items, candidate blocks, Data "
            "tables, impact markers, with the rule ids.",
            "text/markdown", load_findings_format,
        ),
        _Resource(
            "sdpa://architectures", "architectures", "GPU table",
            "Every known GPU: key, name, bf16/fp8 compute roof and its kind, HBM roof, SMs/CUs (the short table of "
            "list_architectures). One GPU in full, every roof with its kind and source: sdpa://architectures/{gpu}.",
            "application/json", lambda: orjson.dumps(architecture_table().model_dump(mode="json")).decode(),
        ),
        _Resource(
            "sdpa://architectures/{gpu}", "architecture", "One GPU in full",
            "One GPU (a key of sdpa://architectures, or another spelling such as H100): every compute roof per spec "
            "with its kind (datasheet or achievable) and source, HBM bandwidth, memory, unverified figures.",
            "application/json", _architecture,
        ),
        _Resource(
            "sdpa://schemas/{tool}", "tool_result_schema", "A tool's result schema in full",
            "The full JSON schema of a tool's structured result: every field, nested ones included, with its type, "
            "unit and meaning (the tools/list output schemas give each top-level field's type only).",
            "application/schema+json", tool_result_schema,
        ),
    ]  # fmt: skip


class ResourceHandlers:
    def __init__(self, resources: list[_Resource]) -> None:
        self._resources = resources

    async def list_resources(self, ctx: Context, params: PaginatedRequestParams | None) -> ListResourcesResult:
        listed = [
            Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
            for r in self._resources
            if not r.is_template
        ]
        return ListResourcesResult(resources=listed)

    async def list_templates(self, ctx: Context, params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
        listed = [
            ResourceTemplate(
                uri_template=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type
            )
            for r in self._resources
            if r.is_template
        ]
        return ListResourceTemplatesResult(resource_templates=listed)

    async def read(self, ctx: Context, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)
        for resource in self._resources:
            value = resource.match(uri)
            if value is None:
                continue
            text = resource.read(value) if resource.is_template else resource.read()
            return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=text, mime_type=resource.mime_type)])
        raise MCPError(INVALID_PARAMS, f"unknown resource {uri}", data={"uri": uri})


# ------------------------------------------------------------------ the analysis, imported in the background
def import_the_analysis() -> None:
    """Import what the subagent's flow (load, roofline, rank, template, validate) runs on: numpy, pandas and our
    analysis modules, about a second. The tools import them when they run (their declarations start light, see
    server.tools); done here first, on a background thread from server start, the first call finds them loaded or
    half-way. A call that needs a module still being imported waits for that module only (Python's per-module
    import lock); the project's imports have no cycles (tests/test_layers.py), so two threads cannot deadlock."""
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    import sdpa_analyzer.server.findings.template
    import sdpa_analyzer.server.findings.validate
    import sdpa_analyzer.server.folder.cache
    import sdpa_analyzer.server.scoring.category
    import sdpa_analyzer.server.scoring.outputs
    import sdpa_analyzer.server.scoring.ranking
    import sdpa_analyzer.server.scoring.records  # noqa: F401


def start_preload(preload: Callable[[], None]) -> threading.Thread:
    """Run `preload` on a daemon thread (it never keeps the process alive); a failure is logged, never raised: the
    tool that needs the module meets the same error and reports it in its one line."""

    def run() -> None:
        try:
            preload()
        except Exception:
            log.warning("background import failed; the tools import what they need when they run", exc_info=True)

    thread = threading.Thread(target=run, name="sdpa-preload", daemon=True)
    thread.start()
    return thread


# ------------------------------------------------------------------ the server and its transports
def create_server(
    roots: list[Path] | None = None,
    *,
    settings: dict[str, Any] | None = None,
    preload: Callable[[], None] | None = import_the_analysis,
) -> Server[Any]:
    """The server over `roots` (default: the working directory). `settings`: the ToolContext settings of whoever
    starts the server (e.g. `dask_address`), never a tool argument (server.tools.base.Setting). `preload` starts on
    a background thread once the server is built (None: nothing in the background), so neither the listing nor
    the first call waits for all of it."""
    data_roots = DataRoots(list(roots) if roots else [Path.cwd()])
    chosen = {k: v for k, v in (settings or {}).items() if v is not None}
    specs = [spec for spec in TOOLS if spec.mcp]
    tools = ToolHandlers(specs, data_roots, chosen)
    resources = ResourceHandlers(_resources(tools.specs))
    server = Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=tools.input_schema,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_prompts=_list_prompts,
        on_get_prompt=_get_prompt,
        on_list_resources=resources.list_resources,
        on_list_resource_templates=resources.list_templates,
        on_read_resource=resources.read,
    )
    if preload is not None:
        start_preload(preload)
    return server


def run_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout until it closes the connection."""

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


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


def http_app(server: Server[Any], host: str) -> Any:
    """The streamable-HTTP ASGI app of `server` (endpoint /mcp) with the Host/Origin checks for `host`."""
    return server.streamable_http_app(transport_security=transport_security(host), host=host)


__all__ = [
    "create_server",
    "http_app",
    "import_the_analysis",
    "is_loopback",
    "result_schema",
    "run_stdio",
    "start_preload",
    "tool_listing",
]
