"""The graph's edges as ``_start`` / ``_end`` id frames, shared by the Neo4j CSV and Cypher exports.

Both exports write the same relationships between the same nodes; only their formats differ, so
which rows are edges (and in which order they are written) is decided once, here. Edges whose
rules differ between the two formats (community membership, mentions) stay with their export.
"""

from __future__ import annotations

import polars as pl


def title_ids(entities: pl.DataFrame) -> pl.DataFrame:
    """``title`` → entity ``id`` (the first entity of a title, should two share one)."""
    return entities.select("title", "id").unique("title", keep="first", maintain_order=True)


def related_edges(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Every relationship with its ends' entity ids (null where no entity has that title)."""
    ids = title_ids(tables["entities"])
    return (
        tables["relationships"]
        .sort("human_readable_id", "id")
        .join(ids.rename({"id": "_start"}), left_on="source", right_on="title", how="left", maintain_order="left")
        .join(ids.rename({"id": "_end"}), left_on="target", right_on="title", how="left", maintain_order="left")
    )


def parent_edges(communities: pl.DataFrame) -> pl.DataFrame:
    """Parent community → child community."""
    return (
        communities.sort("level", "community")
        .filter(pl.col("parent") >= 0)
        .join(
            communities.select("community", pl.col("id").alias("_start")),
            left_on="parent",
            right_on="community",
            how="inner",
            maintain_order="left",
        )
        .select("_start", pl.col("id").alias("_end"))
    )


def part_of_edges(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Text unit → the document it was cut from."""
    return (
        tables["text_units"]
        .sort("document_id", "chunk_index", "id")
        .select(pl.col("id").alias("_start"), pl.col("document_id").alias("_end"))
        .join(tables["documents"].select("id"), left_on="_end", right_on="id", how="semi", maintain_order="left")
    )


def claim_edges(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Subject entity → claim (claims whose subject is no entity have no edge)."""
    return (
        tables["covariates"]
        .sort("human_readable_id", "id")
        .join(
            title_ids(tables["entities"]).rename({"id": "_start"}),
            left_on="subject_id",
            right_on="title",
            how="inner",
            maintain_order="left",
        )
        .select("_start", pl.col("id").alias("_end"))
    )
