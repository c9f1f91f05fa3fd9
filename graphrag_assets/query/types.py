"""What the query engines take and give back.

- :class:`QueryData`: the index tables a search reads (polars frames) and the three vector indexes.
- :class:`VectorIndex`: the one operation a search needs from a vector store; :class:`ArrayVectorIndex`
  implements it with numpy for tests and small indexes (a LanceDB-backed one lives with storage).
  :class:`LexicalIndex` is its full-text counterpart (LanceDB's BM25 index, also from storage).
- :class:`QueryResult`: the answer with the records and rendered context it was built from, the
  model usage, and warnings; ``to_dict()`` is JSON-serializable.
- :class:`ModelCalls`: the chat and embedding calls of one query, counted into :class:`QueryUsage`.
  Every engine calls the models through it, so usage is accounted the same way everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

from graphrag_assets.core.errors import UserError, dimension_mismatch
from graphrag_assets.core.schemas import (
    COMMUNITIES,
    COMMUNITY_REPORTS,
    COVARIATES,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    TEXT_UNITS,
    empty_frame,
)
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.llm.types import ChatModel, ChatOptions, EmbeddingModel, Message
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt

TokenCounter = Callable[[str], int]
TokenCallback = Callable[[str], None]

if TYPE_CHECKING:  # numpy is imported where vectors are searched: `index` loads this module and never searches
    import numpy as np


# --- vector indexes ------------------------------------------------------------------------------


class VectorIndex(Protocol):
    """Nearest neighbours of a vector among stored ones, keyed by the id of the embedded record."""

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (id, similarity) pairs, most similar first."""
        ...


