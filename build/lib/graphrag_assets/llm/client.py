"""Chat and embedding models on any OpenAI-compatible endpoint (OpenAI, Azure OpenAI, Ollama, vLLM...).

They implement :class:`~graphrag_assets.llm.types.ChatModel` and
:class:`~graphrag_assets.llm.types.EmbeddingModel` on top of the ``openai`` package's async client,
adding what a long indexing run needs: a concurrency bound, optional RPM / TPM limits, our own
retries (:mod:`.retry`), the response cache (:mod:`.cache`), usage accounting (:mod:`.usage`) and a
dry-run mode that counts instead of sending.

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
import math
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from graphrag_assets.core.errors import LLMError
from graphrag_assets.llm.cache import LLMCache, chat_cache_key, embedding_cache_key
from graphrag_assets.llm.rate_limit import SlidingWindowLimiter
from graphrag_assets.llm.retry import (
    Failure,
    MalformedResponse,
    RetryPolicy,
    call_with_retries,
    classify,
    describe_failure,
    scrub,
)
from graphrag_assets.llm.types import ChatResult, Message
from graphrag_assets.llm.usage import UsageMeter, estimate_cost
from graphrag_assets.core.tokens import count_tokens, get_tokenizer

if TYPE_CHECKING:
    from graphrag_assets.core.settings import EmbeddingSettings, LLMSettings, Price

log = logging.getLogger(__name__)

T = TypeVar("T")

PLACEHOLDER_API_KEY = "not-needed"  # local servers (Ollama, vLLM) accept anything; openai requires a value
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
DRY_RUN_COMPLETION_TOKENS = 500  # assumed answer size when a dry run has no max_tokens to go by
KNOWN_EMBEDDING_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
DEFAULT_EMBEDDING_DIMENSION = 1536
_JSON_MODE_REJECTION = re.compile(r"response_format|json_object|json mode", re.I)
# (endpoint url, model) pairs whose server rejected response_format: remembered for the process.
_JSON_MODE_UNSUPPORTED: set[tuple[str, str]] = set()


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
        if self.api_version:
            return openai.AsyncAzureOpenAI(
                azure_endpoint=self.url, api_version=self.api_version, api_key=api_key,
                timeout=self.timeout, max_retries=0,
            )
        return openai.AsyncOpenAI(base_url=self.url, api_key=api_key, timeout=self.timeout, max_retries=0)


async def _close_at_loop_shutdown(client: Any) -> AsyncIterator[None]:
    """Suspended at its ``yield`` for the loop's lifetime; ``asyncio.run`` finalizes open async
    generators before closing the loop, which closes the client's connections inside that loop."""
    try:
        yield
    finally:
        await client.close()


@dataclass
class _LoopState:
    """Everything bound to one event loop."""

    loop: asyncio.AbstractEventLoop
    client: Any
    semaphore: asyncio.Semaphore
    in_flight: dict[str, asyncio.Future[ChatResult]] = field(default_factory=dict)
    closer: AsyncIterator[None] | None = None

    async def arm_closer(self) -> None:
        if self.closer is None:
            self.closer = _close_at_loop_shutdown(self.client)
            await anext(self.closer)


