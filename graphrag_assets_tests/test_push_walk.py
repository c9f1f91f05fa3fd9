"""The pushed walk of big graphs: its scores against the exact walk's, and the rows it reads.

Graphs are generated here (heavy-tailed degrees, weighted relationships, mentions), walked by the
power iteration of :func:`exact_pagerank` and by forward push; the stored walk is written with the
build's format and mapped back, then the rows of vertices the push cannot reach are spoiled.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from graphrag_assets.index.walk_graph import WalkMatrix, stored_walk, walk_matrix
from graphrag_assets.query import graph_ranking
from graphrag_assets.query.graph_ranking import exact_pagerank, graph_of_walk, personalized_pagerank
from graphrag_assets.query.push_walk import pushed_pagerank
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.walk_tables import ARRAYS, read_walk, walk_directory, write_walk

STAMP = ("run-1", "2026-12-06 06:00:00")


def random_links(rng: np.random.Generator, entities: int, count: int, first: int = 0) -> tuple[np.ndarray, ...]:
    """``count`` weighted links among entities ``first``… with heavy-tailed degrees (preferential ends)."""
    popularity = 1.0 / np.arange(1, entities + 1) ** 0.8
    ends = rng.choice(entities, size=(count, 2), p=popularity / popularity.sum())
    ends = ends[ends[:, 0] != ends[:, 1]] + first
    return ends[:, 0], ends[:, 1], rng.random(len(ends)) * 5 + 0.01


def generated_walk(rng: np.random.Generator, entities: int, units: int, links: int) -> WalkMatrix:
    """A heavy-tailed graph of ``links`` relationships, each entity mentioned in 1–3 of ``units``."""
    source, target, weight = random_links(rng, entities, links)
    mention_entity = np.repeat(np.arange(entities), rng.integers(1, 4, entities))
    return walk_matrix(
        entities, units, (source, target), weight, mention_entity, rng.integers(0, units, len(mention_entity))
    )


def graph_of(walk: WalkMatrix) -> graph_ranking.RankingGraph:
    entities = pl.DataFrame({"id": [f"e{i:07d}" for i in range(walk.entity_count)]}).with_columns(
        title=pl.col("id"), type=pl.lit("thing")
    )
    units = pl.DataFrame({"id": [f"u{j:07d}" for j in range(walk.unit_count)]})
    communities = pl.DataFrame(
        {"community": [], "level": [], "entity_ids": []},
        schema={"community": pl.Int64, "level": pl.Int64, "entity_ids": pl.List(pl.String)},
    )
    return graph_of_walk(walk, entities, units, communities)


def restart_at(vertex_count: int, vertices: list[int], weights: list[float]) -> np.ndarray:
    restart = np.zeros(vertex_count)
    restart[vertices] = weights
    return restart / restart.sum()


@pytest.mark.parametrize("threshold", [1e-6, 1e-9])
def test_pushed_scores_fall_short_of_the_exact_walk_by_at_most_the_residual_left(threshold: float) -> None:
    walk = generated_walk(np.random.default_rng(3), entities=3_000, units=1_500, links=20_000)
    graph = graph_of(walk)
    restart = restart_at(walk.vertex_count, [5, 17, 2_999, 3_000 + 40], [0.5, 0.3, 0.15, 0.05])
    exact = exact_pagerank(graph, restart, 0.5)
    pushed = pushed_pagerank(walk, restart, 0.5, threshold)
    # what push leaves is below threshold × degree per vertex; walked on, it is the whole shortfall
    left = threshold * np.maximum(np.diff(walk.indptr), 1).sum()
    shortfall = exact - pushed
    assert shortfall.min() > -1e-12 and shortfall.sum() <= left
    assert shortfall.sum() > 0  # stopped early: a push that ran to the end would prove nothing
    best = np.argsort(-exact, kind="stable")[:20]
    gaps = -np.diff(exact[best])
    settled = np.flatnonzero(gaps > 2 * shortfall.max())  # pairs the error cannot swap
    assert np.all(pushed[best][settled] > pushed[best][settled + 1])
    assert np.array_equal(pushed, pushed_pagerank(walk, restart, 0.5, threshold))  # same question, same scores


def test_an_isolated_seed_sends_its_walker_back_to_the_restart_distribution_when_pushed() -> None:
    walk = generated_walk(np.random.default_rng(5), entities=200, units=100, links=800)
    lone = walk_matrix(3, 0, ([0], [1]), [1.0], [], [])  # vertex 2 has no edge
    for case in (walk, lone):
        restart = restart_at(case.vertex_count, [0, case.vertex_count - 1], [0.7, 0.3])
        exact = exact_pagerank(graph_of(case), restart, 0.5)
        assert pushed_pagerank(case, restart, 0.5, 1e-13) == pytest.approx(exact, abs=1e-10)


def test_a_walk_on_a_big_stored_graph_reads_only_the_rows_it_reaches(tmp_path) -> None:
    """Two components: the seeds' (small) and one that makes the graph bigger than PUSH_FROM_EDGES,
    whose mapped rows are spoiled after writing. A walk over the whole matrix (as before) spreads
    their NaN to every score."""
    rng = np.random.default_rng(11)
    near = random_links(rng, 500, 3_000)
    far = random_links(rng, 5_000, int(graph_ranking.PUSH_FROM_EDGES * 0.55), first=500)
    ends = (np.concatenate([near[0], far[0]]), np.concatenate([near[1], far[1]]))
    walk = walk_matrix(5_500, 0, ends, np.concatenate([near[2], far[2]]), [], [])
    assert len(walk.sources) >= graph_ranking.PUSH_FROM_EDGES
    database = tmp_path / "graphrag.duckdb"
    with connect(database) as conn:
        conn.execute(
            f"create table corpus_build as select '{STAMP[0]}' as run_id, timestamp '{STAMP[1]}' as published_at"
        )
    write_walk(database, STAMP, (walk.entity_count, 0), {name: getattr(walk, name) for name in ARRAYS})
    restart = restart_at(walk.vertex_count, [3, 40], [0.8, 0.2])
    clean = personalized_pagerank(graph_of(mapped(database)), restart, 0.5)
    spoiled = np.load(walk_directory(database, STAMP) / "probability.npy", mmap_mode="r+")
    spoiled[walk.indptr[500] :] = np.nan  # every row of the far component
    spoiled.flush()
    scores = personalized_pagerank(graph_of(mapped(database)), restart, 0.5)
    assert np.isfinite(scores).all() and np.array_equal(scores, clean)
    assert scores[:500].sum() > 0.9 and not scores[500:].any()  # the residual left is the rest


def mapped(database) -> WalkMatrix:
    """The walk stored in ``database``, as a query maps it."""
    with connect(database, read_only=True) as conn:
        arrays = read_walk(conn, database)
    assert arrays is not None and isinstance(arrays["sources"], np.memmap)
    return stored_walk(**arrays)
