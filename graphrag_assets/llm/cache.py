"""Content-addressed response cache in the project's DuckDB file.

Why it is shaped like this (figures from ``bench/bench_llm_client.py`` and the measurements in the
report that introduced it, on this machine):

- Opening a DuckDB file costs ~10 ms; a query by key inside an open connection well under 1 ms. A
  connection per lookup would therefore dominate a re-run made of cache hits, and the rule is that
  no connection is held across a model call. So:
- **Misses cost no database access**: the set of cached keys is read once per cache object
  (~30 ms for 50k keys) and kept up to date as answers arrive.
- **Hits are looked up in batches**: every lookup issued in the same event-loop turn (a
  ``gather`` of many calls) joins one query on one short-lived connection.
- **Answers are on disk before they are used**: a chat call queues its answer and awaits
  :meth:`LLMCache.commit`, a write by a single writer thread (connect, replace the rows in one
  transaction, close: ~20 ms for 1 to 16 rows, ~40 ms for 256). Answers that arrive while a write
  runs share the next one, so a burst of answers costs a few writes, not one each. A killed
  process therefore loses only the calls in flight; before, writes waited
  ``WRITE_DELAY_SECONDS`` to gather more rows, and a kill just after a burst of answers lost a
  third of them (paid for twice). An answer to a call that missed is new to the database, so its
  row and its ownership are inserted without looking for older ones (``CacheBatch.new_keys``):
  the writer thread's time in a cold index of *A Christmas Carol* went from 0.39-0.50 s to
  0.27-0.31 s of CPU (load 3-4). Rows nobody waits for (owners recorded on a cache hit, rows
  queued outside a model call) still gather for ``WRITE_DELAY_SECONDS``: writing as soon as the
  writer was idle made ~100 writes in a cold index of *A Christmas Carol*, most of 2 to 60 rows
  and 6 to 70 ms of a thread that competes with the steps for the interpreter. A step's end
  (``close``/``flush``) writes what is queued at once.
- All database work runs on that one thread, so lookups never block the event loop and never race
  a write.

Keys are SHA-256 of canonical JSON of what determines the answer (model, messages, sampling
parameters, prompt version, kind), never of the endpoint, credentials or timeouts, so moving to
another server with the same model keeps the cache. A row that cannot be decoded is a miss, and
the fresh answer overwrites it.

Each answer used by a per-document call or a corpus step also records its owner (the document, or
the corpus run) in ``llm_cache_owners``, written with the cache rows; see
:mod:`graphrag_assets.storage.cache_owners` for why and for how deletions use it. The owner is
whatever :func:`~graphrag_assets.core.ownership.cache_owner` set in the calling task's context,
so concurrent calls for different documents each record their own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import hashlib
import json
import logging
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_assets.core.float32 import (
    Vector,
    as_float32,
    float32_buffer,
    from_le_bytes,
    is_finite,
    le_bytes_are_finite,
)
from graphrag_assets.core.ownership import DOCUMENT, current_owner
from graphrag_assets.storage.cache_owners import record_owners
from graphrag_assets.storage.response_cache import (
    CacheBatch,
    ChatRow,
    EmbeddingRow,
    cached_keys,
    cached_rows,
    write_batch,
)
from graphrag_assets.storage.table_names import CACHE_OWNERS as OWNERS_TABLE
from graphrag_assets.storage.table_names import CHAT_CACHE as CHAT_TABLE
from graphrag_assets.storage.table_names import EMBEDDING_CACHE as EMBEDDING_TABLE

log = logging.getLogger(__name__)
# How long the first row queued since the last write waits for others to join it (see above).
WRITE_DELAY_SECONDS = 0.2
# How long the thread that delays those writes waits for more rows before it ends (see _delay_writes).
DELAYER_IDLE_SECONDS = 2.0
# The longest a model call waits for its answer to be written (see LLMCache.commit).
COMMIT_WAIT_SECONDS = 5.0


def canonical_hash(payload: Mapping[str, Any]) -> str:
    """SHA-256 hex of ``payload`` as canonical JSON (sorted keys, no whitespace, UTF-8)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chat_cache_key(
    *,
    model: str,
    messages: Sequence[Mapping[str, str]],
    temperature: float,
    max_tokens: int | None,
    json_mode: bool,
    prompt_version: str,
) -> str:
    return canonical_hash(
        {
            "kind": "chat",
            "model": model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": float(temperature),
            "max_tokens": None if max_tokens is None else int(max_tokens),
            "json_mode": bool(json_mode),
            "prompt_version": prompt_version,
        }
    )


