"""The local-search walk's graph, stored with each build as integer tables and read back as arrays.

:mod:`graphrag_assets.index.walk_graph` explains the graph. Its inputs come from the published
tables by SQL, as integers (vertex numbers by id order; titles resolved to the first entity
holding them, as the in-memory graph does), so no string of the 15 M relationships of a
100,000-document index reaches Python. Three tables hold the result:

- ``ranking_walk``: one row, the build it describes (``corpus_build``'s run id and commit time)
  and its entity and text-unit counts. A query uses the stored graph only when that build is the
  published one, so an index published by code that does not write it (older builds) is ranked
  from its tables as before.
- ``ranking_walk_vertices``: per vertex, in vertex order, the edges arriving at it and (entities)
  the text units mentioning it.
- ``ranking_walk_edges``: per directed edge, in matrix order, its source vertex and step probability.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from graphrag_assets.storage.corpus import BUILD_TABLE
from graphrag_assets.storage.database import FrameStream, connect, frame_of, table_exists, transaction
from graphrag_assets.storage.table_names import ENTITIES, RELATIONSHIPS, TEXT_UNITS
from graphrag_assets.storage.tables import quote

WALK_TABLE = "ranking_walk"
WALK_VERTICES = "ranking_walk_vertices"
WALK_EDGES = "ranking_walk_edges"

_ENTITY_VERTICES = f"select (row_number() over (order by id) - 1)::integer as v, * from {quote(ENTITIES)}"
_UNIT_VERTICES = f"select (row_number() over (order by id) - 1)::integer as u, id from {quote(TEXT_UNITS)}"
_LINKS = f"""
with entity as ({_ENTITY_VERTICES}),
     titled as (select coalesce(title, '') as title, min(v) as v from entity group by 1)
select a.v as a, b.v as b, r.weight::double as w
from {quote(RELATIONSHIPS)} r join titled a on r.source = a.title join titled b on r.target = b.title
where r.weight > 0
order by a, b, w
"""
_MENTIONS = f"""
with entity as ({_ENTITY_VERTICES}),
     unit as ({_UNIT_VERTICES}),
     mention as (select v, unnest(text_unit_ids) as unit from entity)
select distinct m.v, unit.u from mention m join unit on m.unit = unit.id
order by 1, 2
"""


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(f"select count(*) from {quote(table)}").fetchall()[0][0])


def _build_stamp(conn: Any) -> tuple[str, str] | None:
    """The published build's run id and commit time, as text (None: no build record)."""
    if not table_exists(conn, BUILD_TABLE):
        return None
    rows = conn.execute(f"select run_id::varchar, published_at::varchar from {quote(BUILD_TABLE)}").fetchall()
    return (rows[0][0] or "", rows[0][1] or "") if rows else None


def walk_inputs(path: str | Path) -> dict[str, Any] | None:
    """The walk graph's inputs from the published tables: counts, link ends and weights (sorted by
    ends, then weight), (entity vertex, text unit row) mentions (sorted); None before any build."""
    with connect(path, read_only=True) as conn:
        if not all(table_exists(conn, t) for t in (ENTITIES, RELATIONSHIPS, TEXT_UNITS)):
            return None
        conn.execute("set enable_progress_bar = false")  # the step's log is no terminal
        links = frame_of(conn.sql(_LINKS))
        mentions = frame_of(conn.sql(_MENTIONS))
        return {
            "stamp": _build_stamp(conn),
            "entity_count": _count(conn, ENTITIES),
            "unit_count": _count(conn, TEXT_UNITS),
            "link_ends": (links["a"].to_numpy(), links["b"].to_numpy()),
            "link_weight": links["w"].to_numpy(),
            "mention_entity": mentions["v"].to_numpy(),
            "mention_unit": mentions["u"].to_numpy(),
        }


def write_walk(
    path: str | Path,
    stamp: tuple[str, str],
    counts: tuple[int, int],
    edges_in: np.ndarray,
    mentions: np.ndarray,
    sources: np.ndarray,
    probability: np.ndarray,
) -> None:
    """Replace the stored walk graph with this one (of the build ``stamp``), in one transaction."""
    entity_count, unit_count = counts
    header = pl.DataFrame(
        {"run_id": [stamp[0]], "published_at": [stamp[1]], "entity_count": [entity_count], "unit_count": [unit_count]}
    )
    mention_column = np.concatenate([mentions, np.zeros(unit_count, dtype=mentions.dtype)])
    vertices = pl.DataFrame({"edges_in": edges_in, "mentions": mention_column})
    edges = pl.DataFrame({"source": sources, "probability": probability})
    with connect(path) as conn, transaction(conn):
        for name, frame in ((WALK_TABLE, header), (WALK_VERTICES, vertices), (WALK_EDGES, edges)):
            conn.register("_walk_frame", FrameStream(frame))
            try:
                conn.execute(f"create or replace table {quote(name)} as select * from _walk_frame")
            finally:
                conn.unregister("_walk_frame")


def read_walk(conn: Any) -> dict[str, Any] | None:
    """The stored walk graph of the published build as arrays; None when the index has none or it
    describes another build (an older build's, or one written by code that does not store it)."""
    if not table_exists(conn, WALK_TABLE) or not table_exists(conn, WALK_EDGES):
        return None
    stamp = _build_stamp(conn)
    header = conn.execute(f"select run_id, published_at, entity_count, unit_count from {quote(WALK_TABLE)}").fetchall()
    if not header or stamp is None or (header[0][0], header[0][1]) != stamp:
        return None
    entity_count, unit_count = int(header[0][2]), int(header[0][3])
    vertices = frame_of(conn.sql(f"select edges_in, mentions from {quote(WALK_VERTICES)}"))
    edges = frame_of(conn.sql(f"select source, probability from {quote(WALK_EDGES)}"))
    if vertices.height != entity_count + unit_count:
        return None
    indptr = np.zeros(vertices.height + 1, dtype=np.int64)
    np.cumsum(vertices["edges_in"].to_numpy(), out=indptr[1:])
    return {
        "entity_count": entity_count,
        "unit_count": unit_count,
        "indptr": indptr,
        "sources": edges["source"].to_numpy(),
        "probability": edges["probability"].to_numpy(),
        "mentions": vertices["mentions"].to_numpy()[:entity_count],
    }
