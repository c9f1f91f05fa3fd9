"""What a search is asked to do: one object for every engine.

The four engines used to take the question, the index, two models, the settings and up to ten
keyword options each, and every caller (CLI, Dagster query job, benchmarks, the MS-parity runner)
spelled them out again. A :class:`SearchRequest` holds all of it; :class:`QueryOptions` is the
part a user chooses per question (the CLI flags, the query job's config), so it can be built
once at the edge and passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.llm.reranker import Reranker
from graphrag_assets.llm.types import ChatModel, EmbeddingModel
from graphrag_assets.query.model_calls import ModelCalls, TokenCallback, TokenCounter
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.query_prompts import PromptOverrides
from graphrag_assets.query.registry import METHODS, query_method


@dataclass(frozen=True)
class QueryOptions:
    """The per-question choices; ``None`` means "as in the settings".

    - ``community_level``: local/DRIFT use communities and reports at levels ≤ it (default: all);
      global uses it as its level (default ``query.global.community_level``).
    - ``dynamic_selection`` / ``roll_up``: global search only (see :mod:`.global_search`).
    - ``conversation_history``: previous ``{"role", "content"}`` messages; local search only.
    - ``context_only``: retrieve the context and its records without writing an answer (no chat
      call; see :mod:`.retrieval`).
    - ``system_prompt``: the asker's own instructions, added to the system message of the final
      answer's call only (tone, language, format); intermediate calls are left as they are.
    - ``budget``: lazy search only: how many chunks its relevance tests may read.
    """

    method: str = "global"
    community_level: int | None = None
    dynamic_selection: bool | None = None
    response_type: str | None = None
    conversation_history: Sequence[Mapping[str, str]] = ()
    roll_up: bool = True
    context_only: bool = False
    system_prompt: str | None = None
    budget: int | None = None  # lazy search: chunks tested (default query.methods.lazy.budget)

    def validate(self) -> None:
        """Refuse requests no engine can serve, with one sentence each."""
        method = query_method(self.method)
        if self.community_level is not None and self.community_level < 0:
            raise UserError(f"community level must be 0 or more, not {self.community_level}.")
        if self.budget is not None and (self.budget < 1 or self.method != "lazy"):
            raise UserError(
                f"--budget {self.budget}: a budget is a positive number of chunks, used by --method lazy only."
            )
        if self.conversation_history and not method.uses_conversation_history:
            users = [m.name for m in METHODS if m.uses_conversation_history]
            searches = " and ".join(f"{name} search" for name in users)
            raise UserError(f"a conversation history is only used by {searches}; drop it or use --method {users[0]}.")


@dataclass(frozen=True)
class SearchRequest:
    """A question, the index to answer it from, the models, the settings and the callbacks.

    ``chat_model=None`` asks for an answer without a language model (each engine says how);
    ``prompts`` holds the user's replacement prompts by name (see ``engine.load_query_prompts``);
    ``on_token`` receives the final answer's text as it streams; ``count`` counts tokens for the
    context budgets (default: cl100k_base).
    """

    question: str
    data: QueryData
    settings: QuerySettings = field(default_factory=QuerySettings)
    chat_model: ChatModel | None = None
    embedder: EmbeddingModel | None = None
    options: QueryOptions = field(default_factory=QueryOptions)
    prompts: PromptOverrides = field(default_factory=dict)
    on_token: TokenCallback | None = None
    count: TokenCounter | None = None
    reranker: Reranker | None = None  # llm.reranker: reorders basic search's hits

    @property
    def response_type(self) -> str:
        return self.options.response_type or self.settings.response_type

    def model_calls(self) -> ModelCalls:
        """A fresh usage-counting wrapper around this request's models (one per search)."""
        return ModelCalls(
            self.chat_model,
            self.embedder,
            on_token=self.on_token,
            count=self.count,
            instructions=self.options.system_prompt,
        )

    def asking(self, question: str) -> SearchRequest:
        """The same request for another question (DRIFT's follow-ups)."""
        return replace(self, question=question)

    def without_chat_model(self) -> SearchRequest:
        return replace(self, chat_model=None)
