"""The DuckDB response cache on its own: keys, persistence, batching of lookups, corrupt rows."""

from __future__ import annotations

import asyncio
import math
import struct
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from graphrag_assets.core.ownership import DOCUMENT, cache_owner
from graphrag_assets.llm import cache as cache_module
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
from graphrag_assets.storage.table_names import CACHE_OWNERS as OWNERS_TABLE


def key_for(text: str, **overrides: object) -> str:
    args: dict = {
        "model": "m",
        "messages": [{"role": "user", "content": text}],
        "temperature": 0.0,
        "max_tokens": None,
        "json_mode": False,
        "prompt_version": "",
    }
    args.update(overrides)
    return chat_cache_key(**args)


def test_canonical_hash_is_the_sha256_of_compact_sorted_json():
    import hashlib

    expected = hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()
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
        row = conn.execute(
            f"select kind, model, purpose, prompt_tokens, completion_tokens from {CHAT_TABLE}"
        ).fetchall()
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
    cache.put_embeddings("e", {key: [0.5, 0.5] for key in ("empty", "odd-bytes", "nan", "infinite", "fine")})
    cache.close()
    with duckdb.connect(str(db)) as conn:
        conn.execute(f"update {CHAT_TABLE} set response = 'not json' where key = 'bad-json'")
        conn.execute(f"update {CHAT_TABLE} set response = '{{\"answer\": 1}}' where key = 'no-text'")
        for key, stored in {
            "empty": b"",
            "odd-bytes": b"\x00" * 5,
            "nan": struct.pack("<2f", 0.5, math.nan),
            "infinite": struct.pack("<2f", math.inf, 0.5),
        }.items():
            conn.execute(f"update {EMBEDDING_TABLE} set vector = ? where key = ?", [stored, key])
    reader = LLMCache(db)
    assert asyncio.run(reader.get_chat("bad-json")) is None
    assert asyncio.run(reader.get_chat("no-text")) is None
    found = asyncio.run(reader.get_embeddings(["empty", "odd-bytes", "nan", "infinite", "fine"]))
    assert list(found) == ["fine"] and found["fine"].tolist() == [0.5, 0.5]
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
    assert sorted(found) == ["a", "b", "d"] and all(
        memoryview(v).format == "f" for v in found.values()
    )  # float32 without numpy
    np.testing.assert_array_equal(found["a"], np.float32([0.1, 0.2, 0.3]))
    assert found["b"].tolist() == [1.0, -1.0, 0.0, 0.5]
    assert found["d"].tolist() == unflushed.tolist() == [0.25, 2.0]
    with duckdb.connect(str(db)) as conn:  # stored as the model sends them: little-endian float32
        stored = dict(conn.execute(f"select key, vector from {EMBEDDING_TABLE}").fetchall())
    assert stored["b"] == struct.pack("<4f", 1.0, -1.0, 0.0, 0.5)


