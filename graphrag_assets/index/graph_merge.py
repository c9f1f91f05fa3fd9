"""Merging extracted records of all documents into the corpus graph.

Input: rows of ``schemas.GRAPH_EXTRACTIONS`` from every document. Output of :func:`merge_graph`:
one row per entity and per relationship with the sorted distinct list of their descriptions
(the summarizer turns a list into one description), then :func:`finalize_graph` produces the
``schemas.ENTITIES`` / ``schemas.RELATIONSHIPS`` tables.

Choices, and how they differ from Microsoft GraphRAG (reference §4.4, §13):

- Entity identity is the normalized title alone. When the model gave one name several types,
  the most frequent type wins (ties: alphabetical) and the mentions of *all* types are kept
  (MS keeps the first type's group and loses the other mentions — Q5).
- Relationships are undirected: (A, B) and (B, A) merge into one row stored with
  ``source < target``. Degree is undirected anyway, and two rows for one pair would show the
  same edge twice in report and search contexts. Each description still says who did what.
- ``frequency`` is the number of distinct text units mentioning an entity and ``text_unit_ids``
  is sorted and distinct. MS counts mention records, so a unit that mentions an entity in the
  first answer and again in a gleaning counts twice (Q3).
- ``weight``: within one text unit the largest strength given to a pair counts (a gleaning that
  repeats a relationship must not double it); the per-unit values are summed across units.
- Self-loops are dropped; so are relationships whose endpoint is not an extracted entity (as
  MS does) or is missing. Both are counted in :class:`MergeStats`.

Every output is sorted, so the result does not depend on the order of the input rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from graphrag_assets.core import ids, schemas

MERGED_ENTITIES = {
    "title": pl.String,
    "type": pl.String,
    "descriptions": schemas.STR_LIST,
    "text_unit_ids": schemas.STR_LIST,
    "frequency": pl.Int64,
}

MERGED_RELATIONSHIPS = {
    "source": pl.String,
    "target": pl.String,
    "descriptions": schemas.STR_LIST,
    "text_unit_ids": schemas.STR_LIST,
    "weight": pl.Float64,
}

DEFAULT_WEIGHT = 1.0


@dataclass(frozen=True)
class MergeStats:
    entity_records: int
    relationship_records: int
    self_loops_dropped: int  # relationship records whose two ends are the same entity
    orphan_relationships_dropped: int  # relationship records with an end that is not an entity
    entities_with_several_types: int


@dataclass(frozen=True)
class MergedGraph:
    entities: pl.DataFrame  # MERGED_ENTITIES, sorted by title
    relationships: pl.DataFrame  # MERGED_RELATIONSHIPS, sorted by (source, target)
    stats: MergeStats


def merge_graph(extractions: pl.DataFrame) -> MergedGraph:
    """Merge the entity and relationship records of all text units."""
    mentions = (
        extractions.filter(pl.col("record_type") == "entity")
        .select(
            pl.col("title"),
            pl.col("type").fill_null(""),
            pl.col("description"),
            pl.col("text_unit_id"),
        )
        .filter(pl.col("title").is_not_null() & (pl.col("title") != ""))
    )
    types = (
        mentions.group_by("title", "type")
        .agg(pl.len().alias("votes"))
        .sort(["title", "votes", "type"], descending=[False, True, False])
        .group_by("title", maintain_order=True)
        .agg(pl.col("type").first(), pl.len().alias("n_types"))
    )
    entities = (
        mentions.group_by("title")
        .agg(
            _distinct_sorted("description").alias("descriptions"),
            pl.col("text_unit_id").drop_nulls().unique().sort().alias("text_unit_ids"),
        )
        .join(types, on="title", how="left")
        .with_columns(pl.col("text_unit_ids").list.len().cast(pl.Int64).alias("frequency"))
        .sort("title")
    )

    records = (
        extractions.filter(pl.col("record_type") == "relationship")
        .with_columns(pl.col("source").fill_null(""), pl.col("target").fill_null(""))
        .select(
            pl.min_horizontal("source", "target").alias("source"),
            pl.max_horizontal("source", "target").alias("target"),
            pl.col("description"),
            pl.col("weight").fill_null(DEFAULT_WEIGHT),
            pl.col("text_unit_id"),
        )
    )
    self_loop = (pl.col("source") == pl.col("target")) & (pl.col("source") != "")
    not_loops = records.filter(~self_loop)
    titles = entities.get_column("title")
    known = pl.col("source").is_in(titles.implode()) & pl.col("target").is_in(titles.implode())
    kept = not_loops.filter(known)
    per_unit = kept.group_by("source", "target", "text_unit_id").agg(pl.col("weight").max())
    weights = per_unit.group_by("source", "target").agg(pl.col("weight").sum())
    relationships = (
        kept.group_by("source", "target")
        .agg(
            _distinct_sorted("description").alias("descriptions"),
            pl.col("text_unit_id").drop_nulls().unique().sort().alias("text_unit_ids"),
        )
        .join(weights, on=["source", "target"], how="left")
        .sort("source", "target")
    )

    stats = MergeStats(
        entity_records=mentions.height,
        relationship_records=records.height,
        self_loops_dropped=records.height - not_loops.height,
        orphan_relationships_dropped=not_loops.height - kept.height,
        entities_with_several_types=types.filter(pl.col("n_types") > 1).height,
    )
    return MergedGraph(
        entities=schemas.conform(entities, MERGED_ENTITIES),
        relationships=schemas.conform(relationships, MERGED_RELATIONSHIPS),
        stats=stats,
    )


def finalize_graph(
    merged_entities: pl.DataFrame,
    merged_relationships: pl.DataFrame,
    entity_summaries: Mapping[str, str],
    relationship_summaries: Mapping[tuple[str, str], str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Final entity and relationship tables (``schemas.ENTITIES`` / ``schemas.RELATIONSHIPS``).

    The description is the summary for the key when there is one; otherwise the single
    description, "" for none, or the descriptions one per line (when summarization was skipped).
    Ids derive from titles; ``human_readable_id`` numbers rows 0.. in title / (source, target)
    order; ``degree`` counts distinct neighbours, ignoring direction.
    """
    entities = merged_entities.sort("title")
    relationships = merged_relationships.sort("source", "target")

    ends = (
        relationships.select(
            pl.min_horizontal("source", "target").alias("a"), pl.max_horizontal("source", "target").alias("b")
        )
        .unique()
        .filter(pl.col("a") != pl.col("b"))
    )
    degrees = (
        pl.concat([ends.select(pl.col("a").alias("title")), ends.select(pl.col("b").alias("title"))])
        .group_by("title")
        .agg(pl.len().cast(pl.Int64).alias("degree"))
    )
    entity_summary_frame = pl.DataFrame(
        {"title": list(entity_summaries), "summary": list(entity_summaries.values())},
        schema={"title": pl.String, "summary": pl.String},
    )
    entities = (
        entities.join(degrees, on="title", how="left", maintain_order="left")
        .join(entity_summary_frame, on="title", how="left", maintain_order="left")
        .with_columns(
            _description().alias("description"),
            pl.col("degree").fill_null(0),
            pl.Series("id", [ids.entity_id(t) for t in entities.get_column("title")], dtype=pl.String),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("human_readable_id"),
        )
    )

    relationship_summary_frame = pl.DataFrame(
        {
            "source": [k[0] for k in relationship_summaries],
            "target": [k[1] for k in relationship_summaries],
            "summary": list(relationship_summaries.values()),
        },
        schema={"source": pl.String, "target": pl.String, "summary": pl.String},
    )
    degree_of = degrees.rename({"title": "key"})
    relationships = (
        relationships.join(relationship_summary_frame, on=["source", "target"], how="left", maintain_order="left")
        .join(
            degree_of.rename({"key": "source", "degree": "source_degree"}),
            on="source",
            how="left",
            maintain_order="left",
        )
        .join(
            degree_of.rename({"key": "target", "degree": "target_degree"}),
            on="target",
            how="left",
            maintain_order="left",
        )
        .with_columns(
            _description().alias("description"),
            (pl.col("source_degree").fill_null(0) + pl.col("target_degree").fill_null(0)).alias("combined_degree"),
            pl.Series(
                "id",
                ids.relationship_ids(relationships.select("source", "target").iter_rows()),
                dtype=pl.String,
            ),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("human_readable_id"),
        )
    )
    return schemas.conform(entities, schemas.ENTITIES), schemas.conform(relationships, schemas.RELATIONSHIPS)


