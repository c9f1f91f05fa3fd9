"""Community reports: one LLM call per community, bottom-up, as the ``community_reports`` table.

Levels are processed deepest first and the communities of a level concurrently (the model
client bounds concurrency, retries and caches). The context of a level is built only after the
reports of the level below exist, so a community too large for ``max_input_length`` can use its
sub-communities' reports in place of their raw rows (:mod:`graphrag_assets.index.report_context`).

The model answers with a JSON object ``{title, summary, rating, rating_explanation, findings:
[{summary, explanation}]}`` (JSON mode is requested; the client falls back when the endpoint
rejects it). An answer that is not such an object even after local repair is asked for once
more, with the broken answer and an instruction to return the JSON only. A community whose
report still fails (or whose calls fail for good) is **left out of the frame** and listed in
:attr:`ReportsResult.failed` with the reason, so nothing downstream mistakes a placeholder for a
report; the caller decides whether that fails the run.

Citations: the prompt numbers rows locally (see ``report_context``), so the model writes e.g.
``[Data: Entities (3, 7)]``; stored reports carry the global ids instead,
``[Data: Entities (412, 1093)]``. Citations to numbers the context did not show are dropped.

Known limit: a broken answer is cached like any other, so a community that failed stays failed
on re-runs (at no cost) until its prompt changes or the cached answers are removed.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import replace as with_changes
from pathlib import Path
from typing import Any

import json_repair
import polars as pl

from graphrag_assets.core.errors import LLMError
from graphrag_assets.core.ids import stable_uuid
from graphrag_assets.core.schemas import COMMUNITY_REPORTS, empty_frame
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.report_context import (
    ContextBudget,
    ReportContext,
    ReportTables,
    Variant,
    build_report_contexts,
    build_text_report_contexts,
)
from graphrag_assets.index.report_reuse import prompt_hash
from graphrag_assets.llm.types import ChatModel, ChatOptions, JsonSchema, Message
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt

PURPOSE = "community_report"
PROMPT_NAMES: dict[str, str] = {"graph": "community_report", "text": "community_report_text"}
REQUIRED_PLACEHOLDERS = ("input_text",)

# Sent after a broken answer (with that answer) in the single re-ask.

MIN_RATING, MAX_RATING = 0.0, 10.0

_CITATION = re.compile(r"(?P<lead>\s*)\[\s*data\s*:(?P<body>[^\[\]]*)\]", re.IGNORECASE)
_CITATION_GROUP = re.compile(r"(?P<name>[A-Za-z][A-Za-z _-]*?)\s*\((?P<ids>[^()]*)\)")
_DATASETS = {
    "entities": "Entities",
    "entity": "Entities",
    "relationships": "Relationships",
    "relationship": "Relationships",
    "relations": "Relationships",
    "claims": "Claims",
    "claim": "Claims",
    "covariates": "Claims",
    "reports": "Reports",
    "report": "Reports",
    "sources": "Sources",
    "source": "Sources",
}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class ReportsResult:
    """The ``community_reports`` frame and what happened on the way."""

    frame: pl.DataFrame
    failed: list[tuple[int, str]] = field(default_factory=list)  # (community, reason), by community
    calls: int = 0  # model calls attempted, re-asks included (answers from the cache count too)
    reasks: int = 0
    level_counts: dict[int, int] = field(default_factory=dict)  # level -> reports produced


def load_report_prompt(
    variant: Variant = "graph", override: str | Path | None = None, root: Path | None = None
) -> PromptTemplate:
    """The report prompt of ``variant`` (built-in, or the user's file), checked for ``{input_text}``."""
    return load_prompt(PROMPT_NAMES[variant], override, root, required=REQUIRED_PLACEHOLDERS)


# The shape the prompt asks for, sent as response_format json_schema where the server accepts it
# (vLLM then enforces it while decoding; OpenAI's strict mode needs every key required and no extras).
_FINDING = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "explanation": {"type": "string"}},
    "required": ["summary", "explanation"],
    "additionalProperties": False,
}
REPORT_SCHEMA = JsonSchema(
    "community_report",
    {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "summary": {"type": "string"},
            "rating": {"type": "number"},
            "rating_explanation": {"type": "string"},
            "findings": {"type": "array", "items": _FINDING},
        },
        "required": ["title", "summary", "rating", "rating_explanation", "findings"],
        "additionalProperties": False,
    },
)


# --- reading the answer -------------------------------------------------------------------------


def parse_report_answer(text: str) -> dict[str, Any] | None:
    """The report in a model answer, normalized, or None when there is none.

    Strict JSON is tried first. Otherwise ``json_repair`` reads it: endpoints without JSON mode
    (and sometimes those with it) wrap the object in code fences or prose, leave trailing commas,
    use single quotes or stop mid-object, and repairing such answers locally is free where a
    re-ask costs a call. The result must have a non-empty title and summary, a numeric rating
    (clipped to 0–10) and a findings list; findings are ``{summary, explanation}`` dicts (a bare
    string becomes a finding without explanation).
    """
    if not text or not text.strip():
        return None
    try:
        value: Any = json.loads(text)
    except ValueError:
        try:
            value = json_repair.loads(text)
        except Exception:  # json_repair gives up on some inputs by raising
            return None
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict) and "title" in v), None)
    return _normalize_report(value)


