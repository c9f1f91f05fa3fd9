"""The coordinator's first step with workers: which documents need work, split into shards.

The decisions are the document assets' own (:mod:`graphrag_assets.project.document_work`):
the documents to ingest, those whose extraction or embedding is out of date, and, in bucket
mode, the deleted documents of the buckets, removed here as ingestion removes them. Each shard's
inputs go to the exchange (:mod:`graphrag_assets.storage.exchange`) under
``runs/<run id>/shard-<i>/in/``: its documents with their files, and the response-cache rows its
documents own, so a re-run is answered from the cache on whichever machine runs the shard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from graphrag_assets.core.settings import Settings
from graphrag_assets.index.input_files import discover_input_files
from graphrag_assets.project.document_work import ingest_work, step_work
from graphrag_assets.storage.documents import delete_documents
from graphrag_assets.storage.exchange import open_exchange
from graphrag_assets.storage.object_store import shared_location
from graphrag_assets.storage.shard_rows import cache_rows_of

DOCUMENTS_FILE = "documents.parquet"
DONE_FILE = "done.parquet"  # written last by a shard: its out/ files are complete


@dataclass(frozen=True)
class ShardRef:
    """Where one shard's files are: what the coordinator's steps hand to the workers and back."""

    location: str  # the exchange's base location
    run_id: str
    index: int
    shards: int  # how many shards the run has (a worker's share of the model limits)
    documents: int

    @property
    def prefix(self) -> str:
        return f"runs/{self.run_id}/shard-{self.index}"

    def inbound(self, name: str) -> str:
        return f"{self.prefix}/in/{name}"

    def outbound(self, name: str) -> str:
        return f"{self.prefix}/out/{name}"


def exchange_location(settings: Settings) -> str:
    """The exchange of this project: ``exchange`` under ``storage.shared_url`` when it is set (so
    workers on other machines reach it), else ``data/exchange`` next to the index."""
    shared = shared_location(settings)
    if shared is None:
        return str(settings.path("data/exchange"))
    return shared.url_of("exchange") if shared.is_s3 else str(Path(shared.prefix) / "exchange")


def documents_to_work_on(settings: Settings, partition_keys: Sequence[str]) -> list[str]:
    """The documents of these partitions that any document step must redo; removes the deleted
    documents of buckets first, as the ``ingest`` asset does."""
    work = ingest_work(settings, list(partition_keys))
    if work.remove:
        delete_documents(settings.database_path, settings.lancedb_path, work.remove)
    stale = {*step_work(settings, partition_keys, "graph_extractions")}
    stale |= set(step_work(settings, partition_keys, "text_unit_embeddings"))
    return sorted(set(work.ingest) | stale)


def plan_shards(settings: Settings, partition_keys: Sequence[str], run_id: str, count: int) -> list[ShardRef]:
    """Split the work of these partitions into at most ``count`` shards balanced by file size and
    write their inputs to the exchange; the shards (none when nothing needs work)."""
    keys = documents_to_work_on(settings, partition_keys)
    if not keys:
        return []
    files = {found.key: found for found in discover_input_files(settings.input_dir, settings.input.file_types)}
    loads = [0] * min(count, len(keys))
    members: list[list[str]] = [[] for _ in loads]
    for key in sorted(keys, key=lambda k: (-(files[k].size if k in files else 0), k)):
        lightest = loads.index(min(loads))
        members[lightest].append(key)
        loads[lightest] += (files[key].size if key in files else 0) + 1
    exchange = open_exchange(exchange_location(settings), shared_location(settings))
    refs = []
    for index, shard_keys in enumerate(members):
        ref = ShardRef(exchange.location, run_id, index, len(members), len(shard_keys))
        shard_keys.sort()
        paths = [files[key].path if key in files else None for key in shard_keys]
        exchange.write(
            ref.inbound(DOCUMENTS_FILE),
            pl.DataFrame(
                {"document_key": shard_keys, "path": paths}, schema={"document_key": pl.String, "path": pl.String}
            ),
        )
        for table, frame in cache_rows_of(settings.database_path, shard_keys).items():
            exchange.write(ref.inbound(f"{table}.parquet"), frame)
        refs.append(ref)
    return refs