def embedding_cache_key(*, model: str, text: str) -> str:
    return canonical_hash({"kind": "embedding", "model": model, "text": text})


def own_embedded_texts(db_path: str | Path, model: str, texts: Iterable[tuple[str, str]]) -> int:
    """Record each ``(text, document_key)`` as an owner of the text's cached embedding, if cached.

    For steps that embed many documents' texts in one deduplicated batch (text units), where no
    single document is the current owner; call it once the model's cache is closed.
    """
    return record_owners(
        db_path,
        (
            (embedding_cache_key(model=model, text=text), EMBEDDING_TABLE, DOCUMENT, document)
            for text, document in texts
        ),
        only_cached=True,
    )


@dataclass(frozen=True)
class CachedChat:
    text: str
    prompt_tokens: int
    completion_tokens: int


def _decode_chat(response: Any, prompt_tokens: Any, completion_tokens: Any) -> CachedChat | None:
    try:
        payload = json.loads(response)
    except (TypeError, ValueError):
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
        return None
    return CachedChat(payload["text"], int(prompt_tokens or 0), int(completion_tokens or 0))


def _decode_vector(stored: Any) -> Vector | None:
    """The float32 vector of a stored row: its little-endian bytes, or the list of floats a cache
    written before the BLOB column holds until a write rewrites it; None when neither, empty, or
    not finite."""
    if stored is None or len(stored) == 0:
        return None
    try:
        if isinstance(stored, (bytes, bytearray, memoryview)):
            stored = bytes(stored)  # the same object when DuckDB gave bytes
            return from_le_bytes(stored) if le_bytes_are_finite(stored) else None
        values = as_float32(stored)
    except (TypeError, ValueError, OverflowError):
        return None
    return values if is_finite(values) else None


@dataclass
class CacheStats:
    """Counters for benchmarks and tests: database work done by the cache."""

    key_loads: int = 0
    lookup_queries: int = 0
    flushes: int = 0
    rows_written: int = 0
    write_failures: int = 0


