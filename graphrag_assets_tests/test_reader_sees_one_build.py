"""A reader sees the previous build whole or the new one whole, wherever an update is killed.

An incremental `index` (one document edited, one added, one deleted) is killed with SIGKILL at
each boundary between its steps: after each per-document write and before it is recorded, when
the corpus run starts, while it stages its tables, and inside the publish. After each kill a
reader — the tables and vector indexes a query loads — must find every text unit the graph cites,
with a vector in the LanceDB version the build recorded, and the published tables must equal the
previous build; the next `index` must end equal to a clean build of the new input.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.storage.corpus import vector_versions
from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, lancedb_module
from graphrag_assets_tests.conftest import make_project, query_db
from graphrag_assets_tests.publish_fault import IN_THE_PUBLISH
from graphrag_assets_tests.test_publish_atomicity import NEW_DOCUMENT, _index, published_tables
from graphrag_assets_tests.test_rebuild_equivalence import TABLE_ORDER

# LanceDB tables kept, and queries searching them (not DuckDB's vectors in memory)
SETTINGS = (
    "method: nlp\nllm:\n  embeddings: local\nstorage:\n  lancedb_tables: always\n"
    "query:\n  in_memory_search_max_tokens: 0\n"
)
EDITED, ADDED, DELETED = "letter_holm_to_varga.txt", "marrow_log.txt", "vellmouth_chronicle.md"
# (statement, occurrence) just before which the process is killed; document_steps is written once a
# step's rows are: ingest (documents, text units), extraction (records, status), text-unit vectors.
KILL_POINTS = {
    "documents-written": ('insert into "document_steps"', 1),
    "text-units-written": ('insert into "document_steps"', 2),
    "extraction-written": ('insert into "document_steps"', 4),
    "text-unit-vectors-written": ('insert into "document_steps"', 5),
    "corpus-run-starting": ("drop schema if exists staging", 1),
    "graph-staged": ('create or replace table "_staged_entities"', 1),
    "inside-the-publish": IN_THE_PUBLISH,
}

# What a build is: the graph and the documents, text units and vectors it cites (not the
# pipeline's own per-document state: source_files, graph_extractions, extraction_status).
BUILD_TABLES = [table for table in TABLE_ORDER if table != "graph_extractions"]


def _edit(root: Path) -> None:
    inputs = root / "data" / "input"
    (inputs / EDITED).write_text("Søren Holm handed the Kestrel Point Lighthouse to Mira Santos.\n", encoding="utf-8")
    (inputs / ADDED).write_text(NEW_DOCUMENT, encoding="utf-8")
    (inputs / DELETED).unlink()


@pytest.fixture(scope="module")
def previous_build(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline sample index with LanceDB tables, built (the state every trial starts from)."""
    root = tmp_path_factory.mktemp("previous") / "project"
    shutil.copytree(nlp_index, root)
    (root / "graphrag.yaml").write_text(SETTINGS, encoding="utf-8")
    built = _index(root)
    assert built.returncode == 0, built.stderr
    return root


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The edited input indexed from scratch."""
    root = make_project(tmp_path_factory.mktemp("clean") / "project")
    (root / "graphrag.yaml").write_text(SETTINGS, encoding="utf-8")
    _edit(root)
    built = _index(root)
    assert built.returncode == 0, built.stderr
    return root


def assert_one_whole_build(root: Path) -> None:
    """What a query reads is one build: every text unit the graph cites exists and has a vector."""
    settings = load_settings(root, environ={})
    data = load_query_data(settings)
    units = set(data.text_units["id"].to_list())
    cited = {
        unit
        for frame in (data.entities, data.relationships)
        for units_of_row in frame["text_unit_ids"].to_list()
        for unit in units_of_row or []
    }
    assert cited and cited <= units, sorted(cited - units)[:5]
    documents = set(data.documents["id"].to_list())
    assert set(data.text_units["document_id"].to_list()) <= documents
    version = vector_versions(settings.database_path)[TEXT_UNIT_TABLE]
    table = lancedb_module().connect(str(settings.lancedb_path)).open_table(TEXT_UNIT_TABLE)
    table.checkout(version)
    assert set(table.to_arrow().column("id").to_pylist()) == units
    assert {row[0] for row in query_db(root, "select id from text_unit_embeddings")} == units


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_killed_update_leaves_the_previous_build_whole_and_the_next_index_finishes_it(
    previous_build: Path, clean_build: Path, tmp_path: Path, point: str
) -> None:
    root = tmp_path / "project"
    shutil.copytree(previous_build, root)
    before = published_tables(root)
    _edit(root)

    killed = _index(root, "kill", *KILL_POINTS[point])
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    assert_one_whole_build(root)
    after = published_tables(root)
    for table in BUILD_TABLES:
        assert_frame_equal(after[table], before[table])

    finished = _index(root)
    assert finished.returncode == 0, finished.stderr
    assert_one_whole_build(root)
    expected, ours = published_tables(clean_build), published_tables(root)
    assert sorted(ours) == sorted(expected)
    for table, frame in expected.items():
        assert_frame_equal(ours[table], frame)
