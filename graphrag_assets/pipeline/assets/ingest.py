"""Per-document ingestion: ``documents`` and ``text_units`` in one step.

Both are made in the same step so each file is read once and ``documents.text_unit_ids`` can be
filled (Microsoft GraphRAG needs a separate "final documents" pass for that).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, AssetKey, AssetOut, MetadataValue, Output, multi_asset

from graphrag_assets.core import schemas
from graphrag_assets.core.progress import Counter
from graphrag_assets.core.progress import warn as progress_warn
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.chunking import attach_text_unit_ids, chunk_documents
from graphrag_assets.index.documents import read_file_documents
from graphrag_assets.index.input_files import InputFile, discover_input_files
from graphrag_assets.pipeline.assets.metadata import describe_partitions, document_table, preview
from graphrag_assets.pipeline.assets.model_session import StepScope, step_scope
from graphrag_assets.pipeline.io_manager import DocumentRows
from graphrag_assets.pipeline.partitions import DOCUMENT_PARTITIONS, PARTITION_METADATA, SINGLE_RUN
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.project.document_work import ingest_work
from graphrag_assets.project.fingerprints import document_fingerprint
from graphrag_assets.project.index_plan import handed_plan
from graphrag_assets.storage.documents import delete_documents


def ingest_partition(
    settings: Settings, key: str, found: InputFile | None, fingerprint: str
) -> tuple[pl.DataFrame, dict[str, Any], list[str]]:
    """The documents, ``source_files`` row and warnings of one document partition.

    Never raises for a problem with the file: reading has its own warnings for the expected ones,
    and anything unexpected (a file deleted since discovery, a parser's RecursionError) becomes a
    skipped row saying what happened, so one bad file never stops the others.
    """
    if found is None:
        message = f"partition {key}: its file is no longer in {settings.input.dir}; nothing ingested"
        row = {
            "document_key": key,
            "status": "missing",
            "documents": 0,
            "message": message,
            "settings_fingerprint": fingerprint,
        }
        return schemas.empty_frame(schemas.DOCUMENTS), row, [message]
    try:
        stat = (settings.input_dir / found.path).stat()
        result = read_file_documents(settings.input_dir, found.path, key, settings.input)
    except Exception as exc:  # noqa: BLE001 - any failure is reported against this file only
        message = f"{found.path}: skipped, reading it failed unexpectedly ({type(exc).__name__}: {exc})"
        row = {
            "document_key": key,
            "path": found.path,
            "status": "skipped",
            "documents": 0,
            "message": message,
            "settings_fingerprint": fingerprint,
        }
        return schemas.empty_frame(schemas.DOCUMENTS), row, [message]
    row = {
        "document_key": key,
        "path": found.path,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "content_hash": result.content_hash,
        "status": "skipped" if result.skipped else "ingested",
        "documents": result.frame.height,
        "message": "; ".join(result.warnings) or None,
        "settings_fingerprint": fingerprint,
    }
    return result.frame, row, result.warnings


@multi_asset(
    outs={
        "documents": AssetOut(
            description="One row per input document (a text file, or a row of a CSV/JSON/JSONL file); MS GraphRAG v3 columns plus path, content hash and partition key.",
            metadata=PARTITION_METADATA,
        ),
        "source_files": AssetOut(
            description="The input file behind each document partition as last ingested: size, modification time, content hash and whether it was ingested or skipped (drives change detection).",
            metadata=PARTITION_METADATA,
        ),
        "text_units": AssetOut(
            description="Token-window chunks of each document (MS GraphRAG v3 columns); ids never collide across documents.",
            metadata=PARTITION_METADATA,
        ),
    },
    internal_asset_deps={"source_files": set(), "documents": set(), "text_units": {AssetKey("documents")}},
    partitions_def=DOCUMENT_PARTITIONS,
    backfill_policy=SINGLE_RUN,
    group_name="ingest",
    can_subset=False,
)
def ingest(context: AssetExecutionContext, project: GraphRAGProject):
    settings = project.settings
    plan = handed_plan(settings)  # from `index`: no second scan of the folder (see project.index_plan)
    work = ingest_work(settings, list(context.partition_keys), plan.changes if plan else None)
    if work.remove:
        delete_documents(settings.database_path, settings.lancedb_path, work.remove)
    keys = work.ingest
    if plan:
        files = {key: found for key in keys if (found := planned_file(settings, key, plan.changes.paths.get(key)))}
    else:
        files = {f.key: f for f in discover_input_files(settings.input_dir, settings.input.file_types)}
    result = ingest_documents(step_scope(context, settings), keys, files)
    removed = {"run/removed_documents": len(work.remove)} if work.remove else {}
    describe_partitions(context, "source_files", result.source_files, _describe_source, run_wide=removed)
    yield Output(DocumentRows(result.source_files, keys), output_name="source_files")

    def describe_documents(rows: pl.DataFrame, bucketed: bool) -> dict:
        keys_here = rows["document_key"].unique().sort().to_list()
        found = [w for key in keys_here for w in result.warnings_of.get(key, [])]
        return {
            "documents": rows.height,
            "replaced_bytes": int(rows.get_column("replaced_chars").sum() or 0),
            "warnings": MetadataValue.json(found[:WARNINGS_SHOWN]),
            "preview": preview(rows.select("title", "path", "creation_date")),
        }

    describe_partitions(context, "documents", result.documents, describe_documents)
    yield Output(DocumentRows(result.documents, keys), output_name="documents")
    describe_partitions(
        context,
        "text_units",
        result.text_units,
        lambda rows, bucketed: {
            "text_units": rows.height,
            "tokens": int(rows.get_column("n_tokens").sum() or 0),
            "chunk_size": settings.chunking.size,
            "chunk_overlap": settings.chunking.overlap,
            "preview": preview(rows.select("chunk_index", "n_tokens", pl.col("text").str.slice(0, 80))),
        },
    )
    yield Output(DocumentRows(result.text_units, keys), output_name="text_units")


@dataclass(frozen=True)
class IngestResult:
    """The rows ingestion made for its documents, and each file's warnings (by document key)."""

    source_files: pl.DataFrame
    documents: pl.DataFrame
    text_units: pl.DataFrame
    warnings_of: dict[str, list[str]]


def ingest_documents(scope: StepScope, keys: list[str], files: Mapping[str, InputFile]) -> IngestResult:
    """Read and chunk the documents ``keys`` (their files: ``files``; a key without one is ``missing``).

    The body of the ``ingest`` asset without Dagster, so a worker's shard runs the very same step.
    """
    settings = scope.settings
    documents: list[pl.DataFrame] = []
    warnings: list[str] = []
    progress = Counter("ingest", len(keys), scope.log).start()
    fingerprint = document_fingerprint(settings)
    sources: list[dict] = []
    for key in keys:
        frame, source, file_warnings = ingest_partition(settings, key, files.get(key), fingerprint)
        documents.append(frame)
        sources.append(source)
        warnings.extend(file_warnings)
        progress.step()
    for warning in warnings:
        progress_warn(warning, scope.log)
    warnings_of: dict[str, list[str]] = {}
    for source in sources:
        if source.get("path"):
            warnings_of[source["document_key"]] = [w for w in warnings if w.startswith(f"{source['path']}:")]
    docs = pl.concat(documents) if documents else schemas.empty_frame(schemas.DOCUMENTS)
    del documents
    units = chunk_documents(docs, settings.chunking.size, settings.chunking.overlap, settings.chunking.encoding)
    docs = attach_text_unit_ids(docs, units)
    source_frame = (
        schemas.conform(pl.DataFrame(sources), schemas.SOURCE_FILES)
        if sources
        else schemas.empty_frame(schemas.SOURCE_FILES)
    )
    return IngestResult(source_frame, docs, units, warnings_of)


WARNINGS_SHOWN = 20


def planned_file(settings: Settings, key: str, path: str | None) -> InputFile | None:
    """The planned file of ``key`` if it is still in the input folder (one deleted since the plan
    is ``missing``, as a scan now would have said)."""
    if path is None:
        return None
    try:
        stat = (settings.input_dir / path).stat()
    except OSError:
        return None
    return InputFile(path, key, stat.st_size, stat.st_mtime_ns)


def _describe_source(rows: pl.DataFrame, bucketed: bool) -> dict:
    if bucketed:
        return {
            "documents_ingested": rows.height,
            "by_status": MetadataValue.json(dict(rows.group_by("status").agg(pl.len()).sort("status").iter_rows())),
            "files": document_table(rows.select("document_key", "status", "documents", "message")),
        }
    row = rows.row(0, named=True) if rows.height else {}
    return {
        "path": MetadataValue.path(row.get("path") or ""),
        "status": row.get("status") or "",
        "message": row.get("message") or "",
        "documents": row.get("documents") or 0,
    }
