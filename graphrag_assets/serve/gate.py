"""What every request passes before a route sees it: the project prefix, the API key, the size.

- **Project**: ``/p/NAME/...`` is served as ``/...`` for project ``NAME`` (so a chat front-end's
  base URL ``http://host:8000/p/NAME/v1`` selects a project); otherwise the ``X-GraphRAG-Project``
  header, otherwise (chat API) the model name, otherwise the server's default project.
- **API key**, when the server has one, on every route except the login page: ``Authorization:
  Bearer KEY`` (what OpenAI clients send), ``X-API-Key: KEY``, or the session cookie the login
  page sets for a browser (HttpOnly, SameSite=Strict, holding an HMAC of the key, not the key).
  Keys are compared in constant time. A browser asking for a page without one is sent to the login.
- **Size**: a request body larger than ``serve.max_request_bytes`` is refused with 413, by its
  Content-Length or, without one, as soon as that many bytes have arrived (bodies are read here,
  whole, before the route runs: they are small JSON documents).
- **Time**: a body that has not arrived ``serve.request_timeout_seconds`` after the headers is
  refused with 408 (the headers themselves have the same time: see :mod:`.app`).
- **Guesses**: wrong keys are counted per client address and slowed down (:mod:`.throttle`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from graphrag_assets.core.settings import ServeSettings
from graphrag_assets.serve.errors import error_body
from graphrag_assets.serve.throttle import KeyThrottle, client_address

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROJECT_PREFIX = re.compile(r"^/p/([^/]+)(/.*)?$")
PROJECT_SCOPE_KEY = "graphrag.project"  # the project named by the path prefix
PREFIX_SCOPE_KEY = "graphrag.prefix"
PROJECT_HEADER = "x-graphrag-project"
SESSION_COOKIE = "graphrag_session"
PUBLIC_PATHS = frozenset({"/login"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def session_token(api_key: str) -> str:
    """What the login cookie holds: proves the key was given without storing it in the browser."""
    return hmac.new(api_key.encode("utf-8"), b"graphrag-assets serve session", hashlib.sha256).hexdigest()


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


class Gate:
    """ASGI middleware: project prefix, API key, request size and time (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, api_key: str | None, limits: ServeSettings, throttle: KeyThrottle) -> None:
        self.app = app
        self.api_key = api_key
        self.token = session_token(api_key) if api_key else None
        self.max_bytes = limits.max_request_bytes
        self.timeout = limits.request_timeout_seconds
        self.throttle = throttle

    def authorized(self, headers: dict[str, str]) -> bool:
        assert self.api_key is not None and self.token is not None
        given = headers.get("x-api-key", "")
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip()
        if given and hmac.compare_digest(given.encode("utf-8"), self.api_key.encode("utf-8")):
            return True
        cookie = _cookie(headers.get("cookie", ""), SESSION_COOKIE)
        return bool(cookie) and hmac.compare_digest(cookie.encode("utf-8"), self.token.encode("utf-8"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = dict(scope)
        match = PROJECT_PREFIX.match(scope["path"])
        if match:
            rest = match.group(2) or "/"
            scope[PROJECT_SCOPE_KEY] = match.group(1)
            scope[PREFIX_SCOPE_KEY] = f"/p/{match.group(1)}"
            scope["path"], scope["raw_path"] = rest, rest.encode("utf-8")
        headers = _headers(scope)
        if self.api_key and scope["path"] not in PUBLIC_PATHS and not await self._let_in(scope, headers, send):
            return
        length = headers.get("content-length", "")
        if length.isascii() and length.isdigit() and (len(length) > 18 or int(length) > self.max_bytes):
            await send_json(send, 413, error_body(413, self._too_large(), "request_too_large"))
            return
        if scope["method"] in BODY_METHODS:
            try:
                async with asyncio.timeout(self.timeout):
                    body = await self._read_body(receive)
            except TimeoutError:
                message = (
                    f"the request body did not arrive within {self.timeout:g} seconds "
                    "(serve.request_timeout_seconds); send it whole, at once."
                )
                await send_json(send, 408, error_body(408, message, "request_timeout"), [(b"connection", b"close")])
                return
            if body is None:
                await send_json(send, 413, error_body(413, self._too_large(), "request_too_large"))
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _let_in(self, scope: Scope, headers: dict[str, str], send: Send) -> bool:
        """Whether the request holds the key; if not, it has been answered (401, 303 or 429)."""
        address = client_address(scope)
        wait = self.throttle.wait_seconds(address)
        if wait:
            body = error_body(429, self.throttle.message(wait), "too_many_wrong_keys")
            await send_json(send, 429, body, [(b"retry-after", str(wait).encode())])
            return False
        if self.authorized(headers):
            self.throttle.succeeded(address)
            return True
        if _key_given(headers):
            self.throttle.failed(address)
        await self._refuse(scope, headers, send)
        return False

    def _too_large(self) -> str:
        return f"the request body is larger than {self.max_bytes:,} bytes (serve.max_request_bytes); send less."

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None as soon as it exceeds the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    async def _refuse(self, scope: Scope, headers: dict[str, str], send: Send) -> None:
        if scope["method"] == "GET" and "text/html" in headers.get("accept", "") and scope["path"] in ("/", "/docs"):
            login = f"{scope.get(PREFIX_SCOPE_KEY, '')}/login"
            await send(
                {"type": "http.response.start", "status": 303, "headers": [(b"location", login.encode("utf-8"))]}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        message = (
            "this server needs an API key; send 'Authorization: Bearer KEY' (OpenAI clients: api_key=KEY) or 'X-API-Key: KEY'."
            if not (headers.get("authorization") or headers.get("x-api-key"))
            else "the API key is wrong; send the key the server was started with."
        )
        await send_json(send, 401, error_body(401, message, "invalid_api_key"), [(b"www-authenticate", b"Bearer")])


def _key_given(headers: dict[str, str]) -> bool:
    """Whether a request tried a key (a missing one is no guess: it is not counted)."""
    given = headers.get("authorization") or headers.get("x-api-key")
    return bool(given) or bool(_cookie(headers.get("cookie", ""), SESSION_COOKIE))


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body read already, then waits for the disconnect."""
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def scope_project(scope: Scope, headers: dict[str, str] | Any) -> str | None:
    """The project a request names by path prefix, else by header (None: neither)."""
    return scope.get(PROJECT_SCOPE_KEY) or headers.get(PROJECT_HEADER) or None
