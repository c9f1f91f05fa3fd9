"""What chat and embedding models on an OpenAI-compatible endpoint share.

:class:`~graphrag_assets.llm.chat.OpenAIChatModel` and
:class:`~graphrag_assets.llm.embeddings.OpenAIEmbeddingModel` sit on this base, on top of the
``openai`` package's async client, adding what a long indexing run needs: a concurrency bound,
optional RPM / TPM limits, our own retries (:mod:`.retry`), the response cache (:mod:`.cache`),
usage accounting (:mod:`.usage`), what the server is known to accept (:mod:`.capabilities`) and a
dry-run mode that counts instead of sending.

Connecting fails fast: the connect phase has its own short timeout, and a refused connection, an
unknown host or a connect timeout on an endpoint that has not answered yet in this process is not
retried (a wrong URL or a stopped server does not fix itself in a minute of backoff). Once the
endpoint has answered, the same failures are retried like any transient one (a local server that
restarts mid-run). The read timeout stays ``llm.request_timeout``: a local model may take long to
load and to answer, and that is not a failure.

Event loops: synchronous callers (Dagster assets) run ``asyncio.run(...)`` once per step or more.
An ``openai``/``httpx`` client, an ``asyncio.Semaphore`` and in-flight futures belong to the loop
they were first used in, so each model keeps them per loop and builds fresh ones when it finds
itself in a new loop. The HTTP connections are closed inside the loop when ``asyncio.run`` shuts it
down (through an async generator that the loop finalizes), or earlier with ``await model.aclose()``.

``import openai`` costs ~0.3 s, so it happens on the first request, not at import time.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from graphrag_assets.core.errors import LLMError
from graphrag_assets.core.progress import warn
from graphrag_assets.core.tokens import count_tokens
from graphrag_assets.llm.cache import LLMCache
from graphrag_assets.llm.capabilities import Capabilities, CapabilityStore
from graphrag_assets.llm.rate_limit import SlidingWindowLimiter
from graphrag_assets.llm.retry import (
    Failure,
    FailureContext,
    RetryHooks,
    RetryPolicy,
    call_with_retries,
    describe_failure,
    scrub,
)
from graphrag_assets.llm.usage import UsageMeter

if TYPE_CHECKING:
    from graphrag_assets.core.settings import Price

log = logging.getLogger(__name__)

T = TypeVar("T")

PLACEHOLDER_API_KEY = "not-needed"  # local servers (Ollama, vLLM) accept anything; openai requires a value
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
CONNECT_TIMEOUT_SECONDS = 10.0  # reaching the server; answering may take llm.request_timeout

_warned: set[tuple[str, ...]] = set()  # (url, model, kind, what): each adaptation is told once per process


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests. ``url`` is what messages show; the key is never shown."""

    base_url: str | None
    api_key: str | None = field(repr=False)
    api_version: str | None
    timeout: float

    @property
    def url(self) -> str:
        return self.base_url or OPENAI_DEFAULT_URL

    def create_client(self) -> Any:
        """A new ``openai`` async client (Azure when an API version is set), with retries off."""
        import openai

        api_key = self.api_key or PLACEHOLDER_API_KEY
        timeout = openai.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT_SECONDS, self.timeout))
        http_client = openai.DefaultAsyncHttpxClient(verify=_tls_context(openai.DefaultAsyncHttpxClient))
        if self.api_version:
            return openai.AsyncAzureOpenAI(
                azure_endpoint=self.url,
                api_version=self.api_version,
                api_key=api_key,
                timeout=timeout,
                max_retries=0,
                http_client=http_client,
            )
        return openai.AsyncOpenAI(
            base_url=self.url, api_key=api_key, timeout=timeout, max_retries=0, http_client=http_client
        )


_tls_contexts: dict[type, Any] = {}


def _tls_context(http_client_class: type) -> Any:
    """The TLS context every client of this process verifies servers with, made once.

    A client is made per event loop (each step runs its own), and the HTTP library's default is a
    new context per client, reading the certificate bundle each time: 6 reads, 0.11 s of a 5.9 s
    cold index of A Christmas Carol. The context is the library's own default (its bundle and its
    reading of ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), from the module the ``openai`` client is
    built on (``httpx`` or its successor, depending on the ``openai`` version).
    """
    if http_client_class not in _tls_contexts:
        library = sys.modules[http_client_class.__mro__[1].__module__.split(".")[0]]
        _tls_contexts[http_client_class] = library.create_ssl_context()
    return _tls_contexts[http_client_class]


@dataclass(frozen=True)
class CallLimits:
    """How hard a model may be driven: calls in flight, retries, RPM / TPM."""

    concurrency: int = 25
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    limiter: SlidingWindowLimiter | None = None


@dataclass
class ModelServices:
    """What a model uses besides its endpoint. The chat model and the embedder of one step share
    the meter and the capability store; each owns its cache object."""

    meter: UsageMeter
    cache: LLMCache | None = None
    limits: CallLimits = field(default_factory=CallLimits)
    prices: Mapping[str, Price] = field(default_factory=dict)
    capabilities: CapabilityStore = field(default_factory=lambda: CapabilityStore(None))
    dry_run: bool = False
    encoding: str = "cl100k_base"


