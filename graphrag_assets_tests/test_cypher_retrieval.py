"""The shipped retrieval queries (``interop/cypher_queries/*.cypher``) on the loaded graph return the
records our engines rank, in the same order.

For a few questions, local search runs as the CLI runs it (scripted model, LanceDB vectors); the
entities it mapped are given to the Cypher queries, whose rows must equal the full rankings of
``rank_reports``, ``rank_relationships`` and ``rank_text_units`` (the Microsoft-style ranking), and
whose first rows must be the records the answer's context kept. Global search's map input must
equal ``reports_at_level`` with ``occurrence_weights`` at every level. On Microsoft's own index
(when ../shared is there) the same holds once the relationships whose end is no entity, which the
graph cannot hold, are left out of the engine's input.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.interop.commands import export_index, import_index
from graphrag_assets.interop.cypher import query_text
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.project.querying import answer_question
from graphrag_assets.query.global_search import occurrence_weights, reports_at_level
from graphrag_assets.query.local_search import rank_relationships, rank_reports, rank_text_units
from graphrag_assets.query.request import QueryOptions
from graphrag_assets_testkit.shared_data import MS_VERBS_DATA, require
from graphrag_assets_tests.test_cypher_export import cypher_rows

QUESTIONS = (
    "Who is Søren Holm, and what did he do during Storm Odile?",
    "What did the Vellmouth Fishing Cooperative claim against Auberon Freight Lines?",
    "Who paid for the reef restoration?",
)


@pytest.fixture(scope="module")
def graph_and_data(standard_index: Path, falkordb_server, tmp_path_factory: pytest.TempPathFactory):
    # The Cypher queries reproduce Microsoft's ordering (query.local.ranking: msgraphrag), not the
    # personalized-PageRank one.
    settings = load_settings(standard_index, overrides={"query": {"local": {"ranking": "msgraphrag"}}})
    export_index(
        settings, "cypher", tmp_path_factory.mktemp("retrieval") / "out", load=f"{falkordb_server.url}/retrieval"
    )
    return settings, falkordb_server.client().select_graph("retrieval"), load_query_data(settings)


def ids(rows: list[dict]) -> list[str]:
    return [r["id"] for r in rows]


@pytest.mark.parametrize("question", QUESTIONS)
def test_local_queries_rank_like_local_search(graph_and_data, question: str) -> None:
    settings, graph, data = graph_and_data
    result = answer_question(settings, question, QueryOptions("local"))
    titles = result.details["mapped_entities"]
    assert len(titles) >= 3
    by_title = dict(data.entities.select("title", "id").iter_rows())
    entity_ids = [by_title[t] for t in titles]
    mapped = (
        data.entities.filter(pl.col("id").is_in(entity_ids))
        .with_columns(
            pl.col("id").replace_strict({e: i for i, e in enumerate(entity_ids)}, return_dtype=pl.Int64).alias("_o")
        )
        .sort("_o")
        .drop("_o")
    )
    top_k = settings.query.local.top_k_relationships
    records = result.context_records

    entities = cypher_rows(graph, query_text("local_entities.cypher"), {"entity_ids": entity_ids})
    assert [r["title"] for r in entities] == titles
    assert ids(entities)[: len(records.entities)] == records.ids("entities")

    for level in (None, 0, 1):
        reports = cypher_rows(
            graph, query_text("local_reports.cypher"), {"entity_ids": entity_ids, "community_level": level}
        )
        assert ids(reports) == rank_reports(entity_ids, data.communities, data.community_reports, level)["id"].to_list()
        if level is None:
            assert ids(reports)[: len(records.reports)] == records.ids("reports")

    inside = cypher_rows(graph, query_text("local_relationships_inside.cypher"), {"entity_ids": entity_ids})
    outside = cypher_rows(
        graph,
        query_text("local_relationships_outside.cypher"),
        {"entity_ids": entity_ids, "top_k_relationships": top_k},
    )
    ranked = rank_relationships(titles, data.relationships, top_k)
    assert ids(inside) + ids(outside) == ranked["id"].to_list()
    assert [(r["source"], r["target"]) for r in inside + outside] == ranked.select("source", "target").rows()
    assert (ids(inside) + ids(outside))[: len(records.relationships)] == records.ids("relationships")
    assert outside, "the questions should reach outside their mapped entities"
    # a tighter cap cuts the outside part only
    capped = cypher_rows(
        graph, query_text("local_relationships_outside.cypher"), {"entity_ids": entity_ids, "top_k_relationships": 1}
    )
    assert ids(capped) == rank_relationships(titles, data.relationships, 1)["id"].to_list()[len(inside) :]

    units = cypher_rows(graph, query_text("local_text_units.cypher"), {"entity_ids": entity_ids})
    assert ids(units) == rank_text_units(mapped, data.relationships, data.text_units)["id"].to_list()
    assert ids(units)[: len(records.sources)] == records.ids("sources")
    assert records.sources and records.relationships and records.reports  # the prefixes compared above are not empty


def test_queries_with_no_entities_return_nothing(graph_and_data) -> None:
    _, graph, _ = graph_and_data
    params = {"entity_ids": [], "community_level": None, "top_k_relationships": 10}
    for name in (
        "local_entities.cypher",
        "local_reports.cypher",
        "local_relationships_inside.cypher",
        "local_relationships_outside.cypher",
        "local_text_units.cypher",
    ):
        assert cypher_rows(graph, query_text(name), params) == [], name


def test_global_map_input_matches_global_search(graph_and_data) -> None:
    _, graph, data = graph_and_data
    levels = sorted(set(data.communities["level"].to_list()))
    assert len(levels) >= 2
    for level in levels:
        reports = reports_at_level(data.communities, data.community_reports, level)
        weights = occurrence_weights(data.communities, data.entities, reports["community"].to_list())
        rows = cypher_rows(graph, query_text("global_map_input.cypher"), {"community_level": level})
        assert ids(rows) == reports["id"].to_list(), level
        assert [r["occurrence_weight"] for r in rows] == pytest.approx(
            [round(weights[c], 4) for c in reports["community"]]
        )
        assert [r["full_content"] for r in rows] == reports["full_content"].to_list()


# --- Microsoft's own index of A Christmas Carol (4 levels, 122 communities), when ../shared is there


@pytest.fixture(scope="module")
def carol(falkordb_server, tmp_path_factory: pytest.TempPathFactory):
    require(MS_VERBS_DATA)
    root = tmp_path_factory.mktemp("carol") / "project"
    root.mkdir()
    settings = load_settings(root, environ={})
    import_index(settings, "msgraphrag", MS_VERBS_DATA)
    result = export_index(settings, "cypher", root / "cypher", load=f"{falkordb_server.url}/carol")
    return result, falkordb_server.client().select_graph("carol"), load_query_data(settings)


def test_queries_on_microsofts_index_differ_only_by_relationships_to_missing_entities(carol) -> None:
    result, graph, data = carol
    # MS's index has relationships whose end is no entity; the graph cannot hold them (and says so)
    titles = set(data.entities["title"].to_list())
    linked = data.relationships.filter(pl.col("source").is_in(titles) & pl.col("target").is_in(titles))
    dangling = data.relationships.height - linked.height
    assert dangling > 0 and result.warnings == [
        f"{dangling} relationship(s) name an entity that does not exist and were left out."
    ]
    by_degree = data.entities.sort(["degree", "human_readable_id"], descending=[True, False])["id"].to_list()
    for start in (0, 20, 100, len(by_degree) - 10):
        entity_ids = by_degree[start : start + 10]
        mapped = (
            data.entities.filter(pl.col("id").is_in(entity_ids))
            .with_columns(
                pl.col("id").replace_strict({e: i for i, e in enumerate(entity_ids)}, return_dtype=pl.Int64).alias("_o")
            )
            .sort("_o")
            .drop("_o")
        )
        for level in (None, 1):
            reports = cypher_rows(
                graph, query_text("local_reports.cypher"), {"entity_ids": entity_ids, "community_level": level}
            )
            assert (
                ids(reports)
                == rank_reports(entity_ids, data.communities, data.community_reports, level)["id"].to_list()
            )
        params = {"entity_ids": entity_ids, "top_k_relationships": 3}
        relationships = ids(cypher_rows(graph, query_text("local_relationships_inside.cypher"), params)) + ids(
            cypher_rows(graph, query_text("local_relationships_outside.cypher"), params)
        )
        assert relationships == rank_relationships(mapped["title"].to_list(), linked, 3)["id"].to_list()
        units = cypher_rows(graph, query_text("local_text_units.cypher"), params)
        assert ids(units) == rank_text_units(mapped, linked, data.text_units)["id"].to_list()
    for level in range(4):
        reports = reports_at_level(data.communities, data.community_reports, level)
        assert (
            ids(cypher_rows(graph, query_text("global_map_input.cypher"), {"community_level": level}))
            == reports["id"].to_list()
        )
