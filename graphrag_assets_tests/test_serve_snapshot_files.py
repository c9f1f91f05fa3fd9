"""A served build whose relationships are kept on disk (``serve.in_memory_relationships_max``):
the snapshot holds none of them in memory, answers what the whole table answers, reads nothing
of a build published after it, and leaves no file behind."""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.serve.lookups import Page, entity_detail, relationship_detail
from graphrag_assets.serve.snapshot import load_snapshot
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.relationship_files import NUMBERED
from graphrag_assets.storage.snapshot_folders import remove_left_over, snapshots_folder
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.ranking_cases import assert_ranks_as_frames


@pytest.fixture
def project(nlp_index: Path, tmp_path: Path) -> Path:
    root = tmp_path / "big"
    shutil.copytree(nlp_index, root, ignore=shutil.ignore_patterns("*.lock"))
    with open(root / "graphrag.yaml", "a", encoding="utf-8") as settings:
        settings.write("serve:\n  in_memory_relationships_max: 10\n")  # the sample counts as big
    return root


def test_a_big_build_keeps_its_relationships_on_disk_and_answers_as_the_whole_table(project: Path) -> None:
    settings = load_settings(project, environ={})
    snapshot = load_snapshot(settings)
    assert snapshot is not None and snapshot.relationship_files is not None
    # (the sample has no stored walk graph, so the walk holds the relationships' ends: a build of
    # 100,000 relationships or more stores one and holds none)
    assert not snapshot.data.holds("relationships") and "relationships" not in snapshot.data._frames
    folder = snapshot.relationship_files.folder
    assert folder.parent == snapshots_folder(settings.database_path) and any(folder.iterdir())

    whole = load_query_data(settings).load_all()
    assert snapshot.counts()["relationships"] == whole.relationships.height > 10
    hub = whole.relationships.group_by("target").len().sort("len", "target", descending=True)["target"][0]
    titles = [hub, whole.relationships["source"][3], "NO SUCH ENTITY"]
    assert snapshot.data.relationships_touching(titles).equals(whole.relationships_touching(titles))
    ends = ("id", "human_readable_id", "source", "target")
    assert snapshot.data.relationships_touching(titles, ends).equals(whole.relationships_touching(titles, ends))
    numbers = whole.relationships["human_readable_id"].gather_every(7).to_list()
    assert snapshot.data.rows_where("relationships", "human_readable_id", numbers).equals(
        whole.relationships.filter(pl.col("human_readable_id").is_in(numbers))
    )
    assert snapshot.data.columns_of("relationships", ["source", "weight"]).equals(
        whole.relationships.select("source", "weight")
    )
    number = str(whole.relationships["human_readable_id"][5])
    assert relationship_detail(snapshot.data, number) == relationship_detail(whole, number)
    assert entity_detail(snapshot.data, hub, Page()) == entity_detail(whole, hub, Page())

    del snapshot
    gc.collect()
    assert not folder.exists()  # no snapshot uses the build any more


def test_the_files_rank_a_question_s_relationships_as_the_frames_do(project: Path) -> None:
    """The end indexes give the ranking local search computes from the touching rows, ties included."""
    settings = load_settings(project, environ={})
    snapshot = load_snapshot(settings)
    assert snapshot is not None and (snapshot.relationship_files.folder / NUMBERED).exists()
    assert_ranks_as_frames(snapshot.data, load_query_data(settings).load_all(), seed=7)


def test_numbers_that_are_not_positions_are_searched(project: Path) -> None:
    settings = load_settings(project, environ={})
    with connect(settings.database_path) as conn:
        conn.execute("update relationships set human_readable_id = human_readable_id * 2 + 1")
    snapshot = load_snapshot(settings)
    assert snapshot is not None and not (snapshot.relationship_files.folder / NUMBERED).exists()
    whole = load_query_data(settings).load_all()
    numbers = whole.relationships["human_readable_id"].gather_every(3).to_list()
    assert numbers and snapshot.data.rows_where("relationships", "human_readable_id", numbers).equals(
        whole.relationships.filter(pl.col("human_readable_id").is_in(numbers))
    )
    titles = whole.relationships["source"].head(2).to_list()
    assert snapshot.data.ranked_relationships(titles, titles, np.ones(2), 3) is None  # ranked as frames


def test_the_snapshot_reads_its_own_build_after_a_newer_one_is_published(project: Path) -> None:
    settings = load_settings(project, environ={})
    snapshot = load_snapshot(settings)
    assert snapshot is not None
    title = query_db(project, "select source from relationships limit 1")[0][0]
    before = snapshot.data.relationships_touching([title])
    with connect(settings.database_path) as conn:  # as a publish replaces the rows
        conn.execute("update relationships set description = 'of another build'")
    assert snapshot.data.relationships_touching([title]).equals(before)
    assert "of another build" not in before["description"].to_list()
    snapshot.release()
    assert not snapshot.relationship_files.folder.exists()


def test_a_small_build_stays_in_memory(nlp_index: Path) -> None:
    snapshot = load_snapshot(load_settings(nlp_index, environ={}))
    assert snapshot is not None and snapshot.relationship_files is None and snapshot.data.holds("relationships")


def test_folders_of_servers_no_longer_running_are_removed(project: Path) -> None:
    database = load_settings(project, environ={}).database_path
    dead, alive = snapshots_folder(database) / "999999999-left", snapshots_folder(database) / f"{os.getppid()}-live"
    for folder in (dead, alive):
        folder.mkdir(parents=True)
        (folder / "rows.arrow").write_bytes(b"x")
    assert remove_left_over(database) == [dead]
    assert alive.exists() and not dead.exists()


def test_a_big_build_is_served_with_its_vectors_and_words_in_memory(big_build_index: Path) -> None:
    """``serve.in_memory_vectors_mb`` and ``serve.in_memory_words_mb``: within them, a server
    searches the vectors and the stored words in memory (the same hits as the searches in storage);
    past them, in storage."""
    from graphrag_assets.query.array_index import ArrayVectorIndex
    from graphrag_assets.query.word_index import WordIndex
    from graphrag_assets.storage.index_lookups import StoredVectors, StoredWords

    settings = load_settings(big_build_index, environ={})
    in_storage = load_query_data(settings)
    served = load_snapshot(settings)
    assert served is not None and isinstance(served.data.text_unit_lexical, WordIndex)
    for question in ("Who sailed to the harbour?", "Søren Holm reef dive", "nothing of the kind"):
        assert served.data.text_unit_lexical.search(question, 8) == in_storage.text_unit_lexical.search(question, 8)
    vectors = {
        name: query_db(big_build_index, f"select vector from {name}_embeddings limit 3")
        for name in ("entity", "text_unit")
    }
    for attribute, table in (("entity_description", "entity"), ("text_unit_text", "text_unit")):
        stored, memory = getattr(in_storage, attribute), getattr(served.data, attribute)
        assert isinstance(stored, StoredVectors) and isinstance(memory, ArrayVectorIndex)
        for (vector,) in vectors[table]:
            expected, found = stored.search(vector, 5), memory.search(vector, 5)
            assert [score for _, score in found] == pytest.approx([score for _, score in expected], abs=1e-5)
            assert found[0][0] == expected[0][0]
    assert isinstance(served.data.community_full_content, ArrayVectorIndex)

    small = load_settings(
        big_build_index, environ={}, overrides={"serve": {"in_memory_vectors_mb": 0, "in_memory_words_mb": 0}}
    )
    kept = load_snapshot(small)
    assert kept is not None and isinstance(kept.data.entity_description, StoredVectors)
    assert isinstance(kept.data.text_unit_lexical, StoredWords)
