"""What the graph view draws, as one JSON-ready dict: communities packed as nested circles, every
community's entities laid out, the relationships, and the reports.

Layouts are computed here, not in the browser, so the page is drawn as soon as it opens, the
export is the same every time it is made (KK layouts from a fixed start; circle packing is
deterministic), and the page needs no layout library.

- **Community map**: hierarchical circle packing (``circlify``) of the community tree, each circle's
  area proportional to its member count, children inside their parent. Coordinates are in the unit
  disc.
- **Entity graphs**: a community whose children hold exactly its members is drawn as its children's
  drawings placed in their circles of the map (so a large community costs nothing to lay out and
  looks like its map); any other community (a leaf) gets a Kamada-Kawai layout of its members and
  the relationships among them. Every community's positions are in its own unit disc.

Entities are referred to by their position in ``entities`` (ordered by human_readable_id), which
keeps the JSON small; relationships are listed once, the page picks those inside a community.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import circlify
import igraph as ig
import polars as pl

DIGITS = 4  # decimals kept for coordinates
LEAF_RADIUS = 0.85  # a leaf layout fills this share of its unit disc
KK_MAX_ITERATIONS = 10_000  # bounds the layout of an unusually large leaf (about 3 s at 3,000 members)


def _round(value: float) -> float:
    return round(value, DIGITS)


def entity_table(entities: pl.DataFrame, communities: pl.DataFrame) -> pl.DataFrame:
    """Entities in view order with their deepest community (-1 when in none)."""
    ordered = entities.sort("human_readable_id", "id", nulls_last=True)
    membership = (
        communities.select("community", "level", pl.col("entity_ids").alias("id"))
        .explode("id")
        .drop_nulls("id")
        .sort(["id", "level", "community"], descending=[False, True, False])
        .group_by("id", maintain_order=True)
        .first()
        .select("id", "community")
    )
    return ordered.join(membership, on="id", how="left", maintain_order="left").with_columns(
        pl.col("community").fill_null(-1)
    )


def relationship_pairs(relationships: pl.DataFrame, index_by_title: Mapping[str, int]) -> list[list[Any]]:
    """``[source index, target index, weight]`` per relationship whose two ends are entities."""
    pairs = []
    for source, target, weight in (
        relationships.sort("human_readable_id", "id", nulls_last=True).select("source", "target", "weight").iter_rows()
    ):
        if source in index_by_title and target in index_by_title:
            pairs.append(
                [index_by_title[source], index_by_title[target], _round(weight if weight is not None else 1.0)]
            )
    return pairs


def pack_communities(
    communities: pl.DataFrame, members: Mapping[int, Sequence[int]]
) -> dict[int, tuple[float, float, float]]:
    """(x, y, r) per community number: nested circle packing by member count, roots in the unit disc."""
    known = set(communities["community"].to_list())
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for community, parent in communities.sort("level", "community").select("community", "parent").iter_rows():
        if parent is not None and parent in known:
            children.setdefault(parent, []).append(community)
        else:
            roots.append(community)

    def node(community: int) -> dict[str, Any]:
        item: dict[str, Any] = {"id": community, "datum": max(len(members.get(community, ())), 1)}
        if community in children:
            item["children"] = [node(c) for c in children[community]]
        return item

    if not roots:
        return {}
    circles = circlify.circlify([node(c) for c in roots], show_enclosure=False)
    return {c.ex["id"]: (c.x, c.y, c.r) for c in circles}


def leaf_layout(member_count: int, edges: Sequence[tuple[int, int]]) -> list[tuple[float, float]]:
    """Kamada-Kawai positions of ``member_count`` vertices (``edges`` between their positions),
    centred and scaled into a disc of radius :data:`LEAF_RADIUS`."""
    if member_count == 0:
        return []
    if member_count == 1:
        return [(0.0, 0.0)]
    graph = ig.Graph(n=member_count, edges=list(edges))
    coords = graph.layout_kamada_kawai(
        seed=graph.layout_circle().coords, maxiter=min(50 * member_count, KK_MAX_ITERATIONS)
    ).coords
    cx = sum(x for x, _ in coords) / member_count
    cy = sum(y for _, y in coords) / member_count
    spread = max(math.hypot(x - cx, y - cy) for x, y in coords) or 1.0
    return [((x - cx) / spread * LEAF_RADIUS, (y - cy) / spread * LEAF_RADIUS) for x, y in coords]


def community_layouts(
    communities: pl.DataFrame,
    members: Mapping[int, list[int]],
    circles: Mapping[int, tuple[float, float, float]],
    pairs: Sequence[Sequence[Any]],
) -> dict[int, dict[int, tuple[float, float]]]:
    """Per community number: entity index -> position in the community's unit disc (see module doc)."""
    children: dict[int, list[int]] = {}
    for community, parent in communities.select("community", "parent").iter_rows():
        if parent is not None and parent >= 0:
            children.setdefault(parent, []).append(community)
    neighbours: dict[int, set[int]] = {}
    for source, target, _ in pairs:
        neighbours.setdefault(source, set()).add(target)
        neighbours.setdefault(target, set()).add(source)
    layouts: dict[int, dict[int, tuple[float, float]]] = {}
    for community in communities.sort("level", "community", descending=[True, False])["community"].to_list():
        own = members.get(community, [])
        kids = [k for k in children.get(community, []) if k in layouts and k in circles]
        covered = sorted(e for k in kids for e in members.get(k, []))
        if kids and covered == sorted(own) and community in circles:
            px, py, pr = circles[community]
            placed: dict[int, tuple[float, float]] = {}
            for kid in kids:
                kx, ky, kr = circles[kid]
                ox, oy, scale = (kx - px) / pr, (ky - py) / pr, kr / pr
                for entity, (x, y) in layouts[kid].items():
                    placed[entity] = (ox + scale * x, oy + scale * y)
            layouts[community] = placed
            continue
        position = {entity: i for i, entity in enumerate(own)}
        edges = sorted(
            {
                (min(position[a], position[b]), max(position[a], position[b]))
                for a in own
                for b in neighbours.get(a, ())
                if b in position
            }
        )
        layouts[community] = dict(zip(own, leaf_layout(len(own), edges)))
    return layouts