class ArrayVectorIndex:
    """Cosine similarity over an in-memory matrix (one row per id).

    Ties keep the order the ids were given in, so results are deterministic.
    """

    def __init__(self, ids: Sequence[str], matrix: Sequence[Sequence[float]] | np.ndarray, name: str = "stored"):
        import numpy as np

        self.name = name
        vectors = np.asarray(matrix, dtype=np.float64)
        if len(ids) == 0:
            vectors = vectors.reshape(0, vectors.shape[-1] if vectors.ndim == 2 else 0)
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise ValueError(f"expected one vector per id: {len(ids)} ids, matrix of shape {vectors.shape}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.ids = list(ids)
        self._unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        if k <= 0 or not self.ids:
            return []
        import numpy as np

        query = np.asarray(vector, dtype=np.float64)
        if query.shape != (self._unit.shape[1],):
            raise UserError(dimension_mismatch(self.name, self._unit.shape[1], query.size))
        norm = float(np.linalg.norm(query))
        similarities = self._unit @ (query / norm) if norm > 0 else np.zeros(len(self.ids))
        order = np.argsort(-similarities, kind="stable")[:k]
        return [(self.ids[i], float(similarities[i])) for i in order]


def empty_index() -> ArrayVectorIndex:
    import numpy as np

    return ArrayVectorIndex([], np.zeros((0, 1)))


class LexicalIndex(Protocol):
    """Full-text (BM25) search over stored texts, keyed by the id of the record.

    Storage supplies it (LanceDB's full-text index); the query engines only rank with it, so
    they stay free of I/O and a test can hand in any object with this method.
    """

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (id, score) pairs, best first."""
        ...


# --- input ---------------------------------------------------------------------------------------


@dataclass
class QueryData:
    """The index as the query engines see it. Frames follow :mod:`graphrag_assets.core.schemas`."""

    entities: pl.DataFrame = field(default_factory=lambda: empty_frame(ENTITIES))
    relationships: pl.DataFrame = field(default_factory=lambda: empty_frame(RELATIONSHIPS))
    communities: pl.DataFrame = field(default_factory=lambda: empty_frame(COMMUNITIES))
    community_reports: pl.DataFrame = field(default_factory=lambda: empty_frame(COMMUNITY_REPORTS))
    text_units: pl.DataFrame = field(default_factory=lambda: empty_frame(TEXT_UNITS))
    covariates: pl.DataFrame = field(default_factory=lambda: empty_frame(COVARIATES))
    documents: pl.DataFrame = field(default_factory=lambda: empty_frame(DOCUMENTS))
    entity_description: VectorIndex = field(default_factory=empty_index)  # ids: entity ids
    text_unit_text: VectorIndex = field(default_factory=empty_index)  # ids: text unit ids
    community_full_content: VectorIndex = field(default_factory=empty_index)  # ids: report ids
    text_unit_lexical: LexicalIndex | None = None  # ids: text unit ids; None: the index has no full-text index
    # Structures derived from the frames above (the local-ranking graph), built on first use and
    # reused by every query in the process; not copied by dataclasses.replace.
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)


# --- output --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextRecord:
    """One row put into a context: its id, its dense id, and how answers cite it."""

    id: str
    human_readable_id: int | None
    citation: str  # the value of the table's id column: a human_readable_id, or short_id for sources
    title: str  # report title, entity name, "SOURCE -> TARGET", claim type, or document title


@dataclass
class ContextRecords:
    """The records a context was built from, by kind, in the order they appear in it."""

    reports: list[ContextRecord] = field(default_factory=list)
    entities: list[ContextRecord] = field(default_factory=list)
    relationships: list[ContextRecord] = field(default_factory=list)
    claims: list[ContextRecord] = field(default_factory=list)
    sources: list[ContextRecord] = field(default_factory=list)

    KINDS = ("reports", "entities", "relationships", "claims", "sources")

    def merge(self, other: ContextRecords) -> None:
        """Add ``other``'s records that are not already here (first appearance keeps its place)."""
        for kind in self.KINDS:
            mine: list[ContextRecord] = getattr(self, kind)
            seen = {r.id for r in mine}
            for record in getattr(other, kind):
                if record.id not in seen:
                    seen.add(record.id)
                    mine.append(record)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {kind: [asdict(r) for r in getattr(self, kind)] for kind in self.KINDS}

    def ids(self, kind: str) -> list[str]:
        return [r.id for r in getattr(self, kind)]

    def citations(self, kind: str) -> list[str]:
        return [r.citation for r in getattr(self, kind)]


@dataclass
class QueryUsage:
    """Model usage of one query. Tokens come from the server; for streamed answers they are estimated."""

    chat_calls: int = 0
    cached_calls: int = 0
    embedding_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    calls_by_purpose: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3)}


@dataclass
class QueryResult:
    answer: str
    method: str
    context_records: ContextRecords
    context_text: str
    usage: QueryUsage
    llm_used: bool
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # method-specific, JSON-serializable

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "method": self.method,
            "llm_used": self.llm_used,
            "context_records": self.context_records.to_dict(),
            "context_text": self.context_text,
            "usage": self.usage.to_dict(),
            "warnings": list(self.warnings),
            "details": self.details,
        }


NO_LLM_NOTICE = "No LLM was used to answer this question (no chat model is configured)."


# --- model calls ---------------------------------------------------------------------------------


