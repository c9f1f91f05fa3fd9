"""Import a Microsoft GraphRAG v3 output folder, so our query engines answer on an index MS built.

The folder holds MS's parquet tables (``documents``, ``text_units``, ``entities``,
``relationships``, ``communities``, ``community_reports``; ``covariates`` when claims were on)
and optionally ``lancedb/`` with its vectors. Every id is kept. Our extra columns are filled:

- documents: ``document_key`` = ``imported/<title>`` (``imported/<title>#<id prefix>`` when two
  documents share a title), ``path`` = title, ``raw_data`` = the source row as JSON;
  ``content_hash`` and ``replaced_chars`` stay null (there is no input file to hash);
- text units: ``chunk_index`` = position within the document in MS's order, and
  ``human_readable_id`` = that index (our meaning of the column); ``start_token`` null;
- community reports: ``generation`` = ``llm``; ``context_tokens`` / ``substituted_reports`` null;
  ``full_content_tokens`` counted with the project's encoding.

Relationships are kept as MS wrote them, directed: (A, B) and (B, A) stay two rows. Our query
engines match a relationship by either end and never assume one row per pair, and merging
would invent weights and descriptions MS never produced. Relationships naming an entity that is
not in ``entities.parquet`` (MS's own Christmas Carol index has 84) are kept too, with a warning:
the engines only reach them through an existing end.

Embeddings: vectors found in ``lancedb/`` are used when the project embeds queries with an
endpoint model (it must be the model MS used: ``llm.embedding_model``); with the offline local
embedder they would be incomparable with query vectors, so every text is embedded again with
the project's embedder instead, as it is when there is no ``lancedb/`` folder.

Vectors are kept in DuckDB; LanceDB tables are written as an index run would write them
(``storage.lancedb_tables``): with ``auto``, only when the text units hold more tokens than
queries search in memory, so a small imported index is searched in memory and importing it does
not load LanceDB (unless MS's ``lancedb/`` folder is read for its vectors).

An imported index is for querying: ``graphrag-assets index`` on a project whose input folder has
files rebuilds the corpus tables from those files and replaces the imported graph.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.index.embedding_texts import (
    embed_frame,
    entity_texts,
    report_texts,
    text_hashes,
    text_unit_texts,
    with_text,
)
from graphrag_assets.index.report_tokens import with_content_tokens
from graphrag_assets.interop.common import ImportResult
from graphrag_assets.interop.msgraphrag import EXPORTED_MODEL_KEY
from graphrag_assets.llm.factory import build_embedding_model
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.storage import vectors as lance
from graphrag_assets.storage.corpus import MANIFEST_COLUMNS, begin_corpus_run, publish_corpus, write_staged
from graphrag_assets.storage.database import connect, table_exists
from graphrag_assets.storage.vectors import lancedb_module

REQUIRED_FILES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports")
OPTIONAL_FILES = ("covariates",)
KEY_PREFIX = "imported/"

# MS columns each table must have (the rest of our schema is filled in).
REQUIRED_COLUMNS = {
    "documents": ("id", "title", "text"),
    "text_units": ("id", "text"),
    "entities": ("id", "title"),
    "relationships": ("id", "source", "target"),
    "communities": ("id", "community", "level"),
    "community_reports": ("id", "community", "level", "full_content"),
    "covariates": ("id", "text_unit_id"),
}

# Our DuckDB embedding table -> MS LanceDB table names it may have (v3 name first).
VECTOR_SOURCES = {
    "text_unit_embeddings": ("text_unit_text", "default-text_unit-text"),
    "entity_embeddings": ("entity_description", "default-entity-description"),
    "community_report_embeddings": ("community_full_content", "default-community-full_content"),
}
LANCEDB_TABLES = {
    "text_unit_embeddings": "text_unit_text",
    "entity_embeddings": "entity_description",
    "community_report_embeddings": "community_full_content",
}


# --- reading the source folder -----------------------------------------------------------------


def read_ms_tables(source_dir: Path) -> dict[str, pl.DataFrame]:
    """MS's parquet tables; a clear error names what is missing."""
    if not source_dir.is_dir():
        raise UserError(f"{source_dir} does not exist or is not a folder; give the MS GraphRAG output folder.")
    missing = [f"{name}.parquet" for name in REQUIRED_FILES if not (source_dir / f"{name}.parquet").exists()]
    if missing:
        hint = (
            " (this looks like a pre-v1 index with create_final_*.parquet files; only the v3 layout is supported)"
            if any(source_dir.glob("create_final_*.parquet"))
            else ""
        )
        raise UserError(
            f"{source_dir} is missing {', '.join(missing)}; give the output folder of a Microsoft GraphRAG v3 index{hint}."
        )
    tables: dict[str, pl.DataFrame] = {}
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        path = source_dir / f"{name}.parquet"
        if not path.exists():
            continue
        frame = pl.read_parquet(path)
        if name == "text_units" and "document_id" not in frame.columns and "document_ids" in frame.columns:
            frame = frame.with_columns(pl.col("document_ids").list.first().alias("document_id"))  # MS before v3
        lacking = [c for c in REQUIRED_COLUMNS[name] if c not in frame.columns]
        if name == "text_units" and "document_id" not in frame.columns:
            lacking.append("document_id")
        if lacking:
            raise UserError(f"{path} lacks column(s) {', '.join(lacking)}; is it a Microsoft GraphRAG v3 output?")
        tables[name] = frame
    return tables


