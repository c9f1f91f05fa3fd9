"""A big build's search tables (``storage/search_tables.py``): its words rank the text units as the
in-memory BM25 of a small build does, stay equal to words written anew across updates, and are
used only by the build they describe; its vectors are searched by SQL as numpy searches them, and
as LanceDB searches them when a build has no search tables. (That a query on such a build imports
no LanceDB: ``test_cli_imports.py``.)"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from graphrag_assets.core.bm25 import WORD
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.lexical import STOPWORDS, Bm25Index
from graphrag_assets.query.word_index import WordIndex
from graphrag_assets.storage.database import FrameStream, connect, frame_of
from graphrag_assets.storage.index_lookups import StoredVectors, StoredWords
from graphrag_assets.storage.search_tables import (
    HEADER,
    LENGTHS,
    TARGETS,
    TERMS,
    search_vectors,
    search_words,
    stored_search_tables,
    sync_search_tables,
    word_postings,
)

WORDS = [
    *"harbour lantern festival bridge inquiry storm council ledger schooner beacon tide".split(),
    *"søren naïve ÉCOLE straße 2026 20260405 x9 a_b über".split(),  # letters beyond ASCII, digits, an underscore
    *"the and of to is it a an".split(),  # stop words
]


def _texts(generator: np.random.Generator, count: int) -> list[str]:
    texts = []
    for _ in range(count):
        words = generator.choice(WORDS, int(generator.integers(0, 40)))
        texts.append(" ".join(w.upper() if generator.random() < 0.2 else w for w in words) + ".")
    return texts


def _kept_words(text: str) -> list[str]:
    return [word for word in re.findall(WORD, text.lower()) if word not in STOPWORDS]


def _write_units(path: Path, ids: list[str], texts: list[str], run_id: str) -> None:
    units = pl.DataFrame({"id": ids, "text": texts})
    build = pl.DataFrame({"run_id": [run_id], "published_at": ["2026-12-06 10:00:00"]})
    with connect(path) as conn:
        conn.register("_units", FrameStream(units))
        conn.register("_build", FrameStream(build))
        conn.execute("create or replace table text_units as select * from _units")
        conn.execute("create or replace table corpus_build as select * from _build")
        conn.unregister("_units")
        conn.unregister("_build")


def _words(path: Path, query: str, k: int) -> list[tuple[str, float]]:
    with connect(path, read_only=True) as conn:
        return search_words(conn, stored_search_tables(conn).stopwords, query, k)


def test_stored_words_rank_the_text_units_as_the_in_memory_bm25_does(tmp_path: Path) -> None:
    generator = np.random.default_rng(3)
    ids = [f"u{n:04d}" for n in range(300)]
    texts = _texts(generator, len(ids))
    path = tmp_path / "words.duckdb"
    _write_units(path, ids, texts, "build-1")
    assert sync_search_tables(path, STOPWORDS) == len(ids)
    memory = Bm25Index(ids, texts)
    queries = [" ".join(generator.choice(WORDS, int(generator.integers(1, 5)))) for _ in range(40)]
    queries += ["Harbour harbour ledger", "no such words", "the and of", "SØREN über 2026", "a_b"]
    # texts without words are there (bm25s gives them an empty token, which a question's unknown
    # words must not find) and questions with unknown words too
    assert any(not _kept_words(text) for text in texts)
    for query in queries:
        stored, expected = _words(path, query, len(ids)), memory.search(query, len(ids))
        # every text holding a word of the question, with its score; equal scores in any order
        assert dict(stored) == pytest.approx(dict(expected), rel=1e-5), query  # bm25s sums float32
        assert stored == sorted(stored, key=lambda pair: (-pair[1], pair[0])), query
    assert _words(path, "harbour", 3) == _words(path, "harbour", len(ids))[:3]
    _assert_held_in_memory_as_stored(path, queries)


def _assert_held_in_memory_as_stored(path: Path, queries: list[str]) -> None:
    """A server's copy of the words (:class:`WordIndex`) finds what the SQL finds, in the same order."""
    with connect(path, read_only=True) as conn:
        memory = WordIndex(*word_postings(conn), stored_search_tables(conn).stopwords)
    for query in queries:
        for k in (1, 5, 1_000):
            stored, held = _words(path, query, k), memory.search(query, k)
            assert [i for i, _ in held] == [i for i, _ in stored], (query, k)
            assert [s for _, s in held] == pytest.approx([s for _, s in stored], rel=1e-9), (query, k)


