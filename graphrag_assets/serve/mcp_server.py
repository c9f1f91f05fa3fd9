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
import contextlib
import json
import re
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

import mcp_types as types
from fastapi.exceptions import RequestValidationError
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.routing import Route

from graphrag_assets.core.settings import ServeSettings
from graphrag_assets.serve.config import ServeConfig
from graphrag_assets.serve.errors import describe, error_body, validation_message
from graphrag_assets.serve.gate import ASGIApp, Receive, Scope, Send, scope_project, send_json
from graphrag_assets.serve.mcp_tools import Call, McpTool, mcp_tools
from graphrag_assets.serve.projects import Project, Projects
from graphrag_assets.serve.server import Server

MCP_PATH = "/mcp"
MCP_PATHS = re.compile(r"^(/p/[^/]+)?/mcp/?$")  # with the project prefix, before the gate strips it
REFUSED = -32001  # JSON-RPC's range for server-defined errors: the HTTP layer refused the request
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
    """The streamable HTTP transport as a route of the serve application (an ASGI endpoint).

    Each run of the application's lifespan starts a session manager of its own (the SDK's run
    once); requests go to the latest one running. The SDK's own Host/Origin check is off: the
    application's :class:`~.hosts.HostCheck` and :class:`~.gate.Gate` guard this route as they
    guard every other one.
    """

    def __init__(self, server: Server, version: str = "") -> None:
        self.limits = server.config.limits
        self.server = mcp_server(server.projects, self.limits, version)
        self.managers: list[StreamableHTTPSessionManager] = []
        # POST only: a stateless server has nothing to push on a GET stream, which would stay open
        # for as long as the client likes; the protocol's answer to that is 405.
        self.route = Route(MCP_PATH, endpoint=self, methods=["POST"])

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The transport's task group: entered in the application's lifespan."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            stateless=True,
            json_response=True,
            max_request_body_size=self.limits.max_request_bytes,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with manager.run():
            self.managers.append(manager)
            try:
                yield
            finally:
                self.managers.remove(manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.managers:
            message = "the MCP endpoint is not running (the server is starting or stopping); try again."
            await send_json(send, 503, error_body(503, message, "mcp_not_running"))
            return
        await self.managers[-1].handle_request(scope, receive, send)


class McpRefusals:
    """ASGI middleware: a refusal of an MCP client's ``/mcp`` request (wrong key, too large, too
    slow, Host) keeps its HTTP status, with its sentence as a JSON-RPC error.

    The gate answers every route in the API's error shape; an MCP client shows only a JSON-RPC
    error's message and says "Server returned an error response" for anything else, so the
    agent's user would not learn that the key was wrong.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not MCP_PATHS.match(scope["path"]) or not _speaks_mcp(scope):
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] | None = None
        body = b""

        async def reshape(message: dict[str, Any]) -> None:
            nonlocal held, body
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held = message
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            body += message.get("body", b"")
            if message.get("more_body"):
                return
            payload = _as_jsonrpc_error(body, held["status"])
            headers = [(k, v) for k, v in held.get("headers", []) if k.lower() != b"content-length"]
            await send({**held, "headers": [*headers, (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})

        await self.app(scope, receive, reshape)


def _speaks_mcp(scope: Scope) -> bool:
    """Whether the client is an MCP client: the protocol has it accept event streams on every POST
    (other clients of ``/mcp``, such as a script checking the route, get the API's error shape)."""
    accept = next((v for k, v in scope.get("headers", []) if k.lower() == b"accept"), b"")
    return b"text/event-stream" in accept.lower()


def _as_jsonrpc_error(body: bytes, status: int) -> bytes:
    """The API's ``{"error": {"message", "code"}}`` as a JSON-RPC error; MCP's own errors unchanged."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    if not isinstance(parsed, dict) or "jsonrpc" in parsed or not isinstance(parsed.get("error"), dict):
        return body
    error = parsed["error"]
    data = {"http_status": status, "code": error.get("code")}
    reply = {"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": error.get("message"), "data": data}}
    return json.dumps(reply).encode("utf-8")


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
