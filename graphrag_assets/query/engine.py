"""One entry point for the query methods, used by the CLI, the Dagster query job, the server and
the benchmarks.

:func:`run_query` validates a :class:`~graphrag_assets.query.request.SearchRequest` and hands it
to the method's engine (see :mod:`.registry`). With ``chat_model=None`` every method answers
without an LLM (see each engine); the result then has ``llm_used=False`` and its answer says so.
With ``options.context_only`` it returns the context without an answer (:mod:`.retrieval`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt
from graphrag_assets.query.citations import answer_citations
from graphrag_assets.query.evidence import assess
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.query_prompts import QUERY_PROMPT_PLACEHOLDERS
from graphrag_assets.query.registry import check_method_settings, query_method
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.results import QueryResult


def load_query_prompts(
    overrides: Mapping[str, str | Path] | None, root: Path | None = None
) -> dict[str, PromptTemplate]:
    """The user's replacement prompts, by prompt name (paths relative to ``root``), checked now."""
    prompts: dict[str, PromptTemplate] = {}
    for name, path in (overrides or {}).items():
        if name not in QUERY_PROMPT_PLACEHOLDERS:
            known = ", ".join(sorted(QUERY_PROMPT_PLACEHOLDERS))
            raise UserError(f"there is no query prompt named {name!r}; query prompts are: {known}.")
        prompts[name] = load_prompt(name, path, root, required=QUERY_PROMPT_PLACEHOLDERS[name])
    return prompts


def _check_community_level(level: int | None, data: QueryData) -> None:
    """Refuse a requested level the index does not have: every engine would quietly use fewer reports."""
    if level is None:
        return
    levels = sorted(set(data.communities["level"].drop_nulls().to_list()))
    if not levels or level <= levels[-1]:
        return
    named = ", ".join(str(n) for n in levels[:-1]) + (" and " if len(levels) > 1 else "") + str(levels[-1])
    raise UserError(
        f"community level {level} is not in this index, whose communities have level{'s' if len(levels) > 1 else ''} "
        f"{named}; pass --community-level {levels[-1]} or lower."
    )


async def run_query(request: SearchRequest) -> QueryResult:
    """Answer ``request.question`` with ``request.options.method`` over ``request.data``."""
    options = request.options
    options.validate()
    if not request.question or not request.question.strip():
        raise UserError("the question is empty; pass the question to ask as text.")
    limit = request.settings.max_question_tokens
    # A token covers at least one byte, so a question of at most ``limit`` bytes fits without
    # counting: a short question does not load the tokenizer just for this check.
    size = len(request.question.encode("utf-8"))
    if size > limit:
        size = (request.count or token_counter())(request.question)
    if size > limit:
        raise UserError(
            f"the question is {size:,} tokens long and the limit is {limit:,} (query.max_question_tokens); "
            "shorten it, or raise the limit in graphrag.yaml."
        )
    _check_community_level(options.community_level, request.data)
    method = query_method(options.method)
    if request.embedder is None and method.needs_embedder:
        raise UserError(
            f"{options.method} search needs an embedding model to match the question; configure llm.embeddings."
        )
    check_method_settings(request.settings)
    engine = method.context_function() if options.context_only else method.search_function()
    result = await engine(request.asking(request.question.strip()))
    result.citations = answer_citations(result.answer, request.data, result.context_records)
    evidence = assess(request.question, result.context_text, options.method)
    result.details["evidence"] = evidence.as_dict()
    if evidence.weak:
        result.warnings.append(evidence.warning())
    return result
