"""DRIFT search: a global primer, then local follow-ups, then one reduce (reference §7.3).

1. **HyDE.** The model writes a hypothetical answer shaped like a community report; the template is
   the highest-ranked report (ties: lowest human_readable_id), not a random one as in Microsoft
   GraphRAG, so the same question gives the same calls. Its embedding (the question's, if the
   answer is empty) selects the ``k_followups`` most similar reports.
2. **Primer.** Those reports, in similarity order, are split into ``primer_folds`` contiguous folds
   (sizes differ by at most one, larger first); one call per fold returns
   ``{intermediate_answer, score, follow_up_queries}``.
3. **Follow-ups**, for ``n_depth`` rounds: of the unanswered follow-up queries, at most
   ``max_followups_per_depth`` are answered, those whose parent answer scored highest first (ties:
   the order they were asked in; Microsoft shuffles). Each is a local search (context built as in
   :mod:`graphrag_assets.query.local_search`, with Microsoft's DRIFT proportions: 90% text units,
   10% reports) whose prompt also sees the global question and returns
   ``{response, score, follow_up_queries}``; its follow-ups join the pool. A query already asked
   (case-insensitive) is not asked again. Depth 0 means primer and reduce only.
4. **Reduce.** Every non-empty intermediate answer (primer folds first, then follow-ups in the order
   they were answered) goes to the reduce prompt, which writes the final answer.

Only the final answer streams. No DRIFT call is cached: each depends on the previous answers.
Without a chat model DRIFT falls back to the no-LLM local search and says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import polars as pl

from graphrag_assets.core.settings import LocalSearchSettings, QuerySettings
from graphrag_assets.llm.types import Message
from graphrag_assets.query.context_records import report_records
from graphrag_assets.query.context_tables import render_table
from graphrag_assets.query.json_answers import DriftAnswer, parse_drift_answer
from graphrag_assets.query.local_search import build_local_context, local_search
from graphrag_assets.query.model_calls import ModelCalls
from graphrag_assets.query.query_prompts import query_prompt
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.results import ContextRecords, QueryResult
from graphrag_assets.query.retrieval import context_result

PURPOSE_HYDE = "query_drift_hyde"
PURPOSE_PRIMER = "query_drift_primer"
PURPOSE_LOCAL = "query_drift_local"
PURPOSE_REDUCE = "query_drift_reduce"
CONTEXT_WARNING = (
    "DRIFT's primer reports are chosen here by the question itself (its hypothetical answer needs the model)"
)
FOLLOW_UPS_PER_ANSWER = 5  # how many follow-up queries each primer / follow-up answer is asked for
LOCAL_TEXT_UNIT_PROP = 0.9
LOCAL_COMMUNITY_PROP = 0.1

NO_LLM_FALLBACK = "DRIFT search needs an LLM; this is the answer of local search without one."
NO_DATA_ANSWER = "I cannot answer this question from the indexed data: the community reports gave no usable answer."

T = TypeVar("T")


def template_report(reports: pl.DataFrame) -> dict[str, Any] | None:
    """The report used as the shape of the hypothetical answer: highest rank, then lowest id."""
    if reports.is_empty():
        return None
    return reports.sort(["rank", "human_readable_id", "id"], descending=[True, False, False], nulls_last=True).row(
        0, named=True
    )


def split_folds(items: Sequence[T], folds: int) -> list[list[T]]:
    """Contiguous folds whose sizes differ by at most one (larger first); empty folds are omitted."""
    size, extra = divmod(len(items), folds)
    result, start = [], 0
    for i in range(folds):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            result.append(list(items[start:end]))
        start = end
    return result


@dataclass
class DriftAction:
    """A query to answer: the primer (depth 0) or a follow-up (depth ≥ 1)."""

    query: str
    depth: int
    parent_score: int
    order: int  # when it was asked, for a stable tie-break
    answer: str | None = None
    score: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "depth": self.depth,
            "parent_score": self.parent_score,
            "answered": self.answer is not None,
            "score": self.score,
        }


class FollowUpPool:
    """Follow-up queries waiting for an answer, picked by their parent's score."""

    def __init__(self, question: str):
        self.actions: list[DriftAction] = []
        self._asked = {question.strip().casefold()}

    def add(self, queries: Sequence[str], depth: int, parent_score: int) -> None:
        for query in queries:
            key = query.strip().casefold()
            if key and key not in self._asked:
                self._asked.add(key)
                self.actions.append(DriftAction(query.strip(), depth, parent_score, len(self.actions)))

    def take(self, limit: int) -> list[DriftAction]:
        pending = [a for a in self.actions if a.answer is None]
        return sorted(pending, key=lambda a: (-a.parent_score, a.order))[:limit]


