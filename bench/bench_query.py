"""Query-time costs on a synthetic 10k-entity index: context building, and global search's map fan-out.

    python bench/bench_query.py [--questions 50] [--latency-ms 500] [--skip-global]

**The index** (fixed seed, built in memory): 10,000 entities and 50,000 relationships with
planted community structure (80% of the edges inside a community), 5,000 text units of ~1,200
tokens in 100 documents, each entity mentioned in a few text units of its community; the
``communities`` table comes from :func:`graphrag_assets.index.communities.build_communities`
on that graph and every community gets a simple synthetic report (title, summary, five findings,
~1,200 tokens). Entity descriptions, text units and reports are embedded with the product's local
hashing embedder (512 dimensions) and searched either in memory
(:class:`~graphrag_assets.query.array_index.ArrayVectorIndex`) or in LanceDB
(:func:`graphrag_assets.storage.vectors.publish` + ``LanceVectorIndex``, exact search, as the
product does).

**Local search context** (issue target: well under 100 ms on 10k entities). Each of N questions
names one to three entities plus a few content words; after three warm-up questions we time
(``--repeats`` runs of each question, the variants taking turns so that load from other processes
spreads evenly; "best of runs" takes each question's fastest run, which filters that load out)
:func:`~graphrag_assets.query.local_search.build_local_context` with default query settings
(top 10 entities, 12,000-token context), i.e. everything local search does except the model
call: question embedding (local embedder), vector search, ranking of reports / relationships /
claims / text units, and rendering the tables within their token budgets. Variants: both
rankings (``query.local.ranking``: ``msgraphrag``, and ``graph``: personalized PageRank over the
10,000 entities and 5,000 text units, plus the full-text search of its passages where the index
has one); the in-memory vs the LanceDB vector index (the LanceDB text-unit table carries the
full-text index, as the product's does); a precomputed question vector (so the figure excludes
embedding, which an OpenAI embedder would do over the network); the whole no-LLM
``local_search`` (adds the extractive answer). Building the ranking graph, once per loaded
index, is timed apart. A cProfile pass splits the time by step. Basic search (no LLM, vector and
hybrid) and global search's context (report selection, occurrence weights, packing into map
batches) are timed too.

**Global search map fan-out.** The scripted OpenAI-compatible server
(``graphrag_assets_testkit.openai_server``, ``graphrag_responder``) answers every request after
``--latency-ms``; the product's real OpenAI client (``build_chat_model``, cache disabled) runs
global search at a community level giving N map batches, with the default concurrency (25) and a
smaller one. Wall time is compared with N × latency (sequential map calls) and
ceil(N / concurrency) × latency (fully concurrent), plus one latency for the reduce call. The
server's own record gives the map phase's span and the largest number of requests in flight.

Results: printed as markdown and written to ``bench/results/query.json``.

**On a real index** (``--index ROOT [--baseline SRC]``): instead of the above, cold CLI ``query``
per method, ``show entity`` and ``status`` on the project at ROOT (e.g. one ``bench_scale.py
--keep`` built), wall and peak RSS, and ``serve``'s memory after 1 and 20 concurrent requests
(:mod:`query_on_index`); written to ``bench/results/query_index.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import math
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_nlp import percentile  # noqa: E402
from common import REPO_ROOT, header_block, invocation, load_average, machine_info, markdown_table, write_results  # noqa: E402

from graphrag_assets.core import schemas  # noqa: E402
from graphrag_assets.core.ids import entity_id, relationship_id, stable_uuid, text_unit_id  # noqa: E402
from graphrag_assets.core.settings import LLMSettings, QuerySettings  # noqa: E402
from graphrag_assets.core.tokens import token_counter  # noqa: E402
from graphrag_assets.index.communities import build_communities, normalize_edges  # noqa: E402
from graphrag_assets.index.embedding_texts import embed_frame, entity_texts, report_texts, text_unit_texts, with_text  # noqa: E402
from graphrag_assets.llm.local_embedder import LocalEmbedder  # noqa: E402
from graphrag_assets.query.array_index import ArrayVectorIndex  # noqa: E402
from graphrag_assets.query.basic_search import basic_search  # noqa: E402
from graphrag_assets.query.global_search import build_map_batches, global_search, occurrence_weights, reports_at_level  # noqa: E402
from graphrag_assets.query.graph_ranking import ranking_graph  # noqa: E402
from graphrag_assets.query.local_search import build_local_context, local_search  # noqa: E402
from graphrag_assets.query.query_data import QueryData  # noqa: E402
from graphrag_assets.query.request import QueryOptions, SearchRequest  # noqa: E402

SEED = 20261130
N_ENTITIES = 10_000
N_RELATIONSHIPS = 50_000
N_TEXT_UNITS = 5_000
N_DOCUMENTS = 100
UNIT_WORDS = 420  # synthetic words are ~2.9 tokens each: ~1,200-token text units (the default chunk size)
MIXING = 0.2  # share of edges between random nodes
EMBEDDING_DIMENSION = 512  # the product's default local_dimension
ENCODING = "cl100k_base"
WARM_UP = 3
ENTITY_TYPES = ("PERSON", "ORGANIZATION", "GEO", "EVENT")
SMALL_CONCURRENCY = 8

PROFILED_STEPS = {  # function name in graphrag_assets → label
    "embed": "question embedding (local embedder)",
    "search": "vector search",
    "map_entities": "map_entities",
    "rank_reports": "rank_reports",
    "rank_relationships": "rank_relationships",
    "rank_claims": "rank_claims",
    "rank_text_units": "rank_text_units",
    "seed_entities": "seed_entities (graph)",
    "text_unit_hits": "text_unit_hits (graph: passages)",
    "restart_distribution": "restart_distribution (graph)",
    "personalized_pagerank": "personalized_pagerank (graph)",
    "rank_reports_by_score": "rank_reports_by_score (graph)",
    "rank_relationships_by_score": "rank_relationships_by_score (graph)",
    "fill_table": "fill_table (token counting + rendering)",
    "count_tokens": "  of which count_tokens",
    "source_records": "source_records",
}


# --- synthetic index ----------------------------------------------------------------------------------


def make_words(rng: np.random.Generator, n: int, syllables: tuple[int, int]) -> list[str]:
    """``n`` distinct pronounceable lower-case words."""
    onsets = list("bdfgklmnprstvz") + ["br", "ch", "dr", "gl", "kr", "sh", "st", "th", "tr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
    words: dict[str, None] = {}
    while len(words) < n:
        count = int(rng.integers(syllables[0], syllables[1] + 1))
        word = "".join(onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(count))
        if rng.random() < 0.5:
            word += "nlrst"[rng.integers(5)]
        words[word] = None
    return list(words)


def planted_edges(rng: np.random.Generator, n_nodes: int, n_edges: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, v, planted label per node): n_edges distinct undirected pairs, ``MIXING`` of them random."""
    sizes: list[int] = []
    while sum(sizes) < n_nodes:
        sizes.append(int(min(4 * (1 + rng.pareto(1.5)), n_nodes // 20)))
    sizes[-1] -= sum(sizes) - n_nodes
    sizes = [s for s in sizes if s > 0]
    size = np.array(sizes)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    label = np.repeat(np.arange(len(sizes)), size)
    seen: set[tuple[int, int]] = set()
    us: list[int] = []
    vs: list[int] = []
    while len(us) < n_edges:
        batch = n_edges
        inside = int(batch * (1 - MIXING))
        u_in = rng.integers(0, n_nodes, inside)
        v_in = start[label[u_in]] + (rng.random(inside) * size[label[u_in]]).astype(np.int64)
        u = np.concatenate([u_in, rng.integers(0, n_nodes, batch - inside)])
        v = np.concatenate([v_in, rng.integers(0, n_nodes, batch - inside)])
        for a, b in zip(np.minimum(u, v).tolist(), np.maximum(u, v).tolist()):
            if a != b and (a, b) not in seen and len(us) < n_edges:
                seen.add((a, b))
                us.append(a)
                vs.append(b)
    return np.array(us), np.array(vs), label


class Words:
    """Zipf-distributed words from a vocabulary, drawn a million at a time (one ``choice`` per batch)."""

    def __init__(self, rng: np.random.Generator, vocabulary: Sequence[str]):
        self.rng = rng
        self.vocabulary = np.asarray(vocabulary)
        zipf = 1.0 / np.arange(1, len(self.vocabulary) + 1)
        self.weights = zipf / zipf.sum()
        self.pool = np.empty(0, dtype=np.int64)
        self.at = 0

    def sentence(self, n: int) -> str:
        if self.at + n > len(self.pool):
            self.pool = self.rng.choice(len(self.vocabulary), size=1_000_000, p=self.weights)
            self.at = 0
        words = self.vocabulary[self.pool[self.at : self.at + n]]
        self.at += n
        return " ".join(words).capitalize() + "."


def synthetic_index(seed: int = SEED) -> dict[str, pl.DataFrame]:
    """Entities, relationships, text units and documents (see the module docstring)."""
    rng = np.random.default_rng(seed)
    vocabulary = make_words(rng, 20_000, (1, 3))
    words = Words(rng, vocabulary)
    name_parts = make_words(rng, 4_000, (2, 3))
    titles: dict[str, None] = {}
    while len(titles) < N_ENTITIES:
        a, b = rng.integers(len(name_parts), size=2)
        titles[f"{name_parts[a]} {name_parts[b]}".upper()] = None
    title = list(titles)

    u, v, label = planted_edges(rng, N_ENTITIES, N_RELATIONSHIPS)
    degree = np.bincount(np.concatenate([u, v]), minlength=N_ENTITIES)

    # Text units: each planted community owns a block of units proportional to its size.
    n_labels = int(label.max()) + 1
    counts = np.bincount(label, minlength=n_labels)
    block = np.maximum(1, np.round(counts / N_ENTITIES * N_TEXT_UNITS)).astype(int)
    block_start = np.concatenate([[0], np.cumsum(block)[:-1]]) % N_TEXT_UNITS
    entity_units: list[list[int]] = []
    for node in range(N_ENTITIES):
        c = label[node]
        k = 1 + int(rng.poisson(2))
        units = (block_start[c] + rng.integers(0, block[c], k)) % N_TEXT_UNITS
        if rng.random() < 0.1:
            units = np.append(units, rng.integers(N_TEXT_UNITS))
        entity_units.append(sorted(set(units.tolist())))
    mentions: list[list[int]] = [[] for _ in range(N_TEXT_UNITS)]
    for node, units in enumerate(entity_units):
        for unit in units:
            mentions[unit].append(node)

    per_document = N_TEXT_UNITS // N_DOCUMENTS
    document_ids = [stable_uuid("bench-document", d) for d in range(N_DOCUMENTS)]
    unit_ids, unit_texts, unit_documents, unit_index = [], [], [], []
    for unit in range(N_TEXT_UNITS):
        sentences = [words.sentence(int(rng.integers(8, 20))) for _ in range(UNIT_WORDS // 14)]
        for node in mentions[unit]:
            at = int(rng.integers(len(sentences)))
            sentences[at] = f"{title[node].title()} {sentences[at][0].lower()}{sentences[at][1:]}"
        text = " ".join(sentences)
        doc = unit // per_document
        unit_ids.append(text_unit_id(document_ids[doc], unit % per_document, text))
        unit_texts.append(text)
        unit_documents.append(document_ids[doc])
        unit_index.append(unit % per_document)
    text_units = schemas.conform(
        pl.DataFrame(
            {
                "id": unit_ids,
                "human_readable_id": unit_index,
                "text": unit_texts,
                "n_tokens": [int(len(t.split()) * 1.35) for t in unit_texts],
                "document_id": unit_documents,
                "document_key": [f"doc-{unit // per_document:03d}.txt" for unit in range(N_TEXT_UNITS)],
                "chunk_index": unit_index,
            }
        ),
        schemas.TEXT_UNITS,
    )
    documents = schemas.conform(
        pl.DataFrame(
            {
                "id": document_ids,
                "human_readable_id": [0] * N_DOCUMENTS,
                "title": [f"doc-{d:03d}.txt" for d in range(N_DOCUMENTS)],
                "path": [f"doc-{d:03d}.txt" for d in range(N_DOCUMENTS)],
                "document_key": [f"doc-{d:03d}.txt" for d in range(N_DOCUMENTS)],
                "text_unit_ids": [unit_ids[d * per_document : (d + 1) * per_document] for d in range(N_DOCUMENTS)],
            }
        ),
        schemas.DOCUMENTS,
    )

    neighbours: list[list[int]] = [[] for _ in range(N_ENTITIES)]
    for a, b in zip(u.tolist(), v.tolist()):
        neighbours[a].append(b)
        neighbours[b].append(a)
    descriptions = []
    for node in range(N_ENTITIES):
        linked = " and ".join(title[n].title() for n in neighbours[node][:2]) or "no one"
        descriptions.append(
            f"{title[node].title()} is a {ENTITY_TYPES[node % 4].lower()}. "
            + " ".join(words.sentence(12) for _ in range(3))
            + f" It is linked to {linked}."
        )
    entities = schemas.conform(
        pl.DataFrame(
            {
                "id": [entity_id(t) for t in title],
                "human_readable_id": list(range(N_ENTITIES)),
                "title": title,
                "type": [ENTITY_TYPES[i % 4] for i in range(N_ENTITIES)],
                "description": descriptions,
                "text_unit_ids": [[unit_ids[x] for x in units] for units in entity_units],
                "frequency": [len(units) for units in entity_units],
                "degree": degree.tolist(),
            }
        ),
        schemas.ENTITIES,
    )
    relationship_units = []
    for a, b in zip(u.tolist(), v.tolist()):
        shared = sorted(set(entity_units[a]) & set(entity_units[b])) or entity_units[a][:1]
        relationship_units.append([unit_ids[x] for x in shared[:3]])
    relationships = schemas.conform(
        pl.DataFrame(
            {
                "id": [relationship_id(title[a], title[b]) for a, b in zip(u.tolist(), v.tolist())],
                "human_readable_id": list(range(len(u))),
                "source": [title[a] for a in u.tolist()],
                "target": [title[b] for b in v.tolist()],
                "description": [
                    f"{title[a].title()} and {title[b].title()}: {words.sentence(16)}"
                    for a, b in zip(u.tolist(), v.tolist())
                ],
                "weight": rng.integers(1, 11, len(u)).astype(float),
                "combined_degree": (degree[u] + degree[v]).tolist(),
                "text_unit_ids": relationship_units,
            }
        ),
        schemas.RELATIONSHIPS,
    )
    return {
        "entities": entities,
        "relationships": relationships,
        "text_units": text_units,
        "documents": documents,
        "vocabulary": pl.DataFrame({"word": vocabulary[200:2200]}),  # mid-frequency words for questions
    }


def synthetic_reports(communities: pl.DataFrame, entities: pl.DataFrame, seed: int = SEED) -> pl.DataFrame:
    """One simple report per community: title from its best-connected members, summary, 5 findings."""
    rng = np.random.default_rng(seed + 1)
    words = Words(rng, make_words(rng, 5_000, (1, 3)))
    by_id = {i: (t, d) for i, t, d in entities.select("id", "title", "degree").iter_rows()}
    rows = []
    for community in communities.iter_rows(named=True):
        members = sorted((by_id[e] for e in community["entity_ids"]), key=lambda m: (-m[1], m[0]))
        names = [m[0] for m in members[:3]]
        title = " and ".join(names)
        summary = f"This community centres on {', '.join(names)}. " + " ".join(words.sentence(14) for _ in range(3))
        findings = [
            {
                "summary": f"{names[i % len(names)].title()} {words.sentence(6)}",
                "explanation": " ".join(words.sentence(15) for _ in range(4)),
            }
            for i in range(5)
        ]
        full = f"# {title}\n\n{summary}\n\n" + "\n\n".join(f"## {f['summary']}\n\n{f['explanation']}" for f in findings)
        rank = float(rng.integers(1, 11))
        rows.append(
            {
                "id": community["id"],
                "human_readable_id": community["human_readable_id"],
                "community": community["community"],
                "level": community["level"],
                "parent": community["parent"],
                "children": community["children"],
                "title": title,
                "summary": summary,
                "full_content": full,
                "rank": rank,
                "rating_explanation": "synthetic",
                "findings": findings,
                "full_content_json": json.dumps(
                    {"title": title, "summary": summary, "findings": findings, "rating": rank}
                ),
                "period": community["period"],
                "size": community["size"],
                "generation": "synthetic",
            }
        )
    return schemas.conform(pl.DataFrame(rows), schemas.COMMUNITY_REPORTS)


def questions_for(entities: pl.DataFrame, vocabulary: Sequence[str], n: int, seed: int = SEED) -> list[str]:
    """Questions naming one to three entities and a few content words."""
    rng = np.random.default_rng(seed + 2)
    titles = entities["title"].to_list()
    templates = (
        "What is the relationship between {0} and {1}?",
        "What role does {0} play in the {w0} and {w1} of {1}?",
        "Tell me about {0}, {1} and {2} and their {w0}.",
        "Why is {0} associated with {w0} {w1}?",
    )
    out = []
    for i in range(n):
        names = [titles[j].title() for j in rng.choice(len(titles), 3, replace=False)]
        words = [vocabulary[j] for j in rng.integers(0, len(vocabulary), 2)]
        out.append(templates[i % len(templates)].format(*names, w0=words[0], w1=words[1]))
    return out


class FixedVectors:
    """An embedder that returns precomputed question vectors: context time without embedding."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors

    async def embed(self, texts: Sequence[str], *, purpose: str) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def build_indexes(frames: dict[str, pl.DataFrame], reports: pl.DataFrame, lance_dir: Path) -> tuple[dict, dict, dict]:
    """Array and LanceDB vector indexes for entities, text units and reports (the LanceDB text
    units with their full-text index); and setup timings."""
    from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE, LanceVectorIndex, publish

    embedder = LocalEmbedder(EMBEDDING_DIMENSION)
    sources = {
        ENTITY_TABLE: entity_texts(frames["entities"]),
        TEXT_UNIT_TABLE: text_unit_texts(frames["text_units"]),
        REPORT_TABLE: report_texts(reports),
    }
    arrays, lances, seconds = {}, {}, {}
    for table, texts in sources.items():
        started = time.perf_counter()
        embedded = asyncio.run(embed_frame(embedder, texts, purpose="bench"))
        seconds[f"embed_{table}"] = round(time.perf_counter() - started, 2)
        arrays[table] = ArrayVectorIndex(embedded["id"].to_list(), embedded["vector"].to_numpy())
        started = time.perf_counter()
        rows = embedded.select("id", "vector", "text_hash")
        publish(lance_dir, table, with_text(rows, texts) if table == TEXT_UNIT_TABLE else rows)
        seconds[f"publish_{table}"] = round(time.perf_counter() - started, 2)
        lances[table] = LanceVectorIndex(lance_dir, table)
    return arrays, lances, seconds


def query_data(
    frames: dict[str, pl.DataFrame], communities: pl.DataFrame, reports: pl.DataFrame, indexes: dict, lexical=None
) -> QueryData:
    from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE

    return QueryData(
        entities=frames["entities"],
        relationships=frames["relationships"],
        communities=communities,
        community_reports=reports,
        text_units=frames["text_units"],
        documents=frames["documents"],
        entity_description=indexes[ENTITY_TABLE],
        text_unit_text=indexes[TEXT_UNIT_TABLE],
        community_full_content=indexes[REPORT_TABLE],
        text_unit_lexical=lexical,
    )


# --- timing -------------------------------------------------------------------------------------------


def stats_ms(seconds: Sequence[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(seconds) * 1000, 2),
        "p95_ms": round(percentile(seconds, 95) * 1000, 2),
        "mean_ms": round(statistics.fmean(seconds) * 1000, 2),
        "min_ms": round(min(seconds) * 1000, 2),
        "max_ms": round(max(seconds) * 1000, 2),
    }


def time_each(questions: Sequence[str], run: Callable[[str], Any]) -> tuple[list[float], list[Any]]:
    """(seconds per question, results), one untimed warm-up call first."""
    run(questions[0])
    seconds, results = [], []
    for q in questions:
        started = time.perf_counter()
        results.append(run(q))
        seconds.append(time.perf_counter() - started)
    return seconds, results


def time_interleaved(
    questions: Sequence[str], runners: dict[str, Callable[[str], Any]], repeats: int
) -> tuple[dict[str, list[list[float]]], dict[str, float]]:
    """Seconds per variant, per question, per repeat; and each variant's first (cold) call.

    The variants take turns on every question, so load from other processes on the machine
    spreads evenly over them instead of landing on whichever variant ran at the time.
    """
    first = {}
    for name, run in runners.items():
        started = time.perf_counter()
        run(questions[0])
        first[name] = time.perf_counter() - started
        for q in questions[1:WARM_UP]:
            run(q)
    seconds: dict[str, list[list[float]]] = {name: [[] for _ in questions] for name in runners}
    for _ in range(repeats):
        for i, q in enumerate(questions):
            for name, run in runners.items():
                started = time.perf_counter()
                run(q)
                seconds[name][i].append(time.perf_counter() - started)
    return seconds, first


def local_context_runner(data: QueryData, settings: QuerySettings, embedder) -> Callable[[str], Any]:
    count = token_counter(ENCODING)

    def run(question: str):
        request = SearchRequest(question, data, settings, embedder=embedder, count=count)
        return asyncio.run(build_local_context(request, request.model_calls(), settings.local))

    return run


def ranking_settings(ranking: str) -> QuerySettings:
    return QuerySettings.model_validate({"local": {"ranking": ranking}})


def profile_local(data: QueryData, settings: QuerySettings, questions: Sequence[str]) -> dict[str, float]:
    """ms per question spent in each step of build_local_context (cProfile cumulative times)."""
    run = local_context_runner(data, settings, LocalEmbedder(EMBEDDING_DIMENSION))
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for q in questions:
        run(q)
    profiler.disable()
    total = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    steps = {label: 0.0 for label in PROFILED_STEPS.values()}
    for (filename, _, name), (_, _, _, cumulative, _) in stats.items():
        if name in PROFILED_STEPS and "graphrag_assets" in filename:
            steps[PROFILED_STEPS[name]] += cumulative
    return {
        "total (profiled)": round(total / len(questions) * 1000, 2),
        **{k: round(v / len(questions) * 1000, 2) for k, v in steps.items()},
    }


def global_context(data: QueryData, settings: QuerySettings, level: int) -> tuple[int, int, list]:
    """(reports used, batches) of global search's map step at ``level``; and the batches."""
    reports = reports_at_level(data.communities, data.community_reports, level)
    weights = occurrence_weights(data.communities, data.entities, reports["community"].to_list())
    batches, _ = build_map_batches(
        reports, weights, settings.global_.shuffle_seed, settings.global_.max_context_tokens, token_counter(ENCODING)
    )
    return reports.height, len(batches), batches


def run_global(
    data: QueryData, settings: QuerySettings, server, question: str, level: int, concurrency: int, latency: float
) -> dict[str, Any]:
    """One global search at ``level`` through the OpenAI client, and where its wall time went."""
    from graphrag_assets.llm.factory import build_chat_model
    from graphrag_assets.llm.usage import UsageMeter

    server.reset()
    server.set_latency(latency * 1000)
    llm = LLMSettings(base_url=server.base_url, api_key="bench", cache=False, concurrency=concurrency, max_retries=0)
    chat = build_chat_model(llm, None, UsageMeter())
    try:
        started, started_epoch = time.perf_counter(), time.time()
        result = asyncio.run(
            global_search(
                SearchRequest(
                    question,
                    data,
                    settings,
                    chat,
                    LocalEmbedder(EMBEDDING_DIMENSION),
                    QueryOptions(community_level=level),
                    count=token_counter(ENCODING),
                )
            )
        )
        wall, ended_epoch = time.perf_counter() - started, time.time()
    finally:
        chat.close()
    calls = sorted(server.calls("chat"), key=lambda c: c["time"])
    stats = server.stats()
    batches = len(result.details["batches"])
    map_calls, later = calls[:batches], calls[batches:]
    map_end = max(c["answered_at"] for c in map_calls)
    rounds = math.ceil(batches / concurrency)
    # Where the wall time went, from the server's arrival / answer times (same clock, same machine).
    phases = {
        "before_first_map_s": min(c["time"] for c in map_calls) - started_epoch,
        "map_phase_s": map_end - min(c["time"] for c in map_calls),
        "map_end_to_reduce_s": (later[0]["time"] - map_end) if later else None,
        "reduce_s": (later[-1]["answered_at"] - later[0]["time"]) if later else None,
        "after_last_answer_s": ended_epoch - (later[-1]["answered_at"] if later else map_end),
    }
    return {
        "level": level,
        "concurrency": concurrency,
        "batches": batches,
        "chat_calls": len(calls),
        "reduce_calls": len(later),
        "wall_s": round(wall, 2),
        **{k: None if v is None else round(v, 3) for k, v in phases.items()},
        "sequential_bound_s": round(batches * latency, 2),
        "concurrent_bound_s": round(rounds * latency, 2),
        "expected_wall_s": round((rounds + len(later)) * latency, 2),
        "max_in_flight": stats["max_in_flight"],
        "warnings": result.warnings,
    }


def vector_search_ms(indexes: dict[str, Any], vectors: Sequence[Sequence[float]], k: int) -> dict[str, float]:
    """Median ms of one search per table (after one warm-up search)."""
    out = {}
    for table, index in indexes.items():
        index.search(vectors[0], k)
        seconds = []
        for vector in vectors:
            started = time.perf_counter()
            index.search(vector, k)
            seconds.append(time.perf_counter() - started)
        out[table] = round(statistics.median(seconds) * 1000, 2)
    return out


def describe_index(frames: dict[str, pl.DataFrame], communities: pl.DataFrame, reports: pl.DataFrame) -> dict[str, Any]:
    count = token_counter(ENCODING)
    return {
        "entities": frames["entities"].height,
        "relationships": frames["relationships"].height,
        "distinct_pairs": normalize_edges(frames["relationships"]).height,
        "text_units": frames["text_units"].height,
        "documents": frames["documents"].height,
        "communities": communities.height,
        "levels": int(communities["level"].max()) + 1,
        "communities_per_level": communities.group_by("level").len().sort("level")["len"].to_list(),
        "report_tokens_median": int(statistics.median(count(t) for t in reports["full_content"].head(200).to_list())),
        "text_unit_tokens_median": int(
            statistics.median(count(t) for t in frames["text_units"]["text"].head(200).to_list())
        ),
    }


def local_variants(data: dict[str, QueryData], questions: Sequence[str]) -> dict[str, Callable[[str], Any]]:
    embedder = LocalEmbedder(EMBEDDING_DIMENSION)
    fixed = FixedVectors(dict(zip(questions, embedder.embed_sync(questions).tolist())))
    count = token_counter(ENCODING)
    memory, lance = data["array"], data["lance"]
    ms, graph = ranking_settings("msgraphrag"), ranking_settings("graph")
    vector = QuerySettings.model_validate({"basic": {"mode": "vector"}})
    return {
        "local context (msgraphrag), in-memory vectors": local_context_runner(memory, ms, embedder),
        "local context (msgraphrag), LanceDB vectors": local_context_runner(lance, ms, embedder),
        "local context (msgraphrag), in-memory, precomputed question vector": local_context_runner(memory, ms, fixed),
        "local context (graph), in-memory vectors, no full-text": local_context_runner(memory, graph, embedder),
        "local context (graph), LanceDB vectors + full-text": local_context_runner(lance, graph, embedder),
        "local context (graph), in-memory, precomputed question vector": local_context_runner(memory, graph, fixed),
        "local search no-LLM (+ extractive answer), graph, LanceDB": lambda q: asyncio.run(
            local_search(SearchRequest(q, lance, graph, embedder=embedder, count=count))
        ),
        "basic search no-LLM (+ extractive answer), vector, LanceDB": lambda q: asyncio.run(
            basic_search(SearchRequest(q, lance, vector, embedder=embedder, count=count))
        ),
        "basic search no-LLM (+ extractive answer), hybrid, LanceDB": lambda q: asyncio.run(
            basic_search(SearchRequest(q, lance, graph, embedder=embedder, count=count))
        ),
    }


def summarize_timings(seconds: dict[str, list[list[float]]], first: dict[str, float]) -> dict[str, dict[str, Any]]:
    timings = {}
    for name, per_question in seconds.items():
        every = [x for runs in per_question for x in runs]
        best = [min(runs) for runs in per_question]
        timings[name] = {
            **stats_ms(every),
            "best_of_repeats_median_ms": round(statistics.median(best) * 1000, 2),
            "best_of_repeats_p95_ms": round(percentile(best, 95) * 1000, 2),
            "first_call_ms": round(first[name] * 1000, 1),
            "runs": len(every),
        }
    return timings


def context_shape(run: Callable[[str], Any], questions: Sequence[str]) -> dict[str, Any]:
    """Mean rows offered / used and tokens of each local context table."""
    contexts = [run(q) for q in questions]
    return {
        "mapped_entities_mean": statistics.fmean(len(c.mapped_entities) for c in contexts),
        "tables_mean": {
            table: {
                k: round(statistics.fmean(c.table_summary()[table][k] for c in contexts), 1)
                for k in ("offered", "used", "tokens")
            }
            for table in contexts[0].tables
        },
    }


def global_llm_runs(
    data: QueryData, settings: QuerySettings, question: str, levels: list[dict[str, Any]], latency_ms: float
) -> list[dict[str, Any]]:
    """Global search through the OpenAI client: few batches, and the most batches at two concurrencies."""
    import openai  # noqa: F401 - imported before timing: a CLI query pays its ~0.6 s once per process

    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    concurrency = LLMSettings().concurrency
    few = min(levels, key=lambda g: abs(g["batches"] - concurrency // 2))
    many = max(levels, key=lambda g: g["batches"])
    plan = [(few["level"], concurrency), (many["level"], concurrency), (many["level"], SMALL_CONCURRENCY)]
    server = ScriptedOpenAIServer.start(
        responder="graphrag_assets_testkit.graphrag_responder:respond", latency_ms=latency_ms, embedding_dim=64
    )
    runs = []
    try:
        for level, limit in dict.fromkeys(plan):
            print(f"global search at level {level}, concurrency {limit} ...", file=sys.stderr, flush=True)
            runs.append(run_global(data, settings, server, question, level, limit, latency_ms / 1000))
    finally:
        server.stop()
    return runs


def print_report(r: dict[str, Any]) -> None:
    shape, timings, vector_search = r["index"], r["local_and_basic"], r["vector_search_ms"]
    print(
        header_block(
            "Query benchmarks (synthetic 10k-entity index)",
            r["command"],
            r["load_average_start"],
            r["load_average_end"],
            r,
        )
    )
    print()
    print(
        markdown_table(
            (
                "entities",
                "relationships",
                "text units",
                "documents",
                "communities (per level)",
                "report tokens (median)",
                "text unit tokens (median)",
            ),
            [
                (
                    shape["entities"],
                    shape["relationships"],
                    shape["text_units"],
                    shape["documents"],
                    f"{shape['communities']} ({', '.join(map(str, shape['communities_per_level']))})",
                    shape["report_tokens_median"],
                    shape["text_unit_tokens_median"],
                )
            ],
        )
    )
    print(f"\nsetup: {r['setup']}\n")
    print(
        f"### Per question: {r['questions']} questions x {r['repeats']} runs, variants interleaved, after {WARM_UP} "
        "warm-ups (default settings: top 10 entities, 12k-token context)\n"
    )
    print(
        markdown_table(
            (
                "what is timed",
                "median ms",
                "p95 ms",
                "max ms",
                "best-of-runs median ms",
                "best-of-runs p95 ms",
                "first call ms",
            ),
            [
                (
                    k,
                    v["median_ms"],
                    v["p95_ms"],
                    v["max_ms"],
                    v["best_of_repeats_median_ms"],
                    v["best_of_repeats_p95_ms"],
                    v["first_call_ms"],
                )
                for k, v in timings.items()
            ],
        )
    )
    print(f"\nlocal context: {r['local_context_shape']}\n")
    print(f"### One vector search (k = {vector_search['k']}), median ms\n")
    print(
        markdown_table(
            ("index", *vector_search["in-memory"]),
            [(kind, *vector_search[kind].values()) for kind in ("in-memory", "LanceDB")],
        )
    )
    print(
        "\n### Where local context time goes (cProfile, in-memory vectors, ms per question; "
        "profiling inflates Python-heavy steps)\n"
    )
    profiles = r["local_context_profile_ms"]
    print(
        markdown_table(
            ("step", *(f"{ranking} ms / question" for ranking in profiles)),
            [(step, *(p[step] for p in profiles.values())) for step in next(iter(profiles.values()))],
        )
    )
    print("\n### Global search context (report selection + occurrence weights + map batches), 10 questions\n")
    print(
        markdown_table(
            ("level", "reports", "map batches", "median ms", "p95 ms"),
            [(g["level"], g["reports"], g["batches"], g["median_ms"], g["p95_ms"]) for g in r["global_context"]],
        )
    )
    runs = r["global_llm"]["runs"]
    if runs:
        print(
            f"\n### Global search with the OpenAI client against the stand-in server ({r['global_llm']['latency_ms']:g} ms per call)\n"
        )
        print(
            markdown_table(
                (
                    "level",
                    "concurrency",
                    "map batches N",
                    "chat calls",
                    "wall s",
                    "N × latency s",
                    "ceil(N/conc.) × latency s",
                    "expected (+ reduce) s",
                    "max in flight",
                ),
                [
                    (
                        g["level"],
                        g["concurrency"],
                        g["batches"],
                        g["chat_calls"],
                        g["wall_s"],
                        g["sequential_bound_s"],
                        g["concurrent_bound_s"],
                        g["expected_wall_s"],
                        g["max_in_flight"],
                    )
                    for g in runs
                ],
            )
        )
        print("\nwall time by phase (s), from the server's arrival and answer times:\n")
        print(
            markdown_table(
                (
                    "level",
                    "concurrency",
                    "before first map call",
                    "map phase",
                    "map end → reduce call",
                    "reduce call",
                    "after last answer",
                ),
                [
                    (
                        g["level"],
                        g["concurrency"],
                        g["before_first_map_s"],
                        g["map_phase_s"],
                        g["map_end_to_reduce_s"],
                        g["reduce_s"],
                        g["after_last_answer_s"],
                    )
                    for g in runs
                ],
            )
        )


# --- main -----------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of every question and variant")
    parser.add_argument("--latency-ms", type=float, default=500.0, help="stand-in server latency for global search")
    parser.add_argument("--skip-global", action="store_true", help="do not start the stand-in server")
    parser.add_argument(
        "--index",
        type=Path,
        nargs="+",
        default=None,
        help="measure CLI commands and serve on these projects (e.g. a big index and the sample, in one run)",
    )
    parser.add_argument("--baseline", type=Path, default=None, help="with --index: also run this graphrag_assets tree")
    parser.add_argument(
        "--candidate", type=Path, default=None, help="with --index: the tree to compare (default: installed)"
    )
    parser.add_argument(
        "--serve-candidate-only",
        action="store_true",
        help="with --index: start serve with the compared tree only (older trees held 12 GB on the 100k index)",
    )
    parser.add_argument(
        "--commands",
        nargs="+",
        default=None,
        help="with --index: only the commands named so (e.g. 'query -m local' 'query -m basic'; default: all)",
    )
    parser.add_argument("--no-serve", action="store_true", help="with --index: do not start serve")
    args = parser.parse_args()
    if args.index is not None:
        from query_on_index import index_costs, render_index_costs

        trees = {"baseline": args.baseline} if args.baseline else {}
        trees["this tree"] = args.candidate

        serve = "none" if args.no_serve else "last" if args.serve_candidate_only else "all"
        costs = {
            **machine_info(),
            "command": invocation(),
            "indexes": [index_costs(root, trees, args.repeats, serve, args.commands) for root in args.index],
        }
        print("\n\n".join(render_index_costs(index) for index in costs["indexes"]))
        path = write_results("query_index.json", costs)
        print(f"\nwritten to {path.relative_to(REPO_ROOT)}")
        return
    info, command, load_start = machine_info(), invocation(), load_average()
    settings = QuerySettings()
    setup: dict[str, float] = {}

    started = time.perf_counter()
    frames = synthetic_index()
    setup["generate_tables_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    communities = build_communities(frames["entities"], frames["relationships"], period="2026-11-30")
    setup["build_communities_s"] = round(time.perf_counter() - started, 2)
    reports = synthetic_reports(communities, frames["entities"])
    questions = questions_for(frames["entities"], frames["vocabulary"]["word"].to_list(), args.questions)
    shape = describe_index(frames, communities, reports)
    print(f"synthetic index: {shape}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="bench-query-") as workdir:
        arrays, lances, embed_seconds = build_indexes(frames, reports, Path(workdir) / "lancedb")
        setup.update(embed_seconds)
        from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, lexical_index

        lexical = lexical_index(Path(workdir) / "lancedb", TEXT_UNIT_TABLE)
        data = {
            "array": query_data(frames, communities, reports, arrays),
            "lance": query_data(frames, communities, reports, lances, lexical),
        }
        for kind, loaded in data.items():  # once per loaded index, as in a query process
            started = time.perf_counter()
            ranking_graph(loaded)
            setup[f"ranking_graph_{kind}_s"] = round(time.perf_counter() - started, 2)
        variants = local_variants(data, questions)
        print(
            f"timing {len(variants)} variants x {len(questions)} questions x {args.repeats} ...",
            file=sys.stderr,
            flush=True,
        )
        timings = summarize_timings(*time_interleaved(questions, variants, args.repeats))
        shape_of_context = {
            ranking: context_shape(variants[f"local context ({ranking}), in-memory vectors{suffix}"], questions)
            for ranking, suffix in (("msgraphrag", ""), ("graph", ", no full-text"))
        }
        question_vectors = LocalEmbedder(EMBEDDING_DIMENSION).embed_sync(questions).tolist()
        search_k = settings.local.top_k_entities * 2
        vector_search = {
            "k": search_k,
            "in-memory": vector_search_ms(arrays, question_vectors, search_k),
            "LanceDB": vector_search_ms(lances, question_vectors, search_k),
        }
        print("profiling local context ...", file=sys.stderr, flush=True)
        profile = {
            ranking: profile_local(data["array"], ranking_settings(ranking), questions)
            for ranking in ("msgraphrag", "graph")
        }
        global_levels = []
        for level in range(shape["levels"]):
            took, outcomes = time_each(
                questions[:10], lambda q, level=level: global_context(data["array"], settings, level)
            )
            global_levels.append(
                {"level": level, "reports": outcomes[0][0], "batches": outcomes[0][1], **stats_ms(took)}
            )
        global_runs = (
            []
            if args.skip_global
            else global_llm_runs(data["array"], settings, questions[0], global_levels, args.latency_ms)
        )

    results = {
        **info,
        "command": command,
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "seed": SEED,
        "questions": len(questions),
        "repeats": args.repeats,
        "index": shape,
        "setup": setup,
        "settings": settings.model_dump(by_alias=True),
        "local_and_basic": timings,
        "local_context_shape": shape_of_context,
        "vector_search_ms": vector_search,
        "local_context_profile_ms": profile,
        "global_context": global_levels,
        "global_llm": {"latency_ms": args.latency_ms, "runs": global_runs},
    }
    print_report(results)
    path = write_results("query.json", results)
    print(f"\nwritten to {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
