"""Retrying model calls: which failures deserve another attempt, how long to wait, and the one
sentence we tell the user when we give up.

The ``openai`` package's own retries are switched off (``max_retries=0``) so that this module is
the only place deciding: exponential backoff with full jitter on 429, 5xx, timeouts, dropped
connections and malformed bodies, honouring ``Retry-After`` / ``retry-after-ms`` (capped by
``retry_max_delay``); no retry on 400/401/403/404/422 or on a 429 that reports an exhausted quota,
because repeating those cannot succeed.

A malformed body (invalid JSON with status 200, or JSON without choices / data) is retried: proxies
and overloaded local servers produce truncated bodies transiently. When it persists the final
message says the endpoint does not look OpenAI-compatible.

Connecting is different: a refused connection, an unknown host or a connect timeout on an endpoint
that has not answered yet means a wrong URL or a server that is not running, so the caller can make
those final (``RetryHooks.is_final``) and the user hears about it within seconds, not minutes.

Exception texts from the server can echo credentials (OpenAI's 401 quotes a masked key), so every
text that leaves this module goes through :func:`scrub`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import re
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from graphrag_assets.core.errors import LLMError

log = logging.getLogger(__name__)

T = TypeVar("T")

_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_*.\-]{3,}")
_MASKED = re.compile(r"[^\s:,;'\"()]*\*{3,}[^\s:,;'\"()]*")  # a key the server quoted half-masked
_BEARER = re.compile(r"(bearer\s+)\S+", re.I)


class MalformedResponse(Exception):
    """The endpoint answered 200 with something that is not an OpenAI response."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0

    def delay(self, retry_number: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry ``retry_number`` (0-based).

        Without a server hint: full jitter, uniform in [0, min(max_delay, base * 2**n)], which
        spreads a burst of failed requests instead of re-synchronizing them. With ``Retry-After``:
        the server's value plus up to ``min(base_delay, 1 s)`` of jitter, capped by ``max_delay``.
        """
        if retry_after is not None:
            return min(self.max_delay, retry_after + rng.uniform(0, min(self.base_delay, 1.0)))
        return rng.uniform(0, min(self.max_delay, self.base_delay * (2**retry_number)))


@dataclass(frozen=True)
class Failure:
    """What went wrong with one attempt, in terms the retry loop and the user message need."""

    kind: str  # rate_limited, quota, server_error, timeout, refused, unknown_host, connect_timeout,
    # connection, malformed, auth, forbidden, not_found, bad_request, unprocessable, content_filter,
    # context_length, http_error
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    detail: str = ""
    code: str = ""  # the server's error code (e.g. unsupported_parameter, content_filter)

    @property
    def connecting(self) -> bool:
        """The request never reached a server (wrong URL, server down, host unknown)."""
        return self.kind in ("refused", "unknown_host", "connect_timeout")


@dataclass(frozen=True)
class RetryHooks:
    """What the retry loop calls: ``give_up(failure, attempts)`` builds the final error,
    ``on_retry(failure, wait)`` hears about each retry, ``is_final(failure)`` may stop retrying a
    retryable failure (a connection refused by an endpoint that never answered)."""

    give_up: Callable[[Failure, int], LLMError]
    on_retry: Callable[[Failure, float], None] | None = None
    is_final: Callable[[Failure], bool] | None = None


def scrub(text: str, secrets: Sequence[str | None] = ()) -> str:
    """Remove API keys (the configured ones, and anything shaped like a key) from ``text``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _BEARER.sub(r"\1***", text)
    text = _KEY_LIKE.sub("***", text)
    return _MASKED.sub("***", text)


def parse_retry_after(headers: object) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), else None."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    value = get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _error_body(exc: BaseException) -> dict[str, object]:
    """The error object of an OpenAI-style body (``{"error": {...}}``) or a flat one (vLLM's)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        return inner if isinstance(inner, dict) else {"message": inner}
    return {}


def _server_message(exc: BaseException) -> str:
    message = _error_body(exc).get("message")
    if isinstance(message, str):
        return message
    return str(getattr(exc, "message", "") or exc)


_CONTEXT_LENGTH = re.compile(
    r"maximum context length|context length|context_length_exceeded|context window|context size"
    r"|prompt is too long|too many tokens|reduce the length of the (messages|prompt)",
    re.I,
)


def _filtered_categories(error: dict[str, object]) -> str:
    """``hate: medium, violence: high`` from an Azure content-filter error, else ``""``."""
    inner = error.get("innererror")
    result = inner.get("content_filter_result") if isinstance(inner, dict) else None
    if not isinstance(result, dict):
        return ""
    flagged = [
        f"{name}: {verdict.get('severity', 'flagged')}"
        for name, verdict in result.items()
        if isinstance(verdict, dict) and verdict.get("filtered")
    ]
    return ", ".join(flagged)


def _status_failure(exc: BaseException, status: int) -> Failure:
    error = _error_body(exc)
    detail = _server_message(exc)
    response = getattr(exc, "response", None)
    retry_after = parse_retry_after(getattr(response, "headers", None))
    code = str(error.get("code") or getattr(exc, "code", "") or "")
    if status == 429 and ("insufficient_quota" in code or "quota" in detail.lower()):
        return Failure("quota", False, status, None, detail, code)
    if status == 429:
        return Failure("rate_limited", True, status, retry_after, detail, code)
    # llama.cpp answered an over-long prompt with 500 before it used 400: retrying cannot help either way
    too_long = str(error.get("type")) == "exceed_context_size_error" or _CONTEXT_LENGTH.search(detail)
    if too_long and status in (400, 413, 422, 500):
        return Failure("context_length", False, status, None, detail, code)
    if status >= 500 or status in (408, 409):
        return Failure("server_error", True, status, retry_after, detail, code)
    if code == "content_filter":
        categories = _filtered_categories(error)
        return Failure("content_filter", False, status, None, categories or detail, code)
    kind = {401: "auth", 403: "forbidden", 404: "not_found", 400: "bad_request", 422: "unprocessable"}.get(
        status, "http_error"
    )
    return Failure(kind, False, status, None, detail, code)


def _connection_failure(exc: BaseException) -> Failure:
    chain = _chain(exc)
    names = set().union(*(_class_names(e) for e in chain))
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return Failure("refused", True, None, None, "connection refused")
    if any(isinstance(e, socket.gaierror) for e in chain):
        return Failure("unknown_host", True, None, None, "host not found")
    if "ConnectTimeout" in names:
        return Failure("connect_timeout", True, None, None, "connection timed out")
    causes = [str(e) for e in chain[1:] if str(e)]
    return Failure("connection", True, None, None, causes[0] if causes else str(exc))


def classify(exc: BaseException) -> Failure | None:
    """Describe a failed attempt, or None when ``exc`` is not a model-call failure (a bug: re-raise)."""
    names = _class_names(exc)
    status = getattr(exc, "status_code", None)
    if "APIStatusError" in names and isinstance(status, int):
        return _status_failure(exc, status)
    if isinstance(exc, (MalformedResponse, json.JSONDecodeError)) or "APIResponseValidationError" in names:
        return Failure("malformed", True, getattr(exc, "status_code", None), None, str(exc))
    chain_names = set().union(*(_class_names(e) for e in _chain(exc)))
    if "ConnectTimeout" in chain_names:
        return _connection_failure(exc)
    if isinstance(exc, asyncio.TimeoutError) or names & {"APITimeoutError", "TimeoutException"}:
        return Failure("timeout", True, None, None, "request timed out")
    if names & {"APIConnectionError", "TransportError", "NetworkError", "RemoteProtocolError"} or isinstance(
        exc, ConnectionError
    ):
        return _connection_failure(exc)
    return None


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    hooks: RetryHooks,
    rng: random.Random | None = None,
) -> T:
    """Run ``attempt`` until it succeeds, retrying retryable failures per ``policy``.

    ``hooks.give_up(failure, attempts)`` builds the error raised when a failure is final.
    Exceptions that :func:`classify` does not recognize propagate unchanged.
    """
    rng = rng or random.Random()
    retry_number = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
        # Raised outside the except block on purpose: the error then has no __context__, so the
        # original exception (whose text may quote the key) cannot resurface in a traceback.
        final = not failure.retryable or (hooks.is_final is not None and hooks.is_final(failure))
        if final or retry_number >= policy.max_retries:
            raise hooks.give_up(failure, retry_number + 1)
        wait = policy.delay(retry_number, failure.retry_after, rng)
        if hooks.on_retry is not None:
            hooks.on_retry(failure, wait)
        await asyncio.sleep(wait)
        retry_number += 1


_ADVICE = {
    "auth": "check OPENAI_API_KEY / llm.api_key",
    "forbidden": "check that this key's project may use the model",
    "quota": "check the account's billing and quota",
    "bad_request": "a parameter may be unsupported or the prompt too long; check the model name and the server's limits",
    "unprocessable": "the server could not process the request; check the model name and the server's limits",
    "rate_limited": "lower llm.concurrency or set llm.requests_per_minute / llm.tokens_per_minute",
    "server_error": "the server is failing or overloaded; try again later",
    "malformed": "check that the base URL points to an OpenAI-compatible /v1 endpoint",
    "http_error": "check the base URL and the server's logs",
}


@dataclass(frozen=True)
class FailureContext:
    """Who failed, for the message: the kind of model, its endpoint and the settings to check."""

    what: str  # chat | embedding
    url: str
    model: str
    timeout: float
    model_setting: str
    url_setting: str
    secrets: Sequence[str | None] = ()


def describe_failure(failure: Failure, attempts: int, context: FailureContext) -> LLMError:
    """One sentence naming the endpoint, the model, the status / error kind and what to do."""
    c = context
    after = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts > 1 else ""
    detail = failure.detail.strip().replace("\n", " ")
    if len(detail) > 200:
        detail = detail[:197] + "..."
    detail_part = f": {detail}" if detail else ""
    subject = f"the {c.what} endpoint {c.url} (model '{c.model}')"
    if failure.kind == "refused":
        text = f"could not connect to {c.url} for {c.what} model '{c.model}' (connection refused{after}); is the server at {c.url} running?"
    elif failure.kind == "unknown_host":
        text = f"could not connect to {c.url} for {c.what} model '{c.model}': its host name is unknown{after}; check {c.url_setting}."
    elif failure.kind == "connect_timeout":
        text = f"could not connect to {c.url} for {c.what} model '{c.model}' (no answer to the connection{after}); check {c.url_setting} and that the server is reachable."
    elif failure.kind == "connection":
        text = f"the connection to {c.url} for {c.what} model '{c.model}' failed ({detail or 'connection error'}{after}); check the network and {c.url_setting}."
    elif failure.kind == "timeout":
        text = f"{subject} did not answer within {c.timeout:g} s{after}; raise llm.request_timeout or lower llm.concurrency."
    elif failure.kind == "not_found":
        text = f"{subject} answered HTTP 404{detail_part}; check {c.model_setting} and {c.url_setting} (it usually ends in /v1)."
    elif failure.kind == "malformed":
        text = f"{subject} returned a body that is not a valid OpenAI response{after}; {_ADVICE['malformed']}."
    elif failure.kind == "content_filter":
        text = (
            f"{subject} refused the prompt because its content filter flagged it{detail_part}; remove that text from "
            "the input or ask the resource's owner to adjust the deployment's content filter."
        )
    elif failure.kind == "context_length":
        text = (
            f"{subject} rejected a prompt longer than the model's context window, even shortened{detail_part}; "
            "raise the server's context length or lower chunking.size, reports.max_input_length or query.*.max_context_tokens."
        )
    else:
        status = f"HTTP {failure.status}" if failure.status else failure.kind
        text = (
            f"{subject} failed with {status}{detail_part}{after}; {_ADVICE.get(failure.kind, _ADVICE['http_error'])}."
        )
    return LLMError(scrub(text, c.secrets), failure.kind)