def _normalize_report(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    fields = {str(k).strip().lower(): v for k, v in value.items()}
    title, summary = _text(fields.get("title")), _text(fields.get("summary"))
    rating = _rating(fields.get("rating"))
    findings = fields.get("findings")
    if not title or not summary or rating is None or not isinstance(findings, list):
        return None
    normalized: list[dict[str, str]] = []
    for finding in findings:
        if isinstance(finding, dict):
            parts = {str(k).strip().lower(): v for k, v in finding.items()}
            entry = {"summary": _text(parts.get("summary")), "explanation": _text(parts.get("explanation"))}
        elif isinstance(finding, str):
            entry = {"summary": finding.strip(), "explanation": ""}
        else:
            continue
        if entry["summary"] or entry["explanation"]:
            normalized.append(entry)
    return {
        "title": title,
        "summary": summary,
        "rating": rating,
        "rating_explanation": _text(fields.get("rating_explanation")),
        "findings": normalized,
    }


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _rating(value: Any) -> float | None:
    """A finite number (or the first number in a string such as "7/10"), clipped to 0–10."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and (match := _NUMBER.search(value)):
        number = float(match.group())
    else:
        return None
    if not math.isfinite(number):
        return None
    return min(max(number, MIN_RATING), MAX_RATING)


# --- citations and rendering --------------------------------------------------------------------


def remap_citations(text: str, citations: Mapping[str, tuple[int | str, ...]]) -> str:
    """Rewrite ``[Data: ...]`` markers from local row numbers to global ids.

    Dataset names are recognized case-insensitively, singular or plural, and written back in the
    canonical form; ``+more`` is kept; duplicates and numbers the context did not show are
    dropped, and a marker left with nothing is removed with the space before it.
    """

    def replace(match: re.Match[str]) -> str:
        groups: list[str] = []
        for group in _CITATION_GROUP.finditer(match["body"]):
            name = _DATASETS.get(group["name"].strip().lower())
            if name is None:
                continue
            table = citations.get(name, ())
            ids: list[str] = []
            more = False
            for token in group["ids"].split(","):
                token = token.strip()
                if token.lstrip("+").strip().lower() == "more":
                    more = True
                elif token.isdigit() and 1 <= int(token) <= len(table):
                    global_id = str(table[int(token) - 1])
                    if global_id not in ids:
                        ids.append(global_id)
            if ids:
                groups.append(f"{name} ({', '.join(ids + ['+more'] if more else ids)})")
        return f"{match['lead']}[Data: {'; '.join(groups)}]" if groups else ""

    return _CITATION.sub(replace, text)


def remap_report(report: Mapping[str, Any], citations: Mapping[str, tuple[int | str, ...]]) -> dict[str, Any]:
    """The report with every text field's citations rewritten to global ids."""
    return {
        "title": remap_citations(report["title"], citations),
        "summary": remap_citations(report["summary"], citations),
        "rating": report["rating"],
        "rating_explanation": remap_citations(report["rating_explanation"], citations),
        "findings": [
            {
                "summary": remap_citations(f["summary"], citations),
                "explanation": remap_citations(f["explanation"], citations),
            }
            for f in report["findings"]
        ],
    }


def render_markdown(report: Mapping[str, Any]) -> str:
    """``full_content``: ``# title``, the summary, then ``## summary`` and explanation per finding."""
    parts = [f"# {report['title']}", report["summary"]]
    for finding in report["findings"]:
        parts.append(f"## {finding['summary']}")
        parts.append(finding["explanation"])
    return "\n\n".join(part for part in parts if part)


def report_row(community: Mapping[str, Any], report: Mapping[str, Any], context: ReportContext) -> dict[str, Any]:
    """One ``community_reports`` row from the community, its remapped report and its context."""
    full_content = render_markdown(report)
    return {
        "id": stable_uuid("community_report", full_content),
        "human_readable_id": community["community"],
        "community": community["community"],
        "level": community["level"],
        "parent": community["parent"],
        "children": list(community["children"] or []),
        "title": report["title"],
        "summary": report["summary"],
        "full_content": full_content,
        "rank": float(report["rating"]),
        "rating_explanation": report["rating_explanation"],
        "findings": [dict(f) for f in report["findings"]],
        "full_content_json": json.dumps(report, indent=2, ensure_ascii=False),
        "period": community["period"],
        "size": community["size"],
        "generation": "llm",
        "context_tokens": context.tokens,
        "substituted_reports": context.substituted,
    }


# --- generation ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outcome:
    report: dict[str, Any] | None  # as parsed, with local citations
    reason: str = ""
    calls: int = 0
    reasks: int = 0


async def _report_for(model: ChatModel, template: PromptTemplate, context: ReportContext, max_length: int) -> _Outcome:
    if not context.text:
        why = "no row fits within max_input_length" if context.trimmed else "it has no rows to report on"
        return _Outcome(None, f"its context is empty: {why}")
    prompt = template.format(input_text=context.text, max_report_length=max_length)
    messages: list[Message] = [{"role": "user", "content": prompt}]
    calls = reasks = 0
    try:
        calls += 1
        options = ChatOptions(json_schema=REPORT_SCHEMA, prompt_version=template.version)
        answer = await model.chat(messages, purpose=PURPOSE, options=options)
        report = parse_report_answer(answer.text)
        if report is not None:
            return _Outcome(report, calls=calls)
        if not answer.text.strip():
            return _Outcome(None, "the model returned an empty answer", calls)
        retry: list[Message] = [
            *messages,
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": load_prompt("community_report_reask").text.strip()},
        ]
        calls += 1
        reasks += 1
        # A still-broken answer is not cached, so the next run asks again for this community
        # (the first, broken answer stays cached: it is part of this conversation).
        again = await model.chat(
            retry,
            purpose=PURPOSE,
            options=with_changes(options, cache_if=lambda text: parse_report_answer(text) is not None),
        )
        report = parse_report_answer(again.text)
        if report is not None:
            return _Outcome(report, calls=calls, reasks=reasks)
        return _Outcome(None, "the answer was not a valid report JSON object, also when asked again", calls, reasks)
    except LLMError as exc:
        return _Outcome(None, f"the model call failed: {exc}", calls, reasks)


@dataclass(frozen=True)
class ReportOptions:
    """How reports are written: from the graph or from the text units, the word limit told to
    the model, the prompt, and the context budget."""

    variant: Variant = "graph"
    max_length: int = 2000
    template: PromptTemplate | None = None
    budget: ContextBudget = field(default_factory=ContextBudget)


def report_options(settings: Settings) -> ReportOptions:
    """The report options the settings describe (the method decides graph or text context)."""
    variant = method_steps(settings.resolved_method).reports
    if variant == "extractive":
        raise ValueError("the nlp method writes extractive reports, not model reports")
    override = settings.reports.prompt if variant == "graph" else settings.reports.text_prompt
    return ReportOptions(
        variant=variant,
        max_length=settings.reports.max_length,
        template=load_report_prompt(variant, override, settings.root),
        budget=ContextBudget(settings.reports.max_input_length, settings.chunking.encoding),
    )


async def generate_reports(
    model: ChatModel,
    tables: ReportTables,
    options: ReportOptions | None = None,
    on_progress: ProgressCallback | None = None,
) -> ReportsResult:
    """Reports of every community, deepest level first (see the module docstring).

    ``on_progress`` gets ``(done, total)`` after each community. Only :class:`LLMError` is turned
    into a failed community; other exceptions propagate.
    """
    options = options or ReportOptions()
    template = options.template or load_report_prompt(options.variant)
    build = build_report_contexts if options.variant == "graph" else build_text_report_contexts
    info = {
        row["community"]: row
        for row in tables.communities.select(
            "id", "community", "level", "parent", "children", "period", "size"
        ).iter_rows(named=True)
    }
    total = len(info)
    answers: dict[int, dict[str, Any]] = {}  # community -> parsed answer (what parents' contexts use)
    rows: list[dict[str, Any]] = []
    failed: list[tuple[int, str]] = []
    level_counts: dict[int, int] = {}
    calls = reasks = done = 0

    for level in sorted({row["level"] for row in info.values()}, reverse=True):
        contexts = build(tables, answers, level, options.budget)
        order = sorted(contexts)

        async def report_with_progress(context: ReportContext) -> _Outcome:
            nonlocal done
            outcome = await _report_for(model, template, context, options.max_length)
            done += 1
            if on_progress is not None:
                on_progress(done, total)
            return outcome

        outcomes = await asyncio.gather(*(report_with_progress(contexts[c]) for c in order))
        for community, outcome in zip(order, outcomes, strict=True):
            calls += outcome.calls
            reasks += outcome.reasks
            if outcome.report is None:
                failed.append((community, outcome.reason))
                continue
            answers[community] = outcome.report
            context = contexts[community]
            row = report_row(info[community], remap_report(outcome.report, context.citations), context)
            row["community_id"] = info[community]["id"]
            row["prompt_hash"] = prompt_hash(template.version, options.max_length, context.text)
            rows.append(row)
            level_counts[level] = level_counts.get(level, 0) + 1

    frame = (
        pl.DataFrame(rows, schema=COMMUNITY_REPORTS).sort("level", "community")
        if rows
        else empty_frame(COMMUNITY_REPORTS)
    )
    return ReportsResult(frame, sorted(failed), calls, reasks, level_counts)
