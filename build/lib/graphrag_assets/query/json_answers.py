"""Tolerant parsing of the JSON answers of the map, rate, primer and follow-up calls.

Weaker models wrap JSON in code fences, add prose around it, leave a trailing comma, quote
numbers or stop before the closing brace. Users of Microsoft GraphRAG hit "all workflows
succeeded but cannot answer" when such answers were thrown away (reference §12.7), so we
take the outermost object from the text and repair it with ``json_repair`` before giving up.
Each parser returns ``None`` when no usable object is found; the caller decides what that means
and reports it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import json_repair

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_json_object(text: str | None) -> dict[str, Any] | None:
    """The JSON object in ``text`` (fenced, surrounded by prose, or slightly broken), else None."""
    if not text or not text.strip():
        return None
    candidates: list[str] = []
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1))
    start, end = text.find("{"), text.rfind("}")
    if start != -1:
        candidates.append(text[start : end + 1] if end > start else text[start:])
    candidates.append(text)
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    for candidate in candidates:
        try:
            value = json_repair.loads(candidate)
        except Exception:  # json_repair raises assorted errors on hopeless input
            continue
        if isinstance(value, dict) and value:
            return value
    return None


def to_int(value: Any, low: int, high: int) -> int | None:
    """An integer score clamped to [low, high]; numbers written as text are accepted."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = re.search(r"-?\d+(?:\.\d+)?", value)
        if not match:
            return None
        value = float(match.group())
    if isinstance(value, (int, float)) and value == value:
        return max(low, min(high, int(round(value))))
    return None


@dataclass(frozen=True)
class MapPoint:
    description: str
    score: int  # 0-100


def parse_map_points(text: str | None) -> list[MapPoint] | None:
    """Points of a global-search map answer ``{"points": [{"description", "score"}]}``.

    None when the answer holds no ``points`` list. A point without a usable score scores 0 (so it
    is dropped before the reduce step); a point without a description is skipped.
    """
    obj = parse_json_object(text)
    if obj is None or not isinstance(obj.get("points"), list):
        return None
    points: list[MapPoint] = []
    for item in obj["points"]:
        if not isinstance(item, dict):
            continue
        description = item.get("description")
        if not isinstance(description, str) or not description.strip():
            continue
        score = to_int(item.get("score"), 0, 100)
        points.append(MapPoint(description.strip(), 0 if score is None else score))
    return points


_RATING = re.compile(r'"?rating"?\s*[:=]\s*"?(\d+)')


def parse_rating(text: str | None) -> int | None:
    """The 0-5 relevance rating of a dynamic-selection answer ``{"reason", "rating"}``, else None."""
    obj = parse_json_object(text)
    if obj is not None and "rating" in obj:
        return to_int(obj["rating"], 0, 5)
    match = _RATING.search(text or "")
    return to_int(match.group(1), 0, 5) if match else None


@dataclass(frozen=True)
class DriftAnswer:
    answer: str
    score: int  # 0-100
    follow_up_queries: tuple[str, ...]


def parse_drift_answer(text: str | None, answer_key: str) -> DriftAnswer | None:
    """A DRIFT primer (``intermediate_answer``) or follow-up (``response``) answer, else None.

    The score defaults to 0 and the follow-ups to none when missing; follow-ups are stripped and
    de-duplicated in order.
    """
    obj = parse_json_object(text)
    if obj is None:
        return None
    answer = obj.get(answer_key)
    if isinstance(answer, list):
        answer = "\n".join(str(a) for a in answer)
    if not isinstance(answer, str):
        return None
    score = to_int(obj.get("score"), 0, 100)
    raw = obj.get("follow_up_queries")
    follow_ups: list[str] = []
    if isinstance(raw, list):
        for query in raw:
            if isinstance(query, str) and query.strip() and query.strip() not in follow_ups:
                follow_ups.append(query.strip())
    return DriftAnswer(answer.strip(), 0 if score is None else score, tuple(follow_ups))
