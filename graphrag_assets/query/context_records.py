"""How index rows appear in a context: as the records an answer cites, and as the sized rows of the
reports and sources tables that several methods share (local, DRIFT and basic search, the
context-only retrievals)."""

from __future__ import annotations

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.index.report_tokens import TOKENS_COLUMN
from graphrag_assets.query.context_tables import sized_row
from graphrag_assets.query.model_calls import TokenCounter
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.results import ContextRecord

REPORT_COLUMNS = ("id", "title", "content")
SOURCE_COLUMNS = ("id", "text")


# --- records -------------------------------------------------------------------------------------
# Each reads only the columns it names: an entity's or relationship's list of text units (a hub's
# thousands) made Python objects of every row's list, ~7 ms a served question.


def report_records(reports: pl.DataFrame) -> list[ContextRecord]:
    return [
        ContextRecord(r["id"], r["human_readable_id"], str(r["human_readable_id"]), r["title"] or "")
        for r in reports.select("id", "human_readable_id", "title").iter_rows(named=True)
    ]


def entity_records(entities: pl.DataFrame) -> list[ContextRecord]:
    return [
        ContextRecord(r["id"], r["human_readable_id"], str(r["human_readable_id"]), r["title"] or "")
        for r in entities.select("id", "human_readable_id", "title").iter_rows(named=True)
    ]


def relationship_records(relationships: pl.DataFrame) -> list[ContextRecord]:
    return [
        ContextRecord(r["id"], r["human_readable_id"], str(r["human_readable_id"]), f"{r['source']} -> {r['target']}")
        for r in relationships.select("id", "human_readable_id", "source", "target").iter_rows(named=True)
    ]


def claim_records(claims: pl.DataFrame) -> list[ContextRecord]:
    return [
        ContextRecord(
            r["id"], r["human_readable_id"], str(r["human_readable_id"]), f"{r['type'] or 'CLAIM'}: {r['subject_id']}"
        )
        for r in claims.iter_rows(named=True)
    ]


def source_records(text_units: pl.DataFrame, data: QueryData) -> list[ContextRecord]:
    """Text units as cited records; a source is named by its file, and by its row's title as well
    for tabular files (a CSV or JSON file holds many documents). Only the units' own documents are
    read: naming all 100,000 documents of a big index cost a served question ~70 ms, and a
    command-line one the read of the whole table."""
    documents = data.rows_where("documents", "id", text_units["document_id"].drop_nulls().unique().to_list())
    titles = {}
    if not documents.is_empty():
        for doc_id, title, path in documents.select("id", "title", "path").iter_rows():
            named_by_file = not path or title == path.rsplit("/", 1)[-1]
            titles[doc_id] = (path or title) if named_by_file else f"{path}: {title}"
    return [
        ContextRecord(r["id"], r["human_readable_id"], short_id(r["id"]), titles.get(r["document_id"]) or "")
        for r in text_units.select("id", "human_readable_id", "document_id").iter_rows(named=True)
    ]


# --- table rows ----------------------------------------------------------------------------------


def report_rows(reports: pl.DataFrame, count: TokenCounter) -> list[tuple]:
    """(id, title, content) rows of the reports table, sized from the token counts stored at index time."""
    return [
        sized_row(
            (r["human_readable_id"], r["title"], r["full_content"]),
            REPORT_COLUMNS.index("content"),
            r.get(TOKENS_COLUMN),
            count,
        )
        for r in reports.iter_rows(named=True)
    ]


def source_rows(units: pl.DataFrame, count: TokenCounter) -> list[tuple]:
    """(short id, text) rows of the sources table, sized from the text units' stored ``n_tokens``
    (counted when they were chunked) rather than by tokenizing their text again."""
    return [
        sized_row((short_id(r["id"]), r["text"]), SOURCE_COLUMNS.index("text"), r.get("n_tokens"), count)
        for r in units.iter_rows(named=True)
    ]
