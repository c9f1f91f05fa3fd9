"""Publishing a build is one transaction: a publish that fails or is killed half-way changes nothing.

The publish renames each staged table into place; these tests stop it after its first rename —
with an error, and with SIGKILL in a real `index` process — and check that readers still see the
previous build whole, the staged tables wait for the next run, and that run ends equal to a clean
build.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from graphrag_assets.storage import corpus
from graphrag_assets.storage.corpus import publish_corpus, staged_tables, write_staged
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.tables import read_table
from graphrag_assets_testkit.builds import CORPUS_TABLES, NEW_DOCUMENT, published_tables, run_index
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.publish_fault import IN_THE_PUBLISH, PublishFault, faulty_connect

OLD = {"entities": pl.DataFrame({"id": ["e1"]}), "relationships": pl.DataFrame({"id": ["r1"], "weight": [1.0]})}
NEW = {"entities": pl.DataFrame({"id": ["e1", "e2"]}), "relationships": pl.DataFrame({"id": ["r2"], "weight": [2.0]})}
COMMUNITIES = pl.DataFrame({"id": ["c1"]})
NLP_SETTINGS = "method: nlp\nllm:\n  embeddings: local\n"


def _build(path: Path) -> list[tuple]:
    with connect(path, read_only=True) as conn:
        return conn.execute("select * from corpus_build").fetchall()


def test_a_publish_that_fails_after_its_first_rename_leaves_the_previous_build_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.duckdb"
    for table, frame in OLD.items():
        write_staged(path, table, frame)
    write_staged(path, "communities", COMMUNITIES)
    publish_corpus(path, pl.DataFrame({"document_key": ["a.txt"]}), {"run_id": "r1"})
    build_before = _build(path)
    for table, frame in NEW.items():
        write_staged(path, table, frame)
    write_staged(path, "communities", COMMUNITIES.clear())

    monkeypatch.setattr(corpus, "connect", faulty_connect(corpus.connect, "raise"))
    with pytest.raises(PublishFault):
        publish_corpus(path, pl.DataFrame({"document_key": ["a.txt", "b.txt"]}), {"run_id": "r2"})
    monkeypatch.undo()

    for table, frame in OLD.items():
        assert_frame_equal(read_table(path, table), frame)
    assert_frame_equal(read_table(path, "communities"), COMMUNITIES)
    assert sorted(staged_tables(path)) == ["communities", "entities", "relationships"]
    assert read_table(path, "corpus_manifest")["document_key"].to_list() == ["a.txt"]
    assert _build(path) == build_before

    assert sorted(publish_corpus(path, pl.DataFrame({"document_key": ["a.txt"]}), {"run_id": "r3"})) == [
        "communities",
        "entities",
        "relationships",
    ]
    for table, frame in NEW.items():
        assert_frame_equal(read_table(path, table), frame)


@pytest.fixture
def edited_nlp_project(nlp_index: Path, tmp_path: Path) -> Path:
    """A copy of the offline sample index with one document added since its build."""
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    (root / "data" / "input" / "marrow_log.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    return root


def test_an_index_killed_inside_the_publish_leaves_the_previous_build_and_the_next_one_finishes(
    edited_nlp_project: Path, tmp_path: Path
) -> None:
    root = edited_nlp_project
    database = root / "data" / "graphrag.duckdb"
    before = published_tables(root)
    build_before = _build(database)

    killed = run_index(root, fault=("kill", *IN_THE_PUBLISH))
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    after = published_tables(root)
    for table in CORPUS_TABLES:
        assert_frame_equal(after[table], before[table])
    assert _build(database) == build_before
    assert "entities" in staged_tables(database, read_only=True)

    finished = run_index(root)
    assert finished.returncode == 0, finished.stderr
    assert staged_tables(database, read_only=True) == []

    clean = make_project(tmp_path / "clean")
    (clean / "graphrag.yaml").write_text(NLP_SETTINGS, encoding="utf-8")
    (clean / "data" / "input" / "marrow_log.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    assert run_index(clean).returncode == 0
    expected, ours = published_tables(clean), published_tables(root)
    assert sorted(ours) == sorted(expected)
    for table, frame in expected.items():
        assert_frame_equal(ours[table], frame)
    assert "marrow_log.txt" in ours["corpus_manifest"]["document_key"].to_list()
    assert not ours["entities"].equals(before["entities"])  # the build the kill stopped did change the graph