class ModelCalls:
    """The model calls of one query, counted into ``usage``.

    Intermediate calls (map, rate, primer, follow-ups) go through :meth:`chat`; the final answer
    goes through :meth:`answer`, which streams to ``on_token`` when one is given (token counts of a
    streamed answer are estimated with the tokenizer, since the stream reports none) and adds the
    asker's ``instructions`` (a system prompt) to its system message.
    """

    def __init__(
        self,
        chat_model: ChatModel | None,
        embedder: EmbeddingModel | None,
        *,
        on_token: TokenCallback | None = None,
        count: TokenCounter | None = None,
        instructions: str | None = None,
    ):
        self.chat_model = chat_model
        self.instructions = instructions
        self.embedder = embedder
        self.on_token = on_token
        self.count = count or token_counter()
        self.usage = QueryUsage()
        self._started = time.perf_counter()

    @property
    def llm_available(self) -> bool:
        return self.chat_model is not None

    def finish(self) -> QueryUsage:
        """Stamp the wall time since this object was created and return the usage."""
        self.usage.seconds = time.perf_counter() - self._started
        return self.usage

    async def embed(self, text: str, purpose: str) -> list[float]:
        if self.embedder is None:
            raise UserError(
                "this search needs an embedding model, and none is configured; set llm.embeddings in graphrag.yaml."
            )
        self.usage.embedding_calls += 1
        vectors = await self.embedder.embed([text], purpose=purpose)
        return [float(x) for x in vectors[0]]

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        json_mode: bool = False,
        use_cache: bool = False,
        prompt_version: str = "",
    ) -> str:
        model = self._require_model()
        options = ChatOptions(json_mode=json_mode, prompt_version=prompt_version, use_cache=use_cache)
        result = await model.chat(messages, purpose=purpose, options=options)
        self._count_call(purpose, cached=result.cached)
        self.usage.prompt_tokens += result.prompt_tokens
        self.usage.completion_tokens += result.completion_tokens
        return result.text

    async def answer(self, messages: Sequence[Message], *, purpose: str, prompt_version: str = "") -> str:
        """The final answer: streamed to ``on_token`` when set, never cached."""
        messages = with_instructions(messages, self.instructions)
        if self.on_token is None:
            return await self.chat(messages, purpose=purpose, prompt_version=prompt_version)
        model = self._require_model()
        parts: list[str] = []
        async for delta in model.stream(messages, purpose=purpose):
            parts.append(delta)
            self.on_token(delta)
        text = "".join(parts)
        self._count_call(purpose, cached=False)
        self.usage.prompt_tokens += sum(self.count(m["content"]) for m in messages)
        self.usage.completion_tokens += self.count(text)
        return text

    def _require_model(self) -> ChatModel:
        if self.chat_model is None:
            raise RuntimeError("a chat call was attempted in no-LLM mode")
        return self.chat_model

    def _count_call(self, purpose: str, *, cached: bool) -> None:
        self.usage.chat_calls += 1
        self.usage.cached_calls += int(cached)
        self.usage.calls_by_purpose[purpose] = self.usage.calls_by_purpose.get(purpose, 0) + 1


def with_instructions(messages: Sequence[Message], instructions: str | None) -> list[Message]:
    """``messages`` with ``instructions`` appended to the first system message (one is added in
    front when there is none). One system message, not two: several chat templates (Llama,
    Mistral, Gemma servers) accept a system message only in the first position."""
    result: list[Message] = [{"role": m["role"], "content": m["content"]} for m in messages]
    extra = (instructions or "").strip()
    if not extra:
        return result
    for message in result:
        if message["role"] == "system":
            message["content"] = f"{message['content'].rstrip()}\n\n{extra}"
            return result
    return [{"role": "system", "content": extra}, *result]


# --- prompts -------------------------------------------------------------------------------------

# Placeholders each query prompt must contain (checked when a user's replacement is loaded).
QUERY_PROMPT_PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "local_search": ("context_data",),
    "basic_search": ("context_data",),
    "global_map": ("context_data",),
    "global_reduce": ("report_data",),
    "global_rate": ("query", "report"),
    "drift_hyde": ("query", "template"),
    "drift_primer": ("query", "community_reports"),
    "drift_local": ("context_data", "global_query"),
    "drift_reduce": ("context_data",),
}

PromptOverrides = Mapping[str, PromptTemplate]


def query_prompt(name: str, overrides: PromptOverrides | None = None) -> PromptTemplate:
    """The prompt ``name``: the caller's template when given, else the built-in one."""
    if overrides and name in overrides:
        return overrides[name]
    return load_prompt(name, required=QUERY_PROMPT_PLACEHOLDERS[name])
