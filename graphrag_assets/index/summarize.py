"""Merging the descriptions of an entity or relationship into one.

For each item the sorted set of distinct descriptions is used (so the prompt, and with it the
LLM cache key, depends only on *which* descriptions there are, and a re-run costs calls only for
items whose set changed): none gives "", one is used verbatim without a call, several are
summarized by the model.

A list too long for ``max_input_tokens`` is summarized in rounds: the descriptions that fit are
summarized, then the partial summary takes their place at the head of the rest and the
remainder is planned again, until one group is left (the same rolling approach as Microsoft
GraphRAG, reference §4.5). :func:`plan_summary_chunks` is the pure planning step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from graphrag_assets.core.settings import Settings
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.llm.batch import gather_model_calls
from graphrag_assets.llm.types import ChatModel, ChatOptions
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt

PURPOSE = "summarize_descriptions"

Key = TypeVar("Key", bound=Hashable)


def distinct_descriptions(descriptions: Sequence[str | None]) -> list[str]:
    """Sorted distinct non-blank descriptions, each stripped."""
    return sorted({d.strip() for d in descriptions if d is not None and d.strip()})


def plan_summary_chunks(
    descriptions: Sequence[str], budget: int, count_tokens: Callable[[str], int]
) -> list[list[str]]:
    """Split descriptions, in order, into consecutive groups that each fit ``budget`` tokens.

    A group always takes at least two descriptions when two are left, even if they do not fit
    together: summarizing fewer would make no progress. Only the last group can hold a single
    description; the rolling summary then merges it with the summary of what came before.
    """
    groups: list[list[str]] = []
    current: list[str] = []
    used = 0
    for description in descriptions:
        size = count_tokens(description)
        if len(current) >= 2 and used + size > budget:
            groups.append(current)
            current, used = [], 0
        current.append(description)
        used += size
    if current:
        groups.append(current)
    return groups


def item_name(key: Hashable) -> str:
    """How an item is named in the prompt: JSON of a title, or of a [source, target] pair."""
    value = list(key) if isinstance(key, tuple) else key
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class SummaryOptions:
    """The prompt, its input budget (tokens, counted with ``count_tokens``) and the word limit it states."""

    template: PromptTemplate
    max_input_tokens: int = 4000
    max_length: int = 500
    count_tokens: Callable[[str], int] = field(default_factory=token_counter)


def summary_options(settings: Settings) -> SummaryOptions:
    """The options the ``summarize`` settings describe (the user's prompt file, if set)."""
    summarize = settings.summarize
    template = load_prompt("summarize_descriptions", summarize.prompt, settings.root)
    return SummaryOptions(
        template, summarize.max_input_tokens, summarize.max_length, token_counter(settings.chunking.encoding)
    )


async def summarize_descriptions(
    model: ChatModel, name: str, descriptions: Sequence[str], options: SummaryOptions
) -> str:
    """One description for an item from its descriptions (see the module docstring)."""
    template, max_length, count_tokens = options.template, options.max_length, options.count_tokens
    current = distinct_descriptions(descriptions)
    if not current:
        return ""
    if len(current) == 1:
        return current[0]
    overhead = count_tokens(template.format(entity_name=name, description_list="[]", max_length=max_length))
    budget = max(options.max_input_tokens - overhead, 1)

    def listed_size(description: str) -> int:
        return count_tokens(json.dumps(description, ensure_ascii=False)) + 1  # quotes and comma

    while True:
        groups = plan_summary_chunks(current, budget, listed_size)
        summary = await _summarize_group(model, name, groups[0], max_length=max_length, template=template)
        if len(groups) == 1:
            return summary
        current = [summary, *(d for group in groups[1:] for d in group)]


async def summarize_all(
    model: ChatModel,
    items: Sequence[tuple[Key, Sequence[str]]],
    options: SummaryOptions,
    on_done: Callable[[], None] | None = None,
) -> dict[Key, str]:
    """Summaries of many items, computed concurrently (the model bounds concurrency).

    Keys are entity titles or (source, target) pairs. If any call fails for good, every other
    item is still finished (so its answer is cached) before an :class:`LLMError` is raised.
    ``on_done`` is called as each summary is finished, so progress counts what is done.
    """

    async def summary(key: Key, descriptions: Sequence[str]) -> str:
        text = await summarize_descriptions(model, item_name(key), descriptions, options)
        if on_done is not None:
            on_done()
        return text

    keys = [key for key, _ in items]
    outcomes = await gather_model_calls(
        (summary(key, descriptions) for key, descriptions in items), "description summaries"
    )
    return dict(zip(keys, outcomes, strict=True))


async def _summarize_group(
    model: ChatModel, name: str, group: Sequence[str], *, max_length: int, template: PromptTemplate
) -> str:
    prompt = template.format(
        entity_name=name,
        description_list=json.dumps(list(group), ensure_ascii=False),
        max_length=max_length,
    )
    result = await model.chat(
        [{"role": "user", "content": prompt}], purpose=PURPOSE, options=ChatOptions(prompt_version=template.version)
    )
    summary = result.text.strip()
    # An empty answer would erase what is known; keep the descriptions themselves instead.
    return summary or "\n".join(group)