class _OpenAIModel:
    """What chat and embedding models share: per-loop client, limits, retries, error messages."""

    what = "model"
    model_setting = "llm.chat_model"
    url_setting = "llm.base_url"

    def __init__(
        self,
        *,
        model: str,
        endpoint: Endpoint,
        meter: UsageMeter,
        cache: LLMCache | None = None,
        concurrency: int = 25,
        retry_policy: RetryPolicy | None = None,
        limiter: SlidingWindowLimiter | None = None,
        prices: Mapping[str, "Price"] | None = None,
        dry_run: bool = False,
        encoding: str = "cl100k_base",
    ) -> None:
        self.model = model
        self.endpoint = endpoint
        self.meter = meter
        self.cache = cache
        self.concurrency = concurrency
        self.retry_policy = retry_policy or RetryPolicy()
        self.limiter = limiter if limiter is not None and limiter.active else None
        self.prices = dict(prices or {})
        self.dry_run = dry_run
        self.encoding = encoding
        self._state: _LoopState | None = None
        self._rng = random.Random()

    # -- event-loop bound state ------------------------------------------------------------------
    async def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            # A new loop (another asyncio.run): the previous one closed its client at shutdown.
            self._state = _LoopState(loop, self.endpoint.create_client(), asyncio.Semaphore(self.concurrency))
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
    def _give_up(self, purpose: str) -> Callable[[Failure, int], LLMError]:
        def give_up(failure: Failure, attempts: int) -> LLMError:
            self.meter.record_failure(purpose, self.model)
            return describe_failure(
                failure, what=self.what, url=self.endpoint.url, model=self.model, attempts=attempts,
                timeout=self.endpoint.timeout, model_setting=self.model_setting, url_setting=self.url_setting,
                secrets=[self.endpoint.api_key],
            )

        return give_up

    def _on_retry(self, purpose: str) -> Callable[[Failure, float], None]:
        def on_retry(failure: Failure, wait: float) -> None:
            self.meter.record_retry(purpose, self.model)
            status = f"HTTP {failure.status}" if failure.status else failure.kind
            log.info("%s model '%s' at %s: %s (%s); retrying in %.2f s", self.what, self.model,
                     self.endpoint.url, status, scrub(failure.detail[:200], [self.endpoint.api_key]), wait)

        return on_retry

    async def _send(self, purpose: str, request: Callable[[Any], Awaitable[T]], estimated_tokens: int) -> T:
        """One logical request with rate limits, the concurrency bound (per attempt) and retries."""
        state = await self._loop_state()

        async def attempt() -> T:
            if self.limiter is not None:
                await self.limiter.acquire(estimated_tokens)
            async with state.semaphore:
                return await request(state.client)

        return await call_with_retries(
            attempt, self.retry_policy, give_up=self._give_up(purpose), on_retry=self._on_retry(purpose), rng=self._rng
        )

    def _count(self, text: str) -> int:
        return count_tokens(text, self.encoding)