def test_updated_words_equal_words_written_anew_and_serve_only_their_build(tmp_path: Path) -> None:
    generator = np.random.default_rng(5)
    ids, texts = [f"u{n:04d}" for n in range(200)], _texts(generator, 200)
    path, fresh = tmp_path / "updated.duckdb", tmp_path / "fresh.duckdb"
    _write_units(path, ids, texts, "build-1")
    sync_search_tables(path, STOPWORDS)
    for step in range(2, 6):  # documents removed and added, past the share that re-sorts the words
        kept = [n for n in range(len(ids)) if generator.random() > 0.15]
        added = [f"v{step}-{n}" for n in range(10 * step)]
        ids = [ids[n] for n in kept] + added
        texts = [texts[n] for n in kept] + _texts(generator, len(added))
        _write_units(path, ids, texts, f"build-{step}")
        with connect(path, read_only=True) as conn:
            assert stored_search_tables(conn) is None  # written for the build before: not used
        assert sync_search_tables(path, STOPWORDS) == len(added)
        _write_units(fresh, ids, texts, f"build-{step}")
        with connect(fresh) as conn:
            conn.execute(f"drop table if exists {HEADER}")
        sync_search_tables(fresh, STOPWORDS)
        for table, order in ((TERMS, ["term", "id"]), (LENGTHS, ["id"])):
            with connect(path, read_only=True) as a, connect(fresh, read_only=True) as b:
                assert (
                    frame_of(a.sql(f"select * from {table}"))
                    .sort(order)
                    .equals(frame_of(b.sql(f"select * from {table}")).sort(order))
                ), (step, table)
        assert _words(path, "harbour storm", 20) == _words(fresh, "harbour storm", 20)
        _assert_held_in_memory_as_stored(path, ["harbour storm", "ledger LEDGER tide", "søren"])
    with connect(path, read_only=True) as conn:
        appended = conn.execute(f"select appended_units from {HEADER}").fetchall()[0][0]
    assert appended < 0.1 * len(ids)  # re-sorted on the way


def test_search_tables_of_another_format_are_not_read_and_are_written_anew(tmp_path: Path) -> None:
    ids, texts = ["u1", "u2", "u3"], ["harbour storm", "lantern", ""]
    path = tmp_path / "format.duckdb"
    _write_units(path, ids, texts, "build-1")
    sync_search_tables(path, STOPWORDS)
    with connect(path) as conn:
        conn.execute(f"update {HEADER} set format = format + 1")  # as tables written by other code
        assert stored_search_tables(conn) is None
    assert sync_search_tables(path, STOPWORDS) == len(ids)  # every text unit tokenized again
    assert _words(path, "harbour", 5)[0][0] == "u1"


def _write_relationships(path: Path, rows: pl.DataFrame) -> None:
    with connect(path) as conn:
        conn.register("_rows", FrameStream(rows))
        conn.execute("create or replace table relationships as select * from _rows")
        conn.unregister("_rows")


def test_relationships_without_their_own_numbers_store_no_targets(tmp_path: Path) -> None:
    """The targets are read back by human-readable id: a build whose ids repeat or miss stores none
    (local search then ranks from the relationships alone, tested in test_query_reads.py)."""
    path = tmp_path / "targets.duckdb"
    _write_units(path, ["u1"], ["harbour"], "build-1")
    for numbers, stored in (([0, 1, 2], True), ([2, 0, 1], True), ([0, 1, 1], False), ([0, None, 2], False)):
        rows = pl.DataFrame({"source": ["A", "B", "C"], "target": ["B", "C", "A"], "human_readable_id": numbers})
        _write_relationships(path, rows)
        sync_search_tables(path, STOPWORDS)
        with connect(path, read_only=True) as conn:
            assert stored_search_tables(conn).targets is stored, numbers


def test_targets_are_the_ends_sorted_by_target_then_number(tmp_path: Path) -> None:
    """Equal targets by number, a relationship without a target last; numbers that are not the rows' positions."""
    path = tmp_path / "targets.duckdb"
    _write_units(path, ["u1"], ["harbour"], "build-1")
    rows = pl.DataFrame(
        {
            "source": ["A", "B", "C", "D", "E", "F"],
            "target": ["Z", "B", None, "Z", "AB", "B"],
            "human_readable_id": [4, 0, 5, 1, 3, 2],
        }
    )
    _write_relationships(path, rows)
    sync_search_tables(path, STOPWORDS)
    with connect(path, read_only=True) as conn:
        stored = frame_of(conn.sql(f"select * from {TARGETS}"))
    expected = rows.sort("target", "human_readable_id", nulls_last=True).select("target", "source", "human_readable_id")
    assert stored.equals(expected)


