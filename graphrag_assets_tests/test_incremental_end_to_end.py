"""Add, change and delete documents with the standard method: rows in DuckDB and LanceDB, and the
model calls each step costs (counted by the scripted server)."""

from pathlib import Path

import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE, table_ids
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.conftest import make_llm_project

EXTRACT = "You are helping to build a knowledge graph"


def extraction_calls(server, since: int) -> int:
    return sum(
        1 for call in server.calls("chat")[since:] if str(call["body"]["messages"][0]["content"]).startswith(EXTRACT)
    )


def lance_matches_duckdb(root: Path) -> None:
    lance = root / "data" / "lancedb"
    assert table_ids(lance, TEXT_UNIT_TABLE) == sorted(r[0] for r in query_db(root, "select id from text_units"))
    assert table_ids(lance, ENTITY_TABLE) == sorted(r[0] for r in query_db(root, "select id from entities"))
    assert table_ids(lance, REPORT_TABLE) == sorted(r[0] for r in query_db(root, "select id from community_reports"))


@pytest.fixture
def server():
    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    started = ScriptedOpenAIServer.start(responder="graphrag_assets_testkit.graphrag_responder:respond")
    yield started
    started.stop()


def test_add_change_delete(server, tmp_path: Path) -> None:
    root = make_llm_project(
        tmp_path / "project", server.base_url, with_sample=False, extra="storage:\n  lancedb_tables: always\n"
    )
    inputs = root / "data" / "input"
    (inputs / "coop.txt").write_text(
        "Marta Quell chairs the Vellmouth Fishing Cooperative. Rafael Duarte fishes for it.", encoding="utf-8"
    )
    (inputs / "light.txt").write_text(
        "Søren Holm keeps the Kestrel Point Lighthouse. Mira Santos visits Søren Holm.", encoding="utf-8"
    )
    first = index_project(load_settings(root))
    assert first.success and extraction_calls(server, 0) == 4  # two one-chunk documents: call + gleaning each
    lance_matches_duckdb(root)

    # add
    mark = len(server.calls("chat"))
    (inputs / "port.txt").write_text(
        "Lucien Marchetti runs Auberon Freight Lines. Helga Brandt meets Lucien Marchetti.", encoding="utf-8"
    )
    added = index_project(load_settings(root))
    assert added.changes.new == ["port.txt"] and extraction_calls(server, mark) == 2
    assert added.usage["extract_graph"] == {**added.usage["extract_graph"], "calls": 2, "cached": 0}
    assert query_db(root, "select count(distinct document_key) from text_units") == [(3,)]
    assert "LUCIEN MARCHETTI" in {r[0] for r in query_db(root, "select title from entities")}
    lance_matches_duckdb(root)

    # change
    mark = len(server.calls("chat"))
    (inputs / "light.txt").write_text(
        "Søren Holm retired. Piet Oduya now keeps the Kestrel Point Lighthouse.", encoding="utf-8"
    )
    changed = index_project(load_settings(root))
    assert changed.changes.changed == ["light.txt"] and extraction_calls(server, mark) == 2
    titles = {r[0] for r in query_db(root, "select title from entities")}
    assert "PIET ODUYA" in titles and "MIRA SANTOS" not in titles
    lance_matches_duckdb(root)

    # delete
    mark = len(server.calls("chat"))
    units_before = query_db(root, "select count(*) from text_units")[0][0]
    (inputs / "port.txt").unlink()
    deleted = index_project(load_settings(root))
    assert deleted.changes.deleted == ["port.txt"] and extraction_calls(server, mark) == 0
    assert deleted.deleted_rows["text_units"] == 1 and deleted.deleted_rows[f"lancedb:{TEXT_UNIT_TABLE}"] == 1
    assert query_db(root, "select count(*) from text_units")[0][0] == units_before - 1
    assert "LUCIEN MARCHETTI" not in {r[0] for r in query_db(root, "select title from entities")}
    assert query_db(root, "select count(*) from graph_extractions where document_key = 'port.txt'") == [(0,)]
    lance_matches_duckdb(root)

    # nothing changed: no run, no call
    mark = len(server.calls())
    assert index_project(load_settings(root)).runs == [] and len(server.calls()) == mark


def test_claims_are_extracted_into_covariates_when_enabled(server, tmp_path: Path) -> None:
    root = make_llm_project(
        tmp_path / "project", server.base_url, with_sample=False, extra="extraction:\n  claims:\n    enabled: true\n"
    )
    (root / "data" / "input" / "court.txt").write_text(
        "Marta Quell sued Auberon Freight Lines in November. Judge Amara Okafor ordered mediation.", encoding="utf-8"
    )
    assert index_project(load_settings(root)).success
    claims = query_db(root, "select subject_id, object_id, type, status from covariates order by 1")
    assert ("MARTA QUELL", "AUBERON FREIGHT LINES", "SUED", "TRUE") in claims
    assert query_db(root, "select count(*) from covariates where text_unit_id not in (select id from text_units)") == [
        (0,)
    ]


def test_fast_method_builds_a_noun_phrase_graph_with_model_reports(server, tmp_path: Path) -> None:
    root = make_llm_project(tmp_path / "project", server.base_url)
    text = (root / "graphrag.yaml").read_text(encoding="utf-8").replace("method: standard", "method: fast")
    (root / "graphrag.yaml").write_text(text, encoding="utf-8")
    assert index_project(load_settings(root)).success
    assert extraction_calls(server, 0) == 0  # no model extraction
    assert query_db(root, "select distinct type from entities") == [("NOUN PHRASE",)]
    (reports, llm) = query_db(
        root, "select count(*), count(*) filter (where generation = 'llm') from community_reports"
    )[0]
    assert reports > 0 and llm == reports
    report_calls = [c for c in server.calls("chat") if "-----Sources-----" in str(c["body"]["messages"])]
    assert len(report_calls) >= reports
