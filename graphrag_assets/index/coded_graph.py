"""The entity graph in integer codes, as the communities step clusters it.

At 100,000 generated documents the relationships table has 15 M rows; as strings (titles, ids,
descriptions, unit-id lists) it takes gigabytes, and the communities step used to hold it more
than once: the table it was given, a filtered copy, a normalized edge list of title pairs, two
igraph graphs (one to cluster, one for the modularity) and the joins that collected each
community's relationship ids and text units. Clustering needs none of those strings: a
relationship is two entity codes and a weight, its text units are unit codes, and only what the
``communities`` table stores (ids and unit ids of each community) is turned back into strings.

Codes are positions in sorted lists (entity titles, unit ids), so sorting by code is sorting by
title and every result equals the one the string version gave. Polars only (no numpy): a
standard index of a small corpus must not load numpy (``test_cli_imports``).

The communities step itself no longer codes the relationships here: at 100,000 documents (15 M
relationships) their ids, unit entries, ends and weights in polars were 4.1 GB and normalising
them 5.5 GB, so DuckDB makes the same edge list and lists from the stored table
(:mod:`graphrag_assets.storage.community_graph`). This module is the in-memory version, for
tables given as frames (:func:`~graphrag_assets.index.communities.build_communities`), and the
reference the DuckDB one is tested against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

CODE = pl.UInt32


@dataclass(frozen=True)
class CodedRelationships:
    """Relationships whose two ends are known entities, in codes (row = position in ``edges``).

    ``titles``: the sorted distinct entity titles (code = position); ``edges``: ``source``,
    ``target`` (title codes, as stored: not yet ordered), ``weight`` (Float64, null kept) in table
    order; ``ids``: the relationship id of each row; ``units``: ``row``, ``unit`` (code into
    ``unit_names``) for every entry of every row's ``text_unit_ids``.
    """

    titles: pl.Series
    edges: pl.DataFrame
    ids: pl.Series
    units: pl.DataFrame
    unit_names: pl.Series

    @property
    def height(self) -> int:
        return self.edges.height


def code_relationships(titles: pl.Series, batches: Iterable[pl.DataFrame], unit_names: pl.Series) -> CodedRelationships:
    """Code ``batches`` of relationship rows (``source``, ``target``, optional ``weight``, ``id``,
    ``text_unit_ids``) against the sorted ``titles`` and ``unit_names``.

    Rows with an end that is not a title are left out, as :func:`build_communities` always did;
    batches are coded one at a time, so the caller can stream the table instead of loading it.
    """
    titles_enum = pl.Enum(titles)
    units_enum = pl.Enum(unit_names)
    edge_parts: list[pl.DataFrame] = []
    id_parts: list[pl.Series] = []
    unit_parts: list[pl.DataFrame] = []
    offset = 0
    for batch in batches:
        # The double negation and the concatenation copy (an exact copy; polars skips ``* 1.0``):
        # a batch read from DuckDB is one imported Arrow array, kept whole, every column, while
        # any of its buffers is referenced (+0.7 GB held at 20,000 documents)
        weight = (
            pl.col("weight").cast(pl.Float64).neg().neg()
            if "weight" in batch.columns
            else pl.lit(None, dtype=pl.Float64)
        )
        coded = batch.select(
            source=pl.col("source").cast(pl.String).cast(titles_enum, strict=False).to_physical().cast(CODE),
            target=pl.col("target").cast(pl.String).cast(titles_enum, strict=False).to_physical().cast(CODE),
            weight=weight,
            id=pl.concat_str(pl.col("id").cast(pl.String), pl.lit("")),
            text_unit_ids=pl.col("text_unit_ids"),
        ).filter(pl.col("source").is_not_null() & pl.col("target").is_not_null())
        coded = coded.with_row_index("row", offset=offset)
        offset += coded.height
        edge_parts.append(coded.select("source", "target", "weight"))
        id_parts.append(coded["id"])
        unit_parts.append(
            coded.select("row", unit="text_unit_ids")
            .explode("unit")
            .drop_nulls("unit")
            .select(pl.col("row").cast(CODE), unit=pl.col("unit").cast(units_enum).to_physical().cast(CODE))
        )
        del coded
    edges = (
        pl.concat(edge_parts)
        if edge_parts
        else pl.DataFrame(schema={"source": CODE, "target": CODE, "weight": pl.Float64})
    )
    ids = pl.concat(id_parts) if id_parts else pl.Series("id", [], dtype=pl.String)
    units = pl.concat(unit_parts) if unit_parts else pl.DataFrame(schema={"row": CODE, "unit": CODE})
    return CodedRelationships(titles, edges.rechunk(), ids.rechunk(), units.rechunk(), unit_names)


def coded_frame(titles: pl.Series, relationships: pl.DataFrame) -> CodedRelationships:
    """:func:`code_relationships` of a whole relationships frame (the unit names are its own)."""
    if "text_unit_ids" not in relationships.columns:
        relationships = relationships.with_columns(text_unit_ids=pl.lit([], dtype=pl.List(pl.String)))
    if "id" not in relationships.columns:
        relationships = relationships.with_columns(id=pl.lit(None, dtype=pl.String))
    names = (
        relationships.select(unit=pl.col("text_unit_ids").cast(pl.List(pl.String)))
        .explode("unit")
        .drop_nulls()["unit"]
        .unique()
        .sort()
    )
    return code_relationships(titles, [relationships], names)


@dataclass(frozen=True)
class CodedEdges:
    """A normalized undirected edge list: ``source`` < ``target`` (codes into ``names``, the sorted
    titles of the nodes that have an edge), one row per pair, weights summed, sorted by pair."""

    names: pl.Series
    edges: pl.DataFrame  # source, target (Int64 node codes), weight (Float64)

    @property
    def is_empty(self) -> bool:
        return self.edges.is_empty()

    def arrays(self) -> tuple[Any, Any, Any]:
        """``source``, ``target`` and ``weight`` as numpy arrays (Int64, Int64, Float64), for the
        code that clusters big graphs on arrays; numpy is loaded only by this call."""
        edges = self.edges
        return edges["source"].to_numpy(), edges["target"].to_numpy(), edges["weight"].cast(pl.Float64).to_numpy()

    def frame(self) -> pl.DataFrame:
        """The edge list with titles (``communities.EDGES``), for code that takes one."""
        return self.edges.select(
            source=self.names.gather(self.edges["source"]),
            target=self.names.gather(self.edges["target"]),
            weight="weight",
        )


def normalized_edges(names: pl.Series, edges: pl.DataFrame) -> CodedEdges:
    """:func:`~graphrag_assets.index.communities.normalize_edges` on codes into the sorted ``names``.

    ``edges``: ``source``, ``target`` (codes, null: dropped), ``weight`` (null counts as 1.0).
    Negative or non-finite weights are rejected. Nodes without an edge are dropped from ``names``
    and the codes renumbered, so the vertex order is that of the string version.
    """
    frame = edges.select(
        pl.col("source").cast(pl.Int64),
        pl.col("target").cast(pl.Int64),
        pl.col("weight").cast(pl.Float64).fill_null(1.0),
    ).drop_nulls(["source", "target"])
    refuse_bad_weights(frame, lambda end: names[end])
    frame = (
        frame.select(
            source=pl.min_horizontal("source", "target"),
            target=pl.max_horizontal("source", "target"),
            weight="weight",
        )
        .filter(pl.col("source") != pl.col("target"))
        .group_by("source", "target")
        .agg(pl.col("weight").sum())
        .sort("source", "target")
    )
    used = pl.concat([frame["source"], frame["target"]]).unique().sort()
    if used.len() == names.len():
        return CodedEdges(names, frame)
    renumber = pl.Series([None] * names.len(), dtype=pl.Int64).scatter(used, pl.int_range(used.len(), eager=True))
    frame = frame.with_columns(source=renumber.gather(frame["source"]), target=renumber.gather(frame["target"]))
    return CodedEdges(names.gather(used), frame)


def edges_of_frame(edges: pl.DataFrame) -> CodedEdges:
    """:func:`normalized_edges` of an edge list with titles (``source``, ``target``, optional ``weight``)."""
    ends = edges.select(pl.col("source").cast(pl.String), pl.col("target").cast(pl.String))
    names = pl.concat([ends["source"], ends["target"]]).drop_nulls().unique().sort()
    as_enum = pl.Enum(names)
    weight = pl.col("weight") if "weight" in edges.columns else pl.lit(None, dtype=pl.Float64)
    coded = edges.select(
        source=pl.col("source").cast(pl.String).cast(as_enum).to_physical(),
        target=pl.col("target").cast(pl.String).cast(as_enum).to_physical(),
        weight=weight,
    )
    return normalized_edges(names, coded)


def level_modularity(edges: CodedEdges, assignments: pl.DataFrame, level: int, resolution: float) -> float:
    """Weighted modularity (igraph's definition) of one level's clustering, over the nodes clustered
    at that level and the edges between them: ``W_in / m - resolution * Σ_c (K_c / 2m)²``."""
    at_level = assignments.filter(pl.col("level") == level)
    if at_level.is_empty() or edges.is_empty:
        return float("nan")
    codes = at_level.select(
        node=pl.col("node").cast(pl.Enum(edges.names), strict=False).to_physical().cast(pl.Int64), community="community"
    ).drop_nulls()
    label = pl.Series([None] * edges.names.len(), dtype=pl.Int64).scatter(codes["node"], codes["community"])
    inside = edges.edges.select(
        a=label.gather(edges.edges["source"]), b=label.gather(edges.edges["target"]), weight="weight"
    ).filter(pl.col("a").is_not_null() & pl.col("b").is_not_null())
    if inside.is_empty():
        return float("nan")
    m = float(inside["weight"].sum())
    if m == 0:
        return float("nan")
    within = float(inside.filter(pl.col("a") == pl.col("b"))["weight"].sum())
    degree = (
        pl.concat([inside.select(c="a", weight="weight"), inside.select(c="b", weight="weight")])
        .group_by("c")
        .agg(pl.col("weight").sum())
    )
    spread = float(((degree["weight"] / (2 * m)) ** 2).sum())
    return within / m - resolution * spread


# Relationship memberships (a relationship inside a community, at one level) per chunk of
# :func:`internal_relationship_chunks`: each chunk's lists are made and written before the next.
LIST_CHUNK_MEMBERSHIPS = 1_000_000
INTERNAL = {"community": pl.Int64, "relationship_ids": pl.List(pl.String), "text_unit_ids": pl.List(pl.String)}


def internal_relationships(coded: CodedRelationships, assignments: pl.DataFrame) -> pl.DataFrame:
    """``community``, ``relationship_ids``, ``text_unit_ids`` of the relationships inside each community:
    every chunk of :func:`internal_relationship_chunks` at once."""
    parts = list(internal_relationship_chunks(coded, assignments))
    return pl.concat(parts) if parts else pl.DataFrame(schema=INTERNAL)


def internal_relationship_chunks(coded: CodedRelationships, assignments: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """``community``, ``relationship_ids``, ``text_unit_ids`` of the relationships inside each community,
    level by level (ascending), each level in runs of consecutive communities holding about
    ``LIST_CHUNK_MEMBERSHIPS`` relationships, so a caller that writes each chunk holds one chunk's lists.

    A relationship is inside a community when both ends are in it at that level. On codes: each
    relationship lies in at most one community of a level, so a level costs a gather per
    relationship, and strings are made only for the ids and units that are stored. All levels'
    lists at once are each relationship once per level it is inside a community (2.1 M ids at
    20,000 documents, 7 levels), and the step sorted and filtered that whole table for its checks.
    """
    if assignments.is_empty() or coded.height == 0:
        return
    n = coded.titles.len()
    node_code = pl.col("node").cast(pl.Enum(coded.titles), strict=False).to_physical().cast(pl.Int64)
    id_rank = coded.ids.rank("dense").cast(pl.UInt32)  # ids sorted as strings, duplicates once
    row_units = _units_by_row(coded)
    memberships = LIST_CHUNK_MEMBERSHIPS
    for level in assignments["level"].unique().sort().to_list():
        at_level = assignments.filter(pl.col("level") == level).select(node=node_code, community="community")
        at_level = at_level.drop_nulls()
        label = pl.Series([None] * n, dtype=pl.Int64).scatter(at_level["node"], at_level["community"])
        del at_level
        inside = (
            coded.edges.select(a=label.gather(coded.edges["source"]), b=label.gather(coded.edges["target"]))
            .with_row_index("row")
            .filter(pl.col("a") == pl.col("b"))
            .select(pl.col("row").cast(CODE), community="a")
            .sort("community", "row")
        )
        del label
        bounds = (
            inside.group_by("community", maintain_order=True)
            .agg(pl.len().alias("rows"))
            .with_columns(end=pl.col("rows").cum_sum())
            .group_by(((pl.col("end") - 1) // memberships).alias("chunk"), maintain_order=True)
            .agg(pl.col("end").last())
        )
        start = 0
        for end in bounds["end"].to_list():
            yield _lists_of(coded, inside.slice(start, end - start), id_rank, row_units)
            start = end
        del inside


def _units_by_row(coded: CodedRelationships) -> pl.Series:
    """Each relationship row's unit codes (a list per row, in row order; empty when it cites none)."""
    grouped = coded.units.group_by("row").agg("unit")
    rows = pl.DataFrame({"row": pl.int_range(coded.height, dtype=CODE, eager=True)})
    return rows.join(grouped, on="row", how="left", maintain_order="left")["unit"]


def _lists_of(
    coded: CodedRelationships, inside: pl.DataFrame, id_rank: pl.Series, row_units: pl.Series
) -> pl.DataFrame:
    """The ``INTERNAL`` rows of the communities in ``inside`` (``row``, ``community``)."""
    ids = (
        inside.with_columns(rank=id_rank.gather(inside["row"]), id=coded.ids.gather(inside["row"]))
        .unique(["community", "rank"])
        .sort("community", "rank")
        .group_by("community", maintain_order=True)
        .agg(relationship_ids="id")
    )
    units = (
        inside.select("community", unit=row_units.gather(inside["row"]))
        .explode("unit")
        .drop_nulls("unit")
        .unique()
        .sort("community", "unit")
    )
    unit_lists = (
        units.select("community", unit=coded.unit_names.gather(units["unit"]))
        .group_by("community", maintain_order=True)
        .agg(text_unit_ids="unit")
    )
    return ids.join(unit_lists, on="community", how="left", maintain_order="left").select(list(INTERNAL)).cast(INTERNAL)


def refuse_bad_weights(edges: pl.DataFrame, name_of: Callable[[Any], str]) -> None:
    """Raise when an edge's weight is negative or not finite (Leiden needs weights ≥ 0), naming
    the first such edge's ends through ``name_of`` (codes or titles)."""
    bad = edges.filter(~pl.col("weight").is_finite() | (pl.col("weight") < 0))
    if not bad.is_empty():
        row = bad.row(0, named=True)
        raise ValueError(
            f"{bad.height} edge(s) have a negative or non-finite weight, e.g. "
            f"{name_of(row['source'])!r} - {name_of(row['target'])!r}: {row['weight']}"
        )
