"""Lazy search: spend a budget of cheap relevance tests on chunks, found through the communities.

The idea of Microsoft Research's LazyGraphRAG (never released in the open ``graphrag`` package):
index with no model (the ``nlp``/``fast`` index already is that index), and spend the model only
per question. Here:

1. The question is embedded (and, with a chat model, split into up to three subqueries, embedded
   too); each text unit's relevance is its best similarity to any of them.
2. Communities are explored best first, from the top level down: a community's priority is the
   best similarity of its text units. From each popped community its best untested chunks
   (``per_community``) are tested by the chat model in batches (``batch_size`` chunks per call,
   one budget unit per chunk). A community that yields a relevant chunk opens its children; one
   that yields none is not explored further.
3. It stops when ``budget`` chunks were tested or nothing is left; the answer is written from the
   relevant chunks (most similar first, while they fit the context budget) with the
   ``basic_search`` prompt, citing them as sources. The budget, the tests spent and the
   communities visited are in the result's details.

Works on any index: one without communities is explored as a single group of all its text
units. Without a chat model the "test" is similarity at least ``offline_share`` of the best one,
and the answer is extractive, as for the other methods.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from graphrag_assets.core.ids import short_id
from graphrag_assets.prompts.templates import load_prompt
from graphrag_assets.query.basic_search import answer_from_sources, rank_text_units
from graphrag_assets.query.context_records import SOURCE_COLUMNS, source_records, source_rows
from graphrag_assets.query.context_tables import fill_table
from graphrag_assets.query.model_calls import ModelCalls
from graphrag_assets.query.registry import query_method
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.results import ContextRecords, QueryResult
from graphrag_assets.query.retrieval import context_result

PURPOSE = "query_lazy"
TEST_PURPOSE = "query_lazy_test"
SUBQUERY_PURPOSE = "query_lazy_subqueries"


class LazySearchSettings(BaseModel):
    """``query.methods.lazy`` in graphrag.yaml."""

    model_config = ConfigDict(extra="forbid")

    budget: int = Field(100, ge=1)  # chunks tested per question (``--budget``)
    batch_size: int = Field(8, ge=1, le=50)  # chunks per relevance-test call
    per_community: int = Field(8, ge=1)  # best untested chunks tested from each community visited
    candidates: int = Field(400, ge=1)  # text units ranked by similarity (the others count as unrelated)
    subqueries: bool = True  # with a chat model, split the question first (one call)
    max_context_tokens: int = Field(8_000, ge=100)  # of relevant chunks given to the answer
    offline_share: float = Field(0.8, gt=0, le=1)  # without a model: relevant = similarity ≥ this × the best


@dataclass(order=True)
class _Candidate:
    priority: float  # negative similarity: heapq pops the smallest
    order: int  # ties: the community listed first
    community: int = field(compare=False)


@dataclass
class Exploration:
    """What the exploration did: chunks tested and found relevant, communities visited."""

    tested: list[str] = field(default_factory=list)
    relevant: list[str] = field(default_factory=list)
    communities: list[int] = field(default_factory=list)
    unreadable_tests: int = 0


def lazy_options(request: SearchRequest) -> LazySearchSettings:
    options: LazySearchSettings = query_method("lazy").options(request.settings)
    if request.options.budget is not None:
        options = options.model_copy(update={"budget": request.options.budget})
    return options


async def _similarities(request: SearchRequest, calls: ModelCalls, options: LazySearchSettings) -> dict[str, float]:
    """Each candidate text unit's best similarity to the question or one of its subqueries."""
    queries = [request.question]
    if calls.llm_available and options.subqueries:
        queries += await _subqueries(request, calls)
    best: dict[str, float] = {}
    for query in queries:
        for unit_id, score in request.data.text_unit_text.search(await calls.embed(query, PURPOSE), options.candidates):
            best[unit_id] = max(score, best.get(unit_id, float("-inf")))
    return best


async def _subqueries(request: SearchRequest, calls: ModelCalls) -> list[str]:
    prompt = load_prompt("lazy_subqueries", required=("query",))
    text = await calls.chat(
        [{"role": "user", "content": prompt.format(query=request.question)}],
        purpose=SUBQUERY_PURPOSE,
        json_mode=True,
        use_cache=True,
        prompt_version=prompt.version,
    )
    found = _json_field(text, "subqueries")
    return [str(q).strip() for q in found if isinstance(q, str) and q.strip()][:3] if isinstance(found, list) else []


def _json_field(text: str, name: str) -> object:
    match = re.search(r"\{.*\}", text, re.S)
    try:
        return json.loads(match.group(0)).get(name) if match else None
    except (json.JSONDecodeError, AttributeError):
        return None


