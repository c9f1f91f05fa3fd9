"""Local-search ranking by personalized PageRank over entities and text units (``ranking: graph``).

Microsoft GraphRAG's local search orders its context by the entities the question maps to: their
text units in mapping order, their relationships by degree. Nothing in that order measures how
well a text unit fits the question, and on LiHua-World's chat logs it found a gold chat log in the
top 10 for 38% of the questions where plain vector search found one for 76%. This module ranks the
same candidates by a random walk with restart, after HippoRAG 2:

**The graph** (stored with each build as integer arrays, :mod:`graphrag_assets.index.walk_graph`,
mapped once per loaded index and cached on the :class:`QueryData`; built from the tables for a
build that stored none): one vertex per
entity and per text unit. An undirected edge per relationship, weighted by the relationship's
weight divided by the mean positive weight, so that the tiny PMI weights of the nlp method and the
summed strengths of the standard method both sit on the scale of the mention edges (relationships
without a positive weight or with an end missing from the entity table are left out); and an edge
of weight 1 between an entity and each text unit it is mentioned in.

**The restart distribution**, per question:

- seed entities (:func:`graphrag_assets.query.entity_filter.seed_entities`), each with its
  similarity divided by the number of text units mentioning it — a phrase found everywhere says
  little about where to look — normalized to sum 1;
- the best text units by vector or hybrid search (:mod:`graphrag_assets.query.hybrid_search`),
  their scores divided by the best one and multiplied by ``passage_weight`` (HippoRAG 2 adds
  min-max normalized dense passage scores times 0.05; with fused hybrid scores, whose ratios mean
  something, dividing by the best found more gold chat logs on LiHua-World: hit@10 92.1% against
  88.6% with min-max, and 76.4% against 77.2% with vector hits alone).

**The walk**: personalized PageRank with damping ``ppr_damping`` (HippoRAG 2 uses 0.5): the walker
follows an edge (chosen by weight) with probability ``damping`` and otherwise restarts; a vertex
without edges sends it back to the restart distribution. On a graph of fewer than
``PUSH_FROM_EDGES`` directed edges the scores are computed by power iteration over the step
probabilities, a sparse matrix prepared once with the graph; on a bigger one by forward push
(:mod:`graphrag_assets.query.push_walk`), whose work depends on the question's neighbourhood, not
on the graph: see ``PUSH_FROM_EDGES`` for what that changes. igraph's PRPACK
gives the same scores (the tests compare them), but it prepares the graph again on every call: on
a random weighted graph the size of ``bench/bench_query.py``'s (15,000 vertices, 80,000 edges) it
took 78 ms per call where this power iteration took 24 ms (2 cores at load 9). With damping 0.5
the error halves every step, so about 35 steps reach the tolerance.

**The candidates**: the ``top_k_entities`` best entities; the relationships touching them by the
sum of their two ends' scores, at most ``top_k_relationships`` per entity; the reports of the
communities (levels up to the requested one) holding one of them, by the summed score of all
their members, then report rank; the text units by score.

**Order.** The walk runs over the tables with their rows sorted by id, and every sort ends on a
unique key, so equal scores are broken the same way however the tables' rows were ordered: an
incremental build writes its rows in another order than a rebuild of the same index, and its
context (and answers) must not differ for that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from graphrag_assets.core.schemas import RANKED_RELATIONSHIP_COLUMNS
from graphrag_assets.core.settings import LocalSearchSettings
from graphrag_assets.index.walk_graph import WalkMatrix, walk_matrix
from graphrag_assets.query.array_index import best_first
from graphrag_assets.query.entity_filter import seed_entities
from graphrag_assets.query.hybrid_search import text_unit_hits
from graphrag_assets.query.push_walk import pushed_pagerank
from graphrag_assets.query.query_data import QueryData

if TYPE_CHECKING:
    from scipy import sparse

CACHE_KEY = "ranking_graph"
PASSAGE_CANDIDATES = 10  # text units that receive restart mass (measured on LiHua-World: 20 did worse)
SOURCE_CANDIDATES = 200  # text units offered to the Sources table (its token budget keeps a prefix)
TOLERANCE = 1e-10  # power iteration stops when the scores move less than this (L1)
MAX_STEPS = 1000
# From this many directed edges the walk pushes from the question's vertices instead of iterating
# over the whole matrix; it leaves at each vertex a residual below PUSH_RESIDUAL × its degree / the
# directed edges. Measured (bench/bench_walk_tolerance.py, docs/SCALING.md): on the 100,000-document
# index (37.7 M edges) 3.77 is a threshold of 1e-7, a walk of ~0.03 s over ~1 M edges instead of
# ~1.1 s over all of them; what the context keeps differs from the exact walk's (relationships and
# sources mostly), and no threshold does better short of one that costs more than the power
# iteration (the exact scores hold ties that float noise orders). On LiHua-World with the push
# forced at the same residual, hit@10 95.3% against 95.1% (hit@5 88.6% against 89.3%). Below the
# bound the walk stays exact, float for float, as the small indexes' tests pin.
PUSH_FROM_EDGES = 1_000_000
PUSH_RESIDUAL = 3.77
ENTITY_KEYS = ("id", "title", "type")  # what the graph and the seed filter read of every entity
UNIT_KEYS = ("id",)
COMMUNITY_KEYS = ("community", "level", "entity_ids")


@dataclass(frozen=True)
class RankingGraph:
    """The walk's graph and the lookups to read its scores; vertices: entities, then text units.

    ``walk`` holds the step matrix (:mod:`graphrag_assets.index.walk_graph`): stored with the build
    and read back as arrays, or built here from the tables when the build has none.
    """

    walk: WalkMatrix
    isolated: np.ndarray  # per vertex: has no edge
    entity_titles: list[str]  # vertex i (i < entity_count) is the entity of row i of the entity table
    entity_vertex: dict[str, int]
    unit_vertex: dict[str, int]  # vertex entity_count + j is row j of the text units
    member_community: np.ndarray  # community row of each (community, member) pair
    member_vertex: np.ndarray  # entity vertex of each pair
    built_from: tuple[pl.DataFrame, ...]  # the frames it describes (the cache is valid while they are the data's)
    tables: tuple[pl.DataFrame, ...]  # entities, text units, communities: the rows vertices index

    @property
    def vertex_count(self) -> int:
        return self.walk.vertex_count

    @cached_property
    def matrix(self) -> sparse.csr_array:
        """The step matrix (``walked = matrix @ scores``) of the power iteration, made on first use:
        a pushed walk reads only the rows it visits."""
        return self.walk.matrix()

    @property
    def mentions(self) -> np.ndarray:
        return self.walk.mentions

    @property
    def entity_rows(self) -> pl.DataFrame:
        return self.tables[0]

    @property
    def unit_rows(self) -> pl.DataFrame:
        return self.tables[1]

    @property
    def community_rows(self) -> pl.DataFrame:
        return self.tables[2]

    @property
    def entity_count(self) -> int:
        return len(self.entity_titles)


@dataclass
class RankedCandidates:
    """What local search may put in its context, best first, per table (claims follow the entities)."""

    entities: pl.DataFrame
    reports: pl.DataFrame
    relationships: pl.DataFrame
    text_units: pl.DataFrame


@dataclass(frozen=True)
class GraphQuery:
    """The question as the ranking needs it: its text (full-text search, seed filter), its vector,
    and the entities vector search found for it (id, similarity), best first."""

    text: str
    vector: Sequence[float]
    entity_hits: Sequence[tuple[str, float]]


# --- the graph (built once) ----------------------------------------------------------------------


def in_id_order(*tables: pl.DataFrame) -> tuple[pl.DataFrame, ...]:
    """The tables with their rows sorted by id: the same graph, float for float, whatever order
    the rows were stored in. The relationships' edges come without ids (a lazily read index reads
    only their ends and weights) and need none: the graph sorts its links by their ends and weight."""
    return tuple(table.sort("id") if "id" in table.columns else table for table in tables)


def walk_of_tables(entities: pl.DataFrame, relationships: pl.DataFrame, text_units: pl.DataFrame) -> WalkMatrix:
    """The walk's matrix from the tables (rows in vertex order): what a build stores, computed here."""
    titles = entities["title"].fill_null("").to_list()
    n_entities = entities.height
    title_vertex = pl.DataFrame({"title": titles, "_v": np.arange(n_entities)}).unique("title", keep="first")
    unit_row = pl.DataFrame({"unit": text_units["id"], "_u": np.arange(text_units.height)})
    links = (
        relationships.lazy()
        .select("source", "target", "weight")
        .filter(pl.col("weight") > 0)
        .join(title_vertex.lazy().rename({"title": "source", "_v": "_a"}), on="source")
        .join(title_vertex.lazy().rename({"title": "target", "_v": "_b"}), on="target")
        .select("_a", "_b", "weight")  # the titles are not kept: ~2M relationships make them the bulk
        .sort("_a", "_b", "weight")  # a join's output order is not defined
        .collect()
    )
    mentioned = (
        entities.select(pl.int_range(pl.len()).alias("_v"), pl.col("text_unit_ids").alias("unit"))
        .explode("unit")
        .join(unit_row, on="unit")
        .unique(["_v", "_u"])
        .sort("_v", "_u")
    )
    return walk_matrix(
        n_entities,
        text_units.height,
        (links["_a"].to_numpy(), links["_b"].to_numpy()),
        links["weight"].to_numpy().astype(np.float64),
        mentioned["_v"].to_numpy(),
        mentioned["_u"].to_numpy(),
    )