class _Store:
    """The thread-side half: the pending rows and every database access, on one worker thread.

    It is separate from :class:`LLMCache` so that a finalizer can flush it when the cache object is
    garbage-collected or the interpreter exits without ``close()``.
    """

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)  # the delayer waits on it (see _delay_writes)
        self.pending: dict[str, dict[Any, Any]] = {CHAT_TABLE: {}, EMBEDDING_TABLE: {}, OWNERS_TABLE: {}}
        self.new_keys: set[str] = set()  # pending keys with no row in the database (CacheBatch.new_keys)
        self.write_due: float | None = None  # when the queued rows go to the writer (None: nothing waits)
        self.delayer: threading.Thread | None = None
        self.committing: concurrent.futures.Future[None] | None = None  # see commit_soon
        self.executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.closed = False
        self.schema_ready = False
        self.owners_ready = False
        self.stats = CacheStats()

    def submit(self, fn: Any, *args: Any) -> concurrent.futures.Future[Any]:
        with self.lock:
            return self._executor().submit(fn, *args)

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The writer thread's pool (under ``self.lock``), started on first use."""
        if self.executor is None:
            self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="llm-cache")
        return self.executor

    # -- reads (worker thread) -------------------------------------------------------------------
    def load_keys(self, table: str) -> set[str]:
        self.stats.key_loads += 1
        return cached_keys(self.db_path, table)

    def fetch(self, table: str, keys: list[str]) -> list[tuple[Any, ...]]:
        self.stats.lookup_queries += 1
        return cached_rows(self.db_path, table, keys)

    # -- writes ----------------------------------------------------------------------------------
    def enqueue(self, table: str, rows: Sequence[Any], new_keys: Iterable[str] = ()) -> None:
        with self.lock:
            if self.closed:
                if table != OWNERS_TABLE:
                    log.warning("LLM cache %s is closed; %d answer(s) not cached.", self.db_path, len(rows))
                return
            for row in rows:  # owner rows are (key, table, scope, owner) tuples: their own key
                self.pending[table][row if table == OWNERS_TABLE else row.key] = row
            self.new_keys.update(new_keys)
            if self.write_due is not None:
                return
            self.write_due = time.monotonic() + WRITE_DELAY_SECONDS
            if self.delayer is not None:
                self.wake.notify()
                return
            self.delayer = delayer = threading.Thread(target=self._delay_writes, name="llm-cache-delay", daemon=True)
        delayer.start()

    def _delay_writes(self) -> None:
        """The delayer thread: hands the queued rows to the writer once their delay is over.

        One thread serves every delayed write while rows keep coming and ends after
        ``DELAYER_IDLE_SECONDS`` without any: a thread started per write (a ``threading.Timer``)
        cost the step's thread ~1 ms of waiting each, 0.24 s in a cold index of *A Christmas
        Carol*. Once closed, ``close`` writes what is queued instead.
        """
        with self.wake:
            idle_since = time.monotonic()
            while not self.closed:
                now = time.monotonic()
                if self.write_due is None:
                    if now - idle_since >= DELAYER_IDLE_SECONDS:
                        break
                    self.wake.wait(DELAYER_IDLE_SECONDS - (now - idle_since))
                elif now < self.write_due:
                    self.wake.wait(self.write_due - now)
                else:
                    self.write_due = None
                    idle_since = now
                    try:
                        self._executor().submit(self.write_pending)
                    except RuntimeError:  # interpreter shutting down: the exit-time close writes the rows
                        break
            self.delayer = None

    def unflushed(self, table: str, key: str) -> Any:
        with self.lock:
            return self.pending[table].get(key)

    def commit_soon(self) -> concurrent.futures.Future[None]:
        """A write of every row queued so far, started as soon as the writer is free: done when
        it ended (written, or failed and kept queued). Commits asked for while one waits for the
        writer share it, so answers arriving together are written together."""
        with self.lock:
            if self.committing is None and not self.closed:
                self.committing = concurrent.futures.Future()
                try:
                    self._executor().submit(self.write_pending)
                except RuntimeError:  # interpreter shutting down: the exit-time close writes the rows
                    self.committing = None
            waiter = self.committing
        if waiter is None:
            waiter = concurrent.futures.Future()
            waiter.set_result(None)
        return waiter

    def write_pending(self) -> None:
        """Write every queued row (worker thread, or the caller's thread at close)."""
        with self.lock:
            self.write_due = None
            batch = {table: dict(rows) for table, rows in self.pending.items() if rows}
            new_keys = frozenset(self.new_keys)
            waiter, self.committing = self.committing, None
        try:
            if batch:
                self._write(batch, new_keys)
        finally:
            if waiter is not None:
                waiter.set_result(None)

    def _write(self, batch: dict[str, dict[Any, Any]], new_keys: frozenset[str]) -> None:
        rows = CacheBatch(
            chat=list(batch.get(CHAT_TABLE, {}).values()),
            embeddings=list(batch.get(EMBEDDING_TABLE, {}).values()),
            owners=batch.get(OWNERS_TABLE, {}).values(),
            new_keys=new_keys,
        )
        try:
            if write_batch(self.db_path, rows, create=not self.schema_ready, create_owners=not self.owners_ready):
                self.owners_ready = True  # created on the first write that has owners, then known to exist
            self.schema_ready = True
        except Exception as exc:  # keep the rows queued; the next write or close() tries again
            self.stats.write_failures += 1
            log.warning(
                "could not write %d LLM cache row(s) to %s (%s); will retry.",
                sum(len(v) for v in batch.values()),
                self.db_path,
                exc,
            )
            return
        with self.lock:
            for table, rows in batch.items():
                queue = self.pending[table]
                for key, row in rows.items():
                    if queue.get(key) is row:
                        del queue[key]
            self.new_keys -= new_keys  # in the database now
            self.stats.flushes += 1
            self.stats.rows_written += sum(len(v) for table, v in batch.items() if table != OWNERS_TABLE)

    def flush(self) -> None:
        """Block until everything queued so far is written (or the write failed and was logged)."""
        with self.lock:
            executor = self.executor
            closed = self.closed
        if executor is None or closed:
            self.write_pending()
            return
        try:
            executor.submit(self.write_pending).result()
        except RuntimeError:  # interpreter shutting down: the pool no longer accepts work
            self.write_pending()

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.wake.notify_all()  # the delayer ends
            executor, self.executor = self.executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self.write_pending()
        with self.lock:
            left = sum(len(v) for v in self.pending.values())
        if left:
            log.warning("%d LLM cache row(s) could not be written to %s.", left, self.db_path)