def finalize_covariates(claim_rows: pl.DataFrame) -> pl.DataFrame:
    """The ``schemas.COVARIATES`` table from claim records (other record types are ignored).

    A claim repeated word for word in one text unit (e.g. by a gleaning) is kept once. The id is
    derived from the claim's content and text unit; rows are numbered in subject order.
    """
    if "record_type" in claim_rows.columns:
        claim_rows = claim_rows.filter(pl.col("record_type") == "claim")
    content = ["subject_id", "object_id", "type", "status", "start_date", "end_date", "description", "source_text"]
    claims = (
        claim_rows.select(
            pl.col("source").alias("subject_id"),
            pl.col("target").alias("object_id"),
            "type",
            "status",
            "start_date",
            "end_date",
            "description",
            "source_text",
            "text_unit_id",
        )
        .unique()
        .sort(
            [
                "subject_id",
                "object_id",
                "type",
                "text_unit_id",
                "description",
                "status",
                "start_date",
                "end_date",
                "source_text",
            ],
            nulls_last=True,
        )
    )
    covariate_ids = [
        ids.stable_uuid("covariate", *("" if value is None else value for value in row))
        for row in claims.select("text_unit_id", *content).iter_rows()
    ]
    claims = claims.with_columns(
        pl.Series("id", covariate_ids, dtype=pl.String),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("human_readable_id"),
        pl.lit("claim").alias("covariate_type"),
    )
    return schemas.conform(claims, schemas.COVARIATES)


def _distinct_sorted(column: str) -> pl.Expr:
    """Sorted distinct non-empty values of a string column, as a list aggregation."""
    value = pl.col(column)
    return value.filter(value.is_not_null() & (value.str.strip_chars() != "")).unique().sort()


def _description() -> pl.Expr:
    """Summary if present, else the descriptions joined one per line ("" for none)."""
    return pl.coalesce(pl.col("summary"), pl.col("descriptions").list.join("\n"), pl.lit(""))