def test_vectors_are_searched_by_sql_as_numpy_searches_them(tmp_path: Path) -> None:
    generator = np.random.default_rng(9)
    vectors = generator.normal(size=(500, 16)).astype(np.float32)
    vectors[7] = 0  # a zero vector: similarity 0 (DuckDB's is NaN, which sorts first)
    ids = [f"e{n:03d}" for n in range(500)]
    frame = pl.DataFrame(
        {"id": ids, "vector": vectors.tolist()}, schema={"id": pl.String, "vector": pl.Array(pl.Float32, 16)}
    )
    path = tmp_path / "vectors.duckdb"
    with connect(path) as conn:
        conn.register("_vectors", FrameStream(frame))
        conn.execute("create table entity_embeddings as select * from _vectors")
        conn.unregister("_vectors")
    memory = ArrayVectorIndex(ids, vectors, "entity_description", "float32")
    with connect(path, read_only=True) as conn:
        for query in generator.normal(size=(10, 16)):
            stored, expected = (
                search_vectors(conn, "entity_embeddings", query.tolist(), 12),
                memory.search(query.tolist(), 12),
            )
            assert [i for i, _ in stored] == [i for i, _ in expected]
            assert [s for _, s in stored] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert search_vectors(conn, "no_such_embeddings", [0.0] * 16, 5) == []
        assert [s for _, s in search_vectors(conn, "entity_embeddings", [0.0] * 16, 3)] == [0.0, 0.0, 0.0]
        with pytest.raises(UserError, match="16"):
            search_vectors(conn, "entity_embeddings", [0.0] * 8, 5)


def test_a_big_build_is_searched_by_duckdb_and_answers_as_through_lancedb(
    big_build_index: Path, tmp_path: Path
) -> None:
    from graphrag_assets.storage.vectors import LanceTextIndex, LanceVectorIndex

    settings = load_settings(big_build_index, environ={})
    with connect(settings.database_path, read_only=True) as conn:
        tables = stored_search_tables(conn)
    assert tables is not None and tables.targets and tables.stopwords == STOPWORDS
    data = load_query_data(settings)
    assert isinstance(data.text_unit_lexical, StoredWords) and isinstance(data.entity_description, StoredVectors)
    old = Path(shutil.copytree(big_build_index, tmp_path / "old", ignore=shutil.ignore_patterns("*.lock")))
    with connect(old / "data" / "graphrag.duckdb") as conn:
        conn.execute(f"drop table {HEADER}")  # as a build by code that stored no search tables
    through_lance = load_query_data(load_settings(old, environ={}))
    assert isinstance(through_lance.text_unit_lexical, LanceTextIndex)
    assert isinstance(through_lance.entity_description, LanceVectorIndex)
    with connect(settings.database_path, read_only=True) as conn:
        probes = [row[0] for row in conn.execute("select vector from text_unit_embeddings limit 4").fetchall()]
    for vector in probes:
        stored, lance = data.text_unit_text.search(vector, 5), through_lance.text_unit_text.search(vector, 5)
        assert stored[0][0] == lance[0][0]
        assert [s for _, s in stored] == pytest.approx([s for _, s in lance], abs=1e-5)
    assert data.text_unit_lexical.search("harbour", 5)  # the sample's text units hold the word


def test_index_writes_the_search_tables_of_a_build_published_without_them(
    big_build_index: Path, tmp_path: Path
) -> None:
    """An index published by code before the search tables gets them from the next ``index``,
    though no document changed; after that, ``index`` has nothing to do."""
    from graphrag_assets.pipeline.idle_check import nothing_to_index
    from graphrag_assets.pipeline.indexing import index_project
    from graphrag_assets.project.index_run import IndexOptions

    root = Path(shutil.copytree(big_build_index, tmp_path / "old", ignore=shutil.ignore_patterns("*.lock")))
    with connect(root / "data" / "graphrag.duckdb") as conn:
        conn.execute(f"drop table {HEADER}")
    settings = load_settings(root, environ={})
    assert nothing_to_index(settings, IndexOptions()) is None  # not idle: its search tables are due
    said: list[str] = []
    report = index_project(settings, announce=said.append)
    assert report.success and report.runs == []  # no run: the tables alone
    assert any(line.startswith("wrote the search tables of the published build") for line in said), said
    with connect(settings.database_path, read_only=True) as conn:
        assert stored_search_tables(conn) is not None
    assert isinstance(load_query_data(settings).text_unit_lexical, StoredWords)
    assert nothing_to_index(settings, IndexOptions()) is not None