def drift_local_settings(settings: QuerySettings) -> LocalSearchSettings:
    return settings.local.model_copy(
        update={
            "text_unit_prop": LOCAL_TEXT_UNIT_PROP,
            "community_prop": LOCAL_COMMUNITY_PROP,
            "conversation_history_max_turns": 0,
        }
    )


def reduce_context(answers: Sequence[tuple[str, str, int]]) -> str:
    """The intermediate answers as the reduce prompt sees them: (query, answer, score) each."""
    return "\n\n".join(
        f"----Answer {i}----\nQuestion: {query}\nScore: {score}\n{answer}"
        for i, (query, answer, score) in enumerate(answers, start=1)
    )


@dataclass
class Primer:
    """What the primer step produced: the reports it read and the first answers and follow-ups."""

    hypothetical_answer: str
    template: dict[str, Any] | None
    reports: list[dict[str, Any]]  # the chosen reports, in similarity order
    folds: list[list[dict[str, Any]]]
    fold_tables: list[str]
    scores: list[int]

    def details(self) -> dict[str, Any]:
        return {
            "hypothetical_answer": self.hypothetical_answer,
            "template_report": None if self.template is None else str(self.template["human_readable_id"]),
            "primer": {
                "reports": [str(r["human_readable_id"]) for r in self.reports],
                "folds": [[str(r["human_readable_id"]) for r in fold] for fold in self.folds],
                "scores": self.scores,
            },
            "primer_context": "\n\n".join(self.fold_tables),
        }


@dataclass
class DriftState:
    """What the search has gathered so far: answers to reduce, queries to follow, records cited."""

    pool: FollowUpPool
    records: ContextRecords
    intermediate: list[tuple[str, str, int]] = field(default_factory=list)  # (query, answer, score)
    warnings: list[str] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)

    def add_answer(self, query: str, parsed: DriftAnswer, depth: int) -> None:
        if parsed.answer:
            self.intermediate.append((query, parsed.answer, parsed.score))
        self.pool.add(parsed.follow_up_queries, depth=depth, parent_score=parsed.score)


async def drift_search(request: SearchRequest) -> QueryResult:
    """Answer the question with DRIFT (see the module docstring)."""
    if request.chat_model is None:
        fallback = await local_search(request)
        fallback.method = "drift"
        fallback.answer = f"{NO_LLM_FALLBACK}\n\n{fallback.answer}"
        fallback.warnings.insert(0, NO_LLM_FALLBACK)
        return fallback

    calls = request.model_calls()
    reports = request.data.community_reports
    if request.options.community_level is not None:
        reports = reports.filter(pl.col("level") <= request.options.community_level)
    state = DriftState(FollowUpPool(request.question), ContextRecords())
    primer = await run_primer(request, reports, calls, state)
    state.records.reports = report_records(pl.DataFrame(primer.reports, schema=reports.schema))
    await follow_up_rounds(request, calls, state)
    answer, context_text = await reduce_answers(request, calls, state.intermediate)
    details = {
        "community_level": request.options.community_level,
        **primer.details(),
        "rounds": state.rounds,
        "actions": [a.to_dict() for a in state.pool.actions],
        "intermediate_answers": len(state.intermediate),
    }
    return QueryResult(
        answer=answer,
        method="drift",
        context_records=state.records,
        context_text=context_text,
        usage=calls.finish(),
        llm_used=True,
        warnings=state.warnings,
        details=details,
    )


async def run_primer(request: SearchRequest, reports: pl.DataFrame, calls: ModelCalls, state: DriftState) -> Primer:
    """Steps 1 and 2: a hypothetical report-shaped answer selects the reports; one call per fold."""
    question, options = request.question, request.settings.drift
    hyde_prompt = query_prompt("drift_hyde", request.prompts)
    template = template_report(reports)
    hypothetical = ""
    if template is not None:
        hypothetical = await calls.chat(
            [{"role": "user", "content": hyde_prompt.format(query=question, template=template["full_content"] or "")}],
            purpose=PURPOSE_HYDE,
            prompt_version=hyde_prompt.version,
        )
    vector = await calls.embed(hypothetical.strip() or question, PURPOSE_HYDE)
    hits = request.data.community_full_content.search(vector, options.k_followups * 2)
    by_id = {r["id"]: r for r in reports.iter_rows(named=True)}
    chosen = [by_id[i] for i, _ in hits if i in by_id][: options.k_followups]

    primer_prompt = query_prompt("drift_primer", request.prompts)
    folds = split_folds(chosen, options.primer_folds)
    fold_tables = [
        render_table(
            "Reports",
            ("id", "title", "content"),
            [(r["human_readable_id"], r["title"], r["full_content"]) for r in fold],
        )
        for fold in folds
    ]
    primer_texts = await asyncio.gather(
        *(
            calls.chat(
                [
                    {
                        "role": "user",
                        "content": primer_prompt.format(
                            query=question, community_reports=table, followups=FOLLOW_UPS_PER_ANSWER
                        ),
                    }
                ],
                purpose=PURPOSE_PRIMER,
                json_mode=True,
                prompt_version=primer_prompt.version,
            )
            for table in fold_tables
        )
    )
    scores: list[int] = []
    for index, text in enumerate(primer_texts, start=1):
        parsed = _read(text, "intermediate_answer", f"primer fold {index}", state.warnings)
        scores.append(parsed.score)
        state.add_answer(question, parsed, depth=1)
    return Primer(hypothetical, template, chosen, folds, fold_tables, scores)