def read_ms_vectors(source_dir: Path) -> dict[str, pl.DataFrame]:
    """(id, vector, model) per our embedding table, from ``source_dir/lancedb`` when it has them;
    ``model`` is the embedding model our export recorded, null for MS's own tables."""
    path = source_dir / "lancedb"
    if not path.is_dir():
        return {}
    db = lancedb_module().connect(str(path))
    listed = db.list_tables()
    names = set(getattr(listed, "tables", listed))
    vectors: dict[str, pl.DataFrame] = {}
    for ours, candidates in VECTOR_SOURCES.items():
        name = next((c for c in candidates if c in names), None)
        if name is None:
            continue
        arrow = db.open_table(name).to_arrow()
        if "id" not in arrow.column_names or "vector" not in arrow.column_names:
            continue
        model = (arrow.schema.metadata or {}).get(EXPORTED_MODEL_KEY.encode())
        frame = pl.from_arrow(arrow.select(["id", "vector"])).with_columns(
            pl.lit(model.decode() if model else None, dtype=pl.String).alias("model")
        )
        vectors[ours] = frame.filter(pl.col("id") != "__DUMMY__")
    return vectors


# --- mapping to our schemas (pure) -------------------------------------------------------------


def _json_or_none(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def document_keys(documents: pl.DataFrame) -> pl.DataFrame:
    """id -> ``document_key``: ``imported/<title>``, disambiguated when titles repeat."""
    frame = documents.select("id", pl.col("title").fill_null(pl.col("id")).alias("_title"))
    repeated = pl.col("_title").count().over("_title") > 1
    return frame.select(
        "id",
        pl.when(repeated)
        .then(pl.format("{}{}#{}", pl.lit(KEY_PREFIX), pl.col("_title"), pl.col("id").str.slice(0, 12)))
        .otherwise(pl.format("{}{}", pl.lit(KEY_PREFIX), pl.col("_title")))
        .alias("document_key"),
    )


def our_documents(documents: pl.DataFrame, text_units: pl.DataFrame) -> pl.DataFrame:
    keys = document_keys(documents)
    raw = documents.get_column("raw_data").to_list() if "raw_data" in documents.columns else [None] * documents.height
    frame = documents.with_columns(pl.Series("raw_data", [_json_or_none(v) for v in raw], dtype=pl.String))
    if "text_unit_ids" not in frame.columns:
        units = text_units.group_by("document_id", maintain_order=True).agg(pl.col("id").alias("text_unit_ids"))
        frame = frame.join(units, left_on="id", right_on="document_id", how="left", maintain_order="left")
    if "human_readable_id" not in frame.columns:
        frame = frame.with_row_index("human_readable_id")
    frame = frame.join(keys, on="id", how="left", maintain_order="left").with_columns(pl.col("title").alias("path"))
    return schemas.conform(frame, schemas.DOCUMENTS)


def our_text_units(text_units: pl.DataFrame, documents: pl.DataFrame) -> pl.DataFrame:
    keys = document_keys(documents)
    order = ["human_readable_id", "id"] if "human_readable_id" in text_units.columns else ["id"]
    frame = (
        text_units.with_row_index("_row")
        .sort([*order, "_row"])
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("document_id").alias("chunk_index"))
        .sort("_row")
        .join(keys.rename({"id": "document_id"}), on="document_id", how="left", maintain_order="left")
        .with_columns(
            pl.col("chunk_index").alias("human_readable_id"),
            pl.col("document_key").fill_null(pl.format("{}{}", pl.lit(KEY_PREFIX), pl.col("document_id"))),
        )
    )
    if "n_tokens" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("n_tokens"))
    return schemas.conform(frame, schemas.TEXT_UNITS)


