"""Export to Microsoft GraphRAG v3's output layout, so its query API and tools read our index.

Seven parquet files with MS's file names, column names, column order and Arrow types (checked
against the parquet files of MS's own test index: 64-bit ints, ``list<string>`` lists, ``string``
not ``large_string``), plus the three LanceDB tables its query engines search.

What differs between our tables and MS's, and is fixed here:

- text units carry ``entity_ids`` / ``relationship_ids`` / ``covariate_ids`` (derived from the
  entities', relationships' and covariates' text unit ids) and a corpus-wide dense
  ``human_readable_id`` (ours counts chunks within a document), numbered in the order
  (document path, document row, chunk index);
- documents get a dense ``human_readable_id`` in the same document order, and ``raw_data`` as
  MS stores it: a struct of the source row (JSON inputs), or an all-null column for plain text;
- community reports lose our extra columns, and ``findings`` structs use MS's field order
  (explanation, summary);
- covariates are written only when there are any (MS writes the file only with claims enabled).

Our relationships are undirected (source < target); MS's loaders do not care.

LanceDB rows follow MS's vector store schema: ``id``, ``vector`` (fixed-size float32),
``create_date``, ``update_date`` and the timestamp component columns MS adds to every table.
Vectors come from our DuckDB embedding tables (the system of record), so MS must embed its
queries with the model that built them.
"""

from __future__ import annotations

import calendar
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.common import ExportResult, prepare_output_dir, read_embeddings, read_index_tables
from graphrag_assets.storage.vectors import lancedb_module

STR = pa.string()
INT = pa.int64()
STR_LIST = pa.list_(pa.field("element", pa.string()))
INT_LIST = pa.list_(pa.field("element", pa.int64()))
FINDINGS = pa.list_(pa.field("element", pa.struct([("explanation", STR), ("summary", STR)])))

MS_SCHEMAS: dict[str, pa.Schema] = {
    "documents": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("title", STR),
            ("text", STR),
            ("text_unit_ids", STR_LIST),
            ("creation_date", STR),
            ("raw_data", pa.null()),
        ]
    ),
    "text_units": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("text", STR),
            ("n_tokens", INT),
            ("document_id", STR),
            ("entity_ids", STR_LIST),
            ("relationship_ids", STR_LIST),
            ("covariate_ids", STR_LIST),
        ]
    ),
    "entities": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("title", STR),
            ("type", STR),
            ("description", STR),
            ("text_unit_ids", STR_LIST),
            ("frequency", INT),
            ("degree", INT),
        ]
    ),
    "relationships": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("source", STR),
            ("target", STR),
            ("description", STR),
            ("weight", pa.float64()),
            ("combined_degree", INT),
            ("text_unit_ids", STR_LIST),
        ]
    ),
    "communities": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("community", INT),
            ("level", INT),
            ("parent", INT),
            ("children", INT_LIST),
            ("title", STR),
            ("entity_ids", STR_LIST),
            ("relationship_ids", STR_LIST),
            ("text_unit_ids", STR_LIST),
            ("period", STR),
            ("size", INT),
        ]
    ),
    "community_reports": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("community", INT),
            ("level", INT),
            ("parent", INT),
            ("children", INT_LIST),
            ("title", STR),
            ("summary", STR),
            ("full_content", STR),
            ("rank", pa.float64()),
            ("rating_explanation", STR),
            ("findings", FINDINGS),
            ("full_content_json", STR),
            ("period", STR),
            ("size", INT),
        ]
    ),
    "covariates": pa.schema(
        [
            ("id", STR),
            ("human_readable_id", INT),
            ("covariate_type", STR),
            ("type", STR),
            ("description", STR),
            ("subject_id", STR),
            ("object_id", STR),
            ("status", STR),
            ("start_date", STR),
            ("end_date", STR),
            ("source_text", STR),
            ("text_unit_id", STR),
        ]
    ),
}
TABLE_ORDER = tuple(MS_SCHEMAS)

# LanceDB table (MS's embedding name) -> (our DuckDB embedding table, the table it embeds).
VECTOR_TABLES = {
    "text_unit_text": ("text_unit_embeddings", "text_units"),
    "entity_description": ("entity_embeddings", "entities"),
    "community_full_content": ("community_report_embeddings", "community_reports"),
}
LANCEDB_DIR = "lancedb"
# the embedding model of an exported vector table, in its schema metadata (MS ignores it)
EXPORTED_MODEL_KEY = "graphrag_assets.embedding_model"
_TIMESTAMP_PARTS = (
    ("year", INT),
    ("month", INT),
    ("month_name", STR),
    ("day", INT),
    ("day_of_week", STR),
    ("hour", INT),
    ("quarter", INT),
)


# --- table conversion (pure) -------------------------------------------------------------------


def document_order(documents: pl.DataFrame) -> pl.DataFrame:
    """Documents sorted (path, row within file, id): the order MS-style dense ids follow."""
    return (
        documents.with_columns(pl.coalesce("path", "document_key", "title").alias("_path"))
        .sort(["_path", "human_readable_id", "id"], nulls_last=True)
        .drop("_path")
    )


