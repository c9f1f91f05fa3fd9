"""Per-document ingestion: ``documents`` and ``text_units`` in one step.

Both are made in the same step so each file is read once and ``documents.text_unit_ids`` can be
filled (Microsoft GraphRAG needs a separate "final documents" pass for that).
"""

from typing import Any

import polars as pl
from dagster import AssetExecutionContext, AssetKey, AssetOut, MetadataValue, Output, multi_asset

from graphrag_assets.core import schemas
from graphrag_assets.pipeline.assets.metadata import preview
from graphrag_assets.project.fingerprints import document_fingerprint
from graphrag_assets.pipeline.partitions import DOCUMENT_PARTITIONS, PARTITION_METADATA, SINGLE_RUN
from graphrag_assets.index.chunking import attach_text_unit_ids, chunk_documents
from graphrag_assets.index.documents import read_file_documents
from graphrag_assets.index.input_files import InputFile, discover_input_files
from graphrag_assets.core.progress import Counter
from graphrag_assets.core.progress import warn as progress_warn
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.core.settings import Settings


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
        row = {"document_key": key, "status": "missing", "documents": 0, "message": message, "settings_fingerprint": fingerprint}
        return schemas.empty_frame(schemas.DOCUMENTS), row, [message]
    try:
        stat = (settings.input_dir / found.path).stat()
        result = read_file_documents(settings.input_dir, found.path, key, settings.input)
    except Exception as exc:  # noqa: BLE001 - any failure is reported against this file only
        message = f"{found.path}: skipped, reading it failed unexpectedly ({type(exc).__name__}: {exc})"
        row = {"document_key": key, "path": found.path, "status": "skipped", "documents": 0, "message": message, "settings_fingerprint": fingerprint}
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
    keys = list(context.partition_keys)
    files = {f.key: f for f in discover_input_files(settings.input_dir, settings.input.file_types)}
    documents: list[pl.DataFrame] = []
    warnings: list[str] = []
    progress = Counter("ingest", len(keys), context.log).start()
    fingerprint = document_fingerprint(settings)
    sources: list[dict] = []
    for key in keys:
        frame, source, file_warnings = ingest_partition(settings, key, files.get(key), fingerprint)
        documents.append(frame)
        sources.append(source)
        warnings.extend(file_warnings)
        progress.step()
    for warning in warnings:
        progress_warn(warning, context.log)
    docs = pl.concat(documents) if documents else schemas.empty_frame(schemas.DOCUMENTS)
    units = chunk_documents(docs, settings.chunking.size, settings.chunking.overlap, settings.chunking.encoding)
    docs = attach_text_unit_ids(docs, units)
    source_frame = schemas.conform(pl.DataFrame(sources), schemas.SOURCE_FILES)
    yield Output(
        source_frame,
        output_name="source_files",
        metadata={
            "files": source_frame.height,
            "skipped": MetadataValue.json(
                source_frame.filter(pl.col("status") != "ingested").select("document_key", "message").to_dicts()
            ),
        },
    )
    common = {"warnings": MetadataValue.json(warnings), "warning_count": len(warnings)}
    yield Output(
        docs,
        output_name="documents",
        metadata={
            **common,
            "documents": docs.height,
            "replaced_bytes": int(docs.get_column("replaced_chars").sum() or 0),
            "preview": preview(docs.select("title", "path", "document_key", "creation_date")),
        },
    )
    yield Output(
        units,
        output_name="text_units",
        metadata={
            "text_units": units.height,
            "tokens": int(units.get_column("n_tokens").sum() or 0),
            "chunk_size": settings.chunking.size,
            "chunk_overlap": settings.chunking.overlap,
            "preview": preview(units.select("document_key", "chunk_index", "n_tokens", pl.col("text").str.slice(0, 80))),
        },
    )
