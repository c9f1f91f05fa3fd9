"""LanceDB's full-text index on the text units' table: publishing keeps it current, search reads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, lexical_index, publish

TEXTS = {
    "u1": "The bakery on Elm Street sells sourdough bread every morning.",
    "u2": "Li Hua went to the gym and lifted weights with Jennifer.",
    "u3": "Sounds great, see you at the jam session tonight!",
}


def frame(texts: dict[str, str], *, with_text: bool = True) -> pl.DataFrame:
    rows = pl.DataFrame(
        {
            "id": list(texts),
            "vector": np.eye(len(texts), 4, dtype=np.float32).tolist(),
            "text_hash": [f"h-{t}" for t in texts.values()],
            "document_key": ["doc.txt"] * len(texts),
            "text": list(texts.values()),
        }
    ).with_columns(pl.col("vector").cast(pl.Array(pl.Float32, 4)))
    return rows if with_text else rows.drop("text")


def full_text_indexes(path: Path) -> list:
    import lancedb

    table = lancedb.connect(str(path)).open_table(TEXT_UNIT_TABLE)
    return [index for index in table.list_indices() if index.columns == ["text"]]


def test_publish_builds_the_index_and_search_ranks_by_bm25(tmp_path: Path) -> None:
    publish(tmp_path, TEXT_UNIT_TABLE, frame(TEXTS))
    (index,) = full_text_indexes(tmp_path)
    assert index.index_type == "FTS"
    search = lexical_index(tmp_path, TEXT_UNIT_TABLE)
    assert [i for i, _ in search.search("sourdough bakery", 5)] == ["u1"]
    # stemming: "lifting" finds "lifted"; stop words alone find nothing
    assert [i for i, _ in search.search("lifting", 5)] == ["u2"]
    assert search.search("the and at", 5) == [] and search.search("  ", 5) == []
    # query syntax in a question is read as words
    assert [i for i, _ in search.search('What\'s "jam session" AND -bread? (tonight)', 1)] == ["u3"]


def test_merges_update_the_index(tmp_path: Path) -> None:
    import lancedb

    publish(tmp_path, TEXT_UNIT_TABLE, frame(TEXTS), scope_column="document_key", scope_keys=["doc.txt"])
    changed = {**TEXTS, "u1": "The florist on Elm Street sells tulips.", "u4": "Bread delivery is at nine."}
    del changed["u2"]
    publish(tmp_path, TEXT_UNIT_TABLE, frame(changed), scope_column="document_key", scope_keys=["doc.txt"])
    search = lexical_index(tmp_path, TEXT_UNIT_TABLE)
    assert [i for i, _ in search.search("bread", 5)] == ["u4"]
    assert search.search("gym", 5) == []  # u2 was deleted
    table = lancedb.connect(str(tmp_path)).open_table(TEXT_UNIT_TABLE)
    assert table.index_stats("text_idx").num_unindexed_rows == 0


def test_a_table_published_without_text_is_recreated_with_it(tmp_path: Path) -> None:
    publish(tmp_path, TEXT_UNIT_TABLE, frame(TEXTS, with_text=False))
    assert lexical_index(tmp_path, TEXT_UNIT_TABLE) is None
    assert lexical_index(tmp_path / "nothing", TEXT_UNIT_TABLE) is None
    result = publish(tmp_path, TEXT_UNIT_TABLE, frame(TEXTS))
    assert result.inserted == 3 and result.rows == 3
    assert [i for i, _ in lexical_index(tmp_path, TEXT_UNIT_TABLE).search("weights", 5)] == ["u2"]


def test_a_few_new_rows_wait_for_the_index_and_are_found_until_enough_of_them_make_it_catch_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folding rows into the index compacts the table (its whole data file rewritten for one added
    document at 100,000), so it waits for a tenth of the rows or SMALL_FRAGMENTS merges."""
    import lancedb

    from graphrag_assets.storage import vectors

    monkeypatch.setattr(vectors, "SMALL_FRAGMENTS", 4)  # the first 40 rows' file is small too
    many = {f"m{i}": f"Harbour note {i} about nets, tides and the ferry timetable." for i in range(40)}
    publish(tmp_path, TEXT_UNIT_TABLE, frame(many))
    table = lancedb.connect(str(tmp_path)).open_table(TEXT_UNIT_TABLE)
    versions = len(table.list_versions())
    for key, text in (("n1", "The sourdough bakery opens at dawn."), ("n2", "A storm closed the sourdough bakery.")):
        publish(tmp_path, TEXT_UNIT_TABLE, frame({key: text}), scope_column="document_key", scope_keys=[])
    table.checkout_latest()
    assert table.index_stats("text_idx").num_unindexed_rows == 2  # two merges of one row in 42: not folded in
    assert len(table.list_versions()) == versions + 2  # the merges only: no compaction
    assert {i for i, _ in lexical_index(tmp_path, TEXT_UNIT_TABLE).search("sourdough bakery", 5)} == {"n1", "n2"}
    publish(tmp_path, TEXT_UNIT_TABLE, frame({"n3": "Nets mended."}), scope_column="document_key", scope_keys=[])
    table.checkout_latest()
    assert table.index_stats("text_idx").num_unindexed_rows == 0  # the fourth small file: folded in and compacted
    assert table.stats()["fragment_stats"]["num_fragments"] < 4  # compacted
    assert {i for i, _ in lexical_index(tmp_path, TEXT_UNIT_TABLE).search("sourdough bakery", 5)} == {"n1", "n2"}