def graph_of_walk(
    walk: WalkMatrix, entities: pl.DataFrame, text_units: pl.DataFrame, communities: pl.DataFrame
) -> RankingGraph:
    """The ranking graph of ``walk`` over the tables (rows in vertex order), with community
    membership by vertex."""
    entity_ids = entities["id"].to_list()
    n_entities = len(entity_ids)
    members = (
        communities.select(pl.int_range(pl.len()).alias("_c"), pl.col("entity_ids").alias("id"))
        .explode("id")
        .join(pl.DataFrame({"id": entity_ids, "_v": np.arange(n_entities)}), on="id")
        .sort("_c", "_v")
    )
    return RankingGraph(
        walk=walk,
        isolated=walk.isolated(),
        entity_titles=entities["title"].fill_null("").to_list(),
        entity_vertex={entity_id: i for i, entity_id in enumerate(entity_ids)},
        unit_vertex={unit: n_entities + j for j, unit in enumerate(text_units["id"].to_list())},
        member_community=members["_c"].to_numpy(),
        member_vertex=members["_v"].to_numpy(),
        built_from=(entities, text_units, communities),
        tables=(entities, text_units, communities),
    )


def build_ranking_graph(
    entities: pl.DataFrame, relationships: pl.DataFrame, text_units: pl.DataFrame, communities: pl.DataFrame
) -> RankingGraph:
    """The graph described in the module docstring, built from the tables (rows in vertex order)."""
    walk = walk_of_tables(entities, relationships, text_units)
    return replace(
        graph_of_walk(walk, entities, text_units, communities),
        built_from=(entities, relationships, text_units, communities),
    )


