"""What the index holds, for people: lists and details behind ``graphrag-assets show``.

Everything here is a read-only query of the published tables (no Dagster, no vectors), shaped for
reading in a terminal: the SQL a user would otherwise have to write to see an entity with its
relationships, communities and sources, or a community's report. The queries themselves are
:mod:`graphrag_assets.storage.index_listings`.
"""

from __future__ import annotations

import difflib
from typing import Any

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.storage import index_listings as listings
from graphrag_assets.storage.index_listings import Listing


def list_entities(settings: Settings, listing: Listing) -> pl.DataFrame:
    """Entities by degree (most connected first), optionally those whose name contains ``search``."""
    return listings.list_entities(settings.database_path, listing)


def list_communities(settings: Settings, listing: Listing) -> pl.DataFrame:
    """Communities (largest first) with their report titles, at one level or all."""
    return listings.list_communities(settings.database_path, listing)


def list_reports(settings: Settings, listing: Listing) -> pl.DataFrame:
    """Reports by rank (most important first), at one level or all, optionally matching ``search``."""
    return listings.list_reports(settings.database_path, listing)


def entity_detail(settings: Settings, name: str) -> dict[str, Any]:
    """One entity (by name, case-insensitive): description, relationships, communities and sources."""
    path = settings.database_path
    entities = listings.entities_named(path, name.strip())
    if entities.is_empty():
        close = difflib.get_close_matches(name.strip().upper(), listings.entity_titles(path), n=3, cutoff=0.6)
        hint = (
            f"; did you mean {', '.join(repr(t) for t in close)}?"
            if close
            else "; 'graphrag-assets show entities --search TEXT' lists names."
        )
        raise UserError(f"there is no entity named {name!r}{hint}")
    entity = entities.row(0, named=True)
    title = entity["title"]
    return {
        "title": title,
        "type": entity["type"],
        "description": entity["description"],
        "aliases": entity.get("aliases") or [],
        "degree": entity["degree"],
        "relationships": listings.relationships_of(path, title).to_dicts(),
        "communities": listings.communities_of(path, entity["id"]).to_dicts(),
        "sources": listings.sources_of(path, entity["text_unit_ids"] or []).to_dicts(),
    }


def report_detail(settings: Settings, community: int) -> dict[str, Any]:
    """The report of one community: its level, size, rank and full text."""
    reports = listings.report_of(settings.database_path, community)
    if reports.is_empty():
        raise UserError(f"there is no report for community {community}; 'graphrag-assets show reports' lists them.")
    report = reports.row(0, named=True)
    return {key: report[key] for key in ("community", "level", "size", "rank", "title", "full_content")}
