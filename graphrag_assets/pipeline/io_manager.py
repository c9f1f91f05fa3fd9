"""A small DuckDB IO manager for polars frames.

Written instead of subclassing ``dagster-duckdb-polars`` 0.29, which (measured here) cannot load
inputs with duckdb 2.x, never creates a table for an empty frame, inserts by position, deletes and
inserts in separate transactions, and breaks when the database file is named like the schema.
The storage rules themselves live in :mod:`graphrag_assets.storage.tables`.

Table name = the last component of the asset key (or ``table`` in the asset's metadata).
Partitioned assets name their partition column in metadata ``partition_column``
(default ``document_key``) and return :class:`DocumentRows`: the rows of the documents the step
worked on, which replace exactly those documents' rows (a bucket partition holds many documents,
and a run redoes only the ones that changed); assets with ``staged`` in their metadata are written to (and read
back from) their staged tables until the corpus run publishes them (:mod:`graphrag_assets.storage.corpus`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl
from dagster import ConfigurableIOManager, InputContext, MetadataValue, OutputContext

from graphrag_assets.core.buckets import documents_in_buckets, is_bucket_key
from graphrag_assets.storage.corpus import read_staged, write_staged
from graphrag_assets.storage.documents import indexed_documents, record_document_step
from graphrag_assets.storage.pending import write_document_partitions
from graphrag_assets.storage.tables import read_table, write_table

DEFAULT_PARTITION_COLUMN = "document_key"


@dataclass(frozen=True)
class DocumentRows:
    """The output of a per-document step: ``frame`` holds the new rows of ``documents`` (all of
    them; a document without rows keeps none)."""

    frame: pl.DataFrame
    documents: Sequence[str]


def _table_name(asset_key_path: list[str], metadata: dict | None) -> str:
    return str((metadata or {}).get("table") or asset_key_path[-1])


def _partition_column(metadata: dict | None) -> str:
    return str((metadata or {}).get("partition_column") or DEFAULT_PARTITION_COLUMN)


class DuckDBPolarsIOManager(ConfigurableIOManager):
    """Stores each asset as a table in one DuckDB file; partitions replace their own rows."""

    database: str

    def handle_output(self, context: OutputContext, obj: pl.DataFrame | DocumentRows | None) -> None:
        if obj is None:
            return
        metadata = context.definition_metadata
        table = _table_name(context.asset_key.path, metadata)
        if isinstance(obj, DocumentRows):
            keys = list(obj.documents)
            write_document_partitions(self.database, table, obj.frame, _partition_column(metadata), keys)
            record_document_step(self.database, table, keys)
            context.add_output_metadata({"table": MetadataValue.text(table)})
            return
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(
                f"{context.asset_key.to_user_string()} must return a polars DataFrame, not {type(obj).__name__}"
            )
        if context.has_asset_partitions:
            keys = context.asset_partition_keys
            write_document_partitions(self.database, table, obj, _partition_column(metadata), keys)
            record_document_step(self.database, table, keys)
        elif metadata.get("staged"):
            write_staged(self.database, table, obj)
        else:
            write_table(self.database, table, obj)
        # A partitioned output's row count is given per partition by the asset (a range run writes many).
        row_count = {} if context.has_asset_partitions else {"dagster/row_count": obj.height}
        context.add_output_metadata({"table": MetadataValue.text(table), **row_count})

    def load_input(self, context: InputContext) -> pl.DataFrame:
        upstream = context.upstream_output
        metadata = upstream.definition_metadata if upstream is not None else {}
        table = _table_name(context.asset_key.path, metadata)
        keys = None
        if context.has_asset_partitions and context.asset_partitions_def is not None:
            keys = list(context.asset_partition_keys)
            if any(is_bucket_key(key) for key in keys):
                keys = documents_in_buckets(indexed_documents(self.database), keys)
        if metadata.get("staged"):
            frame = read_staged(self.database, table)
        else:
            frame = read_table(self.database, table, partition_column=_partition_column(metadata), partition_keys=keys)
        if frame is None:
            raise RuntimeError(
                f"table {table} does not exist yet in {self.database}; materialize {context.asset_key.to_user_string()} first."
            )
        return frame
