"""The model's verdicts: one JSON call per candidate group, cached by the group's content.

The prompt lists the group's entities sorted by name, each with its type and a few of its
descriptions (sorted, shortened), so the prompt — and with it the response-cache key — depends only
on *which* entities the group holds and what is known about them. A group asked before costs
nothing, whatever the answer was: a rejection ("no two are the same") is cached like a merge.

The answer names groups of list numbers that are one thing. It is read tolerantly (code fences,
prose around it, trailing commas: ``json_repair``); numbers outside the list, a group of fewer
than two entities and an entity claimed by an earlier group are ignored. An answer with no
``groups`` list is unusable: it is not cached (so the next run asks again) and merges nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import json_repair
import polars as pl

from graphrag_assets.index.resolution_frames import verdict_frame
from graphrag_assets.llm.batch import gather_model_calls
from graphrag_assets.llm.types import ChatModel, ChatOptions
from graphrag_assets.prompts.templates import PromptTemplate

PURPOSE = "resolve_entities"
METHOD = "model"
DESCRIPTIONS_PER_ENTITY = 3
DESCRIPTION_CHARS = 300


@dataclass(frozen=True)
class Member:
    title: str
    type: str
    descriptions: tuple[str, ...]


@dataclass(frozen=True)
class GroupVerdicts:
    verdicts: pl.DataFrame  # resolution_frames.VERDICTS
    asked: int  # groups whose verdict was requested (from the cache or the model)
    unusable: int  # answers that could not be read


def entity_list(members: Sequence[Member]) -> str:
    """The numbered list the prompt shows (members in the order given)."""
    lines = []
    for number, member in enumerate(members, start=1):
        shown = [
            _shorten(d)
            for d in sorted({d.strip() for d in member.descriptions if d and d.strip()})[:DESCRIPTIONS_PER_ENTITY]
        ]
        about = " | ".join(shown) if shown else "(no description)"
        lines.append(f"{number}. {member.title} [{member.type or 'unknown'}]: {about}")
    return "\n".join(lines)


def parse_groups(text: str, size: int) -> list[tuple[list[int], float, str]] | None:
    """``(member indexes from 0, confidence, reason)`` per valid group; None when unusable."""
    value = _json_object(text)
    if value is None or not isinstance(value.get("groups"), list):
        return None
    taken: set[int] = set()
    groups: list[tuple[list[int], float, str]] = []
    for group in value["groups"]:
        if not isinstance(group, Mapping):
            continue
        members = sorted(
            {n - 1 for n in map(_number, _as_list(group.get("members"))) if n is not None and 1 <= n <= size}
        )
        if len(members) < 2 or taken.intersection(members):
            continue
        taken.update(members)
        groups.append((members, _confidence(group.get("confidence")), str(group.get("reason") or "").strip()))
    return groups


async def judge_groups(
    model: ChatModel, template: PromptTemplate, groups: Sequence[Sequence[str]], members: Mapping[str, Member]
) -> GroupVerdicts:
    """Ask the model about every group (concurrently; the model bounds calls in flight).

    If a call fails for good, every other group is still finished (so its answer is cached)
    before an :class:`LLMError` is raised.
    """

    async def judge(group: Sequence[str]) -> list[tuple[str, str, str, float, str]] | None:
        listed = [members[title] for title in sorted(group)]
        prompt = template.format(entity_list=entity_list(listed))
        options = ChatOptions(
            json_mode=True,
            prompt_version=template.version,
            cache_if=lambda text: parse_groups(text, len(listed)) is not None,
        )
        result = await model.chat([{"role": "user", "content": prompt}], purpose=PURPOSE, options=options)
        parsed = parse_groups(result.text, len(listed))
        if parsed is None:
            return None
        rows = []
        for indexes, confidence, reason in parsed:
            titles = [listed[i].title for i in indexes]
            for i, a in enumerate(titles):
                for b in titles[i + 1 :]:
                    rows.append((a, b, METHOD, confidence, reason or "the model judged them the same thing"))
        return rows

    outcomes = await gather_model_calls((judge(group) for group in groups), "entity-resolution calls")
    rows = [row for outcome in outcomes if isinstance(outcome, list) for row in outcome]
    unusable = sum(1 for outcome in outcomes if outcome is None)
    return GroupVerdicts(verdict_frame(rows), asked=len(groups), unusable=unusable)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1].rstrip() + "…"


def _json_object(text: str) -> dict[str, Any] | None:
    if not text or not text.strip():
        return None
    start, end = text.find("{"), text.rfind("}")
    candidate = text[start : end + 1] if 0 <= start < end else text
    for load in (json.loads, json_repair.loads):
        try:
            value = load(candidate)
        except Exception:  # json_repair raises assorted errors on hopeless input
            continue
        if isinstance(value, dict):
            return value
    return None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _confidence(value: Any) -> float:
    """The stated confidence clamped to [0, 1]; 1.0 when missing or not a number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 1.0
    return min(1.0, max(0.0, number)) if math.isfinite(number) else 1.0