async def follow_up_rounds(request: SearchRequest, calls: ModelCalls, state: DriftState) -> None:
    """Step 3: up to ``n_depth`` rounds of follow-up queries, each answered by a local search."""
    options = request.settings.drift
    local_settings = drift_local_settings(request.settings)
    local_prompt = query_prompt("drift_local", request.prompts)

    async def follow_up(action: DriftAction) -> tuple[DriftAction, DriftAnswer, ContextRecords]:
        context = await build_local_context(request.asking(action.query), calls, local_settings, PURPOSE_LOCAL)
        system = local_prompt.format(
            context_data=context.text,
            global_query=request.question,
            followups=FOLLOW_UPS_PER_ANSWER,
            response_type=request.response_type,
        )
        text = await calls.chat(
            [{"role": "system", "content": system}, {"role": "user", "content": action.query}],
            purpose=PURPOSE_LOCAL,
            json_mode=True,
            prompt_version=local_prompt.version,
        )
        return action, _read(text, "response", f"follow-up {action.query!r}", state.warnings), context.records

    for depth in range(1, options.n_depth + 1):
        picked = state.pool.take(options.max_followups_per_depth)
        if not picked:
            break
        state.rounds.append({"depth": depth, "queries": [a.query for a in picked]})
        for action, parsed, used in await asyncio.gather(*(follow_up(a) for a in picked)):
            action.answer, action.score = parsed.answer, parsed.score
            state.records.merge(used)
            state.add_answer(action.query, parsed, depth=depth + 1)


async def reduce_answers(
    request: SearchRequest, calls: ModelCalls, intermediate: Sequence[tuple[str, str, int]]
) -> tuple[str, str]:
    """Step 4: the final answer from every intermediate answer, and the context it was given."""
    context_text = reduce_context(intermediate)
    if not intermediate:
        if request.on_token is not None:
            request.on_token(NO_DATA_ANSWER)
        return NO_DATA_ANSWER, context_text
    reduce_prompt = query_prompt("drift_reduce", request.prompts)
    messages: list[Message] = [
        {
            "role": "system",
            "content": reduce_prompt.format(context_data=context_text, response_type=request.response_type),
        },
        {"role": "user", "content": request.question},
    ]
    return await calls.answer(messages, purpose=PURPOSE_REDUCE, prompt_version=reduce_prompt.version), context_text


def _read(text: str, answer_key: str, what: str, warnings: list[str]) -> DriftAnswer:
    """A parsed primer / follow-up answer; unreadable JSON keeps the raw text, scored 0, no follow-ups."""
    parsed = parse_drift_answer(text, answer_key)
    if parsed is None:
        warnings.append(f"the answer of {what} was not the expected JSON; its text was kept with score 0")
        return DriftAnswer(text.strip(), 0, ())
    return parsed


async def drift_context(request: SearchRequest) -> QueryResult:
    """The reports DRIFT's primer would read, chosen by the question itself (see :mod:`.retrieval`)."""
    reports = request.data.community_reports
    if request.options.community_level is not None:
        reports = reports.filter(pl.col("level") <= request.options.community_level)
    calls = request.without_chat_model().model_calls()
    k = request.settings.drift.k_followups
    vector = await calls.embed(request.question, PURPOSE_HYDE)
    by_id = {r["id"]: r for r in reports.iter_rows(named=True)}
    chosen = [by_id[i] for i, _ in request.data.community_full_content.search(vector, k * 2) if i in by_id][:k]
    table = render_table(
        "Reports", ("id", "title", "content"), [(r["human_readable_id"], r["title"], r["full_content"]) for r in chosen]
    )
    records = ContextRecords(reports=report_records(pl.DataFrame(chosen, schema=reports.schema)))
    details = {
        "community_level": request.options.community_level,
        "primer_reports": [r.citation for r in records.reports],
    }
    return context_result("drift", records, table if chosen else "", calls, details, [CONTEXT_WARNING])
