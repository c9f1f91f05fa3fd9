"""One entry point for the four query methods, used by the CLI and the Dagster query job.

:func:`run_query` validates the request, loads the user's prompt files (if any), and dispatches
to the method's engine. With ``chat_model=None`` every method answers without an LLM (see each
engine); the result then has ``llm_used=False`` and its answer says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from graphrag_assets.core.errors import UserError
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt
from graphrag_assets.llm.types import ChatModel, EmbeddingModel
from graphrag_assets.query.basic_search import basic_search
from graphrag_assets.query.drift_search import drift_search
from graphrag_assets.query.global_search import global_search
from graphrag_assets.query.local_search import local_search
from graphrag_assets.query.types import QUERY_PROMPT_PLACEHOLDERS, QueryData, QueryResult, TokenCallback, token_counter
from graphrag_assets.core.settings import QuerySettings

METHODS: tuple[str, ...] = ("local", "global", "drift", "basic")


def load_query_prompts(overrides: Mapping[str, str | Path] | None, root: Path | None = None) -> dict[str, PromptTemplate]:
    """The user's replacement prompts, by prompt name (paths relative to ``root``), checked now."""
    prompts: dict[str, PromptTemplate] = {}
    for name, path in (overrides or {}).items():
        if name not in QUERY_PROMPT_PLACEHOLDERS:
            known = ", ".join(sorted(QUERY_PROMPT_PLACEHOLDERS))
            raise UserError(f"there is no query prompt named {name!r}; query prompts are: {known}.")
        prompts[name] = load_prompt(name, path, root, required=QUERY_PROMPT_PLACEHOLDERS[name])
    return prompts


async def run_query(
    method: str,
    question: str,
    data: QueryData,
    chat_model: ChatModel | None,
    embedder: EmbeddingModel | None,
    settings: QuerySettings,
    *,
    community_level: int | None = None,
    dynamic_selection: bool | None = None,
    roll_up: bool = True,
    response_type: str | None = None,
    conversation_history: Sequence[Mapping[str, str]] | None = None,
    on_token: TokenCallback | None = None,
    prompt_files: Mapping[str, str | Path] | None = None,
    root: Path | None = None,
    encoding: str = "cl100k_base",
) -> QueryResult:
    """Answer ``question`` with ``method`` over ``data``.

    - ``community_level``: local/DRIFT use communities and reports at levels ≤ it (default: all);
      global uses it as its level (default ``settings.global_.community_level``).
    - ``dynamic_selection`` / ``roll_up``: global search only (see :mod:`.global_search`).
    - ``conversation_history``: previous ``{"role", "content"}`` messages; local search only.
    - ``on_token``: receives the final answer's text as it streams.
    - ``prompt_files``: replacement prompt files by prompt name (e.g. ``{"local_search": "prompts/local.txt"}``).
    """
    if method not in METHODS:
        raise UserError(f"unknown query method {method!r}; choose one of: {', '.join(METHODS)}.")
    if not question or not question.strip():
        raise UserError("the question is empty; pass the question to ask as text.")
    if community_level is not None and community_level < 0:
        raise UserError(f"community level must be 0 or more, not {community_level}.")
    if embedder is None and method != "global":
        raise UserError(f"{method} search needs an embedding model to match the question; configure llm.embeddings.")
    if conversation_history and method != "local":
        raise UserError("a conversation history is only used by local search; drop it or use --method local.")
    question = question.strip()
    prompts = load_query_prompts(prompt_files, root)
    count = token_counter(encoding)
    common = {"on_token": on_token, "prompts": prompts, "count": count, "response_type": response_type}
    if method == "local":
        return await local_search(
            question, data, chat_model, embedder, settings,
            conversation_history=conversation_history, community_level=community_level, **common,
        )
    if method == "global":
        return await global_search(
            question, data, chat_model, embedder, settings,
            community_level=community_level, dynamic_selection=dynamic_selection, roll_up=roll_up, **common,
        )
    if method == "drift":
        return await drift_search(question, data, chat_model, embedder, settings, community_level=community_level, **common)
    return await basic_search(question, data, chat_model, embedder, settings, **common)