def _sources(data: QueryData, stored: bool) -> tuple[pl.DataFrame, ...]:
    """The frames a graph of ``data`` is built from, of a lazily read index only the columns the
    graph reads (the chosen rows are read whole afterwards, :func:`_whole`): with a stored walk, no
    relationship at all; otherwise their ends and weights, and the entities' mentions."""
    units, communities = data.key_columns("text_units", UNIT_KEYS), data.key_columns("communities", COMMUNITY_KEYS)
    if stored:
        return (data.key_columns("entities", ENTITY_KEYS), units, communities)
    entities = data.key_columns("entities", (*ENTITY_KEYS, "text_unit_ids"))
    return (entities, data.relationship_links(), units, communities)


def _fits(walk: WalkMatrix, entities: pl.DataFrame, text_units: pl.DataFrame) -> bool:
    return walk.entity_count == entities.height and walk.unit_count == text_units.height


def ranking_graph(data: QueryData) -> RankingGraph:
    """The graph of ``data``, built on first use and kept on it for every later query: from the
    walk graph the build stored when it has one, else from the tables."""
    walk = data.stored_walk()
    if walk is not None and not _fits(
        walk, data.key_columns("entities", ENTITY_KEYS), data.key_columns("text_units", UNIT_KEYS)
    ):
        walk = None
    sources = _sources(data, walk is not None)
    cached = data.derived.get(CACHE_KEY)
    if (
        cached is None
        or len(cached.built_from) != len(sources)
        or any(a is not b for a, b in zip(cached.built_from, sources))
    ):
        if walk is None:
            cached = replace(build_ranking_graph(*in_id_order(*sources)), built_from=sources)
        else:
            cached = replace(graph_of_walk(walk, *in_id_order(*sources)), built_from=sources)
        data.derived[CACHE_KEY] = cached
    return cached


