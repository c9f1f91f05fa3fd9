"""Build the models a step needs from settings: the one place that decides which implementation,
which cache and which endpoint.

Each returned model owns its cache object: call ``model.close()`` (or ``await model.aclose()``)
when the step is done so every answer is written. :class:`ModelSet` does that for the models of
one unit of work (a Dagster step, a query, a dry run).

The endpoint models' modules (HTTP client, retries, rate limits, JSON repair) are imported when an
endpoint model is built: an offline query uses only the local embedder and skips them. The local
embedders' modules (numpy) are imported when one is built: an index with an endpoint never loads numpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_assets.core.errors import UserError
from graphrag_assets.llm.reranker import Reranker
from graphrag_assets.llm.types import EmbeddingModel
from graphrag_assets.llm.usage import UsageMeter

if TYPE_CHECKING:
    from graphrag_assets.core.settings import EmbeddingSettings, LLMSettings, Settings
    from graphrag_assets.llm.cache import LLMCache
    from graphrag_assets.llm.chat import OpenAIChatModel
    from graphrag_assets.llm.client import ModelServices


def _cache(settings: LLMSettings, db_path: str | Path | None) -> LLMCache | None:
    if not settings.cache or db_path is None:
        return None
    from graphrag_assets.llm.cache import LLMCache  # endpoint models only (module docstring)

    return LLMCache(db_path)


def _services(settings: LLMSettings, db_path: str | Path | None, meter: UsageMeter, dry_run: bool) -> ModelServices:
    from graphrag_assets.llm.capabilities import CapabilityStore  # endpoint models only (module docstring)
    from graphrag_assets.llm.client import CallLimits, ModelServices
    from graphrag_assets.llm.rate_limit import SlidingWindowLimiter
    from graphrag_assets.llm.retry import RetryPolicy

    limiter = None
    if settings.requests_per_minute or settings.tokens_per_minute:
        limiter = SlidingWindowLimiter(settings.requests_per_minute, settings.tokens_per_minute)
    limits = CallLimits(
        settings.concurrency,
        RetryPolicy(settings.max_retries, settings.retry_base_delay, settings.retry_max_delay),
        limiter,
    )
    return ModelServices(
        meter=meter,
        cache=_cache(settings, db_path),
        limits=limits,
        prices=dict(settings.prices),
        capabilities=CapabilityStore(db_path),
        dry_run=dry_run,
    )


def build_chat_model(
    settings: LLMSettings, db_path: str | Path | None, meter: UsageMeter, dry_run: bool = False
) -> OpenAIChatModel:
    """The chat model for ``settings``; a dry run needs no endpoint since it sends nothing."""
    if not settings.endpoint_configured and not dry_run:
        raise UserError(
            "no model endpoint is configured; set OPENAI_API_KEY or OPENAI_BASE_URL "
            "(or llm.base_url in graphrag.yaml), or use method: nlp to index without a model."
        )
    from graphrag_assets.llm.chat import ChatDefaults, OpenAIChatModel  # endpoint models only (module docstring)
    from graphrag_assets.llm.client import Endpoint

    endpoint = Endpoint(settings.base_url, settings.api_key, settings.api_version, settings.request_timeout)
    return OpenAIChatModel(
        settings.chat_model,
        endpoint,
        _services(settings, db_path, meter, dry_run),
        ChatDefaults(settings.temperature, settings.json_mode),
    )


def build_embedding_model(
    settings: LLMSettings,
    embedding_settings: EmbeddingSettings,
    db_path: str | Path | None,
    meter: UsageMeter,
    dry_run: bool = False,
) -> EmbeddingModel:
    """The local embedder when ``llm.embeddings`` resolves to local, else the endpoint's model.

    Offline, ``embeddings.local_model`` picks the bundled static model (the default: it knows
    meaning) or feature hashing (the fallback: no model files at all).
    """
    if settings.use_local_embedder:
        if embedding_settings.local_model == "hashing":
            from graphrag_assets.llm.local_embedder import LocalEmbedder  # numpy (module docstring)

            return LocalEmbedder(dimension=embedding_settings.local_dimension)
        from graphrag_assets.llm.static_embedder import CombinedEmbedder, StaticEmbedder  # model files: on first use

        if embedding_settings.local_model == "combined":
            return CombinedEmbedder(embedding_settings.local_dimension)
        return StaticEmbedder()
    has_endpoint = settings.endpoint_configured or settings.embedding_base_url or settings.embedding_api_key
    if not has_endpoint and not dry_run:
        raise UserError(
            "llm.embeddings is 'openai' but no embedding endpoint is configured; set OPENAI_API_KEY or "
            "llm.embedding_base_url in graphrag.yaml, or set llm.embeddings: local."
        )
    from graphrag_assets.llm.client import Endpoint  # endpoint models only (module docstring)
    from graphrag_assets.llm.embeddings import EmbeddingBatching, OpenAIEmbeddingModel

    endpoint = Endpoint(
        settings.embedding_base_url or settings.base_url,
        settings.embedding_api_key or settings.api_key,
        settings.api_version,
        settings.request_timeout,
    )
    batching = EmbeddingBatching(
        embedding_settings.batch_size, embedding_settings.batch_max_tokens, settings.embedding_dimensions
    )
    return OpenAIEmbeddingModel(
        settings.embedding_model, endpoint, _services(settings, db_path, meter, dry_run), batching
    )


class ModelSet:
    """The chat model and the embedder of one unit of work: built on first use, closed together.

    Closing writes every pending cache entry, so what was paid for is kept even when the work
    fails afterwards. ``dry_run`` models count requests against the cache and send nothing.
    """

    def __init__(self, settings: Settings, meter: UsageMeter, *, dry_run: bool = False) -> None:
        self.settings = settings
        self.meter = meter
        self.dry_run = dry_run
        self._chat: OpenAIChatModel | None = None
        self._embedder: EmbeddingModel | None = None
        self._reranker: Reranker | None = None

    @property
    def chat(self) -> OpenAIChatModel:
        if self._chat is None:
            self._chat = build_chat_model(
                self.settings.llm, self.settings.database_path, self.meter, dry_run=self.dry_run
            )
        return self._chat

    @property
    def reranker(self) -> Reranker | None:
        """The ``llm.reranker`` client, or None when none is configured."""
        if self._reranker is None and self.settings.llm.reranker is not None:
            self._reranker = Reranker(self.settings.llm.reranker)
        return self._reranker

    @property
    def embedder(self) -> EmbeddingModel:
        if self._embedder is None:
            self._embedder = build_embedding_model(
                self.settings.llm,
                self.settings.embeddings,
                self.settings.database_path,
                self.meter,
                dry_run=self.dry_run,
            )
        return self._embedder

    async def aclose(self) -> None:
        """Close the models' HTTP connections in the running loop, then :meth:`close` them (for
        models kept open across many requests of one event loop, as the HTTP server does)."""
        for model in (self._chat, self._embedder):
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()
        self.close()

    def close(self) -> None:
        for model in (self._chat, self._embedder):
            close = getattr(model, "close", None)
            if close is not None:
                close()
        self._chat = None
        self._embedder = None

    def __enter__(self) -> ModelSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
