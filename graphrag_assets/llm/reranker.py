"""A cross-encoder reranker behind one of the ``/rerank`` APIs.

Servers agree on the idea (a query and candidate texts in, a relevance score per candidate out)
but not on the request and reply: :data:`SHAPES` holds each API's differences in one place, with
where each shape is documented (docs/model-servers.md lists the same sources). The engines call
:meth:`Reranker.rerank`; a failure is a :class:`RerankError` that the caller turns into one warning
and the unreranked order, so a reranker that is down never stops a query.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphrag_assets.core.settings import RerankerSettings


class RerankError(Exception):
    """The reranker could not be used for this request (the message says why, in one sentence)."""


@dataclass(frozen=True)
class RerankShape:
    """How one API is asked and how it answers."""

    path: str
    texts_key: str  # the request's list of candidates
    takes_model: bool
    takes_top_n: bool
    results_key: str | None  # where the scored items are; None: the reply is the list itself
    score_key: str


SHAPES: dict[str, RerankShape] = {
    # Cohere: POST /v2/rerank {model, query, documents, top_n} -> {results: [{index, relevance_score}]}
    "cohere": RerankShape("/v2/rerank", "documents", True, True, "results", "relevance_score"),
    # Jina AI: POST /v1/rerank {model, query, documents, top_n} -> {model, usage, results: [{index, relevance_score, document}]}
    "jina": RerankShape("/v1/rerank", "documents", True, True, "results", "relevance_score"),
    # vLLM (serve --task score): POST /v1/rerank, Jina/Cohere-compatible -> {id, model, usage, results: [...]}
    "vllm": RerankShape("/v1/rerank", "documents", True, True, "results", "relevance_score"),
    # Infinity: POST /rerank {model, query, documents, top_n} -> {object: "rerank", results: [{index, relevance_score}]}
    "infinity": RerankShape("/rerank", "documents", True, True, "results", "relevance_score"),
    # Hugging Face text-embeddings-inference: POST /rerank {query, texts} -> [{index, score}] (all texts)
    "tei": RerankShape("/rerank", "texts", False, False, None, "score"),
}


class Reranker:
    """Scores candidate texts against a query with the configured ``/rerank`` API."""

    def __init__(self, settings: RerankerSettings) -> None:
        self.settings = settings
        self.shape = SHAPES[settings.api]
        self.url = settings.base_url + self.shape.path

    def request_body(self, query: str, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, self.shape.texts_key: list(texts)}
        if self.shape.takes_model and self.settings.model:
            body["model"] = self.settings.model
        if self.shape.takes_top_n:
            body["top_n"] = min(self.settings.top_n, len(texts))
        return body

    async def rerank(self, query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
        """(index into ``texts``, score) pairs, best first, at most ``top_n``."""
        reply = await asyncio.to_thread(self._post, self.request_body(query, texts))
        return self.parse(reply, len(texts))

    def _post(self, body: dict[str, Any]) -> Any:
        """One POST with the standard library (one request per query: no client library to depend on)."""
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        request = urllib.request.Request(self.url, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_seconds) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RerankError(f"the reranker at {self.url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RerankError(f"the reranker at {self.url} did not answer ({reason})") from None
        except json.JSONDecodeError:
            raise RerankError(f"the reranker at {self.url} answered something that is not JSON") from None

    def parse(self, reply: Any, count: int) -> list[tuple[int, float]]:
        """The scored items of a reply, checked: an index outside the candidates is an error."""
        try:
            items = reply if self.shape.results_key is None else reply[self.shape.results_key]
            scored = [(int(item["index"]), float(item[self.shape.score_key])) for item in items]
        except (TypeError, KeyError, ValueError):
            raise RerankError(
                f"the reranker at {self.url} answered in a shape that is not the '{self.settings.api}' API's; "
                "check llm.reranker.api"
            ) from None
        if any(not 0 <= index < count for index, _ in scored):
            raise RerankError(f"the reranker at {self.url} scored a candidate it was not sent")
        return sorted(scored, key=lambda pair: -pair[1])[: self.settings.top_n]

    async def probe(self) -> float:
        """Seconds one small rerank takes (``doctor``); raises :class:`RerankError`."""
        started = time.perf_counter()
        ranked = await self.rerank(
            "Which text is about a lighthouse?", ["A recipe for bread.", "The lighthouse keeper."]
        )
        if not ranked:
            raise RerankError(f"the reranker at {self.url} returned no score")
        return time.perf_counter() - started
