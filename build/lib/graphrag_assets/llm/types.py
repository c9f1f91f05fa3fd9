"""What the rest of the code may assume about a language model.

Core steps (extraction, summarization, reports, query engines) are written against these
protocols, not against the OpenAI client, so they stay pure and know nothing about retries,
caching or accounting. :mod:`graphrag_assets.llm.client` provides the real implementation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypedDict


class Message(TypedDict):
    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True)
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


class ChatModel(Protocol):
    """An async chat-completion model."""

    model: str

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
        """One completion. ``purpose`` (e.g. "extract_graph") groups usage accounting.

        ``prompt_version`` is part of the cache key, so changing a prompt template invalidates
        exactly the answers produced with the old one. ``cache_if`` keeps an answer out of the
        cache unless it accepts it (so an unusable answer is asked again on the next run).
        """
        ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str]:
        """Yield the answer's text as it arrives (never cached)."""
        ...


class EmbeddingModel(Protocol):
    """An async text-embedding model returning one vector per input text, in order."""

    model: str

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[list[float]]: ...
