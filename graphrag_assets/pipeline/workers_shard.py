"""A worker's step: the document steps of one shard, against a scratch database of its own.

The worker never opens the index. It loads the shard's inputs from the exchange into a scratch
project (the settings with the database and LanceDB in a temporary folder, and the model limits
divided by the number of shards so the endpoint's limits hold in total), runs the same step
functions the document assets run — ingest, extract, embed text units — and writes every table's
rows for its documents, the cache rows and the usage rows to the shard's ``out/`` folder, each
file whole, and a ``done`` marker last. A worker killed part-way leaves no marker, so its retry
redoes the shard from its inputs; a retry that finds the marker has nothing left to do.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core.schemas import PER_DOCUMENT_TABLES
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.input_files import InputFile
from graphrag_assets.pipeline.assets.embeddings import embed_text_units
from graphrag_assets.pipeline.assets.extraction import extract_documents
from graphrag_assets.pipeline.assets.ingest import ingest_documents, planned_file
from graphrag_assets.pipeline.assets.model_session import StepScope
from graphrag_assets.pipeline.workers_plan import DOCUMENTS_FILE, DONE_FILE, ShardRef
from graphrag_assets.storage.cache_owners import CACHE_TABLES
from graphrag_assets.storage.database import let_go
from graphrag_assets.storage.exchange import open_exchange
from graphrag_assets.storage.object_store import shared_location
from graphrag_assets.storage.shard_rows import add_cache_rows, all_cache_rows, usage_rows
from graphrag_assets.storage.table_names import CACHE_OWNERS, USAGE

# The per-document tables a shard gives back, in the order the document assets write them.
SHARD_TABLES = PER_DOCUMENT_TABLES
SHARD_ROW_TABLES = (*SHARD_TABLES, *CACHE_TABLES, CACHE_OWNERS, USAGE)


def shard_settings(settings: Settings, scratch: Path, shards: int) -> Settings:
    """The project's settings for a shard: storage in ``scratch``, model limits shared ``shards`` ways."""
    llm = settings.llm
    share = {
        "concurrency": max(1, llm.concurrency // shards),
        "requests_per_minute": llm.requests_per_minute and max(1, llm.requests_per_minute // shards),
        "tokens_per_minute": llm.tokens_per_minute and max(1, llm.tokens_per_minute // shards),
    }
    storage = {"database": str(scratch / "shard.duckdb"), "lancedb": str(scratch / "lancedb")}
    return settings.model_copy(
        update={
            "llm": llm.model_copy(update=share),
            "storage": settings.storage.model_copy(update=storage),
        }
    )


def run_shard(settings: Settings, ref: ShardRef, log: logging.Logger | Any) -> int:
    """Run the document steps of one shard; the documents it worked on (0 when a previous attempt finished it)."""
    exchange = open_exchange(ref.location, shared_location(settings))
    if exchange.exists(ref.outbound(DONE_FILE)):
        return 0
    inputs = exchange.read(ref.inbound(DOCUMENTS_FILE))
    if inputs is None:
        raise FileNotFoundError(f"shard {ref.index} of run {ref.run_id} has no inputs in {ref.location}")
    keys = inputs["document_key"].to_list()
    files: dict[str, InputFile] = {}
    for key, path in inputs.iter_rows():
        found = planned_file(settings, key, path)
        if found is not None:
            files[key] = found
    with tempfile.TemporaryDirectory(prefix=f"graphrag-shard-{ref.index}-") as scratch:
        local = shard_settings(settings, Path(scratch), ref.shards)
        cached = {table: exchange.read(ref.inbound(f"{table}.parquet")) for table in (*CACHE_TABLES, CACHE_OWNERS)}
        add_cache_rows(local.database_path, {table: frame for table, frame in cached.items() if frame is not None})
        scope = StepScope(local, log, ref.run_id, "ingest", partition_key=f"shard-{ref.index}")
        ingested = ingest_documents(scope, keys, files)
        extracted = extract_documents(dataclasses.replace(scope, step="extract"), keys, ingested.text_units)
        vectors = embed_text_units(dataclasses.replace(scope, step="text_unit_embeddings"), ingested.text_units)
        rows = {
            "source_files": ingested.source_files,
            "documents": ingested.documents,
            "text_units": ingested.text_units,
            "graph_extractions": extracted.records,
            "extraction_status": extracted.status,
            "text_unit_embeddings": vectors.frame,
            **all_cache_rows(local.database_path),
        }
        usage = usage_rows(local.database_path)
        if usage is not None:
            rows[USAGE] = usage
        let_go(local.database_path)  # closed before its folder goes
        for table, frame in rows.items():
            exchange.write(ref.outbound(f"{table}.parquet"), frame)
    exchange.write(ref.outbound(DONE_FILE), pl.DataFrame({"documents": [len(keys)]}))
    return len(keys)
