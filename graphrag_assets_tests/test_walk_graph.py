"""Big-index reads: the walk graph a build stores (the same matrix, and the same scores, as the one
built from the tables) and a server that keeps the relationships in the database."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.project.walk_graph import store_walk_graph
from graphrag_assets.query.graph_ranking import build_ranking_graph, in_id_order, personalized_pagerank, ranking_graph
from graphrag_assets.serve.lookups import neighbourhood, relationship_detail
from graphrag_assets.serve.snapshot import load_snapshot
from graphrag_assets.storage.corpus import BUILD_TABLE
from graphrag_assets.storage.database import connect, table_exists
from graphrag_assets.storage.walk_tables import WALK_TABLE
from graphrag_assets_tests.test_graph_ranking import directed_edges


def edge_list_pagerank(graph, reset: np.ndarray, damping: float) -> np.ndarray:
    """The walk as it was computed before the matrix: sums over the directed edge list, in edge order."""
    source, target, probability = directed_edges(graph)
    restart = reset / reset.sum()
    scores = restart
    for _ in range(1000):
        walked = np.bincount(target, weights=scores[source] * probability, minlength=graph.vertex_count)
        stepped = (1 - damping) * restart + damping * (walked + scores[graph.isolated].sum() * restart)
        if np.abs(stepped - scores).sum() < 1e-10:
            return stepped
        scores = stepped
    return scores


@pytest.fixture(scope="module")
def project(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(shutil.copytree(nlp_index, tmp_path_factory.mktemp("walk") / "project"))
    (root / "graphrag.yaml").write_text("method: nlp\nllm:\n  embeddings: local\n", encoding="utf-8")
    database = root / "data" / "graphrag.duckdb"
    assert store_walk_graph(database) == 0  # the sample's 737 relationships: queries walk the tables
    assert store_walk_graph(database, min_relationships=0) > 0  # as a build past MIN_RELATIONSHIPS does
    return root


def test_the_stored_walk_is_the_walk_of_the_tables_float_for_float(project: Path) -> None:
    settings = load_settings(project, environ={})
    data = load_query_data(settings)
    stored = ranking_graph(data)
    assert len(stored.built_from) == 3  # built from the stored walk: no relationship was read
    assert "_links" not in data._frames and "relationships" not in data._frames
    whole = load_query_data(settings).load_all()
    tables = in_id_order(whole.entities, whole.relationships, whole.text_units, whole.communities)
    fresh = build_ranking_graph(*tables)
    assert fresh.walk.vertex_count == stored.walk.vertex_count > 50
    for name in ("indptr", "sources", "probability", "mentions", "strength"):
        assert np.array_equal(getattr(fresh.walk, name), getattr(stored.walk, name)), name
    reset = np.zeros(stored.vertex_count)
    reset[[0, 3, stored.entity_count + 1]] = [0.6, 0.3, 0.1]
    scores = personalized_pagerank(stored, reset, 0.5)
    assert np.array_equal(scores, personalized_pagerank(fresh, reset, 0.5))
    assert np.array_equal(scores, edge_list_pagerank(fresh, reset, 0.5))  # the matrix sums as the edge list did


def test_a_walk_of_another_build_is_not_used(project: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(project, tmp_path / "project"))
    settings = load_settings(root, environ={})
    expected = ranking_graph(load_query_data(settings))
    with connect(settings.database_path) as conn:  # what a build published by code that stores no walk leaves
        conn.execute(f"update {WALK_TABLE} set run_id = 'an-older-build'")
    data = load_query_data(settings)
    graph = ranking_graph(data)
    assert len(graph.built_from) == 4 and "_links" in data._frames  # built from the relationships' ends
    for name in ("indptr", "sources", "probability", "mentions", "strength"):
        assert np.array_equal(getattr(graph.walk, name), getattr(expected.walk, name)), name


def test_the_server_shows_relationships_by_entity_and_by_number_as_the_tables_hold_them(project: Path) -> None:
    settings = load_settings(project, environ={})
    snapshot = load_snapshot(settings)
    whole = load_query_data(settings).load_all()
    assert snapshot.counts()["relationships"] == whole.relationships.height > 0
    title = whole.relationships["source"][0]
    assert neighbourhood(snapshot.data, title).equals(neighbourhood(whole, title))
    number = str(whole.relationships["human_readable_id"][5])
    assert relationship_detail(snapshot.data, number) == relationship_detail(whole, number)


def test_a_new_build_replaces_the_stored_arrays_and_the_old_tables(project: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(project, tmp_path / "project"))
    database = root / "data" / "graphrag.duckdb"
    before = list(Path(f"{database}.walk").iterdir())
    with connect(database) as conn:  # as a walk stored by older code left it, then a new build
        conn.execute("create table ranking_walk_edges as select 1 as source, 0.5 as probability")
        conn.execute(f"update {BUILD_TABLE} set run_id = 'the-next-build'")
    assert store_walk_graph(database, min_relationships=0) > 0
    after = list(Path(f"{database}.walk").iterdir())
    assert len(before) == len(after) == 1 and before != after
    with connect(database, read_only=True) as conn:
        assert not table_exists(conn, "ranking_walk_edges")
    assert ranking_graph(load_query_data(load_settings(root, environ={}))).walk.vertex_count > 50