def _groups(request: SearchRequest) -> tuple[dict[int, list[str]], dict[int, list[int]], list[int]]:
    """Text units and children of each community, and the top-level communities; an index without
    communities is one group (-1) of all its text units."""
    communities = request.data.communities
    if communities.is_empty():
        return {-1: request.data.text_units["id"].to_list()}, {}, [-1]
    units = dict(zip(communities["community"].to_list(), communities["text_unit_ids"].to_list(), strict=True))
    children = dict(zip(communities["community"].to_list(), communities["children"].to_list(), strict=True))
    roots = communities.filter(pl.col("level") == communities["level"].min())["community"].to_list()
    return (
        {c: list(u or []) for c, u in units.items()},
        {c: [k for k in (ch or []) if k in units] for c, ch in children.items()},
        roots,
    )


async def explore(
    request: SearchRequest, calls: ModelCalls, options: LazySearchSettings, similarity: dict[str, float]
) -> Exploration:
    """Best-first exploration of the community hierarchy, testing chunks until the budget is spent."""
    units, children, roots = _groups(request)
    texts = dict(request.data.text_units.select("id", "text").iter_rows())
    best_overall = max(similarity.values(), default=0.0)
    done = Exploration()
    tested: set[str] = set()
    frontier: list[_Candidate] = []

    def push(community: int) -> None:
        score = max((similarity.get(u, float("-inf")) for u in units.get(community, ())), default=float("-inf"))
        if score > float("-inf"):
            heapq.heappush(frontier, _Candidate(-score, len(done.communities) + len(frontier), community))

    for root in roots:
        push(root)
    while frontier and len(done.tested) < options.budget:
        community = heapq.heappop(frontier).community
        done.communities.append(community)
        fresh = sorted(
            (u for u in units.get(community, ()) if u in similarity and u not in tested and u in texts),
            key=lambda u: -similarity[u],
        )[: min(options.per_community, options.budget - len(done.tested))]
        found = []
        for start in range(0, len(fresh), options.batch_size):
            batch = fresh[start : start + options.batch_size]
            tested.update(batch)
            done.tested.extend(batch)
            if calls.llm_available:
                found += await _test(request, calls, [(u, texts[u]) for u in batch], done)
            else:
                found += [u for u in batch if similarity[u] >= options.offline_share * best_overall]
        done.relevant.extend(found)
        if found:
            for child in children.get(community, ()):
                push(child)
    return done


async def _test(
    request: SearchRequest, calls: ModelCalls, batch: Sequence[tuple[str, str]], done: Exploration
) -> list[str]:
    """The chunks of ``batch`` the chat model says help answer the question (one call)."""
    prompt = load_prompt("lazy_relevance", required=("query", "passages"))
    passages = "\n\n".join(f"[{n}] {text}" for n, (_, text) in enumerate(batch, start=1))
    answer = await calls.chat(
        [{"role": "user", "content": prompt.format(query=request.question, passages=passages)}],
        purpose=TEST_PURPOSE,
        json_mode=True,
        use_cache=True,
        prompt_version=prompt.version,
    )
    numbers = _json_field(answer, "relevant")
    if not isinstance(numbers, list):
        done.unreadable_tests += 1
        return []
    picked = {int(n) for n in numbers if isinstance(n, int | float | str) and str(n).strip().isdigit()}
    return [unit_id for n, (unit_id, _) in enumerate(batch, start=1) if n in picked]


async def _context(request: SearchRequest, calls: ModelCalls):
    options = lazy_options(request)
    similarity = await _similarities(request, calls, options)
    done = await explore(request, calls, options, similarity)
    ranked = sorted(dict.fromkeys(done.relevant), key=lambda u: -similarity[u])
    units = rank_text_units([(u, similarity[u]) for u in ranked], request.data.text_units)
    table = fill_table(
        "Sources", SOURCE_COLUMNS, source_rows(units, calls.count), options.max_context_tokens, calls.count
    )
    records = ContextRecords(sources=source_records(units.head(table.rows_used), request.data))
    details = {
        "budget": options.budget,
        "tests_spent": len(done.tested),
        "relevant_chunks": len(ranked),
        "communities_visited": len(done.communities),
        "unreadable_tests": done.unreadable_tests,
        "scores": {short_id(r.id): round(similarity[r.id], 4) for r in records.sources},
    }
    warnings = [] if ranked else ["no tested chunk was relevant to the question; the answer may say it does not know"]
    return table, records, details, warnings


async def lazy_search(request: SearchRequest) -> QueryResult:
    """Answer from the chunks that passed the relevance tests."""
    calls = request.model_calls()
    table, records, details, warnings = await _context(request, calls)
    answer = await answer_from_sources(request, calls, table.text, records, PURPOSE)
    return QueryResult(
        answer=answer,
        method="lazy",
        context_records=records,
        context_text=table.text,
        usage=calls.finish(),
        llm_used=calls.llm_available,
        warnings=warnings,
        details=details,
    )


async def lazy_context(request: SearchRequest) -> QueryResult:
    """The chunks a lazy search would answer from, without a chat call: the relevance tests are
    the offline ones (similarity), as a context-only request promises no model call."""
    calls = request.without_chat_model().model_calls()
    table, records, details, warnings = await _context(request, calls)
    return context_result("lazy", records, table.text, calls, details, warnings)