def ordered_text_units(text_units: pl.DataFrame, documents: pl.DataFrame) -> pl.DataFrame:
    """Text units in (document order, chunk index) order; units of unknown documents go last."""
    rank = document_order(documents).select(pl.col("id").alias("document_id")).with_row_index("_doc")
    return (
        text_units.join(rank, on="document_id", how="left")
        .sort(["_doc", "chunk_index", "human_readable_id", "id"], nulls_last=True)
        .drop("_doc")
    )


def ms_documents(documents: pl.DataFrame, text_units: pl.DataFrame) -> pl.DataFrame:
    """MS documents: dense ids in document order, text unit ids in chunk order."""
    units = (
        ordered_text_units(text_units, documents)
        .group_by("document_id", maintain_order=True)
        .agg(pl.col("id").alias("_unit_ids"))
    )
    return (
        document_order(documents)
        .join(units, left_on="id", right_on="document_id", how="left")
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("human_readable_id"),
            pl.col("_unit_ids").fill_null(pl.lit([], dtype=pl.List(pl.String))).alias("text_unit_ids"),
        )
        .select("id", "human_readable_id", "title", "text", "text_unit_ids", "creation_date", "raw_data")
    )


def _ids_by_text_unit(frame: pl.DataFrame, list_column: str, out: str) -> pl.DataFrame:
    """text_unit_id -> unique ids of the rows naming it, in the rows' human_readable_id order."""
    return (
        frame.sort("human_readable_id", "id", nulls_last=True)
        .select("id", pl.col(list_column).alias("text_unit_id"))
        .explode("text_unit_id")
        .drop_nulls("text_unit_id")
        .unique(["text_unit_id", "id"], keep="first", maintain_order=True)
        .group_by("text_unit_id", maintain_order=True)
        .agg(pl.col("id").alias(out))
    )


def ms_text_units(
    text_units: pl.DataFrame,
    documents: pl.DataFrame,
    entities: pl.DataFrame,
    relationships: pl.DataFrame,
    covariates: pl.DataFrame,
) -> pl.DataFrame:
    """MS text units: corpus-wide dense ids plus the ids of what was extracted from each unit."""
    empty = pl.lit([], dtype=pl.List(pl.String))
    entity_ids = _ids_by_text_unit(entities, "text_unit_ids", "entity_ids")
    relationship_ids = _ids_by_text_unit(relationships, "text_unit_ids", "relationship_ids")
    covariate_ids = _ids_by_text_unit(
        covariates.with_columns(pl.concat_list(pl.col("text_unit_id")).alias("_units")), "_units", "covariate_ids"
    )
    frame = ordered_text_units(text_units, documents).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("human_readable_id")
    )
    for ids in (entity_ids, relationship_ids, covariate_ids):
        frame = frame.join(ids, left_on="id", right_on="text_unit_id", how="left", maintain_order="left")
    return frame.select(
        "id",
        "human_readable_id",
        "text",
        "n_tokens",
        "document_id",
        pl.col("entity_ids").fill_null(empty),
        pl.col("relationship_ids").fill_null(empty),
        pl.col("covariate_ids").fill_null(empty),
    )


def ms_community_reports(reports: pl.DataFrame) -> pl.DataFrame:
    """MS's report columns only, findings as (explanation, summary) structs."""
    findings = pl.col("findings").list.eval(
        pl.struct(
            pl.element().struct.field("explanation").alias("explanation"),
            pl.element().struct.field("summary").alias("summary"),
        )
    )
    return (
        reports.sort("level", "community")
        .with_columns(findings.alias("findings"))
        .select([f.name for f in MS_SCHEMAS["community_reports"]])
    )


def raw_data_column(values: list[str | None]) -> pa.Array:
    """``raw_data`` as MS stores it: a struct of the source row, or nulls when no row has one.

    Our column holds the row as JSON text. Rows whose values cannot share one Arrow type keep the
    JSON text (a string column), which MS's readers accept as well.
    """
    if all(v is None for v in values):
        return pa.nulls(len(values))
    parsed = [json.loads(v) if v is not None else None for v in values]
    if all(p is None or isinstance(p, dict) for p in parsed):
        try:
            return pa.array(parsed)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return pa.array(values, type=STR)


def to_arrow(name: str, frame: pl.DataFrame) -> pa.Table:
    """``frame`` (already in MS's columns) as an Arrow table with MS's exact types."""
    schema = MS_SCHEMAS[name]
    if name != "documents":
        return frame.select(schema.names).to_arrow().cast(schema)
    rest = pa.schema([f for f in schema if f.name != "raw_data"])
    table = frame.select(rest.names).to_arrow().cast(rest)
    return table.append_column("raw_data", raw_data_column(frame.get_column("raw_data").to_list()))


