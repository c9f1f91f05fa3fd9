"""Answering a question about a project's index (used by the CLI and by the Dagster query job).

Models follow the settings: the chat model when an endpoint is configured and the method is not
``nlp`` (otherwise answers are extractive; lazy search asks the model even then), the same
embedder the index was built with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from graphrag_assets.core.settings import Settings
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.query.engine import load_query_prompts, run_query
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.registry import query_method
from graphrag_assets.query.request import QueryOptions, SearchRequest
from graphrag_assets.query.results import QueryResult


def uses_llm(settings: Settings, method: str | None = None) -> bool:
    """Whether answers use the chat model: an endpoint is configured and the project's method is
    not ``nlp`` — or ``method`` is one made for model-free indexes (lazy search)."""
    if not settings.llm.endpoint_configured:
        return False
    return settings.resolved_method != "nlp" or (method is not None and query_method(method).model_on_offline_index)


def answer_question(
    settings: Settings, question: str, options: QueryOptions, on_token: Callable[[str], None] | None = None
) -> QueryResult:
    """The answer to ``question`` over the project's index, with what it was built from."""
    return answer_from(settings, load_query_data(settings), question, options, on_token)


def answer_from(
    settings: Settings,
    data: QueryData,
    question: str,
    options: QueryOptions,
    on_token: Callable[[str], None] | None = None,
) -> QueryResult:
    """The answer to ``question`` over ``data`` (the project's index, loaded or read on demand)."""
    with ModelSet(settings, UsageMeter()) as models:
        request = SearchRequest(
            question,
            data,
            settings.query,
            chat_model=models.chat if uses_llm(settings, options.method) else None,
            embedder=models.embedder,
            options=options,
            prompts=load_query_prompts(settings.query.prompts, settings.root),
            on_token=on_token,
            count=token_counter(settings.chunking.encoding),
            reranker=models.reranker,
        )
        return asyncio.run(run_query(request))
