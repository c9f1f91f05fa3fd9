"""The DuckDB response cache on its own: keys, persistence, batching of lookups, corrupt rows."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from graphrag_assets.llm.cache import (
    CHAT_TABLE,
    EMBEDDING_TABLE,
    WRITE_DELAY_SECONDS,
    CachedChat,
    LLMCache,
    canonical_hash,
    chat_cache_key,
    embedding_cache_key,
)


def key_for(text: str, **overrides: object) -> str:
    args: dict = {"model": "m", "messages": [{"role": "user", "content": text}], "temperature": 0.0,
                  "max_tokens": None, "json_mode": False, "prompt_version": ""}
    args.update(overrides)
    return chat_cache_key(**args)


def test_canonical_hash_is_the_sha256_of_compact_sorted_json():
    import hashlib

    expected = hashlib.sha256('{"a":"é","b":1}'.encode("utf-8")).hexdigest()
    assert canonical_hash({"b": 1, "a": "é"}) == expected


def test_chat_key_changes_with_everything_that_changes_the_answer():
    base = key_for("hello")
    assert key_for("hello") == base
    assert key_for("hello", temperature=0) == base  # 0 and 0.0 are the same request
    variants = [
        key_for("hello!"),
        key_for("hello", model="other"),
        key_for("hello", temperature=0.5),
        key_for("hello", max_tokens=10),
        key_for("hello", json_mode=True),
        key_for("hello", prompt_version="v2"),
        key_for("hello", messages=[{"role": "system", "content": "hello"}]),
    ]
    assert len(set(variants) | {base}) == len(variants) + 1


def test_embedding_key_depends_on_model_and_text_and_differs_from_chat_keys():
    assert embedding_cache_key(model="e", text="x") == embedding_cache_key(model="e", text="x")
    assert embedding_cache_key(model="e", text="x") != embedding_cache_key(model="f", text="x")
    assert embedding_cache_key(model="e", text="x") != embedding_cache_key(model="e", text="y")


def test_answers_persist_across_cache_objects(tmp_path: Path):
    db = tmp_path / "new" / "db.duckdb"
    cache = LLMCache(db)
    cache.put_chat("k1", model="m", purpose="p", text="answer one", prompt_tokens=10, completion_tokens=3)
    cache.close()
    reopened = LLMCache(db)
    assert asyncio.run(reopened.get_chat("k1")) == CachedChat("answer one", 10, 3)
    assert asyncio.run(reopened.get_chat("k2")) is None
    reopened.close()
    with duckdb.connect(str(db)) as conn:
        row = conn.execute(f"select kind, model, purpose, prompt_tokens, completion_tokens from {CHAT_TABLE}").fetchall()
    assert row == [("chat", "m", "p", 10, 3)]


def test_an_answer_is_visible_before_it_is_written(tmp_path: Path):
    cache = LLMCache(tmp_path / "db.duckdb")

    async def go() -> CachedChat | None:
        cache.put_chat("k", model="m", purpose="p", text="fresh", prompt_tokens=1, completion_tokens=1)
        return await cache.get_chat("k")

    assert asyncio.run(go()) == CachedChat("fresh", 1, 1)
    cache.close()


def test_lookups_of_one_loop_turn_share_one_query_and_misses_need_none(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    writer = LLMCache(db)
    for i in range(20):
        writer.put_chat(f"k{i}", model="m", purpose="p", text=f"a{i}", prompt_tokens=i, completion_tokens=1)
    writer.close()
    reader = LLMCache(db)

    async def go() -> list[CachedChat | None]:
        return await asyncio.gather(*(reader.get_chat(f"k{i}") for i in range(25)))

    found = asyncio.run(go())
    assert [f.text if f else None for f in found] == [f"a{i}" for i in range(20)] + [None] * 5
    assert (reader.stats.key_loads, reader.stats.lookup_queries) == (1, 1)
    asyncio.run(reader.get_chat("missing"))
    assert reader.stats.lookup_queries == 1  # a key that is not in the table costs no query
    reader.close()


def test_a_missing_database_gives_misses_and_is_not_created_by_reading(tmp_path: Path):
    db = tmp_path / "absent.duckdb"
    cache = LLMCache(db)
    assert asyncio.run(cache.get_chat("k")) is None
    assert asyncio.run(cache.get_embeddings(["k"])) == {}
    cache.close()
    assert not db.exists()


def test_corrupt_rows_are_misses(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    cache = LLMCache(db)
    cache.put_chat("bad-json", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
    cache.put_chat("no-text", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
    cache.put_embeddings("e", {"empty-vector": [0.5, 0.5]})
    cache.close()
    with duckdb.connect(str(db)) as conn:
        conn.execute(f"update {CHAT_TABLE} set response = 'not json' where key = 'bad-json'")
        conn.execute(f"update {CHAT_TABLE} set response = '{{\"answer\": 1}}' where key = 'no-text'")
        conn.execute(f"update {EMBEDDING_TABLE} set vector = []::FLOAT[] where key = 'empty-vector'")
    reader = LLMCache(db)
    assert asyncio.run(reader.get_chat("bad-json")) is None
    assert asyncio.run(reader.get_chat("no-text")) is None
    assert asyncio.run(reader.get_embeddings(["empty-vector"])) == {}
    reader.close()


def test_embeddings_round_trip_as_float32(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    cache = LLMCache(db)
    # lists or arrays of any float type, of different lengths, written in one batch
    vectors = {"a": [0.1, 0.2, 0.3], "b": np.array([1.0, -1.0, 0.0, 0.5]), "d": np.float32([0.25, 2.0])}
    cache.put_embeddings("e", vectors)
    unflushed = asyncio.run(cache.get_embeddings(["d"]))["d"]
    cache.close()
    reader = LLMCache(db)
    found = asyncio.run(reader.get_embeddings(["b", "a", "c", "d"]))
    reader.close()
    assert sorted(found) == ["a", "b", "d"] and all(v.dtype == np.float32 for v in found.values())
    np.testing.assert_array_equal(found["a"], np.float32([0.1, 0.2, 0.3]))
    assert found["b"].tolist() == [1.0, -1.0, 0.0, 0.5]
    assert found["d"].tolist() == unflushed.tolist() == [0.25, 2.0]


def test_writes_gather_and_happen_without_close(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    cache = LLMCache(db)
    cache.put_chat("warm", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
    cache.flush()  # the tables exist and the writer is idle
    flushes = cache.stats.flushes
    started = time.monotonic()
    for i in range(5):  # answers arriving while the writer is idle
        cache.put_chat(f"k{i}", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
        time.sleep(0.01)
    arrival = time.monotonic() - started
    deadline = time.monotonic() + 10
    while cache.stats.rows_written < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cache.stats.rows_written == 6
    if arrival < WRITE_DELAY_SECONDS:  # a heavily loaded machine may stretch the sleeps past it
        assert cache.stats.flushes - flushes == 1
    with duckdb.connect(str(db)) as conn:
        assert conn.execute(f"select count(*) from {CHAT_TABLE}").fetchone() == (6,)
    cache.close()


def test_flush_writes_at_once(tmp_path: Path):
    cache = LLMCache(tmp_path / "db.duckdb")
    cache.put_chat("k", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
    started = time.monotonic()
    cache.flush()
    assert cache.stats.rows_written == 1 and time.monotonic() - started < WRITE_DELAY_SECONDS
    cache.close()


def test_rewriting_a_key_replaces_the_row(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    cache = LLMCache(db)
    cache.put_chat("k", model="m", purpose="p", text="old", prompt_tokens=1, completion_tokens=1)
    cache.flush()
    cache.put_chat("k", model="m", purpose="p", text="new", prompt_tokens=2, completion_tokens=2)
    cache.close()
    with duckdb.connect(str(db)) as conn:
        assert conn.execute(f"select count(*) from {CHAT_TABLE}").fetchone() == (1,)
    reader = LLMCache(db)
    assert asyncio.run(reader.get_chat("k")) == CachedChat("new", 2, 2)
    reader.close()


def test_a_failed_write_keeps_the_rows_for_the_next_attempt(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    blocker = tmp_path / "dir"
    blocker.write_text("a file where the database directory should be")
    cache = LLMCache(blocker / "db.duckdb")
    cache.put_chat("k", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
    cache.flush()
    assert cache.stats.write_failures >= 1 and cache.stats.rows_written == 0
    assert "could not write 1 LLM cache row" in caplog.text
    blocker.unlink()
    cache.close()
    assert cache.stats.rows_written == 1
    with duckdb.connect(str(blocker / "db.duckdb")) as conn:
        assert conn.execute(f"select count(*) from {CHAT_TABLE}").fetchone() == (1,)
