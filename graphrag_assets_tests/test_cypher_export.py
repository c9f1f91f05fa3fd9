"""``export --format cypher`` and ``--load``: the statements, and a round trip through a real FalkorDB.

The sample corpus indexed with the standard (scripted-model) method is exported and loaded into
the FalkorDB server the suite starts; Cypher queries on the loaded graph must give the counts,
degrees, memberships and community hierarchy DuckDB holds. The written ``graph.cypher`` file is
also run statement by statement, as a user would, and must build the same graph.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.interop.commands import export_index
from graphrag_assets.interop.cypher import (
    StatementGroup,
    cypher_literal,
    query_names,
    render_statements,
)
from graphrag_assets.interop.cypher_load import GraphTarget, load_graph, parse_target
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.graph_fixtures import free_port

GRAPH = "roundtrip"


def cypher_rows(graph, text: str, params: dict | None = None) -> list[dict]:
    result = graph.query(text, params)
    names = [name for _, name in result.header]
    return [dict(zip(names, row)) for row in result.result_set]


def run_cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --- literals and statements ---------------------------------------------------------------------


TRICKY = [
    "plain",
    "it's",
    'say "hi"',
    "back\\slash",
    "line\nbreak\r\n",
    "tab\there",
    "\b\f",
    "Søren Holm — 中文 😀",
    "'; MATCH (n) DETACH DELETE n //",
    "\x01\x1f control",
    "ends with backslash\\",
]


def test_literals_read_back_equal_in_falkordb(falkordb_server) -> None:
    graph = falkordb_server.client().select_graph("literals")
    for text in TRICKY:
        assert cypher_rows(graph, f"RETURN {cypher_literal(text)} AS v")[0]["v"] == text
    value = {"i": -3, "f": 2.5, "b": True, "n": None, "l": ["a", "b"], "odd key": 1, "e": 1e-05}
    assert cypher_rows(graph, f"RETURN {cypher_literal(value)} AS v")[0]["v"] == value
    assert cypher_literal(float("nan")) == "null" and cypher_literal(math.inf) == "null"
    assert cypher_literal("a\x00b") == "'ab'"  # NUL has no place in a property


def test_statements_are_batched_by_rows_and_size() -> None:
    rows = [{"id": str(i), "text": "x" * 100} for i in range(12)]
    group = StatementGroup("Thing", "CREATE (n:Thing) SET n = row", rows)
    assert len(render_statements([group], max_rows=5, max_chars=10**6)) == 3
    by_size = render_statements([group], max_rows=100, max_chars=400)
    assert len(by_size) == 4  # three rows of ~120 characters each fit under 400
    assert all(s.startswith("UNWIND [\n") and s.endswith("] AS row\nCREATE (n:Thing) SET n = row") for s in by_size)
    assert render_statements([StatementGroup("Thing", "CREATE (n)", [])]) == []


def test_load_targets_parse_and_refuse_other_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_target("falkordb://db.local") == GraphTarget("falkordb", "db.local", 6379, "graphrag")
    assert parse_target("falkordb://u:p%40ss@127.0.0.1:7000/my%20graph") == GraphTarget(
        "falkordb", "127.0.0.1", 7000, "my graph", "u", "p@ss"
    )
    monkeypatch.setenv("NEO4J_USERNAME", "neo")
    monkeypatch.setenv("NEO4J_PASSWORD", "secret")
    assert parse_target("bolt://h") == GraphTarget("bolt", "h", 7687, None, "neo", "secret")
    assert parse_target("neo4j://h:1234/films").name == "films"
    with pytest.raises(UserError, match="give falkordb://HOST:PORT"):
        parse_target("redis://h:1")
    with pytest.raises(UserError, match="not a number"):
        parse_target("falkordb://h:99999")


# --- the round trip ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(standard_index: Path, falkordb_server, tmp_path_factory: pytest.TempPathFactory):
    """The standard index exported with the CLI and loaded into FalkorDB graph ``roundtrip``."""
    out = tmp_path_factory.mktemp("cypher") / "export"
    result = run_cli(
        "export",
        str(out),
        "--format",
        "cypher",
        "--root",
        str(standard_index),
        "--load",
        f"{falkordb_server.url}/{GRAPH}",
        "--json",
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    graph = falkordb_server.client().select_graph(GRAPH)
    return standard_index, out, report, graph


def count(root: Path, sql: str) -> int:
    return query_db(root, sql)[0][0]


def test_load_reports_what_it_created(loaded, falkordb_server) -> None:
    root, out, report, graph = loaded
    nodes = sum(report["rows"][label] for label in ("Entity", "Community", "Report", "TextUnit", "Document"))
    assert report["loaded"]["nodes"] == nodes
    assert report["loaded"]["relationships"] == sum(
        report["rows"][t] for t in ("RELATED", "IN_COMMUNITY", "PARENT_OF", "HAS_REPORT", "MENTIONED_IN", "PART_OF")
    )
    assert report["loaded"]["target"] == f"{falkordb_server.url}/{GRAPH}"
    assert sorted(p.name for p in (out / "queries").iterdir()) == query_names()
    assert {"schema.cypher", "graph.cypher", "README.txt"} <= {p.name for p in out.iterdir()}


def test_node_and_relationship_counts_match_duckdb(loaded) -> None:
    root, _, _, graph = loaded
    labels = {r["label"]: r["n"] for r in cypher_rows(graph, "MATCH (n) RETURN labels(n)[0] AS label, count(n) AS n")}
    assert labels == {
        "Entity": count(root, "select count(*) from entities"),
        "Community": count(root, "select count(*) from communities"),
        "Report": count(root, "select count(*) from community_reports"),
        "TextUnit": count(root, "select count(*) from text_units"),
        "Document": count(root, "select count(*) from documents"),
    }
    types = {r["t"]: r["n"] for r in cypher_rows(graph, "MATCH ()-[r]->() RETURN type(r) AS t, count(r) AS n")}
    assert types == {
        "RELATED": count(root, "select count(*) from relationships"),
        "IN_COMMUNITY": count(root, "select count(*) from (select unnest(entity_ids) from communities)"),
        "PARENT_OF": count(root, "select count(*) from communities where parent >= 0"),
        "HAS_REPORT": count(root, "select count(*) from community_reports"),
        "MENTIONED_IN": count(root, "select count(*) from (select distinct id, unnest(text_unit_ids) from entities)"),
        "PART_OF": count(root, "select count(*) from text_units"),
    }
    typed = {
        r["type"]: r["n"] for r in cypher_rows(graph, "MATCH (e:Entity:PERSON) RETURN e.type AS type, count(e) AS n")
    }
    assert typed == {"PERSON": count(root, "select count(*) from entities where type = 'PERSON'")}


def test_degrees_and_relationship_ends_match_duckdb(loaded) -> None:
    root, _, _, graph = loaded
    degrees = {
        r["id"]: (r["degree"], r["stored"])
        for r in cypher_rows(
            graph,
            "MATCH (e:Entity) OPTIONAL MATCH (e)-[r:RELATED]-(:Entity) "
            "RETURN e.id AS id, count(r) AS degree, e.degree AS stored",
        )
    }
    assert {k: v[0] for k, v in degrees.items()} == dict(query_db(root, "select id, degree from entities"))
    assert all(counted == stored for counted, stored in degrees.values())
    ends = {
        (r["s"], r["t"], r["w"])
        for r in cypher_rows(
            graph, "MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.title AS s, b.title AS t, r.weight AS w"
        )
    }
    expected = set(query_db(root, "select source, target, weight from relationships"))
    assert {(s, t) for s, t, _ in ends} == {(s, t) for s, t, _ in expected}
    weights = {(s, t): w for s, t, w in expected}
    assert all(w == pytest.approx(weights[(s, t)], rel=1e-12) for s, t, w in ends)


def test_community_hierarchy_and_memberships_match_duckdb(loaded) -> None:
    root, _, _, graph = loaded
    parents = {
        (r["p"], r["c"])
        for r in cypher_rows(
            graph, "MATCH (p:Community)-[:PARENT_OF]->(c:Community) RETURN p.community AS p, c.community AS c"
        )
    }
    assert parents == set(query_db(root, "select parent, community from communities where parent >= 0"))
    assert not cypher_rows(
        graph, "MATCH (p:Community)-[:PARENT_OF]->(c:Community) WHERE c.level <> p.level + 1 RETURN c"
    )
    members = {
        (r["c"], r["level"]): r["n"]
        for r in cypher_rows(
            graph,
            "MATCH (e:Entity)-[m:IN_COMMUNITY]->(c:Community) WHERE m.level = c.level "
            "RETURN c.community AS c, c.level AS level, count(DISTINCT e) AS n",
        )
    }
    assert members == {
        (c, level): size for c, level, size in query_db(root, "select community, level, size from communities")
    }
    # one community per entity per level, and children hold exactly their parent's members
    assert not cypher_rows(
        graph,
        "MATCH (e:Entity)-[m:IN_COMMUNITY]->(:Community) WITH e, m.level AS l, count(*) AS n WHERE n > 1 RETURN e",
    )
    assert not cypher_rows(
        graph,
        "MATCH (p:Community)-[:PARENT_OF]->(c:Community)<-[:IN_COMMUNITY]-(e:Entity) "
        "WHERE NOT (e)-[:IN_COMMUNITY]->(p) RETURN e",
    )
    reports = {
        (r["c"], r["title"])
        for r in cypher_rows(
            graph, "MATCH (c:Community)-[:HAS_REPORT]->(r:Report) RETURN c.community AS c, r.title AS title"
        )
    }
    assert reports == set(query_db(root, "select community, title from community_reports"))


def test_text_unit_mentions_keep_their_position(loaded) -> None:
    root, _, _, graph = loaded
    positions = {
        (r["e"], r["t"]): r["p"]
        for r in cypher_rows(
            graph, "MATCH (e:Entity)-[m:MENTIONED_IN]->(t:TextUnit) RETURN e.id AS e, t.id AS t, m.position AS p"
        )
    }
    expected = {}
    for entity, units in query_db(root, "select id, text_unit_ids from entities"):
        for position, unit in enumerate(units):
            expected.setdefault((entity, unit), position)
    assert positions == expected
    texts = dict(query_db(root, "select id, text from text_units"))
    assert {
        r["id"]: r["text"] for r in cypher_rows(graph, "MATCH (t:TextUnit) RETURN t.id AS id, t.text AS text")
    } == texts


def test_the_written_file_builds_the_same_graph(loaded, falkordb_server) -> None:
    _, out, report, graph = loaded
    copy = falkordb_server.client().select_graph("from_file")
    text = (out / "schema.cypher").read_text(encoding="utf-8") + (out / "graph.cypher").read_text(encoding="utf-8")
    statements = [
        s
        for s in text.split(";\n\n")
        if s.strip() and not all(line.startswith("//") for line in s.strip().splitlines())
    ]
    assert len(statements) == report["loaded"]["statements"]
    for statement in statements:
        copy.query(statement)
    query = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN labels(n) AS l, n.id AS id, type(r) AS t, count(r) AS n ORDER BY id, t"
    assert cypher_rows(copy, query) == cypher_rows(graph, query)
    copy.delete()


def test_loading_again_needs_force_and_replaces(loaded, falkordb_server, tmp_path: Path) -> None:
    root, _, report, graph = loaded
    target = f"{falkordb_server.url}/{GRAPH}"
    refused = run_cli("export", str(tmp_path / "a"), "--format", "cypher", "--root", str(root), "--load", target)
    assert (
        refused.exit_code == 1 and f"graph '{GRAPH}' already exists" in refused.output and "--force" in refused.output
    )
    again = run_cli(
        "export", str(tmp_path / "b"), "--format", "cypher", "--root", str(root), "--load", target, "--force"
    )
    assert again.exit_code == 0, again.output
    assert f"loaded into {target}: {report['loaded']['nodes']:,} nodes" in again.output
    assert cypher_rows(graph, "MATCH (n) RETURN count(n) AS n")[0]["n"] == report["loaded"]["nodes"]


def test_a_failed_load_leaves_no_graph(falkordb_server) -> None:
    target = parse_target(f"{falkordb_server.url}/broken")
    with pytest.raises(UserError, match=r"refused statement 3 of 3 .*'broken' was deleted"):
        load_graph(
            target,
            ["CREATE INDEX FOR (n:Entity) ON (n.id)"],
            ["CREATE (:Entity {id: 'a'})", "THIS IS NOT CYPHER"],
            force=False,
        )
    assert "broken" not in falkordb_server.client().list_graphs()


def test_unreachable_targets_get_one_clear_sentence(standard_index: Path, tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    result = run_cli(
        "export",
        str(tmp_path / "f"),
        "--format",
        "cypher",
        "--root",
        str(standard_index),
        "--load",
        f"falkordb://127.0.0.1:{port}",
    )
    assert result.exit_code == 1
    assert f"could not connect to FalkorDB at 127.0.0.1:{port}" in result.output and "Traceback" not in result.output
    # bolt:// goes through the real neo4j driver; no Neo4j server runs here, so only this path is tested
    result = run_cli(
        "export",
        str(tmp_path / "n"),
        "--format",
        "cypher",
        "--root",
        str(standard_index),
        "--load",
        f"bolt://127.0.0.1:{port}",
    )
    assert result.exit_code == 1
    assert f"could not connect to Neo4j at 127.0.0.1:{port}" in result.output and "Traceback" not in result.output


def test_load_is_for_the_cypher_format_only(standard_index: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--load works with --format cypher only"):
        export_index(load_settings(standard_index), "graphml", tmp_path / "g", load="falkordb://127.0.0.1:1")
