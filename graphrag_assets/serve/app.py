"""The ASGI application and how it is run.

:func:`create_app` wires the routes (:mod:`.openai_api`, :mod:`.native_api`, :mod:`.web`, the MCP
server's HTTP transport at ``/mcp`` from :mod:`.mcp_server`), the
Host check (:mod:`.hosts`), the gate (:mod:`.gate`: project prefix, API key, request size and
time) and the error handlers around one :class:`~.server.Server`; its lifespan loads every
project's index before the first request and starts watching for newer builds. OpenAPI docs are at ``/docs`` (Swagger UI served from the
``fastapi-offline`` package, not a CDN) and ``/openapi.json``.

:func:`serve` binds the socket itself, so a port in use is one sentence, not a uvicorn traceback,
and runs uvicorn quietly on it, with a bound on connections (``serve.max_connections``, then 503)
and a deadline for each request's headers (:func:`request_deadline`): uvicorn itself waits forever
for a client that connects and sends nothing, or half a request, so a few hundred such sockets
would use up the process's file descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
from collections.abc import AsyncIterator, Callable
from importlib.metadata import PackageNotFoundError, version

import uvicorn
from fastapi import Depends, FastAPI
from fastapi.security import HTTPBearer
from fastapi_offline import FastAPIOffline
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from graphrag_assets.core.errors import UserError
from graphrag_assets.serve import native_api, openai_api, web
from graphrag_assets.serve.config import ServeConfig
from graphrag_assets.serve.errors import install_error_handlers
from graphrag_assets.serve.gate import Gate
from graphrag_assets.serve.hosts import HostCheck, allowed_hosts
from graphrag_assets.serve.projects import Project, Projects
from graphrag_assets.serve.server import Server
from graphrag_assets.serve.throttle import KeyThrottle

DESCRIPTION = """GraphRAG over HTTP: an OpenAI-compatible chat API (`/v1`), a native API (`/api`) and a web page (`/`).

Every route needs the server's API key when it has one: `Authorization: Bearer KEY` or `X-API-Key: KEY`.
Choose a project with the path prefix `/p/NAME/` (e.g. `/p/NAME/api/query`, or the base URL
`/p/NAME/v1` for a chat front-end), the `X-GraphRAG-Project` header, or a model named
`NAME/graphrag-local`; without one, the server's default project answers. Errors are
`{"error": {"message", "type", "code"}}`. MCP clients connect to `/mcp` (streamable HTTP, the same key)."""


def create_app(config: ServeConfig, on_ready: Callable[[], None] | None = None) -> FastAPI:
    """The application for ``config``: its projects load when it starts (its lifespan), then
    ``on_ready`` is called."""
    projects = Projects(
        [Project(n, s) for n, s in zip(config.names, config.projects)], config.limits.reload_interval_seconds
    )
    limits = config.limits
    server = Server(config, projects, KeyThrottle(limits.key_failures, limits.key_failure_window_seconds))
    # The MCP SDK (~1 s to import) is loaded here, not with this module: `serve` imports it before
    # checking its arguments, and a refusal should not wait for it.
    from graphrag_assets.serve.mcp_server import McpEndpoint, McpRefusals

    mcp = McpEndpoint(server, _version())

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await projects.start()
        if on_ready is not None:
            on_ready()
        try:
            async with mcp.running():
                yield
        finally:
            await projects.stop()

    app = FastAPIOffline(
        title="graphrag-assets",
        description=DESCRIPTION,
        version=_version(),
        lifespan=lifespan,
        redoc_url=None,
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.state.server = server
    app.router.routes.append(mcp.route)
    key_scheme = HTTPBearer(auto_error=False, description="The server's API key (the gate checks it on every route).")
    for router in (openai_api.router, native_api.router):
        app.include_router(router, dependencies=[Depends(key_scheme)])
    app.include_router(web.router)
    install_error_handlers(app)
    app.add_middleware(Gate, api_key=config.api_key, limits=limits, throttle=server.throttle)
    hosts = allowed_hosts(config.host, config.allowed_hosts)
    app.add_middleware(HostCheck, allowed=hosts, enforced=config.api_key is None or bool(config.allowed_hosts))
    app.add_middleware(McpRefusals)
    return app


def _version() -> str:
    try:
        return version("graphrag-assets")
    except PackageNotFoundError:
        return "0"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port), or one sentence saying why not."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} on {host} is in use by another program; pass another --port.") from None
        raise UserError(f"cannot listen on {host}:{port} ({exc.strerror}); check --host and --port.") from None
    sock.listen(128)
    return sock


def serve(config: ServeConfig, announce: Callable[[str], None]) -> None:
    """Run the server until interrupted; ``announce`` is told the address once it listens."""
    sock = bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    key = "API key required" if config.api_key else "no API key (loopback only)"
    message = f"serving {len(config.names)} project(s) ({', '.join(config.names)}) at http://{shown}:{port}/ ({key}; API docs at /docs)"
    app = create_app(config, on_ready=lambda: announce(message))
    limits = config.limits
    uv = uvicorn.Server(
        uvicorn.Config(
            app,
            http=request_deadline(AutoHTTPProtocol, limits.request_timeout_seconds),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            limit_concurrency=limits.max_connections,
        )
    )
    uv.run(sockets=[sock])


def request_deadline(protocol: type[asyncio.Protocol], seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with a deadline: a connection whose request headers are not all in
    ``seconds`` after it opens (or after the previous response on it) is closed.

    It relies on what uvicorn's protocols share: ``cycle`` (set when a request's headers are
    complete) and ``on_response_complete``.
    """

    class RequestDeadline(protocol):  # type: ignore[misc, valid-type]
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._arm_deadline()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def _arm_deadline(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            waiting = self.cycle  # closed at the deadline unless a newer request has arrived by then

            def expire() -> None:
                idle = waiting is None or waiting.response_complete
                if self.cycle is waiting and idle and not self.transport.is_closing():
                    self.transport.close()

            self._deadline = self.loop.call_later(seconds, expire)

    return RequestDeadline
