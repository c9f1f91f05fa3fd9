"""What the index holds, for people: lists and details behind ``graphrag-assets show``.

Everything here is a read-only query of the published tables (no Dagster, no vectors), shaped for
reading in a terminal: the SQL a user would otherwise have to write to see an entity with its
relationships, communities and sources, or a community's report.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.storage.database import connect, frame_of, table_exists

DESCRIPTION_PREVIEW = 100


@dataclass(frozen=True)
class Listing:
    """Which rows of a list to show: a community level, a case-insensitive text filter, a limit."""

    level: int | None = None
    search: str | None = None
    limit: int = 50


def _query(
    settings: Settings, sql: str, params: list[Any] | None = None, needs: tuple[str, ...] = ("entities",)
) -> pl.DataFrame:
    with connect(settings.database_path, read_only=True) as conn:
        missing = [table for table in needs if not table_exists(conn, table)]
        if missing:
            raise UserError(f"the index has no {missing[0]} table yet; run 'graphrag-assets index' first.")
        return frame_of(conn.sql(sql, params=params or []))


def _like(search: str | None) -> str:
    return f"%{(search or '').lower()}%"


def list_entities(settings: Settings, listing: Listing) -> pl.DataFrame:
    """Entities by degree (most connected first), optionally those whose name contains ``search``."""
    return _query(
        settings,
        f"select human_readable_id as id, title, type, degree, frequency, left(description, {DESCRIPTION_PREVIEW}) as description "
        "from entities where lower(title) like ? order by degree desc, title limit ?",
        [_like(listing.search), listing.limit],
    )


def list_communities(settings: Settings, listing: Listing) -> pl.DataFrame:
    """Communities (largest first) with their report titles, at one level or all."""
    return _query(
        settings,
        "select c.community, c.level, c.parent, c.size, r.title as report, r.rank "
        "from communities c left join community_reports r using (community) "
        "where (? is null or c.level = ?) and lower(coalesce(r.title, '')) like ? "
        "order by c.size desc, c.community limit ?",
        [listing.level, listing.level, _like(listing.search), listing.limit],
        needs=("communities", "community_reports"),
    )


def list_reports(settings: Settings, listing: Listing) -> pl.DataFrame:
    """Reports by rank (most important first), at one level or all, optionally matching ``search``."""
    return _query(
        settings,
        f"select community, level, rank, title, left(summary, {DESCRIPTION_PREVIEW}) as summary from community_reports "
        "where (? is null or level = ?) and (lower(title) like ? or lower(summary) like ?) "
        "order by rank desc nulls last, community limit ?",
        [listing.level, listing.level, _like(listing.search), _like(listing.search), listing.limit],
        needs=("community_reports",),
    )


def entity_detail(settings: Settings, name: str) -> dict[str, Any]:
    """One entity (by name, case-insensitive): description, relationships, communities and sources."""
    entities = _query(settings, "select * from entities where lower(title) = lower(?)", [name.strip()])
    if entities.is_empty():
        titles = _query(settings, "select title from entities")["title"].to_list()
        close = difflib.get_close_matches(name.strip().upper(), titles, n=3, cutoff=0.6)
        hint = (
            f"; did you mean {', '.join(repr(t) for t in close)}?"
            if close
            else "; 'graphrag-assets show entities --search TEXT' lists names."
        )
        raise UserError(f"there is no entity named {name!r}{hint}")
    entity = entities.row(0, named=True)
    title = entity["title"]
    relationships = _query(
        settings,
        "select case when source = ? then target else source end as other, weight, description "
        "from relationships where source = ? or target = ? order by weight desc, other",
        [title, title, title],
        needs=("relationships",),
    )
    communities = _query(
        settings,
        "select c.level, c.community, c.size, r.title as report from communities c "
        "left join community_reports r using (community) where list_contains(c.entity_ids, ?) order by c.level",
        [entity["id"]],
        needs=("communities", "community_reports"),
    )
    sources = _query(
        settings,
        "select d.path, count(*) as text_units from text_units t join documents d on t.document_id = d.id "
        "where list_contains(?, t.id) group by d.path order by text_units desc, d.path",
        [entity["text_unit_ids"] or []],
        needs=("text_units", "documents"),
    )
    return {
        "title": title,
        "type": entity["type"],
        "description": entity["description"],
        "aliases": entity.get("aliases") or [],
        "degree": entity["degree"],
        "relationships": relationships.to_dicts(),
        "communities": communities.to_dicts(),
        "sources": sources.to_dicts(),
    }


def report_detail(settings: Settings, community: int) -> dict[str, Any]:
    """The report of one community: its level, size, rank and full text."""
    reports = _query(
        settings, "select * from community_reports where community = ?", [community], needs=("community_reports",)
    )
    if reports.is_empty():
        raise UserError(f"there is no report for community {community}; 'graphrag-assets show reports' lists them.")
    report = reports.row(0, named=True)
    return {key: report[key] for key in ("community", "level", "size", "rank", "title", "full_content")}