class OpenAIChatModel(_OpenAIModel):
    """:class:`~graphrag_assets.llm.types.ChatModel` on an OpenAI-compatible endpoint."""

    what = "chat"

    def __init__(self, *, temperature: float = 0.0, json_mode: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.temperature = temperature
        self.json_mode = json_mode  # False: never send response_format, whatever callers ask

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        json_mode: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        prompt_version: str = "",
        use_cache: bool = True,
        cache_if: Callable[[str], bool] | None = None,
    ) -> ChatResult:
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        temp = self.temperature if temperature is None else float(temperature)
        want_json = bool(json_mode and self.json_mode)
        cache = self.cache if use_cache else None
        key = chat_cache_key(model=self.model, messages=msgs, temperature=temp, max_tokens=max_tokens,
                             json_mode=want_json, prompt_version=prompt_version)
        if cache is not None:
            hit = await cache.get_chat(key)
            if hit is not None:
                self.meter.record_cache_hits(purpose, self.model)
                return ChatResult(hit.text, hit.prompt_tokens, hit.completion_tokens, cached=True)
        if self.dry_run:
            return self._dry_run_chat(purpose, msgs, max_tokens)
        if not use_cache:  # the caller wants a fresh answer: no sharing with identical calls either
            return await self._complete(purpose, msgs, temp, max_tokens, want_json)
        in_flight = (await self._loop_state()).in_flight
        twin = in_flight.get(key)
        if twin is not None:  # an identical call is already on its way: share its answer
            result = await asyncio.shield(twin)
            self.meter.record_cache_hits(purpose, self.model)
            return ChatResult(result.text, result.prompt_tokens, result.completion_tokens, cached=True)
        future: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # mark as retrieved
        in_flight[key] = future
        try:
            result = await self._complete(purpose, msgs, temp, max_tokens, want_json)
            if cache is not None and result.text and (cache_if is None or cache_if(result.text)):
                cache.put_chat(key, model=self.model, purpose=purpose, text=result.text,
                               prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens)
            future.set_result(result)
            return result
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
            raise
        finally:
            in_flight.pop(key, None)

    def _dry_run_chat(self, purpose: str, msgs: list[dict[str, str]], max_tokens: int | None) -> ChatResult:
        prompt_tokens = sum(self._count(m["content"]) for m in msgs)
        completion_tokens = max_tokens or DRY_RUN_COMPLETION_TOKENS
        self.meter.record_request(
            purpose, self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            cost_usd=estimate_cost(self.prices, self.model, prompt_tokens, completion_tokens),
        )
        return ChatResult("", prompt_tokens, completion_tokens, cached=False)

    def _request_args(self, msgs: list[dict[str, str]], temperature: float, max_tokens: int | None) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": msgs, "temperature": temperature}
        if max_tokens is not None:
            args["max_tokens"] = max_tokens
        return args

    def _estimate(self, msgs: list[dict[str, str]], max_tokens: int | None) -> int:
        if self.limiter is None or not self.limiter.tokens_per_minute:
            return 0
        return sum(self._count(m["content"]) for m in msgs) + (max_tokens or 0)

    async def _complete(
        self, purpose: str, msgs: list[dict[str, str]], temperature: float, max_tokens: int | None, want_json: bool
    ) -> ChatResult:
        args = self._request_args(msgs, temperature, max_tokens)
        json_key = (self.endpoint.url, self.model)

        async def request(client: Any) -> tuple[str, Any]:
            use_json = want_json and json_key not in _JSON_MODE_UNSUPPORTED
            try:
                if use_json:
                    response = await client.chat.completions.create(**args, response_format={"type": "json_object"})
                else:
                    response = await client.chat.completions.create(**args)
            except Exception as exc:
                failure = classify(exc)
                if not (use_json and failure is not None and failure.kind == "bad_request"
                        and _JSON_MODE_REJECTION.search(failure.detail)):
                    raise
                log.warning("chat model '%s' at %s does not accept response_format; asking without it from now on.",
                            self.model, self.endpoint.url)
                _JSON_MODE_UNSUPPORTED.add(json_key)
                response = await client.chat.completions.create(**args)
            choices = getattr(response, "choices", None)
            if not choices:
                raise MalformedResponse("the response has no choices")
            return choices[0].message.content or "", getattr(response, "usage", None)

        text, usage = await self._send(purpose, request, self._estimate(msgs, max_tokens))
        if usage is not None and usage.prompt_tokens is not None:
            prompt_tokens, completion_tokens = int(usage.prompt_tokens), int(usage.completion_tokens or 0)
        else:  # the server reports nothing: count ourselves
            prompt_tokens = sum(self._count(m["content"]) for m in msgs)
            completion_tokens = self._count(text)
        self.meter.record_request(
            purpose, self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            cost_usd=estimate_cost(self.prices, self.model, prompt_tokens, completion_tokens),
        )
        return ChatResult(text, prompt_tokens, completion_tokens, cached=False)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str]:
        """Yield the answer's text as it arrives (never cached).

        Failures before the first piece are retried like any call; a failure after text has been
        yielded raises :class:`LLMError` (repeating would duplicate what the caller already has).
        """
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
        temp = self.temperature if temperature is None else float(temperature)
        if self.dry_run:
            self._dry_run_chat(purpose, msgs, max_tokens)
            return
        state = await self._loop_state()
        args = self._request_args(msgs, temp, max_tokens)
        args.update(stream=True, stream_options={"include_usage": True})
        give_up = self._give_up(purpose)
        estimated = self._estimate(msgs, max_tokens)

        async def open_stream() -> Any:
            if self.limiter is not None:
                await self.limiter.acquire(estimated)
            return await state.client.chat.completions.create(**args)

        async with state.semaphore:
            stream = await call_with_retries(
                open_stream, self.retry_policy, give_up=give_up, on_retry=self._on_retry(purpose), rng=self._rng
            )
            pieces: list[str] = []
            usage = None
            failure: Failure | None = None
            try:
                async for chunk in stream:
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage
                    for choice in chunk.choices or []:
                        piece = choice.delta.content if choice.delta is not None else None
                        if piece:
                            pieces.append(piece)
                            yield piece
            except Exception as exc:
                failure = classify(exc)
                if failure is None:
                    raise
            finally:
                await stream.close()
            if failure is not None:  # raised outside the except block: no __context__ to leak
                raise give_up(failure, 1)
        if usage is not None and usage.prompt_tokens is not None:
            prompt_tokens, completion_tokens = int(usage.prompt_tokens), int(usage.completion_tokens or 0)
        else:
            prompt_tokens = sum(self._count(m["content"]) for m in msgs)
            completion_tokens = self._count("".join(pieces))
        self.meter.record_request(
            purpose, self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            cost_usd=estimate_cost(self.prices, self.model, prompt_tokens, completion_tokens),
        )


