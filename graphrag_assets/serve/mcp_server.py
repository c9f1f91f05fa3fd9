"""The Model Context Protocol server: :mod:`.mcp_tools` offered to agents over stdio or HTTP.

Built on the official SDK's low-level ``Server``: the tools' schemas come from their pydantic
argument models, and every failure is one sentence in an ``isError`` result (the same sentence
the HTTP API would send), not a validation dump or a traceback. Two transports share it:

- **stdio** (:func:`run_stdio`, ``graphrag-assets mcp``): what desktop and coding assistants
  launch. The projects load before the first message is read.
- **streamable HTTP** (:class:`McpEndpoint`), a route of ``graphrag-assets serve`` at ``/mcp``,
  behind the same gate as every other route (API key, request size and time, Host). It is
  stateless and answers in JSON: no session lives between requests, so nothing is held open for
  a client that went away. ``/p/NAME/mcp`` or the ``X-GraphRAG-Project`` header choose the
  default project of its calls, as on the other routes.

The question size limit (``serve.max_question_chars``) applies on both.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import AbstractAsyncContextManager
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

import mcp_types as types
from fastapi.exceptions import RequestValidationError
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.routing import Route

from graphrag_assets.core.settings import ServeSettings
from graphrag_assets.serve.config import ServeConfig
from graphrag_assets.serve.errors import describe, validation_message
from graphrag_assets.serve.gate import scope_project
from graphrag_assets.serve.mcp_tools import Call, McpTool, mcp_tools
from graphrag_assets.serve.projects import Project, Projects
from graphrag_assets.serve.server import Server

MCP_PATH = "/mcp"
SERVER_NAME = "graphrag-assets"
INSTRUCTIONS = (
    "Answers questions from a GraphRAG index of the user's documents. Use 'search' for an answer with "
    "citations, 'search_context' for the ranked evidence without a model call, the show_* tools to read a "
    "cited record whole, 'sql' for counts and lists, and 'list_projects' to see which projects there are."
)
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def mcp_server(projects: Projects, limits: ServeSettings, version: str = "") -> LowLevelServer:
    """An MCP server answering from ``projects`` (loaded and watched by the caller)."""
    tools = {tool.name: tool for tool in mcp_tools()}
    listed = types.ListToolsResult(tools=[_described(tool) for tool in tools.values()])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            return _failure(f"there is no tool named {params.name!r}; list_tools names the tools of this server.")
        try:
            arguments = tool.arguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _failure(f"{tool.name}: {validation_message(RequestValidationError(exc.errors()))}")
        try:
            project = projects.get(arguments.project or _request_project(ctx))
            result = await tool.run(Call(arguments, project, limits, projects))
        except Exception as exc:  # one sentence for the agent; the server's log has any traceback
            return _failure(describe(exc)[1])
        text = json.dumps(result, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=json.loads(text)
        )

    return LowLevelServer(
        SERVER_NAME,
        version=version,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=lambda name: _schema(tools[name]) if name in tools else None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _schema(tool: McpTool) -> dict[str, Any]:
    return tool.arguments.model_json_schema()


def _described(tool: McpTool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=_schema(tool),
        annotations=READ_ONLY,
    )


def _failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _request_project(ctx: Any) -> str | None:
    """The project an HTTP request names by path prefix or header (None on stdio)."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    return scope_project(scope, request.headers) if scope is not None else None


# --- transports ----------------------------------------------------------------------------------


class McpEndpoint:
    """The streamable HTTP transport as a route of the serve application.

    The SDK's own Host/Origin check is off: the application's :class:`~.hosts.HostCheck` and
    :class:`~.gate.Gate` guard this route as they guard every other one.
    """

    def __init__(self, server: Server, version: str = "") -> None:
        limits = server.config.limits
        self.server = mcp_server(server.projects, limits, version)
        self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            max_request_body_size=limits.max_request_bytes,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.route = Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(self.server.session_manager))

    def running(self) -> AbstractAsyncContextManager[None]:
        """The transport's task group: entered in the application's lifespan."""
        return self.server.session_manager.run()


def served_projects(config: ServeConfig) -> Projects:
    return Projects(
        [Project(name, settings) for name, settings in zip(config.names, config.projects)],
        config.limits.reload_interval_seconds,
    )


def run_stdio(config: ServeConfig) -> None:
    """Serve the projects of ``config`` over stdin/stdout until the client closes stdin."""
    try:
        version = package_version("graphrag-assets")
    except PackageNotFoundError:
        version = "0"
    asyncio.run(_serve_stdio(served_projects(config), config.limits, version))


async def _serve_stdio(projects: Projects, limits: ServeSettings, version: str) -> None:
    server = mcp_server(projects, limits, version)
    await projects.start()
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await projects.stop()
