"""The coordinator's last step with workers: every shard's rows into the index, then the exchange cleared.

The index is written here only, by one process, with the storage functions the document assets'
IO manager uses: each table's rows replace those of the shards' documents (pending until the
corpus publish for the build's tables), ``document_steps`` notes the version each step was made
from, cache rows and ownerships are merged, usage rows appended, and text-unit vectors merged into
LanceDB when the index keeps its tables — so the index ends as the single-process run leaves it.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from graphrag_assets.core.settings import Settings
from graphrag_assets.index.embedding_texts import text_unit_texts
from graphrag_assets.pipeline.assets.embeddings import TextUnitVectors, publish_text_unit_vectors
from graphrag_assets.pipeline.workers_plan import DOCUMENTS_FILE, DONE_FILE, ShardRef
from graphrag_assets.pipeline.workers_shard import SHARD_TABLES
from graphrag_assets.storage.cache_owners import CACHE_TABLES
from graphrag_assets.storage.documents import record_document_step
from graphrag_assets.storage.exchange import open_exchange
from graphrag_assets.storage.object_store import shared_location
from graphrag_assets.storage.pending import write_document_partitions
from graphrag_assets.storage.shard_rows import add_cache_rows, add_usage_rows
from graphrag_assets.storage.table_names import CACHE_OWNERS, USAGE


def _stacked(frames: Sequence[pl.DataFrame]) -> pl.DataFrame | None:
    """One frame of the shards' frames of a table (an empty one keeps the first shard's schema)."""
    if not frames:
        return None
    with_rows = [frame for frame in frames if frame.height]
    return pl.concat(with_rows, how="vertical_relaxed") if with_rows else frames[0]


def collect_shards(settings: Settings, refs: Sequence[ShardRef]) -> list[str]:
    """Write every shard's rows into the index; the documents written. Raises when a shard is incomplete."""
    if not refs:
        return []
    exchange = open_exchange(refs[0].location, shared_location(settings))
    for ref in refs:
        if not exchange.exists(ref.outbound(DONE_FILE)):
            raise RuntimeError(
                f"shard {ref.index} of run {ref.run_id} did not finish; run 'graphrag-assets index' again."
            )

    def read_all(table: str, where: str = "out") -> list[pl.DataFrame]:
        names = [ref.outbound(table) if where == "out" else ref.inbound(table) for ref in refs]
        return [frame for name in names if (frame := exchange.read(name)) is not None]

    keys = sorted(key for frame in read_all(DOCUMENTS_FILE, "in") for key in frame["document_key"].to_list())
    database = settings.database_path
    cache = {table: _stacked(read_all(f"{table}.parquet")) for table in (*CACHE_TABLES, CACHE_OWNERS)}
    add_cache_rows(database, {table: frame for table, frame in cache.items() if frame is not None})
    tables = {table: _stacked(read_all(f"{table}.parquet")) for table in SHARD_TABLES}
    for table, frame in tables.items():
        if frame is None:
            raise RuntimeError(
                f"the shards of run {refs[0].run_id} hold no {table} rows; run 'graphrag-assets index' again."
            )
        if table == "text_unit_embeddings":
            units = tables["text_units"]
            made = TextUnitVectors(frame, text_unit_texts(units), {})
            publish_text_unit_vectors(settings, made, keys)
        write_document_partitions(database, table, frame, "document_key", keys)
        record_document_step(database, table, keys)
    usage = _stacked(read_all(f"{USAGE}.parquet"))
    if usage is not None:
        add_usage_rows(database, usage)
    return keys


def clear_run(settings: Settings, location: str, run_id: str) -> None:
    """Delete a run's exchange folder (its shards' inputs and outputs)."""
    open_exchange(location, shared_location(settings)).delete_tree(f"runs/{run_id}")