def ms_tables(tables: dict[str, pl.DataFrame]) -> dict[str, pa.Table]:
    """All MS tables from our index tables (covariates left out when there are none)."""
    frames = {
        "documents": ms_documents(tables["documents"], tables["text_units"]),
        "text_units": ms_text_units(
            tables["text_units"], tables["documents"], tables["entities"], tables["relationships"], tables["covariates"]
        ),
        "entities": tables["entities"].sort("human_readable_id", "id"),
        "relationships": tables["relationships"].sort("human_readable_id", "id"),
        "communities": tables["communities"].sort("level", "community"),
        "community_reports": ms_community_reports(tables["community_reports"]),
    }
    if tables["covariates"].height:
        frames["covariates"] = tables["covariates"].sort("human_readable_id", "id")
    return {name: to_arrow(name, frames[name]) for name in TABLE_ORDER if name in frames}


# --- vectors -----------------------------------------------------------------------------------


def timestamp_parts(iso: str | None, prefix: str) -> dict[str, object]:
    """The component columns MS's vector store derives from a timestamp (all null for None)."""
    if iso is None:
        return {f"{prefix}_{part}": None for part, _ in _TIMESTAMP_PARTS}
    moment = datetime.fromisoformat(iso)
    return {
        f"{prefix}_year": moment.year,
        f"{prefix}_month": moment.month,
        f"{prefix}_month_name": calendar.month_name[moment.month],
        f"{prefix}_day": moment.day,
        f"{prefix}_day_of_week": calendar.day_name[moment.weekday()],
        f"{prefix}_hour": moment.hour,
        f"{prefix}_quarter": (moment.month - 1) // 3 + 1,
    }


def ms_vector_table(embeddings: pl.DataFrame, created: str) -> pa.Table:
    """Rows (id, vector, ...) in MS's LanceDB row schema, all created at ``created`` (ISO)."""
    vector_type = embeddings.schema["vector"]
    dimension = vector_type.size if isinstance(vector_type, pl.Array) else len(embeddings["vector"][0])
    frame = embeddings.sort("id").select("id", pl.col("vector").cast(pl.Array(pl.Float32, dimension)))
    n = frame.height
    columns: dict[str, pa.Array] = {
        "id": pa.array(frame["id"].to_list(), type=STR),
        "vector": frame.get_column("vector").to_arrow().cast(pa.list_(pa.float32(), dimension)),
        "create_date": pa.array([created] * n, type=STR),
        "update_date": pa.nulls(n, type=STR),
    }
    for prefix, iso in (("create_date", created), ("update_date", None)):
        parts = timestamp_parts(iso, prefix)
        for part, arrow_type in _TIMESTAMP_PARTS:
            columns[f"{prefix}_{part}"] = pa.array([parts[f"{prefix}_{part}"]] * n, type=arrow_type)
    table = pa.table(columns)
    if "model" in embeddings.columns and embeddings.height:  # lets our own import keep the vectors
        table = table.replace_schema_metadata({EXPORTED_MODEL_KEY: str(embeddings["model"][0])})
    return table


def write_lancedb(path: Path, tables: dict[str, pa.Table]) -> None:
    """Create (overwrite) one LanceDB table per entry."""
    path.mkdir(parents=True, exist_ok=True)
    db = lancedb_module().connect(str(path))
    for name, table in tables.items():
        db.create_table(name, data=table, mode="overwrite")


# --- the export --------------------------------------------------------------------------------


def export_msgraphrag(settings: Settings, out_dir: Path, *, force: bool = False):
    """Write ``<name>.parquet`` for each MS table and ``lancedb/`` with the vectors into ``out_dir``."""
    import pyarrow.parquet as pq

    tables = read_index_tables(settings)
    arrow_tables = ms_tables(tables)
    created = datetime.now(UTC).isoformat()
    vectors: dict[str, pa.Table] = {}
    warnings: list[str] = []
    for lance_name, (duck_name, source) in VECTOR_TABLES.items():
        embeddings = read_embeddings(settings, duck_name)
        if embeddings is not None:  # only rows of records that exist (the tables are written separately)
            embeddings = embeddings.filter(pl.col("id").is_in(arrow_tables[source].column("id").to_pylist()))
        if embeddings is None or embeddings.is_empty():
            warnings.append(f"no {duck_name} in the index; {LANCEDB_DIR}/{lance_name} was not written.")
            continue
        vectors[lance_name] = ms_vector_table(embeddings, created)
    dimensions = {t.schema.field("vector").type.list_size for t in vectors.values()}
    if len(dimensions) > 1:
        raise UserError(
            f"the embedding tables have different dimensions {sorted(dimensions)}; re-run 'graphrag-assets index' "
            "so all embeddings come from one model."
        )

    outputs = [f"{name}.parquet" for name in TABLE_ORDER] + [LANCEDB_DIR]
    prepare_output_dir(out_dir, outputs, force=force)
    result = ExportResult(format="msgraphrag", out_dir=out_dir, warnings=warnings)
    for name, table in arrow_tables.items():
        pq.write_table(table, out_dir / f"{name}.parquet")
        result.files.append(f"{name}.parquet")
        result.rows[name] = table.num_rows
    if vectors:
        write_lancedb(out_dir / LANCEDB_DIR, vectors)
        for name, table in vectors.items():
            result.files.append(f"{LANCEDB_DIR}/{name}")
            result.rows[f"{LANCEDB_DIR}/{name}"] = table.num_rows
    return result
