"""What the rest of the code may assume about a language model.

Core steps (extraction, summarization, reports, query engines) are written against these
protocols, not against the OpenAI client, so they stay pure and know nothing about retries,
caching, accounting or the quirks of a particular server. :mod:`graphrag_assets.llm.chat` provides
the real implementation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypedDict

if TYPE_CHECKING:  # annotations only: neither is needed to import this module
    from array import array

    import numpy as np


class Message(TypedDict):
    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True)
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    # the answer was cut short: at the token limit (finish_reason "length"), or it fails the
    # call's ``complete_if`` (stopped inside a record although the server said "stop"); never cached
    truncated: bool = False


@dataclass(frozen=True)
class JsonSchema:
    """The JSON schema an answer must follow (sent as ``response_format`` json_schema where the
    server accepts it; otherwise the prompt's own instructions and repair have to do)."""

    name: str
    schema: Mapping[str, Any] = field(hash=False)


@dataclass(frozen=True)
class ChatOptions:
    """How one chat call is made; the defaults suit most calls.

    ``json_mode`` asks for a JSON object (``response_format`` json_object where accepted);
    ``json_schema`` asks for one following a schema and implies ``json_mode``. ``temperature``
    None means the model's configured temperature. ``prompt_version`` is part of the cache key,
    so changing a prompt template invalidates exactly the answers produced with the old one.
    ``use_cache`` False asks for a fresh answer; ``cache_if`` keeps an answer out of the cache
    unless it accepts it (so an unusable answer is asked again on the next run); ``complete_if``
    tells whether an answer the server called finished really is (an extraction answer that stops
    inside a record is not): one it rejects is used, reported and not cached, like one cut off
    at the token limit.
    """

    json_mode: bool = False
    json_schema: JsonSchema | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    prompt_version: str = ""
    use_cache: bool = True
    cache_if: Callable[[str], bool] | None = field(default=None, compare=False)
    complete_if: Callable[[str], bool] | None = field(default=None, compare=False)

    @property
    def wants_json(self) -> bool:
        return self.json_mode or self.json_schema is not None


DEFAULT_CHAT_OPTIONS = ChatOptions()


class ChatModel(Protocol):
    """An async chat-completion model."""

    model: str

    async def chat(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> ChatResult:
        """One completion. ``purpose`` (e.g. "extract_graph") groups usage accounting.

        The text comes back without the ``<think>`` block reasoning models put before their
        answer; when JSON was asked for, it is JSON whenever the answer could be repaired into it.
        """
        ...

    def stream(
        self, messages: Sequence[Message], *, purpose: str, options: ChatOptions | None = None
    ) -> AsyncIterator[str]:
        """Yield the answer's text as it arrives (never cached; ``<think>`` blocks left out)."""
        ...


Vector: TypeAlias = "memoryview | array[float] | np.ndarray | list[float]"


class EmbeddingModel(Protocol):
    """An async text-embedding model returning one vector per input text, in order, as float32:
    from an endpoint a view of the response's bytes (an ``array('f')`` when the server sent
    numbers), from the local embedder a numpy array; a list of floats is accepted too.
    ``np.asarray`` and :func:`graphrag_assets.core.float32.to_le_bytes` take any of them.

    A model may say it is ``reproducible`` (a class attribute, True) and give its ``dimension``:
    its vector is then a function of ``model`` and the text alone, so a stored vector of the same
    text and size stands in for a call (the local embedders; see
    :func:`graphrag_assets.index.embedding_texts.reusable_vectors`)."""

    model: str

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[Vector]: ...
