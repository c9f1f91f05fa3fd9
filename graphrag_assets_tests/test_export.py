"""Export to MS GraphRAG v3 parquet + LanceDB, GraphML and Neo4j CSV.

Hand-made frames check the conversions exactly; one project indexed with the offline nlp method
(embeddings from the scripted OpenAI-compatible server, so Microsoft's query API can embed its
questions with the same model) checks the files. The last test runs Microsoft GraphRAG's own
``graphrag.api`` query functions on the export, in the interpreter named by
``GRAPHRAG_MS_PYTHON`` (a venv with ``graphrag==3.3.0``); it is skipped when there is none.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.interop.commands import export_index
from graphrag_assets.interop.common import entity_communities, prepare_output_dir
from graphrag_assets.interop.graphml import graph_tables, graphml_tree
from graphrag_assets.interop.msgraphrag import MS_SCHEMAS, ms_community_reports, ms_text_units, raw_data_column
from graphrag_assets.interop.neo4j import label_for_type, node_frames, relationship_frames
from graphrag_assets_testkit.projects import REPO, make_project
from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer
from graphrag_assets_testkit.shared_data import MS_VERBS_DATA, require

EMBEDDING_DIM = 64
MS_PYTHON = Path(os.environ.get("GRAPHRAG_MS_PYTHON", REPO / "bench" / ".msvenv" / "bin" / "python"))
RUNNER = Path(__file__).with_name("msgraphrag_runner.py")


def frame(schema: dict, rows: list[dict]) -> pl.DataFrame:
    return schemas.conform(pl.DataFrame(rows, schema={k: schema[k] for k in rows[0]} if rows else None), schema)


# --- pure conversions ---------------------------------------------------------------------------


def test_ms_text_units_renumber_densely_and_collect_extracted_ids() -> None:
    documents = frame(
        schemas.DOCUMENTS,
        [
            {"id": "doc-b", "human_readable_id": 0, "title": "b", "path": "b.txt"},
            {"id": "doc-a2", "human_readable_id": 1, "title": "a2", "path": "a.jsonl"},
            {"id": "doc-a1", "human_readable_id": 0, "title": "a1", "path": "a.jsonl"},
        ],
    )
    text_units = frame(
        schemas.TEXT_UNITS,
        [
            {
                "id": "u-b0",
                "human_readable_id": 0,
                "text": "b0",
                "n_tokens": 1,
                "document_id": "doc-b",
                "chunk_index": 0,
            },
            {
                "id": "u-a2",
                "human_readable_id": 0,
                "text": "a2",
                "n_tokens": 1,
                "document_id": "doc-a2",
                "chunk_index": 0,
            },
            {
                "id": "u-a1-1",
                "human_readable_id": 1,
                "text": "a11",
                "n_tokens": 1,
                "document_id": "doc-a1",
                "chunk_index": 1,
            },
            {
                "id": "u-a1-0",
                "human_readable_id": 0,
                "text": "a10",
                "n_tokens": 1,
                "document_id": "doc-a1",
                "chunk_index": 0,
            },
        ],
    )
    entities = frame(
        schemas.ENTITIES,
        [
            {"id": "e1", "human_readable_id": 1, "title": "Y", "text_unit_ids": ["u-a1-0", "u-b0", "u-a1-0"]},
            {"id": "e0", "human_readable_id": 0, "title": "X", "text_unit_ids": ["u-a1-0"]},
        ],
    )
    relationships = frame(
        schemas.RELATIONSHIPS,
        [
            {"id": "r0", "human_readable_id": 0, "source": "X", "target": "Y", "text_unit_ids": ["u-a1-0", "u-a2"]},
        ],
    )
    covariates = frame(schemas.COVARIATES, [{"id": "c0", "human_readable_id": 0, "text_unit_id": "u-b0"}])

    result = ms_text_units(text_units, documents, entities, relationships, covariates)

    assert result.columns == MS_SCHEMAS["text_units"].names
    assert result.select("id", "human_readable_id", "document_id").rows() == [
        ("u-a1-0", 0, "doc-a1"),
        ("u-a1-1", 1, "doc-a1"),
        ("u-a2", 2, "doc-a2"),
        ("u-b0", 3, "doc-b"),
    ]
    assert result["entity_ids"].to_list() == [["e0", "e1"], [], [], ["e1"]]
    assert result["relationship_ids"].to_list() == [["r0"], [], ["r0"], []]
    assert result["covariate_ids"].to_list() == [[], [], [], ["c0"]]


def test_ms_reports_keep_ms_columns_and_finding_field_order() -> None:
    reports = frame(
        schemas.COMMUNITY_REPORTS,
        [
            {
                "id": "r",
                "human_readable_id": 3,
                "community": 3,
                "level": 0,
                "parent": -1,
                "children": [4],
                "title": "T",
                "findings": [{"summary": "S1", "explanation": "E1"}],
                "generation": "extractive",
                "context_tokens": 10,
                "substituted_reports": 0,
            }
        ],
    )
    result = ms_community_reports(reports)
    assert result.columns == MS_SCHEMAS["community_reports"].names
    assert result.schema["findings"] == pl.List(pl.Struct({"explanation": pl.String, "summary": pl.String}))
    assert result["findings"].to_list() == [[{"explanation": "E1", "summary": "S1"}]]


def test_raw_data_is_null_typed_for_text_and_a_struct_for_rows() -> None:
    assert raw_data_column([None, None]).type == pa.null()
    column = raw_data_column([None, json.dumps({"id": "x", "title": "T"})])
    assert column.type == pa.struct([("id", pa.string()), ("title", pa.string())])
    assert column.to_pylist() == [None, {"id": "x", "title": "T"}]
    mixed = raw_data_column([json.dumps({"a": 1}), json.dumps({"a": "one"})])
    assert mixed.type == pa.string()  # values cannot share a type: the JSON text is kept


def test_entity_communities_are_deepest_and_level_zero() -> None:
    entities = frame(schemas.ENTITIES, [{"id": "a"}, {"id": "b"}, {"id": "loner"}])
    communities = frame(
        schemas.COMMUNITIES,
        [
            {"id": "c0", "community": 0, "level": 0, "parent": -1, "entity_ids": ["a", "b"]},
            {"id": "c1", "community": 1, "level": 1, "parent": 0, "entity_ids": ["a"]},
            {"id": "c2", "community": 2, "level": 1, "parent": 0, "entity_ids": ["b"]},
            {"id": "c3", "community": 3, "level": 2, "parent": 2, "entity_ids": ["b"]},
        ],
    )
    result = entity_communities(entities, communities).sort("id")
    assert result.rows() == [("a", 1, 1, 0), ("b", 3, 2, 0), ("loner", -1, -1, -1)]


def test_ms_schemas_are_those_of_microsofts_own_index() -> None:
    require(MS_VERBS_DATA)
    for name, schema in MS_SCHEMAS.items():
        theirs = pq.read_schema(MS_VERBS_DATA / f"{name}.parquet").remove_metadata()
        assert schema.equals(theirs), name


# --- GraphML on hand-made frames ----------------------------------------------------------------


def small_graph() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    entities = frame(
        schemas.ENTITIES,
        [
            {
                "id": "ea",
                "human_readable_id": 0,
                "title": "A",
                "type": "PERSON",
                "description": 'Says "<hi>" & \x01waves',
                "degree": 1,
                "frequency": 2,
            },
            {
                "id": "eb",
                "human_readable_id": 1,
                "title": "B",
                "type": "GEO",
                "description": None,
                "degree": 1,
                "frequency": 1,
            },
        ],
    )
    relationships = frame(
        schemas.RELATIONSHIPS,
        [
            {
                "id": "r0",
                "human_readable_id": 0,
                "source": "A",
                "target": "B",
                "description": "near, by",
                "weight": 2.5,
                "combined_degree": 2,
            },
            {
                "id": "r1",
                "human_readable_id": 1,
                "source": "A",
                "target": "GHOST",
                "description": "x",
                "weight": 1.0,
                "combined_degree": 1,
            },
        ],
    )
    communities = frame(
        schemas.COMMUNITIES, [{"id": "c0", "community": 0, "level": 0, "parent": -1, "entity_ids": ["ea", "eb"]}]
    )
    return entities, relationships, communities


def test_graphml_is_valid_xml_with_typed_attributes(tmp_path: Path) -> None:
    import igraph as ig

    nodes, edges, skipped = graph_tables(*small_graph())
    assert skipped == 1
    path = tmp_path / "g.graphml"
    graphml_tree(nodes, edges).write(path, encoding="utf-8", xml_declaration=True)
    tree = ET.parse(path)  # well-formed despite the control character
    edge_ids = [e.get("id") for e in tree.iter("{http://graphml.graphdrawing.org/xmlns}edge")]
    assert edge_ids == ["r0"]  # read with ElementTree: igraph 1.0 reports edge ids wrongly
    graph = ig.Graph.Read_GraphML(str(path))
    assert not graph.is_directed()
    assert graph.vs["id"] == ["ea", "eb"]
    assert graph.vs["description"] == ['Says "<hi>" & waves', ""]
    assert graph.vs["community"] == [0, 0] and graph.vs["level0_community"] == [0, 0]
    assert [
        (graph.vs[e.source]["title"], graph.vs[e.target]["title"], e["weight"], e["description"]) for e in graph.es
    ] == [("A", "B", 2.5, "near, by")]


# --- Neo4j on hand-made frames ------------------------------------------------------------------


def test_neo4j_labels_are_safe() -> None:
    assert label_for_type("person") == "Entity;PERSON"
    assert label_for_type("NOUN PHRASE") == "Entity;NOUN_PHRASE"
    assert label_for_type("3d model") == "Entity;T_3D_MODEL"
    assert label_for_type(None) == "Entity"


def test_neo4j_csv_survives_commas_quotes_and_newlines(tmp_path: Path) -> None:
    entities, relationships, communities = small_graph()
    tricky = 'He said "no, never",\nthen left;\r\nfin'
    entities = entities.with_columns(
        pl.when(pl.col("id") == "eb").then(pl.lit(tricky)).otherwise("description").alias("description")
    )
    tables = {
        "entities": entities,
        "relationships": relationships,
        "communities": communities,
        "community_reports": schemas.empty_frame(schemas.COMMUNITY_REPORTS),
        "text_units": schemas.empty_frame(schemas.TEXT_UNITS),
        "documents": schemas.empty_frame(schemas.DOCUMENTS),
        "covariates": schemas.empty_frame(schemas.COVARIATES),
    }
    nodes = node_frames(tables)
    edges, dropped = relationship_frames(tables)
    assert dropped == 1 and edges["related.csv"].height == 1
    path = tmp_path / "entities.csv"
    nodes["entities.csv"].write_csv(path)
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["description"] for r in rows] == ['Says "<hi>" & \x01waves', tricky]
    assert [r[":LABEL"] for r in rows] == ["Entity;PERSON", "Entity;GEO"]


# --- an indexed project -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    started = ScriptedOpenAIServer.start(
        responder="graphrag_assets_testkit.graphrag_responder:respond", embedding_dim=EMBEDDING_DIM
    )
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, server: ScriptedOpenAIServer):
    """The sample corpus indexed offline (nlp), embedded by the scripted server."""
    from graphrag_assets.pipeline.indexing import IndexOptions, index_project

    root = make_project(tmp_path_factory.mktemp("export") / "project")
    overrides = {"method": "nlp", "llm": {"base_url": server.base_url, "api_key": "test-key", "embeddings": "openai"}}
    settings = load_settings(root, environ={}, overrides=overrides)
    report = index_project(settings, IndexOptions(overrides=overrides))
    assert report.success, report.as_dict()
    return settings


@pytest.fixture(scope="module")
def ms_export(project, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ms") / "export"
    export_index(project, "msgraphrag", out)
    return out


def db_rows(settings, query: str) -> list[tuple]:
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        return conn.sql(query).fetchall()


def count(settings, table: str) -> int:
    return db_rows(settings, f"select count(*) from {table}")[0][0]


def test_msgraphrag_files_have_ms_names_columns_and_types(project, ms_export: Path) -> None:
    written = sorted(p.name for p in ms_export.glob("*.parquet"))
    assert written == sorted(f"{n}.parquet" for n in MS_SCHEMAS if n != "covariates")  # claims are off
    for name in written:
        table = name.removesuffix(".parquet")
        schema = pq.read_schema(ms_export / name).remove_metadata()
        expected = MS_SCHEMAS[table]
        if table == "documents":  # the jsonl/csv rows make raw_data a struct
            assert schema.field("raw_data").type == pa.struct(
                [("id", pa.string()), ("title", pa.string()), ("text", pa.string())]
            )
            schema, expected = schema.remove(6), expected.remove(6)
        assert schema.equals(expected), table
        assert pq.read_metadata(ms_export / name).num_rows == count(project, table)


def test_msgraphrag_ids_are_dense_and_cross_references_hold(project, ms_export: Path) -> None:
    documents = pl.read_parquet(ms_export / "documents.parquet")
    units = pl.read_parquet(ms_export / "text_units.parquet")
    entities = pl.read_parquet(ms_export / "entities.parquet")
    assert documents["human_readable_id"].to_list() == list(range(documents.height))
    assert units["human_readable_id"].to_list() == list(range(units.height))
    paths = dict(db_rows(project, "select id, path from documents"))
    assert [paths[d] for d in units["document_id"]] == sorted(paths[d] for d in units["document_id"])
    assert set(units["id"]) == set(documents["text_unit_ids"].explode().drop_nulls())
    pairs_from_units = set(units.select("id", "entity_ids").explode("entity_ids").drop_nulls().iter_rows())
    pairs_from_entities = {
        (u, e) for e, u in entities.select("id", "text_unit_ids").explode("text_unit_ids").iter_rows()
    }
    assert pairs_from_units == pairs_from_entities and pairs_from_units


def test_msgraphrag_export_is_deterministic(project, ms_export: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    export_index(project, "msgraphrag", again)
    for path in sorted(ms_export.glob("*.parquet")):
        assert (again / path.name).read_bytes() == path.read_bytes(), path.name


def test_msgraphrag_lancedb_tables_use_ms_row_schema(ms_export: Path) -> None:
    import lancedb

    db = lancedb.connect(str(ms_export / "lancedb"))
    for table, source in (
        ("entity_description", "entities"),
        ("text_unit_text", "text_units"),
        ("community_full_content", "community_reports"),
    ):
        arrow = db.open_table(table).to_arrow()
        assert arrow.column_names[:4] == ["id", "vector", "create_date", "update_date"]
        assert "create_date_year" in arrow.column_names
        assert arrow.schema.field("vector").type == pa.list_(pa.float32(), EMBEDDING_DIM)
        assert sorted(arrow.column("id").to_pylist()) == sorted(pl.read_parquet(ms_export / f"{source}.parquet")["id"])


def test_export_refuses_a_non_empty_folder_unless_forced(project, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "covariates.parquet").write_text("stale")
    with pytest.raises(UserError, match="is not empty; .* --force"):
        export_index(project, "msgraphrag", out)
    result = export_index(project, "msgraphrag", out, force=True)
    assert (out / "notes.txt").read_text() == "mine"  # not ours: left alone
    assert not (out / "covariates.parquet").exists()  # ours and now empty: removed
    assert result.rows["entities"] == count(project, "entities")


def test_export_needs_an_index_and_a_known_format(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, environ={})
    with pytest.raises(UserError, match="run 'graphrag-assets index' first"):
        export_index(settings, "graphml", tmp_path / "out")
    with pytest.raises(UserError, match="unknown export format 'gexf'"):
        export_index(settings, "gexf", tmp_path / "out")


def test_prepare_output_dir_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(UserError, match="is a file"):
        prepare_output_dir(target, [], force=True)


def test_graphml_export_reads_back_with_igraph(project, tmp_path: Path) -> None:
    import igraph as ig

    result = export_index(project, "graphml", tmp_path / "g")
    path = tmp_path / "g" / "graph.graphml"
    ET.parse(path)
    graph = ig.Graph.Read_GraphML(str(path))
    assert graph.vcount() == count(project, "entities") == result.rows["nodes"]
    assert graph.ecount() == count(project, "relationships") == result.rows["edges"]
    titles = dict(db_rows(project, "select id, title from entities"))
    assert {v["id"]: v["title"] for v in graph.vs} == titles
    deepest = dict(
        db_rows(
            project,
            """
        select e, arg_max(community, level) from (select unnest(entity_ids) as e, community, level from communities) group by e""",
        )
    )
    assert {v["id"]: int(v["community"]) for v in graph.vs if v["community"] >= 0} == deepest
    weights = {
        frozenset((a, b)): w
        for a, b, w in db_rows(
            project,
            """
            select s.id, t.id, r.weight from relationships r
            join entities s on s.title = r.source join entities t on t.title = r.target""",
        )
    }
    assert {
        frozenset((graph.vs[e.source]["id"], graph.vs[e.target]["id"])): e["weight"] for e in graph.es
    } == pytest.approx(weights)


def test_neo4j_export_files_headers_and_counts(project, tmp_path: Path) -> None:
    out = tmp_path / "neo"
    export_index(project, "neo4j", out)
    expected_headers = {
        "entities.csv": "id:ID(Entity),human_readable_id:long,title,type,description,degree:long,frequency:long,community:long,level0_community:long,:LABEL",
        "related.csv": ":START_ID(Entity),:END_ID(Entity),id,human_readable_id:long,description,weight:double,combined_degree:long,:TYPE",
        "in_community.csv": ":START_ID(Entity),:END_ID(Community),level:long,:TYPE",
        "parent_of.csv": ":START_ID(Community),:END_ID(Community),:TYPE",
        "part_of.csv": ":START_ID(TextUnit),:END_ID(Document),:TYPE",
    }
    for name, header in expected_headers.items():
        assert (out / name).read_text(encoding="utf-8").splitlines()[0] == header

    def rows(name: str) -> list[dict[str, str]]:
        with open(out / name, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    entities = rows("entities.csv")
    descriptions = dict(db_rows(project, "select id, coalesce(description, '') from entities"))
    assert {r["id:ID(Entity)"]: r["description"] for r in entities} == descriptions
    assert any("," in d or '"' in d for d in descriptions.values())  # quoting was exercised
    assert len(rows("related.csv")) == count(project, "relationships")
    assert len(rows("communities.csv")) == count(project, "communities")
    assert len(rows("text_units.csv")) == count(project, "text_units")
    assert len(rows("documents.csv")) == count(project, "documents")
    memberships = db_rows(project, "select count(*) from (select unnest(entity_ids) from communities)")[0][0]
    assert len(rows("in_community.csv")) == memberships
    assert len(rows("parent_of.csv")) == db_rows(project, "select count(*) from communities where parent >= 0")[0][0]
    script = (out / "import.sh").read_text()
    assert "neo4j-admin database import full" in script and "--multiline-fields=true" in script
    for name in ("entities.csv", "communities.csv", "related.csv", "in_community.csv", "parent_of.csv"):
        assert name in script and f"file:///{name}" in (out / "load.cypher").read_text()


# --- Microsoft GraphRAG's own query API on our export --------------------------------------------


def ms_graphrag_python() -> Path:
    if not MS_PYTHON.exists():
        pytest.skip(f"no MS GraphRAG interpreter at {MS_PYTHON} (set GRAPHRAG_MS_PYTHON)")
    probe = subprocess.run([str(MS_PYTHON), "-c", "import graphrag.api"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"graphrag is not importable with {MS_PYTHON}")
    return MS_PYTHON


def test_microsoft_graphrag_queries_our_export(ms_export: Path, server: ScriptedOpenAIServer) -> None:
    python = ms_graphrag_python()
    server.reset()
    # MS's map prompt asks for JSON "points"; answer it like a model would, citing report 0.
    server.add_rule(
        r'"points":\s*\[',
        json.dumps(
            {"points": [{"description": "Marta Quell chairs the fishing cooperative [Data: Reports (0)]", "score": 80}]}
        ),
    )
    completed = subprocess.run(
        [
            str(python),
            str(RUNNER),
            "--data",
            str(ms_export),
            "--base-url",
            server.base_url,
            "--vector-size",
            str(EMBEDDING_DIM),
            "--method",
            "local",
            "--method",
            "global",
            "--method",
            "basic",
            "--query",
            "Who is Marta Quell?",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ms_export,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    output = json.loads(completed.stdout.strip().splitlines()[-1])
    answers = output["answers"]
    reports = pl.read_parquet(ms_export / "community_reports.parquet")
    assert output["rows"]["entities"] == pl.read_parquet(ms_export / "entities.parquet").height
    assert answers["local"]["answer"].strip()
    assert answers["local"]["context"]["entities"] > 0 and answers["local"]["context"]["sources"] > 0
    assert answers["global"]["context"]["reports"] == reports.filter(pl.col("level") <= 2).height
    assert "unable to answer" not in answers["global"]["answer"]
    assert answers["basic"]["context"]["sources"] > 0
    embedded = [c["body"]["input"] for c in server.calls("embeddings")]
    assert embedded  # MS embedded its questions with the scripted model, whose vectors we exported


def test_the_export_command_prints_no_lancedb_log_lines(nlp_index: Path, tmp_path: Path) -> None:
    """LanceDB logs a WARN line for every table it creates; the export creates three."""
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphrag_assets.cli.main",
            "export",
            str(tmp_path / "out"),
            "--format",
            "msgraphrag",
            "--root",
            str(nlp_index),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (
        (tmp_path / "out" / "lancedb").is_dir()
        and "WARN" not in done.stderr
        and "No existing dataset" not in done.stderr
    )