def personalized_pagerank(graph: RankingGraph, reset: np.ndarray, damping: float) -> np.ndarray:
    """Scores of the walk that follows an edge with probability ``damping`` (by weight) and
    otherwise restarts by ``reset``: exact on a graph below ``PUSH_FROM_EDGES`` directed edges,
    pushed on a bigger one; all zeros when ``reset`` has no mass."""
    total = float(reset.sum())
    if graph.vertex_count == 0 or total <= 0:
        return np.zeros(graph.vertex_count)
    edges = len(graph.walk.sources)
    if edges >= PUSH_FROM_EDGES:
        return pushed_pagerank(graph.walk, reset / total, damping, PUSH_RESIDUAL / edges)
    return exact_pagerank(graph, reset / total, damping)


def exact_pagerank(graph: RankingGraph, restart: np.ndarray, damping: float) -> np.ndarray:
    """Stationary scores (summing to 1) of the walk restarting by ``restart`` (summing to 1), by
    power iteration until they move less than ``TOLERANCE``."""
    scores = restart
    for _ in range(MAX_STEPS):
        walked = graph.matrix @ scores
        stepped = (1 - damping) * restart + damping * (walked + scores[graph.isolated].sum() * restart)
        if np.abs(stepped - scores).sum() < TOLERANCE:
            return stepped
        scores = stepped
    return scores


# --- one question --------------------------------------------------------------------------------


def relative_to_best(scores: Sequence[float]) -> np.ndarray:
    """Scores divided by the best one, negative ones as 0; all 0 when none is positive."""
    values = np.maximum(np.asarray(scores, dtype=np.float64), 0.0)
    best = float(values.max()) if values.size else 0.0
    return values / best if best > 0 else np.zeros_like(values)


def restart_distribution(
    graph: RankingGraph,
    seeds: Sequence[tuple[str, float]],
    passages: Sequence[tuple[str, float]],
    passage_weight: float,
) -> np.ndarray:
    """Seed mass (score / mentions, summing to 1) plus ``passage_weight`` × passage score / best score."""
    reset = np.zeros(graph.vertex_count)
    for entity_id, score in seeds:
        vertex = graph.entity_vertex.get(entity_id)
        if vertex is not None:
            reset[vertex] += max(score, 0.0) / graph.mentions[vertex]
    total = reset.sum()
    if total > 0:
        reset /= total
    known = [(graph.unit_vertex[unit], score) for unit, score in passages if unit in graph.unit_vertex]
    if known:
        vertices, scores = zip(*known)
        np.add.at(reset, list(vertices), passage_weight * relative_to_best(scores))
    return reset


def _top(scores: np.ndarray, n: int) -> np.ndarray:
    """Indexes of the ``n`` highest positive scores, best first (ties: lower index first)."""
    order = best_first(scores, n)
    return order[scores[order] > 0]


# What a context shows of the chosen entities and relationships, read alone when the table is not
# in memory: an entity's list of text units (a hub's thousands) made 10 rows cost 92 ms, not 10.
SHOWN_ENTITY_COLUMNS = ("id", "human_readable_id", "title", "description", "degree")
SHOWN_RELATIONSHIP_COLUMNS = ("id", "human_readable_id", "source", "target", "description", "weight")


def rank_relationships_by_score(
    titles: Sequence[str], relationships: pl.DataFrame, title_scores: pl.DataFrame, cap: int
) -> pl.DataFrame:
    """Relationships touching ``titles`` by the sum of their ends' scores (ties: lower human_readable_id, then id)."""
    touching = relationships.filter(pl.col("source").is_in(titles) | pl.col("target").is_in(titles))
    scored = (
        touching.join(title_scores.rename({"title": "source", "_score": "_s"}), on="source", how="left")
        .join(title_scores.rename({"title": "target", "_score": "_t"}), on="target", how="left")
        .with_columns((pl.col("_s").fill_null(0.0) + pl.col("_t").fill_null(0.0)).alias("_score"))
    )
    return (
        scored.sort(["_score", "human_readable_id", "id"], descending=[True, False, False], nulls_last=True)
        .head(cap)
        .drop("_s", "_t", "_score")
    )