def test_a_cache_of_float_lists_is_read_and_rewritten_as_bytes_by_the_first_write(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    with duckdb.connect(str(db)) as conn:  # the table as caches before the BLOB column wrote it
        conn.execute(f"create table {EMBEDDING_TABLE} (key VARCHAR PRIMARY KEY, model VARCHAR, vector FLOAT[])")
        conn.execute(
            f"insert into {EMBEDDING_TABLE} values ('a', 'm', [0.25, -1.5, 2.0]), ('b', 'n', [0.5]), "
            "('empty', 'm', []), ('null', 'm', NULL)"
        )
    reader = LLMCache(db)  # a reader leaves the table as it is
    assert {k: v.tolist() for k, v in asyncio.run(reader.get_embeddings(["a", "b", "empty", "null"])).items()} == {
        "a": [0.25, -1.5, 2.0],
        "b": [0.5],
    }
    reader.close()
    with duckdb.connect(str(db)) as conn:
        assert conn.execute(
            "select data_type from information_schema.columns where table_name = ? and column_name = 'vector'",
            [EMBEDDING_TABLE],
        ).fetchall() == [("FLOAT[]",)]
    writer = LLMCache(db)
    writer.put_embeddings("m", {"c": [1.0, 2.0]})
    writer.close()
    with duckdb.connect(str(db)) as conn:
        types = conn.execute(
            "select column_name, data_type from information_schema.columns where table_name = ?", [EMBEDDING_TABLE]
        ).fetchall()
        rows = dict(conn.execute(f"select key, vector from {EMBEDDING_TABLE}").fetchall())
        tables = {row[0] for row in conn.execute("select table_name from information_schema.tables").fetchall()}
        models = dict(conn.execute(f"select key, model from {EMBEDDING_TABLE}").fetchall())
    assert types == [("key", "VARCHAR"), ("model", "VARCHAR"), ("vector", "BLOB")]
    assert EMBEDDING_TABLE in tables and not any(table.endswith("_float_lists") for table in tables)
    assert rows == {
        "a": struct.pack("<3f", 0.25, -1.5, 2.0),
        "b": struct.pack("<f", 0.5),
        "empty": None,
        "null": None,
        "c": struct.pack("<2f", 1.0, 2.0),
    }
    assert models == {"a": "m", "b": "n", "empty": "m", "null": "m", "c": "m"}
    again = LLMCache(db)
    assert asyncio.run(again.get_embeddings(["a"]))["a"].tolist() == [0.25, -1.5, 2.0]
    again.close()


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


def test_answers_written_one_by_one_start_no_thread_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Each answer a model call writes at once re-arms the delayed write of rows nobody waits for;
    one thread serves those delays while answers keep coming (a timer thread per answer cost the
    calling thread ~1 ms each), and it ends when they stop."""
    monkeypatch.setattr(cache_module, "DELAYER_IDLE_SECONDS", 0.3)
    cache = LLMCache(tmp_path / "db.duckdb")
    cache.put_chat("warm", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
    asyncio.run(cache.commit())  # the writer thread exists from here on
    starts = []
    real_start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda thread: (starts.append(thread.name), real_start(thread))[1])
    for i in range(10):
        cache.put_chat(f"k{i}", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
        asyncio.run(cache.commit())
    assert cache.stats.rows_written == 11
    assert len(starts) <= 1, starts
    deadline = time.monotonic() + 10
    while any(t.name == "llm-cache-delay" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "llm-cache-delay" for t in threading.enumerate())
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
    cache.put_embeddings("m", {"v": [1.0, 2.0]})
    cache.flush()
    cache.put_chat("k", model="m", purpose="p", text="new", prompt_tokens=2, completion_tokens=2)
    cache.put_embeddings("m", {"v": [3.0, 4.0]})
    cache.close()
    with duckdb.connect(str(db)) as conn:
        assert conn.execute(f"select count(*) from {CHAT_TABLE}").fetchone() == (1,)
        assert conn.execute(f"select count(*) from {EMBEDDING_TABLE}").fetchone() == (1,)
    reader = LLMCache(db)
    assert asyncio.run(reader.get_chat("k")) == CachedChat("new", 2, 2)
    assert asyncio.run(reader.get_embeddings(["v"]))["v"].tolist() == [3.0, 4.0]
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


def test_an_answer_cached_meanwhile_by_another_process_is_replaced_and_owned_once(tmp_path: Path):
    """A miss's answer is written without looking for an older row of its key (the fast write);
    when another writer cached the same key in between, the write still ends with one row, the
    newer answer, and each ownership once."""
    db = tmp_path / "db.duckdb"
    first, second = LLMCache(db), LLMCache(db)

    async def answer(cache: LLMCache, text: str, owner: str) -> None:
        with cache_owner(DOCUMENT, owner):
            assert await cache.get_chat("k") is None  # both read the keys before either wrote
            cache.put_chat("k", model="m", purpose="p", text=text, prompt_tokens=1, completion_tokens=1)
            cache.note_use(CHAT_TABLE, ["k"])
            cache.note_use(CHAT_TABLE, ["k"])

    asyncio.run(answer(first, "old", "a.txt"))
    asyncio.run(answer(second, "new", "a.txt"))
    first.close()
    second.close()
    assert second.stats.write_failures == 0
    with duckdb.connect(str(db)) as conn:
        assert conn.execute(f"select response from {CHAT_TABLE}").fetchall() == [('{"text": "new"}',)]
        assert conn.execute(f"select key, scope, owner from {OWNERS_TABLE}").fetchall() == [("k", DOCUMENT, "a.txt")]


def test_answers_to_misses_and_hits_written_together_are_each_owned_once(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    seed = LLMCache(db)
    with cache_owner(DOCUMENT, "a.txt"):
        seed.put_chat("old", model="m", purpose="p", text="x", prompt_tokens=1, completion_tokens=1)
        seed.note_use(CHAT_TABLE, ["old"])
    seed.close()
    cache = LLMCache(db)

    async def mixed() -> None:
        with cache_owner(DOCUMENT, "a.txt"):
            assert await cache.get_chat("old") is not None
            cache.note_use(CHAT_TABLE, ["old"])  # a hit, already owned by a.txt
            assert await cache.get_chat("fresh") is None
            cache.put_chat("fresh", model="m", purpose="p", text="y", prompt_tokens=1, completion_tokens=1)
            cache.note_use(CHAT_TABLE, ["fresh"])
            await cache.commit()

    asyncio.run(mixed())
    cache.close()
    with duckdb.connect(str(db)) as conn:
        assert sorted(conn.execute(f"select key, owner from {OWNERS_TABLE}").fetchall()) == [
            ("fresh", "a.txt"),
            ("old", "a.txt"),
        ]
        assert conn.execute(f"select count(*) from {CHAT_TABLE}").fetchone() == (2,)