def _report(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "title": row["title"] or "",
        "rank": row["rank"],
        "summary": row["summary"] or "",
        "full_content": row["full_content"] or "",
    }


def view_data(tables: Mapping[str, pl.DataFrame], title: str) -> dict[str, Any]:
    """The graph view's data from the ``entities``, ``relationships``, ``communities`` and
    ``community_reports`` tables (what ``export --format html`` inlines and a server would send)."""
    entities = entity_table(tables["entities"], tables["communities"])
    index_by_id = {entity_id: i for i, entity_id in enumerate(entities["id"].to_list())}
    index_by_title: dict[str, int] = {}
    for i, entity_title in enumerate(entities["title"].to_list()):
        index_by_title.setdefault(entity_title, i)
    pairs = relationship_pairs(tables["relationships"], index_by_title)
    communities = tables["communities"].sort("level", "community")
    members = {
        community: sorted({index_by_id[e] for e in (ids or []) if e in index_by_id})
        for community, ids in communities.select("community", "entity_ids").iter_rows()
    }
    circles = pack_communities(communities, members)
    layouts = community_layouts(communities, members, circles, pairs)
    reports = {row["community"]: row for row in tables["community_reports"].iter_rows(named=True)}
    community_rows = []
    for row in communities.iter_rows(named=True):
        number = row["community"]
        x, y, r = circles.get(number, (0.0, 0.0, 0.0))
        own = members[number]
        placed = layouts.get(number, {})
        community_rows.append(
            {
                "community": number,
                "level": row["level"],
                "parent": row["parent"] if row["parent"] is not None else -1,
                "title": row["title"] or f"Community {number}",
                "size": len(own),
                "x": _round(x),
                "y": _round(y),
                "r": _round(r),
                "members": own,
                "layout": [_round(v) for entity in own for v in placed.get(entity, (0.0, 0.0))],
                "report": _report(reports.get(number)),
            }
        )
    return {
        "title": title,
        "entities": {
            "title": entities["title"].to_list(),
            "type": entities["type"].to_list(),
            "degree": entities["degree"].to_list(),
            "description": entities["description"].to_list(),
            "community": entities["community"].to_list(),
        },
        "relationships": pairs,
        "communities": community_rows,
    }