async def _close_at_loop_shutdown(client: Any) -> AsyncIterator[None]:
    """Suspended at its ``yield`` for the loop's lifetime; ``asyncio.run`` finalizes open async
    generators before closing the loop, which closes the client's connections inside that loop."""
    try:
        yield
    finally:
        await client.close()


@dataclass
class LoopState:
    """Everything bound to one event loop."""

    loop: asyncio.AbstractEventLoop
    client: Any
    semaphore: asyncio.Semaphore
    in_flight: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    closer: AsyncIterator[None] | None = None

    async def arm_closer(self) -> None:
        if self.closer is None:
            self.closer = _close_at_loop_shutdown(self.client)
            await anext(self.closer)


class OpenAIModel:
    """What chat and embedding models share: per-loop client, limits, retries, error messages and
    what the server is known to accept."""

    what = "model"
    model_setting = "llm.chat_model"
    url_setting = "llm.base_url"

    def __init__(self, model: str, endpoint: Endpoint, services: ModelServices) -> None:
        self.model = model
        self.endpoint = endpoint
        self.services = services
        self.meter = services.meter
        self.cache = services.cache
        self.limiter = (
            services.limits.limiter if services.limits.limiter is not None and services.limits.limiter.active else None
        )
        self.dry_run = services.dry_run
        self.encoding = services.encoding
        self.key = (endpoint.url, model, self.what)
        self._state: LoopState | None = None
        self._rng = random.Random()
        self._reached = False  # the endpoint has answered at least once

    # -- what the server accepts ---------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        return self.services.capabilities.get(self.key)

    def learn(self, what: str, message: str, **changes: Any) -> bool:
        """Record capabilities; the first time they change, count ``what`` and tell the user
        ``message`` (when there is one). True when something changed."""
        changed = self.services.capabilities.update(self.key, **changes)
        if changed:
            self.meter.note(self.model, what)
            if message:
                self.tell_once(what, message)
        return bool(changed)

    def tell_once(self, what: str, message: str) -> None:
        """A warning for the user (shown by the CLI), once per process for this endpoint, model
        and subject; the step's metadata counts every occurrence in the meter's notes."""
        marker = (*self.key, what)
        if marker in _warned:
            return
        _warned.add(marker)
        log.info("%s", message)
        warn(message)

    def describe(self) -> str:
        return f"{self.what} model '{self.model}' at {self.endpoint.url}"

    # -- event-loop bound state ------------------------------------------------------------------
    async def loop_state(self) -> LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            # A new loop (another asyncio.run): the previous one closed its client at shutdown.
            self._state = LoopState(
                loop, self.endpoint.create_client(), asyncio.Semaphore(self.services.limits.concurrency)
            )
            await self._state.arm_closer()
        return self._state

    async def aclose(self) -> None:
        """Close this loop's HTTP connections and write pending cache entries."""
        state, self._state = self._state, None
        if state is not None and state.loop is asyncio.get_running_loop() and state.closer is not None:
            await state.closer.aclose()
        if self.cache is not None:
            await self.cache.aflush()

    def close(self) -> None:
        """Write pending cache entries and stop the cache's writer (call once the step is done)."""
        self._state = None
        if self.cache is not None:
            self.cache.close()

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- sending ---------------------------------------------------------------------------------
    def failure_context(self) -> FailureContext:
        return FailureContext(
            what=self.what,
            url=self.endpoint.url,
            model=self.model,
            timeout=self.endpoint.timeout,
            model_setting=self.model_setting,
            url_setting=self.url_setting,
            secrets=[self.endpoint.api_key],
        )

    def retry_hooks(self, purpose: str) -> RetryHooks:
        def give_up(failure: Failure, attempts: int) -> LLMError:
            self.meter.record_failure(purpose, self.model)
            return describe_failure(failure, attempts, self.failure_context())

        def on_retry(failure: Failure, wait: float) -> None:
            self.meter.record_retry(purpose, self.model)
            status = f"HTTP {failure.status}" if failure.status else failure.kind
            log.info(
                "%s: %s (%s); retrying in %.2f s",
                self.describe(),
                status,
                scrub(failure.detail[:200], [self.endpoint.api_key]),
                wait,
            )

        def is_final(failure: Failure) -> bool:
            return failure.connecting and not self._reached

        return RetryHooks(give_up, on_retry, is_final)

    async def send(self, purpose: str, request: Callable[[Any], Awaitable[T]], estimated_tokens: int) -> T:
        """One logical request with rate limits, the concurrency bound (per attempt) and retries."""
        state = await self.loop_state()

        async def attempt() -> T:
            if self.limiter is not None:
                await self.limiter.acquire(estimated_tokens)
            async with state.semaphore:
                return await self.reach(request, state.client)

        return await call_with_retries(attempt, self.services.limits.retry_policy, self.retry_hooks(purpose), self._rng)

    async def reach(self, request: Callable[[Any], Awaitable[T]], client: Any) -> T:
        """Run ``request``, noting that the endpoint answered (even with an HTTP error)."""
        try:
            result = await request(client)
        except Exception as exc:
            if getattr(exc, "status_code", None) is not None:
                self._reached = True
            raise
        self._reached = True
        return result

    def count(self, text: str) -> int:
        return count_tokens(text, self.encoding)