def plan_batches(token_counts: Sequence[int], batch_size: int, batch_max_tokens: int) -> list[list[int]]:
    """Group input positions, in order, into batches of at most ``batch_size`` items and
    ``batch_max_tokens`` tokens (an item larger than the token budget travels alone)."""
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for index, count in enumerate(token_counts):
        if current and (len(current) >= batch_size or tokens + count > batch_max_tokens):
            batches.append(current)
            current, tokens = [], 0
        current.append(index)
        tokens += count
    if current:
        batches.append(current)
    return batches


def _mean_normalized(vectors: Sequence[Sequence[float]], weights: Sequence[int]) -> list[float]:
    total = sum(weights) or 1
    mean = [sum(w * v[i] for v, w in zip(vectors, weights)) / total for i in range(len(vectors[0]))]
    norm = math.sqrt(sum(x * x for x in mean)) or 1.0
    return [x / norm for x in mean]


class OpenAIEmbeddingModel(_OpenAIModel):
    """:class:`~graphrag_assets.llm.types.EmbeddingModel` on an OpenAI-compatible endpoint.

    Texts are deduplicated, looked up in the cache, and the rest sent in batches (by count and by
    tokens) that run concurrently. A text longer than ``batch_max_tokens`` is embedded in pieces of
    that size whose vectors are averaged (weighted by tokens) and re-normalized, since endpoints
    reject over-long inputs. An empty text is sent as a single space, which endpoints accept.
    """

    what = "embedding"
    model_setting = "llm.embedding_model"
    url_setting = "llm.embedding_base_url"

    def __init__(self, *, batch_size: int = 16, batch_max_tokens: int = 8191, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batch_size = batch_size
        self.batch_max_tokens = batch_max_tokens
        self._dimension: int | None = None

    def _pieces(self, text: str) -> list[tuple[str, int]]:
        tokenizer = get_tokenizer(self.encoding)
        tokens = tokenizer.encode_ordinary(text)
        if not tokens:
            return [(" ", 1)]
        if len(tokens) <= self.batch_max_tokens:
            return [(text, len(tokens))]
        step = self.batch_max_tokens
        return [(tokenizer.decode(tokens[i : i + step]), len(tokens[i : i + step])) for i in range(0, len(tokens), step)]

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        unique = list(dict.fromkeys(texts))
        keys = {text: embedding_cache_key(model=self.model, text=text) for text in unique}
        vectors: dict[str, list[float]] = {}
        if self.cache is not None:
            found = await self.cache.get_embeddings(list(keys.values()))
            vectors = {text: found[key] for text, key in keys.items() if key in found}
            if vectors:
                self.meter.record_cache_hits(purpose, self.model, len(vectors))
                self._dimension = self._dimension or len(next(iter(vectors.values())))
        missing = [text for text in unique if text not in vectors]
        if missing:
            vectors.update(await self._embed_missing(purpose, missing, keys))
        return [vectors[text] for text in texts]

    async def _embed_missing(self, purpose: str, texts: list[str], keys: Mapping[str, str]) -> dict[str, list[float]]:
        pieces: list[tuple[int, str, int]] = []  # (text position, piece text, tokens)
        for position, text in enumerate(texts):
            pieces.extend((position, piece, tokens) for piece, tokens in self._pieces(text))
        batches = plan_batches([p[2] for p in pieces], self.batch_size, self.batch_max_tokens)
        if self.dry_run:
            for batch in batches:
                tokens = sum(pieces[i][2] for i in batch)
                self.meter.record_request(purpose, self.model, embedding_tokens=tokens,
                                          cost_usd=estimate_cost(self.prices, self.model, tokens))
            dim = self._dimension or KNOWN_EMBEDDING_DIMENSIONS.get(self.model, DEFAULT_EMBEDDING_DIMENSION)
            return {text: [0.0] * dim for text in texts}

        piece_vectors: dict[int, list[float]] = {}
        remaining = [0] * len(texts)
        for position, _, _ in pieces:
            remaining[position] += 1
        pieces_of: dict[int, list[int]] = {}
        for index, (position, _, _) in enumerate(pieces):
            pieces_of.setdefault(position, []).append(index)
        results: dict[str, list[float]] = {}

        async def run(batch: list[int]) -> None:
            inputs = [pieces[i][1] for i in batch]
            embedded, reported = await self._send(purpose, self._request(inputs), sum(pieces[i][2] for i in batch))
            tokens = reported if reported is not None else sum(pieces[i][2] for i in batch)
            self.meter.record_request(purpose, self.model, embedding_tokens=tokens,
                                      cost_usd=estimate_cost(self.prices, self.model, tokens))
            finished: dict[str, list[float]] = {}
            for index, vector in zip(batch, embedded):
                piece_vectors[index] = vector
                position = pieces[index][0]
                remaining[position] -= 1
                if remaining[position] == 0:
                    own = pieces_of[position]
                    vec = (piece_vectors[own[0]] if len(own) == 1 else
                           _mean_normalized([piece_vectors[i] for i in own], [pieces[i][2] for i in own]))
                    results[texts[position]] = vec
                    finished[keys[texts[position]]] = vec
            if finished and self.cache is not None:
                self.cache.put_embeddings(self.model, finished)

        await asyncio.gather(*(run(batch) for batch in batches))
        if results:
            self._dimension = self._dimension or len(next(iter(results.values())))
        return results

    def _request(self, inputs: list[str]) -> Callable[[Any], Awaitable[tuple[list[list[float]], int | None]]]:
        async def request(client: Any) -> tuple[list[list[float]], int | None]:
            response = await client.embeddings.create(model=self.model, input=inputs, encoding_format="float")
            data = getattr(response, "data", None)
            if not data or len(data) != len(inputs):
                raise MalformedResponse(f"expected {len(inputs)} embeddings, got {len(data or [])}")
            ordered = sorted(data, key=lambda item: item.index)
            usage = getattr(response, "usage", None)
            reported = getattr(usage, "prompt_tokens", None) if usage is not None else None
            return [list(item.embedding) for item in ordered], reported

        return request


def build_limiter(settings: "LLMSettings") -> SlidingWindowLimiter | None:
    if not (settings.requests_per_minute or settings.tokens_per_minute):
        return None
    return SlidingWindowLimiter(settings.requests_per_minute, settings.tokens_per_minute)


def retry_policy(settings: "LLMSettings") -> RetryPolicy:
    return RetryPolicy(settings.max_retries, settings.retry_base_delay, settings.retry_max_delay)


def chat_model_from_settings(
    settings: "LLMSettings", *, meter: UsageMeter, cache: LLMCache | None, dry_run: bool = False
) -> OpenAIChatModel:
    return OpenAIChatModel(
        model=settings.chat_model,
        endpoint=Endpoint(settings.base_url, settings.api_key, settings.api_version, settings.request_timeout),
        meter=meter, cache=cache, concurrency=settings.concurrency, retry_policy=retry_policy(settings),
        limiter=build_limiter(settings), prices=settings.prices, dry_run=dry_run,
        temperature=settings.temperature, json_mode=settings.json_mode,
    )


def embedding_model_from_settings(
    settings: "LLMSettings",
    embedding_settings: "EmbeddingSettings",
    *,
    meter: UsageMeter,
    cache: LLMCache | None,
    dry_run: bool = False,
) -> OpenAIEmbeddingModel:
    base_url = settings.embedding_base_url or settings.base_url
    api_key = settings.embedding_api_key or settings.api_key
    return OpenAIEmbeddingModel(
        model=settings.embedding_model,
        endpoint=Endpoint(base_url, api_key, settings.api_version, settings.request_timeout),
        meter=meter, cache=cache, concurrency=settings.concurrency, retry_policy=retry_policy(settings),
        limiter=build_limiter(settings), prices=settings.prices, dry_run=dry_run,
        batch_size=embedding_settings.batch_size, batch_max_tokens=embedding_settings.batch_max_tokens,
    )
