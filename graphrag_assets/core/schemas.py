"""Column schemas of every stored table.

Names and meanings follow Microsoft GraphRAG v3 output tables (so its users and tools can read
our index); columns after the ``# ours`` marker are additions. Per-document tables carry a
``document_key`` column (the Dagster partition key) used for atomic per-partition replacement.
"""

from __future__ import annotations

import polars as pl

STR_LIST = pl.List(pl.String)
INT_LIST = pl.List(pl.Int64)
FINDING = pl.Struct({"summary": pl.String, "explanation": pl.String})

DOCUMENTS = {
    "id": pl.String,
    "human_readable_id": pl.Int64,  # row index within its file (0 for single-document files)
    "title": pl.String,
    "text": pl.String,
    "text_unit_ids": STR_LIST,
    "creation_date": pl.String,  # ISO-8601 modification time of the file
    "raw_data": pl.String,  # JSON of the source row for csv/json/jsonl, else null
    # ours
    "document_key": pl.String,  # Dagster partition key (sanitized relative path)
    "path": pl.String,  # real path relative to the input folder
    "content_hash": pl.String,  # sha256 of the file bytes, for change detection
    "replaced_chars": pl.Int64,  # bytes that were not valid UTF-8 and were replaced
}

TEXT_UNITS = {
    "id": pl.String,
    "human_readable_id": pl.Int64,  # chunk index within its document
    "text": pl.String,
    "n_tokens": pl.Int64,
    "document_id": pl.String,
    # ours
    "document_key": pl.String,
    "chunk_index": pl.Int64,
    "start_token": pl.Int64,
    # Where the unit's text lies in its document's text: document.text[start_char:end_char] == text
    # (characters, i.e. code points; null for units imported from Microsoft GraphRAG, which has no offsets)
    "start_char": pl.Int64,
    "end_char": pl.Int64,
}

# One row per input file seen by the last ingestion of its partition (drives change detection).
SOURCE_FILES = {
    "document_key": pl.String,
    "path": pl.String,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "content_hash": pl.String,
    "status": pl.String,  # ingested | skipped | missing
    "documents": pl.Int64,
    "message": pl.String,
    "settings_fingerprint": pl.String,  # graphrag_assets.project.fingerprints.document_fingerprint at ingestion
}

# Per document partition: did the extraction succeed, and what did it cost.
EXTRACTION_STATUS = {
    "document_key": pl.String,
    "status": pl.String,  # ok | failed | incomplete (an answer was cut off: extracted again by the next index)
    "text_units": pl.Int64,
    "failed_units": pl.Int64,
    "records": pl.Int64,
    "parse_failures": pl.Int64,
    "error": pl.String,
}

# One row per record parsed from the extraction answers of one text unit.
GRAPH_EXTRACTIONS = {
    "text_unit_id": pl.String,
    "record_index": pl.Int64,  # position of the record in the (joined) answer
    "record_type": pl.String,  # entity | relationship | claim | noun_phrase
    "title": pl.String,  # entity / noun phrase title (normalized: upper-case, cleaned)
    "type": pl.String,  # entity type; claim type for claims
    "source": pl.String,  # relationship source; claim subject
    "target": pl.String,  # relationship target; claim object
    "description": pl.String,
    "weight": pl.Float64,  # relationship strength
    "status": pl.String,  # claim status TRUE/FALSE/SUSPECTED
    "start_date": pl.String,
    "end_date": pl.String,
    "source_text": pl.String,  # claim source quotes
    "document_key": pl.String,
}

ENTITIES = {
    "id": pl.String,
    "human_readable_id": pl.Int64,
    "title": pl.String,
    "type": pl.String,
    "description": pl.String,
    "text_unit_ids": STR_LIST,
    "frequency": pl.Int64,
    "degree": pl.Int64,
    # ours
    "aliases": STR_LIST,  # other names merged into this entity by entity resolution
}

# One row per name that entity resolution merged into another entity (empty when it is off).
ENTITY_ALIASES = {
    "alias": pl.String,  # the name as extracted
    "canonical_id": pl.String,  # the entity it now belongs to
    "canonical_title": pl.String,
    "method": pl.String,  # rules | model
    "score": pl.Float64,  # the rule's fixed confidence, or the model's own
    "reason": pl.String,
}

RELATIONSHIPS = {
    "id": pl.String,
    "human_readable_id": pl.Int64,
    "source": pl.String,
    "target": pl.String,
    "description": pl.String,
    "weight": pl.Float64,
    "combined_degree": pl.Int64,
    "text_unit_ids": STR_LIST,
}
# What ranking a question's relationships by their ends reads and returns (local search)
RANKED_RELATIONSHIP_COLUMNS = ("id", "human_readable_id", "source", "target")

COVARIATES = {
    "id": pl.String,
    "human_readable_id": pl.Int64,
    "covariate_type": pl.String,
    "type": pl.String,
    "description": pl.String,
    "subject_id": pl.String,
    "object_id": pl.String,
    "status": pl.String,
    "start_date": pl.String,
    "end_date": pl.String,
    "source_text": pl.String,
    "text_unit_id": pl.String,
}

# What a claim says, as exports and lookups show it (its ids and text unit are shown their own way).
CLAIM_FIELDS = ("type", "description", "subject_id", "object_id", "status", "start_date", "end_date", "source_text")

COMMUNITIES = {
    "id": pl.String,
    "human_readable_id": pl.Int64,
    "community": pl.Int64,
    "level": pl.Int64,
    "parent": pl.Int64,
    "children": INT_LIST,
    "title": pl.String,
    "entity_ids": STR_LIST,
    "relationship_ids": STR_LIST,
    "text_unit_ids": STR_LIST,
    "period": pl.String,
    "size": pl.Int64,
}

COMMUNITY_REPORTS = {
    "id": pl.String,
    "human_readable_id": pl.Int64,
    "community": pl.Int64,
    "level": pl.Int64,
    "parent": pl.Int64,
    "children": INT_LIST,
    "title": pl.String,
    "summary": pl.String,
    "full_content": pl.String,
    "rank": pl.Float64,
    "rating_explanation": pl.String,
    "findings": pl.List(FINDING),
    "full_content_json": pl.String,
    "period": pl.String,
    "size": pl.Int64,
    # ours
    "generation": pl.String,  # llm | extractive | failed
    "context_tokens": pl.Int64,
    "substituted_reports": pl.Int64,  # sub-community reports used in place of raw context
    "community_id": pl.String,  # the community's id (level + members): what report reuse compares
    "prompt_hash": pl.String,  # identity of the model call; of the inputs for extractive reports (index/extractive_reuse.py)
    "full_content_tokens": pl.Int64,  # tokens of full_content (trimmed), counted once when written: query budgets read it
}


# Tables written one document partition at a time (their rows go when the document goes).
PER_DOCUMENT_TABLES = (
    "source_files",
    "documents",
    "text_units",
    "graph_extractions",
    "extraction_status",
    "text_unit_embeddings",
)


def empty_frame(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with the given schema (used so empty outputs still create their tables)."""
    return pl.DataFrame(schema=schema)


def conform(frame: pl.DataFrame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Select and cast ``frame`` to ``schema``'s columns in order; missing columns become null."""
    columns = []
    for name, dtype in schema.items():
        if name in frame.columns:
            columns.append(pl.col(name).cast(dtype))
        else:
            columns.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(columns)