def our_community_reports(reports: pl.DataFrame) -> pl.DataFrame:
    """Reports in our schema; findings rebuilt by field name (MS orders them explanation, summary)."""
    frame = reports
    if "findings" in frame.columns and isinstance(frame.schema["findings"], pl.List):
        frame = frame.with_columns(
            pl.col("findings").list.eval(
                pl.struct(
                    pl.element().struct.field("summary").cast(pl.String).alias("summary"),
                    pl.element().struct.field("explanation").cast(pl.String).alias("explanation"),
                )
            )
        )
    frame = frame.with_columns(pl.lit("llm").alias("generation"))
    return schemas.conform(frame, schemas.COMMUNITY_REPORTS)


def our_tables(ms: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """All index tables in our schemas (covariates empty when MS wrote none)."""
    return {
        "documents": our_documents(ms["documents"], ms["text_units"]),
        "text_units": our_text_units(ms["text_units"], ms["documents"]),
        "entities": schemas.conform(ms["entities"], schemas.ENTITIES),
        "relationships": schemas.conform(ms["relationships"], schemas.RELATIONSHIPS),
        "communities": schemas.conform(ms["communities"], schemas.COMMUNITIES),
        "community_reports": our_community_reports(ms["community_reports"]),
        "covariates": schemas.conform(ms["covariates"], schemas.COVARIATES)
        if "covariates" in ms
        else schemas.empty_frame(schemas.COVARIATES),
    }


# --- embeddings --------------------------------------------------------------------------------


def embedding_texts(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """What our pipeline embeds for each embedding table (id, [document_key,] text)."""

    return {
        "text_unit_embeddings": text_unit_texts(tables["text_units"]),
        "entity_embeddings": entity_texts(tables["entities"]),
        "community_report_embeddings": report_texts(tables["community_reports"]),
    }


def attach_vectors(texts: pl.DataFrame, vectors: pl.DataFrame, model: str) -> tuple[pl.DataFrame, int]:
    """Our embedding rows for ``texts`` with the imported vectors; rows without a vector are dropped
    (and counted): they are then simply not found by vector search."""

    dimension = len(vectors.get_column("vector")[0]) if vectors.height else 0
    hashed = texts.with_columns(pl.Series("text_hash", text_hashes(model, texts["text"].to_list()), dtype=pl.String))
    joined = hashed.drop("text").join(
        vectors.unique("id", keep="first").select("id", pl.col("vector").cast(pl.Array(pl.Float32, dimension))),
        on="id",
        how="inner",
        maintain_order="left",
    )
    return joined.with_columns(pl.lit(model).alias("model")), texts.height - joined.height


async def _embed_all(embedder, texts: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:

    frames = {}
    for name, frame in texts.items():
        if frame.is_empty():
            continue
        frames[name] = await embed_frame(embedder, frame, purpose=f"import_{name}")
    return frames


def compute_embeddings(settings: Settings, texts: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Embed ``texts`` with the project's embedder (the local one when offline)."""

    embedder = build_embedding_model(settings.llm, settings.embeddings, settings.database_path, UsageMeter())
    try:
        frames = asyncio.run(_embed_all(embedder, texts))
    finally:
        close = getattr(embedder, "close", None)
        if close is not None:
            close()
    return {name: frame.with_columns(pl.lit(embedder.model).alias("model")) for name, frame in frames.items()}


# --- the import --------------------------------------------------------------------------------


def _index_exists(settings: Settings) -> bool:

    if not settings.database_path.exists():
        return False
    with connect(settings.database_path, read_only=True) as conn:
        return table_exists(conn, "entities")


def import_msgraphrag(settings: Settings, source_dir: Path, *, force: bool = False):
    """Load the MS GraphRAG v3 index in ``source_dir`` into the project (tables and vectors)."""

    ms = read_ms_tables(source_dir)
    if _index_exists(settings) and not force:
        raise UserError(
            f"the project at {settings.root} already has an index; pass --force to replace it with the imported one."
        )
    tables = our_tables(ms)
    tables["community_reports"] = with_content_tokens(
        tables["community_reports"], token_counter(settings.chunking.encoding)
    )
    result = ImportResult(format="msgraphrag", source_dir=source_dir)
    titles = tables["entities"].get_column("title")
    dangling = tables["relationships"].filter(~pl.col("source").is_in(titles) | ~pl.col("target").is_in(titles)).height
    if dangling:
        result.warnings.append(
            f"{dangling} relationship(s) name an entity missing from entities.parquet; kept as they are."
        )
    texts = embedding_texts(tables)
    found = read_ms_vectors(source_dir)
    embeddings: dict[str, pl.DataFrame] = {}
    if found and settings.llm.use_local_embedder:
        local = build_embedding_model(settings.llm, settings.embeddings, None, UsageMeter()).model  # loads nothing
        kept = {name: vectors for name, vectors in found.items() if vectors["model"][0] == local}  # our own export
        if len(kept) < len(found):
            result.warnings.append(
                "the vectors in lancedb/ come from another embedding model, which the offline local embedder cannot "
                "match; those texts were embedded again with the local embedder."
            )
        found = kept
    for name, vectors in found.items():
        model = vectors["model"][0] or settings.llm.embedding_model
        frame, without = attach_vectors(texts[name], vectors.drop("model"), model)
        embeddings[name] = frame
        result.embeddings[name] = "imported"
        if without:
            result.warnings.append(
                f"{without} row(s) of {name} have no vector in lancedb/ and cannot be found by vector search."
            )
    missing = {name: frame for name, frame in texts.items() if name not in embeddings}
    if missing:
        computed = compute_embeddings(settings, missing)
        for name in missing:
            embeddings[name] = computed.get(name, _empty_embeddings(texts[name]))
            result.embeddings[name] = "computed"
    dimensions = {e.schema["vector"].size for e in embeddings.values() if e.height}
    if len(dimensions) > 1:
        raise UserError(
            f"the imported vectors have different dimensions {sorted(dimensions)}; import without lancedb/ "
            "(move it away) to embed every text with the project's embedder."
        )

    # Staged, then published in one transaction like a corpus build: an import that fails part-way
    # leaves the project as it was, and status knows the index holds a finished build.
    begin_corpus_run(settings.database_path, f"import:{source_dir}")
    for name, frame in tables.items():
        write_staged(settings.database_path, name, frame)
        result.rows[name] = frame.height
    versions: dict[str, int] = {}
    keep_lancedb = settings.lancedb_tables_for(
        _text_unit_tokens(tables["text_units"], token_counter(settings.chunking.encoding))
    )
    if not keep_lancedb:  # searched in memory; tables of an index this import replaces would go stale
        lance.drop_tables(settings.lancedb_path, list(LANCEDB_TABLES.values()))
    for name, frame in embeddings.items():
        columns = ["id", "document_key"] if name == "text_unit_embeddings" else ["id"]
        stored = frame.select(*columns, "text_hash", "vector", "model")
        write_staged(settings.database_path, name, stored)
        result.rows[name] = stored.height
        if not keep_lancedb:
            continue
        published_rows = (
            with_text(stored.drop("model"), texts[name]) if name == "text_unit_embeddings" else stored.drop("model")
        )
        published = lance.publish(settings.lancedb_path, LANCEDB_TABLES[name], published_rows)
        versions[LANCEDB_TABLES[name]] = published.version
        result.rows[f"lancedb/{LANCEDB_TABLES[name]}"] = published.rows
    no_documents = pl.DataFrame(schema=dict.fromkeys(MANIFEST_COLUMNS, pl.String))
    publish_corpus(
        settings.database_path, no_documents, {"run_id": f"import:{source_dir}", "vector_versions": versions}
    )
    return result


def _text_unit_tokens(units: pl.DataFrame, count: Callable[[str], int]) -> int:
    """Tokens of all text units: MS's ``n_tokens``, counted from the text where it is missing."""
    return sum(n if n is not None else count(text or "") for n, text in zip(units["n_tokens"], units["text"]))


def _empty_embeddings(texts: pl.DataFrame) -> pl.DataFrame:
    return (
        texts.drop("text")
        .with_columns(
            pl.lit(None, dtype=pl.String).alias("text_hash"),
            pl.Series("vector", np.zeros((texts.height, 1), dtype=np.float32), dtype=pl.Array(pl.Float32, 1)),
            pl.lit("").alias("model"),
        )
        .head(0)
    )
