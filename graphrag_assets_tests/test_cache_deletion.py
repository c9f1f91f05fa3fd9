"""Deleting a document deletes the cached model answers made from its text (issue 21).

The end-to-end test indexes through the scripted model server with the LLM method; the others
exercise the ownership rules on a database directly.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from graphrag_assets.core.ownership import CORPUS, DOCUMENT, cache_owner
from graphrag_assets.core.settings import load_settings
from graphrag_assets.index.embedding_texts import entity_texts, report_texts, text_unit_texts
from graphrag_assets.llm.cache import CHAT_TABLE, EMBEDDING_TABLE, LLMCache, embedding_cache_key
from graphrag_assets.storage.cache_owners import OWNERS_TABLE, forget_documents, record_owners, settle_corpus_run
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.tables import read_table
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.conftest import make_llm_project

KEPT_TEXT = "Marta Quell chairs the Vellmouth Fishing Cooperative. Rafael Duarte fishes for it."
GONE_TEXT = "Lucien Marchetti runs Auberon Freight Lines. Helga Brandt meets Lucien Marchetti."
GONE_WORDS = ("marchetti", "auberon", "helga", "brandt")


def _cached_text_rows(root: Path, words: tuple[str, ...]) -> list[tuple]:
    """Chat cache rows with any of ``words`` in any column (the answer, its purpose, ...)."""
    found = []
    for row in query_db(root, f"select * from {CHAT_TABLE}"):
        text = " ".join(str(value) for value in row).lower()
        if any(word in text for word in words):
            found.append(row)
    return found


def _embedding_keys_of(root: Path, words: tuple[str, ...]) -> set[str]:
    """Embedding cache keys of every embedded text (text units, entities, reports) naming ``words``."""
    settings = load_settings(root)
    database = settings.database_path
    texts = [
        *text_unit_texts(read_table(database, "text_units"))["text"].to_list(),
        *entity_texts(read_table(database, "entities"))["text"].to_list(),
        *report_texts(read_table(database, "community_reports"))["text"].to_list(),
    ]
    model = settings.llm.embedding_model
    return {embedding_cache_key(model=model, text=t) for t in texts if any(w in t.lower() for w in words)}


def _cached_embedding_keys(root: Path) -> set[str]:
    return {row[0] for row in query_db(root, f"select key from {EMBEDDING_TABLE}")}


def test_deleted_documents_leave_no_cached_answer_and_the_rest_stays_cached(graphrag_server, tmp_path: Path) -> None:
    from graphrag_assets.pipeline.indexing import index_project

    root = make_llm_project(tmp_path / "project", graphrag_server.base_url, with_sample=False)
    inputs = root / "data" / "input"
    (inputs / "coop.txt").write_text(KEPT_TEXT, encoding="utf-8")
    (inputs / "coop_copy.txt").write_text(KEPT_TEXT, encoding="utf-8")  # the same chunk: the same cache keys
    (inputs / "port.txt").write_text(GONE_TEXT, encoding="utf-8")
    assert index_project(load_settings(root)).success
    gone_embeddings = _embedding_keys_of(root, GONE_WORDS)
    assert _cached_text_rows(root, GONE_WORDS) and gone_embeddings <= _cached_embedding_keys(root)
    assert len(gone_embeddings) >= 3  # its text unit, its entities, a report about them
    # Of the two identical chunks, the first (by id) was sent and the other shared its answer in
    # flight: delete the one that was sent, so the row must survive through the other's ownership.
    sent, kept = [
        row[0]
        for row in query_db(root, "select document_key from text_units where document_key like 'coop%' order by id")
    ]

    (inputs / "port.txt").unlink()
    (inputs / sent).unlink()
    deleted = index_project(load_settings(root))
    assert deleted.success and sorted(deleted.changes.deleted) == sorted([sent, "port.txt"])
    assert _cached_text_rows(root, GONE_WORDS) == []
    assert gone_embeddings.isdisjoint(_cached_embedding_keys(root))
    assert query_db(root, f"select count(*) from {OWNERS_TABLE} where owner in ('port.txt', '{sent}')") == [(0,)]
    purposes = {row[0] for row in query_db(root, f"select distinct purpose from {CHAT_TABLE}")}
    assert {"extract_graph", "community_report"} <= purposes

    # Everything the remaining corpus needs is still cached: the same document indexed from
    # scratch over this cache (and nothing else) makes no model call at all.
    fresh = make_llm_project(tmp_path / "fresh", graphrag_server.base_url, with_sample=False)
    (fresh / "data" / "input" / kept).write_text(KEPT_TEXT, encoding="utf-8")
    fresh_db = fresh / "data" / "graphrag.duckdb"
    fresh_db.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(fresh_db)) as conn:
        conn.execute(f"attach '{root / 'data' / 'graphrag.duckdb'}' as old (read_only)")
        for table in (CHAT_TABLE, EMBEDDING_TABLE):
            conn.execute(f"create table {table} as select * from old.{table}")
    mark = len(graphrag_server.calls())
    rebuilt = index_project(load_settings(fresh))
    assert rebuilt.success and len(graphrag_server.calls()) == mark, [
        c["body"].get("model") for c in graphrag_server.calls()[mark:]
    ]
    assert "MARTA QUELL" in {row[0] for row in query_db(fresh, "select title from entities")}


def _cache_with_rows(path: Path, keys: list[str]) -> None:
    with connect(path) as conn:
        conn.execute(f"create table {CHAT_TABLE} (key varchar primary key, response varchar)")
        conn.executemany(f"insert into {CHAT_TABLE} values (?, 'x')", [[k] for k in keys])


def _chat_keys(path: Path) -> list[str]:
    with connect(path) as conn:
        return sorted(row[0] for row in conn.execute(f"select key from {CHAT_TABLE}").fetchall())


def test_a_row_goes_with_its_last_owning_document_and_unowned_rows_go_on_deletion(tmp_path: Path) -> None:
    db = tmp_path / "index.duckdb"
    _cache_with_rows(db, ["shared", "only_a", "corpus", "query_answer"])
    record_owners(
        db,
        [
            ("shared", CHAT_TABLE, DOCUMENT, "a"),
            ("shared", CHAT_TABLE, DOCUMENT, "b"),
            ("only_a", CHAT_TABLE, DOCUMENT, "a"),
            ("corpus", CHAT_TABLE, CORPUS, "run-1"),
        ],
    )
    assert forget_documents(db, removed=["a"]) == {CHAT_TABLE: 2}
    assert _chat_keys(db) == ["corpus", "shared"]
    assert forget_documents(db, keep=["c"]) == {CHAT_TABLE: 1}  # b was the last owner of "shared"
    assert _chat_keys(db) == ["corpus"]


def test_a_published_corpus_run_keeps_what_it_used_and_drops_the_rest_only_after_a_deletion(tmp_path: Path) -> None:
    db = tmp_path / "index.duckdb"
    _cache_with_rows(db, ["old_report", "new_report", "document_answer"])
    record_owners(
        db,
        [
            ("old_report", CHAT_TABLE, CORPUS, "run-1"),
            ("new_report", CHAT_TABLE, CORPUS, "run-2"),
            ("document_answer", CHAT_TABLE, DOCUMENT, "a"),
        ],
    )
    assert settle_corpus_run(db, "run-2", documents_removed=False) == {}
    assert _chat_keys(db) == ["document_answer", "new_report", "old_report"]  # nothing deleted without a deletion
    assert settle_corpus_run(db, "run-2", documents_removed=True) == {CHAT_TABLE: 1}
    assert _chat_keys(db) == ["document_answer", "new_report"]


@pytest.mark.parametrize("owned", [True, False])
def test_the_cache_records_the_owner_of_the_calling_context(tmp_path: Path, owned: bool) -> None:
    import asyncio

    db = tmp_path / "index.duckdb"
    cache = LLMCache(db)

    async def use(document: str, key: str) -> None:
        with cache_owner(DOCUMENT, document):
            await asyncio.sleep(0)  # interleave the two tasks: each must keep its own owner
            cache.put_chat(key, model="m", purpose="p", text="answer", prompt_tokens=1, completion_tokens=1)
            cache.note_use(CHAT_TABLE, [key])

    async def main() -> None:
        if owned:
            await asyncio.gather(use("a", "k1"), use("b", "k2"))
        else:
            cache.put_chat("k3", model="m", purpose="p", text="answer", prompt_tokens=1, completion_tokens=1)
            cache.note_use(CHAT_TABLE, ["k3"])

    asyncio.run(main())
    cache.close()
    with connect(db) as conn:
        present = conn.execute(
            "select count(*) from information_schema.tables where table_name = ?", [OWNERS_TABLE]
        ).fetchone()[0]
        rows = sorted(conn.execute(f"select key, scope, owner from {OWNERS_TABLE}").fetchall()) if present else []
    assert rows == ([("k1", DOCUMENT, "a"), ("k2", DOCUMENT, "b")] if owned else [])