def rank_reports_by_score(
    graph: RankingGraph, scores: np.ndarray, selected: np.ndarray, data: QueryData, community_level: int | None
) -> pl.DataFrame:
    """Reports of communities holding a selected entity, by their members' summed score, then rank."""
    n_communities = graph.community_rows.height
    if n_communities == 0 or data.row_count("community_reports") == 0:
        return data.rows_where("community_reports", "community", [])
    member_scores = np.bincount(graph.member_community, weights=scores[graph.member_vertex], minlength=n_communities)
    chosen = np.zeros(graph.entity_count, dtype=bool)
    chosen[selected] = True
    holds = np.bincount(graph.member_community, weights=chosen[graph.member_vertex], minlength=n_communities) > 0
    candidates = (
        graph.community_rows.select("community", "level")
        .with_columns(pl.Series("_score", member_scores), pl.Series("_holds", holds))
        .filter(pl.col("_holds"))
    )
    if community_level is not None:
        candidates = candidates.filter(pl.col("level") <= community_level)
    # the candidates' reports only: a command-line query need not read 11,386 reports for a few dozen
    reports = data.rows_where("community_reports", "community", candidates["community"].to_list())
    ranked = reports.join(candidates.select("community", "_score"), on="community", how="inner")
    return ranked.sort(
        ["_score", "rank", "community", "id"], descending=[True, True, False, False], nulls_last=True
    ).drop("_score")


def rank_by_graph(
    query: GraphQuery, data: QueryData, settings: LocalSearchSettings, community_level: int | None
) -> RankedCandidates:
    """The local-search candidates ordered by the walk (see the module docstring)."""
    graph = ranking_graph(data)
    # the graph's entity rows (id order): the seeds' order does not change the restart vector
    seeds = seed_entities(query.text, query.entity_hits, graph.entity_rows)
    passages = text_unit_hits(data, query.vector, query.text, PASSAGE_CANDIDATES, "hybrid").hits
    reset = restart_distribution(graph, seeds, passages, settings.passage_weight)
    scores = personalized_pagerank(graph, reset, settings.ppr_damping)

    entity_scores = scores[: graph.entity_count]
    selected = _top(entity_scores, settings.top_k_entities)  # vertex i is row i of the entity table
    titles = [graph.entity_titles[i] for i in selected]
    units = _top(scores[graph.entity_count :], SOURCE_CANDIDATES)  # and unit j row j of the text units
    cap = settings.top_k_relationships * len(titles)
    ranked = data.ranked_relationships(titles, graph.entity_titles, entity_scores, cap)
    if ranked is None:
        title_scores = pl.DataFrame({"title": graph.entity_titles, "_score": entity_scores}).unique(
            "title", keep="first"
        )
        ranked = rank_relationships_by_score(
            titles, data.relationships_touching(titles, RANKED_RELATIONSHIP_COLUMNS), title_scores, cap
        )
    return RankedCandidates(
        entities=_whole(data, "entities", graph.entity_rows[selected], SHOWN_ENTITY_COLUMNS),
        reports=rank_reports_by_score(graph, scores, selected, data, community_level),
        relationships=_whole_rows(data, ranked),
        text_units=_whole(data, "text_units", graph.unit_rows[units], ()),
    )


def _whole(data: QueryData, table: str, chosen: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """The ``chosen`` rows of ``table`` with ``columns`` at least (all: empty), in their order:
    ``chosen`` itself when the table is in memory, else read by id (the graph holds only the
    columns it needs)."""
    if data.holds(table):
        return chosen
    order = chosen.select("id").with_row_index("_rank")
    rows = data.rows_where(table, "id", order["id"].to_list(), columns)
    return rows.join(order, on="id").sort("_rank").drop("_rank")


def _whole_rows(data: QueryData, ranked: pl.DataFrame) -> pl.DataFrame:
    """The relationships ranked by their ends (the columns a context shows), in rank order. Read by
    number (stored in order, so DuckDB skips the blocks without one: 15 M ids scanned cost ~1 s), by id
    when a number is missing."""
    order = ranked.select("id").with_row_index("_rank")
    numbers = ranked["human_readable_id"].drop_nulls().to_list()
    shown = SHOWN_RELATIONSHIP_COLUMNS
    rows = data.rows_where("relationships", "human_readable_id", numbers, shown).join(order, on="id")
    if rows.height < order.height:
        rows = data.rows_where("relationships", "id", order["id"].to_list(), shown).join(order, on="id")
    return rows.sort("_rank").drop("_rank")
