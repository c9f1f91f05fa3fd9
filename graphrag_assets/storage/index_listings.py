"""The queries behind ``graphrag-assets show``: lists and details of the published index tables.

Each is a read-only query shaped for reading in a terminal (:mod:`graphrag_assets.project.inspect`
adds the hints and the layout). A query whose tables are missing raises a :class:`UserError`
naming the first one: nothing was indexed yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.database import connect, frame_of, table_exists
from graphrag_assets.storage.table_names import (
    COMMUNITIES,
    COMMUNITY_REPORTS,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    TEXT_UNITS,
)

DESCRIPTION_PREVIEW = 100
TOTAL_ROWS = "count(*) over () as total_rows"  # the matching rows before the limit


@dataclass(frozen=True)
class Listing:
    """Which rows of a list to show: a community level, a case-insensitive text filter, a limit (None: all).

    Each list has a ``total_rows`` column: how many rows match before the limit, so a reader can be
    told that more exist.
    """

    level: int | None = None
    search: str | None = None
    limit: int | None = 50


def _query(path: Path, sql: str, params: list[Any], needs: tuple[str, ...]) -> pl.DataFrame:
    with connect(path, read_only=True) as conn:
        missing = [table for table in needs if not table_exists(conn, table)]
        if missing:
            raise UserError(f"the index has no {missing[0]} table yet; run 'graphrag-assets index' first.")
        return frame_of(conn.sql(sql, params=params))


def _like(search: str | None) -> str:
    return f"%{(search or '').lower()}%"


def list_entities(path: Path, listing: Listing) -> pl.DataFrame:
    """Entities by degree (most connected first), optionally those whose name contains ``search``."""
    return _query(
        path,
        f"select human_readable_id as id, title, type, degree, frequency, left(description, {DESCRIPTION_PREVIEW}) as description, {TOTAL_ROWS} "
        f"from {ENTITIES} where lower(title) like ? order by degree desc, title limit ?",
        [_like(listing.search), listing.limit],
        (ENTITIES,),
    )


def list_communities(path: Path, listing: Listing) -> pl.DataFrame:
    """Communities (largest first) with their report titles, at one level or all."""
    return _query(
        path,
        f"select c.community, c.level, c.parent, c.size, r.title as report, r.rank, {TOTAL_ROWS} "
        f"from {COMMUNITIES} c left join {COMMUNITY_REPORTS} r using (community) "
        "where (? is null or c.level = ?) and lower(coalesce(r.title, '')) like ? "
        "order by c.size desc, c.community limit ?",
        [listing.level, listing.level, _like(listing.search), listing.limit],
        (COMMUNITIES, COMMUNITY_REPORTS),
    )


def list_reports(path: Path, listing: Listing) -> pl.DataFrame:
    """Reports by rank (most important first), at one level or all, optionally matching ``search``."""
    return _query(
        path,
        f"select community, level, rank, title, left(summary, {DESCRIPTION_PREVIEW}) as summary, {TOTAL_ROWS} from {COMMUNITY_REPORTS} "
        "where (? is null or level = ?) and (lower(title) like ? or lower(summary) like ?) "
        "order by rank desc nulls last, community limit ?",
        [listing.level, listing.level, _like(listing.search), _like(listing.search), listing.limit],
        (COMMUNITY_REPORTS,),
    )


def entities_named(path: Path, name: str) -> pl.DataFrame:
    """The entities whose title is ``name``, case-insensitively."""
    return _query(path, f"select * from {ENTITIES} where lower(title) = lower(?)", [name], (ENTITIES,))


def entity_titles(path: Path) -> list[str]:
    return _query(path, f"select title from {ENTITIES}", [], (ENTITIES,))["title"].to_list()


def relationships_of(path: Path, title: str) -> pl.DataFrame:
    """The entity's relationships (the other end, weight, description), strongest first."""
    return _query(
        path,
        "select case when source = ? then target else source end as other, weight, description "
        f"from {RELATIONSHIPS} where source = ? or target = ? order by weight desc, other",
        [title, title, title],
        (RELATIONSHIPS,),
    )


def communities_of(path: Path, entity_id: str) -> pl.DataFrame:
    """The communities holding the entity, by level, with their report titles."""
    return _query(
        path,
        f"select c.level, c.community, c.size, r.title as report from {COMMUNITIES} c "
        f"left join {COMMUNITY_REPORTS} r using (community) where list_contains(c.entity_ids, ?) order by c.level",
        [entity_id],
        (COMMUNITIES, COMMUNITY_REPORTS),
    )


def sources_of(path: Path, text_unit_ids: list[str]) -> pl.DataFrame:
    """The documents these text units come from, with how many of them each holds."""
    return _query(
        path,
        f"select d.path, count(*) as text_units from {TEXT_UNITS} t join {DOCUMENTS} d on t.document_id = d.id "
        "where list_contains(?, t.id) group by d.path order by text_units desc, d.path",
        [text_unit_ids],
        (TEXT_UNITS, DOCUMENTS),
    )


def report_of(path: Path, community: int) -> pl.DataFrame:
    """The report row of one community (empty when it has none)."""
    return _query(path, f"select * from {COMMUNITY_REPORTS} where community = ?", [community], (COMMUNITY_REPORTS,))
