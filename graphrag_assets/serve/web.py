"""The page at ``/`` (and ``/p/NAME/``), its files, and the login page for browsers.

The page is three files of this package (``web/index.html``, ``app.js``, ``app.css``) plus the
graph view's drawing code, served as it is from ``interop/graph_view`` (the same ``view.js`` and
``view.css`` that ``export --format html`` inlines). Nothing is fetched from anywhere else: the
Content-Security-Policy header says so to the browser too.
"""

from __future__ import annotations

import hmac
import html
from importlib import resources
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from graphrag_assets.interop.graph_view.page import asset_text
from graphrag_assets.serve.gate import PREFIX_SCOPE_KEY, SESSION_COOKIE, session_token
from graphrag_assets.serve.server import server_of
from graphrag_assets.serve.throttle import client_address

WEB_FILES = {"app.js": "text/javascript", "app.css": "text/css"}
GRAPH_VIEW_FILES = {"markdown.js": "text/javascript", "view.js": "text/javascript", "view.css": "text/css"}
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}

router = APIRouter(include_in_schema=False)


def web_text(name: str) -> str:
    return resources.files(__package__).joinpath("web", name).read_text(encoding="utf-8")


def _base(request: Request) -> str:
    return f"{request.scope.get(PREFIX_SCOPE_KEY, '')}/"


@router.get("/")
async def page(request: Request) -> HTMLResponse:
    text = web_text("index.html").replace("{{BASE}}", html.escape(_base(request), quote=True))
    return HTMLResponse(text, headers=PAGE_HEADERS)


@router.get("/assets/{name}")
async def web_asset(name: str) -> Response:
    if name not in WEB_FILES:
        return Response(status_code=404)
    return Response(web_text(name), media_type=WEB_FILES[name], headers=PAGE_HEADERS)


@router.get("/assets/graph-view/{name}")
async def graph_view_asset(name: str) -> Response:
    if name not in GRAPH_VIEW_FILES:
        return Response(status_code=404)
    return Response(asset_text(name), media_type=GRAPH_VIEW_FILES[name], headers=PAGE_HEADERS)


def _login_page(request: Request, message: str = "", status: int = 200) -> HTMLResponse:
    text = web_text("login.html").replace("{{BASE}}", html.escape(_base(request), quote=True))
    text = text.replace("{{MESSAGE}}", html.escape(message, quote=False))
    return HTMLResponse(text, status_code=status, headers=PAGE_HEADERS)


@router.get("/login")
async def login_form(request: Request) -> HTMLResponse:
    return _login_page(request)


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the key typed in the form (wrong ones count as guesses, see ``throttle``); set the
    session cookie and go to the page."""
    server = server_of(request)
    key = server.config.api_key
    given = parse_qs((await request.body()).decode("utf-8", "replace")).get("key", [""])[0]
    if key is None:
        return RedirectResponse(_base(request), status_code=303)
    address = client_address(request.scope)
    wait = server.throttle.wait_seconds(address)
    if wait:
        page = _login_page(request, f"Too many wrong keys: wait {wait} seconds, then try again.", 429)
        page.headers["Retry-After"] = str(wait)
        return page
    if not hmac.compare_digest(given.encode("utf-8"), key.encode("utf-8")):
        server.throttle.failed(address)
        return _login_page(request, "That key is not the server's key.", 401)
    server.throttle.succeeded(address)
    response = RedirectResponse(_base(request), status_code=303)
    response.set_cookie(SESSION_COOKIE, session_token(key), httponly=True, samesite="strict", path="/")
    return response
