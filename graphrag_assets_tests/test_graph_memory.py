"""What keeps the graph step's memory bounded by the graph, not by its pairs or its strings.

The nlp method's graph has about 150 relationships per document (15 M at 100,000 documents) made
from about 790 co-occurring pairs per document: pairs are made one range of source nodes at a time,
the pruned edges are dropped before the relationships are written in batches, and the checks read
the written table in DuckDB instead of a string copy of it in memory.
"""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from graphrag_assets.core.settings import PruneSettings
from graphrag_assets.index import nlp_graph
from graphrag_assets.index.graph_checks import check_graph
from graphrag_assets.storage.corpus import (
    BATCHES_LIMIT_ROWS,
    BATCHES_MEMORY_LIMIT,
    STAGE_MEMORY_LIMIT,
    batches_memory_limit,
    staged_graph_problems,
    staged_top_rows,
    write_staged_batches,
)
from graphrag_assets.storage.database import connect


def noun_phrase_rows(units: int, phrases_per_unit: int, vocabulary: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    titles = [f"PHRASE {j:04d}" for j in range(vocabulary)]
    pairs = [(f"u{i:05d}", t) for i in range(units) for t in rng.sample(titles, phrases_per_unit)]
    return pl.DataFrame(
        {
            "text_unit_id": [u for u, _ in pairs],
            "record_type": ["noun_phrase"] * len(pairs),
            "title": [t for _, t in pairs],
        }
    )


def test_pairs_are_made_one_source_range_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy's allocations while coding the graph stay far below one 8-byte key per pair of the
    corpus (what sorting every pair at once takes, with its sort order: over 16 bytes a pair)."""
    rows = noun_phrase_rows(units=1500, phrases_per_unit=30, vocabulary=200, seed=3)
    monkeypatch.setattr(nlp_graph, "PAIR_BATCH_ROWS", 5_000)
    tracemalloc.start()
    try:
        graph = nlp_graph.code_noun_graph(rows)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    pairs = len(graph.pair_units)
    assert pairs == 1500 * 30 * 29 // 2
    kept = sum(a.nbytes for a in (graph.source, graph.target, graph.raw_weight, graph.weight, graph.pair_units))
    assert graph.pair_units.dtype == np.int32 and graph.source.dtype == np.int32
    assert peak - kept < 8 * pairs, (peak, kept, pairs)
    # and the ranges change nothing
    monkeypatch.setattr(nlp_graph, "PAIR_BATCH_ROWS", 10**9)
    whole = nlp_graph.code_noun_graph(rows)
    for name in ("source", "target", "raw_weight", "weight", "pair_units"):
        assert np.array_equal(getattr(whole, name), getattr(graph, name)), name


def test_source_ranges_cover_every_node_in_order_within_the_budget() -> None:
    nodes = np.array([0, 0, 1, 2, 2, 2, 5, 7])
    count = np.array([3, 9, 2, 1, 1, 1, 4, 0])  # pairs per mention row: node 0 has 12, node 2 has 3
    ranges = nlp_graph.source_ranges(nodes, count, n_nodes=8, budget=5)
    assert ranges[0] == (0, 1)  # over the budget alone
    assert [lo for lo, _ in ranges[1:]] == [hi for _, hi in ranges[:-1]] and ranges[-1][1] == 8
    per_node = np.bincount(nodes, weights=count, minlength=8)
    assert all(per_node[lo:hi].sum() <= 5 for lo, hi in ranges[1:])


def test_relationships_are_written_from_the_kept_edges_only(tmp_path: Path) -> None:
    """After pruning the batches hold the kept edges and their units, no mention strings, and
    write the same table as the unpruned graph's masks would."""
    rows = noun_phrase_rows(units=300, phrases_per_unit=12, vocabulary=150, seed=5)
    graph = nlp_graph.code_noun_graph(rows)
    kept = nlp_graph.prune_codes(graph, PruneSettings())
    assert 0 < kept.edges.sum() < graph.edge_count
    expected_entities, expected = nlp_graph.materialize(graph, kept, None)
    part, part_kept = nlp_graph.kept_part(graph, kept)
    entities, batches = nlp_graph.materialize_batches(part, part_kept, None)
    assert batches.graph.edge_count == batches.count == int(kept.edges.sum())
    assert len(batches.graph.pair_units) == int(graph.raw_weight[kept.edges].sum())
    assert batches.graph.mentions.is_empty()
    path = tmp_path / "index.duckdb"
    batches = type(batches)(batches.graph, batches.edges, batches.degree, batch_rows=97)
    assert write_staged_batches(path, "relationships", batches.batches()) == expected.height
    assert entities.equals(expected_entities)
    top = staged_top_rows(
        path, "relationships", ("id", "combined_degree"), "combined_degree desc, human_readable_id", 3
    )
    assert top["combined_degree"].to_list() == expected["combined_degree"].sort(descending=True).head(3).to_list()
    assert staged_graph_problems(path, entities) == {
        "orphan_relationships": [],
        "duplicate_titles": [],
        "entity_degree_mismatches": [],
        "relationship_degree_mismatches": [],
    }


def test_written_graph_checks_find_what_check_graph_finds(tmp_path: Path) -> None:
    """The DuckDB checks of the written table report exactly what the in-memory checks report."""
    entities = pl.DataFrame(
        {"title": ["A", "B", "C", "C", "D"], "degree": [2, 2, 1, 1, 5]},
    )
    relationships = pl.DataFrame(
        {
            "id": ["r1", "r2", "r3", "r4", "r5"],
            "source": ["A", "A", "B", "A", "B"],
            "target": ["B", "C", "X", "B", "A"],  # X is no entity; A-B three times, once reversed
            "combined_degree": [4, 3, 2, 9, 4],
        }
    )
    path = tmp_path / "index.duckdb"
    write_staged_batches(path, "relationships", [relationships.head(2), relationships.tail(3)])
    problems = staged_graph_problems(path, entities)
    report = check_graph(entities, relationships)
    assert problems["orphan_relationships"] == report.orphan_relationships == ["r3"]
    assert problems["duplicate_titles"] == report.duplicate_titles == ["C"]
    mismatches = problems["entity_degree_mismatches"] + problems["relationship_degree_mismatches"]
    assert mismatches == report.degree_mismatches
    assert "D" in mismatches and "r4" in mismatches


def test_relationship_batches_leave_the_file_checkpointed_under_the_low_limit(tmp_path: Path) -> None:
    """The nlp graph's relationships are moved into the file while the low memory limit holds: the
    checkpoint a close would otherwise do later, without a limit, was +350 MB for 1.7M rows (the
    30 MB text file's graph step and the peak of its index)."""
    path = tmp_path / "graph.duckdb"
    rows = pl.DataFrame({"id": [f"relationship-{i}" for i in range(40_000)], "description": ["x" * 40] * 40_000})
    with connect(path) as held:  # keeps the instance open, as the next step of an index would
        written = write_staged_batches(
            path, "relationships", [rows.slice(0, 20_000), rows.slice(20_000)], BATCHES_MEMORY_LIMIT, checkpoint=True
        )
        wal = path.with_name(path.name + ".wal")
        assert written == rows.height
        assert not wal.exists() or wal.stat().st_size == 0, "the written rows are still only in the WAL"
        assert held.execute("select count(*) from _staged_relationships").fetchone()[0] == rows.height


def test_only_a_small_graph_writes_its_relationships_under_the_low_limit() -> None:
    """The low limit keeps a 30 MB text file's index (1.7 M relationships) under its memory target;
    past BATCHES_LIMIT_ROWS it would only slow the write, the step's peak being elsewhere."""
    assert batches_memory_limit(1_700_000) == BATCHES_MEMORY_LIMIT
    assert batches_memory_limit(BATCHES_LIMIT_ROWS) == BATCHES_MEMORY_LIMIT
    assert batches_memory_limit(BATCHES_LIMIT_ROWS + 1) == STAGE_MEMORY_LIMIT != BATCHES_MEMORY_LIMIT
