"""The local-search walk's graph, stored with each build as array files and mapped back by a query.

:mod:`graphrag_assets.index.walk_graph` explains the graph. Its inputs come from the published
tables by SQL, as integers (vertex numbers by id order; titles resolved to the first entity
holding them, as the in-memory graph does), so no string of the 15 M relationships of a
100,000-document index reaches Python. The result is stored in two places:

- ``ranking_walk``, a table of one row: the build it describes (``corpus_build``'s run id and
  commit time) and its entity and text-unit counts. A query uses the stored graph only when that
  build is the published one, so an index published by code that does not write it (older builds)
  is ranked from its tables as before.
- the arrays, one ``.npy`` file each, in ``<database>.walk/<build digest>/`` beside the database
  (:data:`ARRAYS`). A query maps them into memory instead of reading them: a walk that pushes mass
  from the question's seeds (:mod:`graphrag_assets.query.push_walk`) touches only the rows of the
  vertices it reaches, where reading the 37.7 M directed edges of the 100,000-document index from
  DuckDB took ~2 s per process. A directory per build, so a server still answering on the previous
  build keeps the files it mapped; writing a build's arrays removes the other builds' directories
  (a mapped file stays readable after its removal).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from graphrag_assets.storage.corpus import build_stamp
from graphrag_assets.storage.database import FrameStream, connect, frame_of, table_exists, transaction
from graphrag_assets.storage.table_names import ENTITIES, RELATIONSHIPS, TEXT_UNITS
from graphrag_assets.storage.tables import quote

WALK_TABLE = "ranking_walk"
OLD_TABLES = ("ranking_walk_vertices", "ranking_walk_edges")  # the arrays as tables, before the files
ARRAYS = ("indptr", "sources", "probability", "mentions", "strength")

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
            "stamp": build_stamp(conn),
            "entity_count": _count(conn, ENTITIES),
            "unit_count": _count(conn, TEXT_UNITS),
            "link_ends": (links["a"].to_numpy(), links["b"].to_numpy()),
            "link_weight": links["w"].to_numpy(),
            "mention_entity": mentions["v"].to_numpy(),
            "mention_unit": mentions["u"].to_numpy(),
        }


def walk_directory(path: str | Path, stamp: tuple[str, str]) -> Path:
    """Where the arrays of the walk of build ``stamp`` of the database at ``path`` are stored."""
    digest = hashlib.sha256("\0".join(stamp).encode()).hexdigest()[:16]
    return Path(f"{path}.walk") / digest


def write_walk(
    path: str | Path, stamp: tuple[str, str], counts: tuple[int, int], arrays: dict[str, np.ndarray]
) -> None:
    """Store this walk graph (of the build ``stamp``; ``arrays`` by the names of :data:`ARRAYS`) as
    the index's, in place of any other build's."""
    entity_count, unit_count = counts
    target = walk_directory(path, stamp)
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for name in ARRAYS:
        np.save(partial / f"{name}.npy", arrays[name], allow_pickle=False)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    header = pl.DataFrame(
        {"run_id": [stamp[0]], "published_at": [stamp[1]], "entity_count": [entity_count], "unit_count": [unit_count]}
    )
    with connect(path) as conn, transaction(conn):
        conn.register("_walk_frame", FrameStream(header))
        try:
            conn.execute(f"create or replace table {quote(WALK_TABLE)} as select * from _walk_frame")
        finally:
            conn.unregister("_walk_frame")
        for old in OLD_TABLES:
            conn.execute(f"drop table if exists {quote(old)}")
    for other in target.parent.iterdir():
        if other != target:
            shutil.rmtree(other, ignore_errors=True)


def read_walk(conn: Any, path: str | Path) -> dict[str, Any] | None:
    """The stored walk graph of the published build as memory-mapped arrays; None when the index
    has none or it describes another build (an older build's, or one written by code that does not
    store it)."""
    if not table_exists(conn, WALK_TABLE):
        return None
    stamp = build_stamp(conn)
    header = conn.execute(f"select run_id, published_at, entity_count, unit_count from {quote(WALK_TABLE)}").fetchall()
    if not header or stamp is None or (header[0][0], header[0][1]) != stamp:
        return None
    directory = walk_directory(path, stamp)
    entity_count, unit_count = int(header[0][2]), int(header[0][3])
    try:
        arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in ARRAYS}
    except FileNotFoundError:  # not written (a fetched build), or replaced by a newer build's meanwhile
        return None
    if len(arrays["indptr"]) != entity_count + unit_count + 1 or len(arrays["mentions"]) != entity_count:
        return None
    return {"entity_count": entity_count, "unit_count": unit_count, **arrays}
