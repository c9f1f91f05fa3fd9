"""The communities step's work over the whole relationships table, done by DuckDB.

At 100,000 generated documents the relationships table has 15 M rows. Coded in polars (ids as
strings, unit entries, ends and weights) it brought the step to 4.1 GB and normalising the edge
list to 5.5 GB, though clustering needs only the normalized edge list in codes. Here DuckDB,
under a memory limit and spilling to disk, makes that edge list from the staged table, and later
each community's ``relationship_ids`` and ``text_unit_ids`` a chunk of communities at a time from
the node -> community assignments, so the step's process never holds the ids or unit entries of
every relationship at once.

Results equal the polars versions in :mod:`graphrag_assets.index.coded_graph` (the pure path and
the oracle of the tests): codes are positions in the sorted titles, strings sort by bytes in both,
and the graph step merges relationships by directed pair, so a pair's weight sums at most two
numbers (the same sum in any order).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from graphrag_assets.storage.corpus import STAGE_MEMORY_LIMIT, readable_table
from graphrag_assets.storage.database import FrameStream, connect, frame_of

# Relationships whose two ends are known titles, coded (``_titles``: title, code), weight as the
# pure path reads it (null counts as 1.0); self-loops are kept for the weight check only.
_CODED = """
    select s.code as a, t.code as b, coalesce(r.weight::double, 1.0) as weight, r.rowid as row
    from {relationships} r join _titles s on r.source = s.title join _titles t on r.target = t.title"""
_BAD_WEIGHTS = """
    select count(*) over () as bad, a, b, weight from ({coded})
    where not isfinite(weight) or weight < 0 order by row limit 1"""
# Self-loops leave after the sum: a filter comparing the two ends' codes, pushed into the joins,
# made DuckDB pair every title with every title first (1 s for 2,000 titles).
_PAIRS = """
    create or replace temp table _pairs as
    select least(a, b) as a, greatest(a, b) as b, sum(weight) as weight from ({coded}) group by all"""
_USED = """
    create or replace temp table _used as
    select code, (row_number() over (order by code) - 1)::bigint as node
    from (select a as code from _pairs where a != b union select b from _pairs where a != b)"""
_EDGES = """
    select u.node as source, v.node as target, p.weight
    from _pairs p join _used u on p.a = u.code join _used v on p.b = v.code where p.a != p.b order by source, target"""


def staged_edge_list(path: str | Path, titles: pl.Series) -> tuple[pl.Series, pl.DataFrame]:
    """The normalized undirected edge list of this run's relationships, coded against the sorted
    ``titles`` (see :func:`~graphrag_assets.index.coded_graph.normalized_edges`).

    Returns the codes (positions in ``titles``, ascending) of the nodes that have an edge, and
    ``source`` < ``target`` (Int64 positions in those codes), ``weight`` (Float64, summed over
    both directions), one row per pair, sorted by pair. Relationships with an end that is not a
    title are left out; a negative or non-finite weight raises ValueError naming its ends.
    """
    empty = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "weight": pl.Float64})
    coded_titles = pl.DataFrame({"title": titles, "code": pl.int_range(titles.len(), dtype=pl.Int64, eager=True)})
    with connect(path) as conn:
        relationships = readable_table(conn, "relationships")
        if relationships is None:
            return pl.Series("code", [], dtype=pl.Int64), empty
        coded = _CODED.format(relationships=relationships)
        conn.register("_titles", FrameStream(coded_titles))
        _set(conn)
        try:
            bad = conn.execute(_BAD_WEIGHTS.format(coded=coded)).fetchall()
            if bad:
                count, a, b, weight = bad[0]
                raise ValueError(
                    f"{count} edge(s) have a negative or non-finite weight, e.g. "
                    f"{titles[a]!r} - {titles[b]!r}: {weight}"
                )
            conn.execute(_PAIRS.format(coded=coded))
            conn.execute(_USED)
            codes = frame_of(conn.sql("select code from _used order by node"))["code"]
            edges = frame_of(conn.sql(_EDGES))
        finally:
            conn.execute("drop table if exists _pairs")
            conn.execute("drop table if exists _used")
            _reset(conn)
            conn.unregister("_titles")
    return codes.cast(pl.Int64), edges.cast(empty.schema) if edges.height else empty


# The relationships inside a community of any level, with the community of each level that holds
# both ends (null where the ends part at that level): ``_levels`` holds a node and its community at
# each level (columns c0, c1, ...). One join for every level: a join per level read the 15 M rows
# of the 100,000-document index seven times. Joined in the order written (see SETTINGS): DuckDB's
# join order, estimating one row for a registered frame, joined the levels with themselves first.
# Communities nest, so ends that share one at any level share their top-level one: comparing that
# one only (``{top}``) selected the same 3.3 M of the 15 M rows in 3.3-3.7 s, every level 5.4-6.5 s.
_INSIDE = """
    create or replace temp table _inside as
    select r.id, r.text_unit_ids, {shared}
    from {relationships} r join _levels s on r.source = s.node join _levels t on r.target = t.node
    where s.{top} = t.{top}"""
_SIZES = """
    select {level} as community, count(*) as rows from _inside where {level} is not null
    group by community order by community"""
# Rows, not lists: a list aggregate holds its whole group in memory and does not spill, and at
# 100,000 documents one coarse community holds millions of relationships (``list(distinct id
# order by id)`` ran out of DuckDB's memory there). A sort spills; the lists are made in polars
# (_grouped) from one run's sorted rows. Duplicate ids are dropped there, next to each other once
# sorted: a DISTINCT before the sort needed twice the memory of either. Nulls first, as polars
# sorts them.
_IDS = """
    select {level} as community, id from _inside where {level} between {first} and {last}
    order by community, id nulls first"""
# A community's units are those of the relationships inside it. Each relationship's entries are
# unnested once, keyed by the deepest community holding both its ends (communities are numbered
# across levels and nest, so that community names every level's: ``_paths``), and kept distinct
# (a hash aggregate, spilling); a level's lists then come from those rows and ``_paths``. At
# 100,000 documents the inside relationships hold 27 M unit entries, 0.9 M distinct per deepest
# community: unnesting them at every level took 11.4 s, this 4.7 s (the same rows).
_PATHS = """
    create or replace temp table _paths as select distinct {deepest} as deepest, {columns} from _inside"""
_DEEP_UNITS = """
    create or replace temp table _deep_units as
    select distinct deepest, unit from (select {deepest} as deepest, unnest(text_unit_ids) as unit from _inside)
    where unit is not null"""
_UNITS = """
    select distinct p.{level} as community, u.unit from _deep_units u join _paths p using (deepest)
    where p.{level} between {first} and {last} order by community, unit"""
# DuckDB settings of this module's statements, applied to the connection and reset after (they are
# the instance's): the stage's memory limit, and joins in the order written (see _INSIDE). Read
# when applied, so a test can lower the limit.
SETTINGS = {"memory_limit": f"'{STAGE_MEMORY_LIMIT}'", "disabled_optimizers": "'join_order'"}
INTERNAL = {"community": pl.Int64, "relationship_ids": pl.List(pl.String), "text_unit_ids": pl.List(pl.String)}


def staged_internal_lists(path: str | Path, assignments: pl.DataFrame, memberships: int) -> Iterator[pl.DataFrame]:
    """``community``, ``relationship_ids``, ``text_unit_ids`` of the relationships inside each
    community of ``assignments`` (``node``, ``community``, ``level``), as
    :func:`~graphrag_assets.index.coded_graph.internal_relationship_chunks` yields them: level by
    level, in runs of consecutive communities holding about ``memberships`` relationships.

    DuckDB selects the relationships inside a community of any level, with their community at
    each level, into one temporary table (spilled beyond the memory limit) and sorts one run of
    communities at a time; polars makes that run's lists, so the caller holds one chunk's strings
    (one community's, when it alone is larger) and DuckDB no more than its limit, however large a
    community. Ids and units are distinct and sorted;
    communities without a unit get none (null).
    """
    if assignments.is_empty():
        return
    levels = assignments["level"].unique().sort().to_list()
    columns = [f"c{int(level)}" for level in levels]
    # a node's community at each level (null at a level it is not in); one row per node
    by_level = assignments.pivot(on="level", index="node", values="community", sort_columns=True)
    by_level = by_level.rename({str(level): column for level, column in zip(levels, columns)})
    shared = ", ".join(f"case when s.{c} = t.{c} then s.{c} end as {c}" for c in columns)
    with connect(path) as conn:
        relationships = readable_table(conn, "relationships")
        if relationships is None:
            return
        _set(conn)
        try:
            conn.register("_levels", FrameStream(by_level))
            try:
                conn.execute(_INSIDE.format(relationships=relationships, shared=shared, top=columns[0]))
            finally:
                conn.unregister("_levels")
            del by_level
            deepest = f"coalesce({', '.join(reversed(columns))})"
            conn.execute(_PATHS.format(deepest=deepest, columns=", ".join(columns)))
            conn.execute(_DEEP_UNITS.format(deepest=deepest))
            for level in columns:
                for first, last in _runs(frame_of(conn.sql(_SIZES.format(level=level))), memberships):
                    # the rows as DuckDB gave them are dropped once grouped, before the caller writes
                    bounds = {"level": level, "first": first, "last": last}
                    ids = _grouped(frame_of(conn.sql(_IDS.format(**bounds))), "id", "relationship_ids")
                    units = _grouped(frame_of(conn.sql(_UNITS.format(**bounds))), "unit", "text_unit_ids")
                    chunk = ids.join(units, on="community", how="left", maintain_order="left")
                    del ids, units
                    yield chunk.select(list(INTERNAL)).cast(INTERNAL)
        finally:
            for table in ("_inside", "_paths", "_deep_units"):
                conn.execute(f"drop table if exists {table}")
            _reset(conn)


def _runs(sizes: pl.DataFrame, memberships: int) -> list[tuple[int, int]]:
    """First and last community of each run of consecutive communities (``sizes``: community,
    rows; ascending) holding about ``memberships`` rows: a run ends once it reaches a multiple."""
    if sizes.is_empty():
        return []
    runs = (
        sizes.with_columns(end=pl.col("rows").cum_sum())
        .group_by(((pl.col("end") - 1) // memberships).alias("run"), maintain_order=True)
        .agg(first=pl.col("community").first(), last=pl.col("community").last())
    )
    return [(int(first), int(last)) for first, last in zip(runs["first"].to_list(), runs["last"].to_list())]


def _grouped(rows: pl.DataFrame, column: str, name: str) -> pl.DataFrame:
    """Each community's list ``name`` of ``column`` from ``rows`` sorted by community then value,
    each value once (duplicates are next to each other; the rows are copied only when there is one)."""
    repeated = (rows["community"] == rows["community"].shift()) & rows[column].eq_missing(rows[column].shift())
    if repeated.any():
        rows = rows.filter(~repeated.fill_null(False))
    return rows.group_by("community", maintain_order=True).agg(pl.col(column).alias(name))


def _set(conn) -> None:
    for name, value in SETTINGS.items():
        conn.execute(f"set {name} = {value}")


def _reset(conn) -> None:
    for name in SETTINGS:
        conn.execute(f"reset {name}")
