"""Every failure as JSON with one sentence, never a traceback.

Errors use OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, on every route:
OpenAI clients show ``message`` as it is, and one shape is simpler for everyone else. A user
mistake is a 4xx with what to change; a failing model server is a 502 with what failed; a bug is a
500 that names the exception type only (the traceback goes to the server's log).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphrag_assets.core.errors import LLMError, UserError

log = logging.getLogger("graphrag_assets.serve")

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "request_too_large",
    421: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    502: "upstream_error",
    503: "service_unavailable",
}


class ServeError(Exception):
    """A request the server cannot answer: HTTP ``status`` and one sentence for the client."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": ERROR_TYPES.get(status, "invalid_request_error"),
            "param": None,
            "code": code,
        }
    }


def error_response(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, code), status_code=status, headers=headers)


def describe(exc: BaseException) -> tuple[int, str, str | None]:
    """(status, message, code) for any exception raised while answering."""
    if isinstance(exc, ServeError):
        return exc.status, exc.message, exc.code
    if isinstance(exc, LLMError):
        return 502, str(exc), exc.kind or None
    if isinstance(exc, UserError):
        return 400, str(exc), None
    log.error("unexpected error while answering a request", exc_info=exc)
    return 500, f"the server failed to answer ({type(exc).__name__}); its log has the details.", None


def validation_message(exc: RequestValidationError) -> str:
    """The first problem of a request body or query string, as one sentence."""
    errors = exc.errors()
    if not errors:
        return "the request is invalid."
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path"))
    message = str(first.get("msg", "is invalid")).removeprefix("Value error, ")
    if first.get("type") == "json_invalid":
        return "the request body is not valid JSON; send a JSON object with Content-Type: application/json."
    if first.get("type") == "missing":
        return f"'{where}' is required."
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return (
        f"'{where}': {message[0].lower() + message[1:] if message else 'is invalid'}{more}."
        if where
        else f"{message}{more}."
    )


def install_error_handlers(app: FastAPI) -> None:
    async def on_error(_: Request, exc: Exception) -> JSONResponse:
        return error_response(*describe(exc))

    async def on_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, validation_message(exc))

    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"there is no route {request.method} {request.url.path}; GET /docs lists the routes."
        elif exc.status_code == 405:
            message = (
                f"{request.method} is not allowed on {request.url.path}; GET /docs lists the methods of each route."
            )
        else:
            message = str(exc.detail)
        return error_response(exc.status_code, message, headers=getattr(exc, "headers", None))

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(UserError, on_error)
    app.add_exception_handler(ServeError, on_error)
    app.add_exception_handler(Exception, on_error)