class LLMCache:
    """Chat answers and embedding vectors by content key, persisted in ``db_path`` (DuckDB).

    Usable from several ``asyncio.run`` calls in a row (nothing here is bound to an event loop for
    longer than one lookup batch). Call :meth:`close` (or :meth:`flush`) when a step ends; a
    finalizer flushes on garbage collection and at interpreter exit as a safety net.
    """

    def __init__(self, db_path: str | Path) -> None:
        self.db_path = Path(db_path)
        self._store = _Store(self.db_path)
        self._known: dict[str, set[str]] = {}  # keys in the database when first needed
        self._added: dict[str, set[str]] = {CHAT_TABLE: set(), EMBEDDING_TABLE: set()}  # keys put since
        self._loading: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[set[str]]]] = {}
        self._batches: dict[tuple[int, str], dict[str, asyncio.Future[Any]]] = {}
        self._finalizer = weakref.finalize(self, self._store.close)

    @property
    def stats(self) -> CacheStats:
        return self._store.stats

    async def _known_keys(self, table: str) -> set[str]:
        known = self._known.get(table)
        if known is None:
            # One load shared by every concurrent caller, so they all resume in the same loop turn
            # and their lookups join one batch.
            loop = asyncio.get_running_loop()
            loading = self._loading.get(table)
            if loading is None or loading[0] is not loop:
                loading = self._loading[table] = (
                    loop,
                    asyncio.wrap_future(self._store.submit(self._store.load_keys, table), loop=loop),
                )
            try:
                loaded = await asyncio.shield(loading[1])
            except Exception:
                self._loading.pop(table, None)  # let a later call try again
                raise
            known = self._known.setdefault(table, loaded)
        return known

    async def _lookup(self, table: str, keys: Sequence[str]) -> dict[str, Any]:
        """Raw rows for the keys that may be cached, batched with other lookups of this loop turn."""
        known = await self._known_keys(table)
        added = self._added[table]
        wanted = [k for k in keys if k in known or k in added]
        if not wanted:
            return {}
        loop = asyncio.get_running_loop()
        batch_id = (id(loop), table)
        batch = self._batches.get(batch_id)
        if batch is None:
            batch = self._batches[batch_id] = {}
            loop.call_soon(self._run_batch, loop, batch_id)
        futures = [batch.setdefault(k, loop.create_future()) for k in wanted]
        rows = await asyncio.gather(*futures)
        return {k: row for k, row in zip(wanted, rows) if row is not None}

    def _run_batch(self, loop: asyncio.AbstractEventLoop, batch_id: tuple[int, str]) -> None:
        batch = self._batches.pop(batch_id, {})
        table = batch_id[1]
        future = self._store.submit(self._store.fetch, table, list(batch))

        def resolve(done: concurrent.futures.Future[Any]) -> None:
            try:
                rows = {row[0]: row for row in done.result()}
            except Exception as exc:
                log.warning("LLM cache lookup in %s failed (%s); treating as misses.", self.db_path, exc)
                rows = {}
            for key, waiter in batch.items():
                if not waiter.done():
                    waiter.set_result(rows.get(key))

        future.add_done_callback(lambda done: loop.call_soon_threadsafe(resolve, done))

    # -- chat ------------------------------------------------------------------------------------
    async def get_chat(self, key: str) -> CachedChat | None:
        row = self._store.unflushed(CHAT_TABLE, key)
        if row is not None:
            return _decode_chat(row.response, row.prompt_tokens, row.completion_tokens)
        found = (await self._lookup(CHAT_TABLE, [key])).get(key)
        if found is None:
            return None
        return _decode_chat(found[1], found[2], found[3])

    def put_chat(
        self, key: str, *, model: str, purpose: str, text: str, prompt_tokens: int, completion_tokens: int
    ) -> None:
        row = ChatRow(
            key=key,
            model=model,
            purpose=purpose,
            response=json.dumps({"text": text}, ensure_ascii=False),
            prompt_tokens=int(prompt_tokens),
            completion_tokens=int(completion_tokens),
            created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )
        new = self._new_keys(CHAT_TABLE, [key])
        self._added[CHAT_TABLE].add(key)
        self._store.enqueue(CHAT_TABLE, [row], new)

    def _new_keys(self, table: str, keys: Iterable[str]) -> list[str]:
        """The keys neither in the database when its keys were read nor put since: their rows
        and ownerships need no replacing (see CacheBatch). None is new before the keys were read."""
        known = self._known.get(table)
        if known is None:
            return []
        added = self._added[table]
        return [key for key in keys if key not in known and key not in added]

    def note_use(self, table: str, keys: Iterable[str]) -> None:
        """Record that the current owner (:mod:`graphrag_assets.core.ownership`) used ``keys`` of ``table``."""
        owner = current_owner()
        rows = [] if owner is None else [(key, table, *owner) for key in keys]
        if rows:
            self._store.enqueue(OWNERS_TABLE, rows)

    # -- embeddings ------------------------------------------------------------------------------
    async def get_embeddings(self, keys: Sequence[str]) -> dict[str, Vector]:
        """float32 vectors by key, for the keys that are cached."""
        found: dict[str, Vector] = {}
        remaining = []
        for key in dict.fromkeys(keys):
            row = self._store.unflushed(EMBEDDING_TABLE, key)
            if row is not None:
                found[key] = row.vector
            else:
                remaining.append(key)
        for key, row in (await self._lookup(EMBEDDING_TABLE, remaining)).items():
            vector = _decode_vector(row[1])
            if vector is not None:
                found[key] = vector
        return found

    def put_embeddings(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Queue ``vectors`` (float32 buffers of any kind, or lists of numbers) for writing."""
        rows = [EmbeddingRow(key, model, float32_buffer(vector)) for key, vector in vectors.items()]
        new = self._new_keys(EMBEDDING_TABLE, vectors)
        self._added[EMBEDDING_TABLE].update(vectors)
        self._store.enqueue(EMBEDDING_TABLE, rows, new)

    # -- lifecycle -------------------------------------------------------------------------------
    def flush(self) -> None:
        """Block until every answer received so far is written."""
        self._store.flush()

    async def aflush(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._store.flush)

    async def commit(self, wait_seconds: float = COMMIT_WAIT_SECONDS) -> None:
        """Write what is queued now, and wait (up to ``wait_seconds``) until it is on disk.

        A model call awaits this before it returns its answer, so a killed process loses only
        the calls still in flight, never an answer already paid for and handed on. Waiting is
        bounded: behind a database another process holds, the write goes on in the background
        and the call goes on without it.
        """
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._store.commit_soon())), wait_seconds)
        except TimeoutError:
            pass

    def close(self) -> None:
        """Write what is queued and stop the writer thread (idempotent)."""
        self._finalizer()
