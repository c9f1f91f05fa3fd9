"""Answering a question about a project's index (used by the CLI and by the Dagster query job).

Models follow the settings: the chat model when an endpoint is configured and the method is not
``nlp`` (otherwise answers are extractive), the same embedder the index was built with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.core.settings import Settings


@dataclass(frozen=True)
class QueryOptions:
    method: str = "global"
    community_level: int | None = None
    dynamic_selection: bool | None = None
    response_type: str | None = None
    conversation_history: Sequence[Mapping[str, str]] | None = None


def uses_llm(settings: Settings) -> bool:
    return settings.resolved_method != "nlp" and settings.llm.endpoint_configured


def answer_question(
    settings: Settings, question: str, options: QueryOptions, on_token: Callable[[str], None] | None = None
) -> Any:
    """The :class:`~graphrag_assets.query.types.QueryResult` for ``question``."""
    from graphrag_assets.llm.factory import build_chat_model, build_embedding_model
    from graphrag_assets.query.engine import run_query
    from graphrag_assets.project.query_data import load_query_data

    data = load_query_data(settings)
    meter = UsageMeter()
    chat = build_chat_model(settings.llm, settings.database_path, meter) if uses_llm(settings) else None
    embedder = build_embedding_model(settings.llm, settings.embeddings, settings.database_path, meter)

    async def run() -> Any:
        return await run_query(
            options.method,
            question,
            data,
            chat,
            embedder,
            settings.query,
            community_level=options.community_level,
            dynamic_selection=options.dynamic_selection,
            response_type=options.response_type,
            conversation_history=options.conversation_history,
            on_token=on_token,
            prompt_files=settings.query.prompts or None,
            root=settings.root,
            encoding=settings.chunking.encoding,
        )

    try:
        return asyncio.run(run())
    finally:
        for model in (chat, embedder):
            close = getattr(model, "close", None)
            if close is not None:
                close()
