"""What a build holds, looked up by the explore routes and the page: entities and their
neighbourhoods, relationships, claims, sources, communities and reports.

Everything is answered from the loaded snapshot (polars frames in memory), not from DuckDB: the
answer is in the same build as the references a query returned, costs no database connection
(so an indexing run never waits for the server) and is fast enough for a page that fetches on
every click. ``project/inspect.py`` answers the same questions for ``graphrag-assets show`` with
SQL, shaped for a terminal.

A record is named the way answers cite it (an entity's, relationship's, claim's or report's
``human_readable_id``, a source's short id) or by its full id; an entity also by its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.schemas import CLAIM_FIELDS
from graphrag_assets.interop.graph_view.data import leaf_layout, relationship_pairs
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.serve.errors import ServeError

DESCRIPTION_PREVIEW = 200
SHORT_IDS_KEY = "serve.source_short_ids"
SHOWN_REF = 100  # characters of a reference quoted back in "not found"
NUMBER = re.compile(r"^-?[0-9]{1,18}$")  # fits an Int64 column


@dataclass(frozen=True)
class Page:
    """Which slice of a list: at most ``limit`` rows from ``offset``."""

    limit: int = 50
    offset: int = 0

    def take(self, frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, Any]]:
        rows = frame.slice(self.offset, self.limit)
        following = self.offset + rows.height
        meta = {
            "total": frame.height,
            "offset": self.offset,
            "limit": self.limit,
            "next_offset": following if following < frame.height else None,
        }
        return rows, meta


def _not_found(what: str, ref: str, hint: str) -> ServeError:
    shown = ref if len(ref) <= SHOWN_REF else ref[: SHOWN_REF - 1] + "…"
    return ServeError(404, f"there is no {what} {shown!r} in this build; {hint}", f"{what.replace(' ', '_')}_not_found")


def as_number(ref: str) -> int | None:
    """``ref`` as a record number when it is one (ASCII digits that fit a 64-bit column), else None:
    ``str.isdigit`` also accepts '²' and ``int`` refuses thousands of digits, so neither decides."""
    ref = ref.strip()
    return int(ref) if NUMBER.match(ref) else None


def _by_ref(frame: pl.DataFrame, ref: str) -> pl.DataFrame:
    """Rows whose human_readable_id (a number) or id equals ``ref``."""
    number = as_number(ref)
    if number is not None:
        rows = frame.filter(pl.col("human_readable_id") == number)
        if not rows.is_empty():
            return rows
    return frame.filter(pl.col("id") == ref.strip())


def _relationship_by_ref(data: QueryData, ref: str) -> pl.DataFrame:
    """:func:`_by_ref` for the relationships, read by the key rather than the whole table."""
    number = as_number(ref)
    if number is not None:
        rows = data.rows_where("relationships", "human_readable_id", [number])
        if not rows.is_empty():
            return rows
    return data.rows_where("relationships", "id", [ref.strip()])


def _preview(text: str | None) -> str:
    text = (text or "").strip()
    return text if len(text) <= DESCRIPTION_PREVIEW else text[: DESCRIPTION_PREVIEW - 1] + "…"


# --- entities ------------------------------------------------------------------------------------


def _entity_row(row: dict[str, Any], preview: bool = True) -> dict[str, Any]:
    return {
        "id": row["id"],
        "human_readable_id": row["human_readable_id"],
        "title": row["title"],
        "type": row["type"],
        "degree": row["degree"],
        "description": _preview(row["description"]) if preview else (row["description"] or ""),
    }


def search_entities(data: QueryData, text: str | None, page: Page) -> dict[str, Any]:
    """Entities whose name (or an alias) contains ``text``, names starting with it first, then by degree."""
    entities = data.entities
    needle = (text or "").strip().lower()
    if needle:
        title = pl.col("title").str.to_lowercase()
        alias = (
            pl.col("aliases").list.eval(pl.element().str.to_lowercase().str.contains(needle, literal=True)).list.any()
        )
        entities = (
            entities.filter(title.str.contains(needle, literal=True) | alias.fill_null(False))
            .with_columns((~title.str.starts_with(needle)).alias("_later"))
            .sort(["_later", "degree", "title"], descending=[False, True, False], nulls_last=True)
        )
    else:
        entities = entities.sort(["degree", "title"], descending=[True, False], nulls_last=True)
    rows, meta = page.take(entities)
    return {**meta, "items": [_entity_row(r) for r in rows.iter_rows(named=True)]}


def find_entity(data: QueryData, ref: str) -> dict[str, Any]:
    rows = _by_ref(data.entities, ref)
    if rows.is_empty():
        rows = data.entities.filter(pl.col("title").str.to_lowercase() == ref.strip().lower())
    if rows.is_empty():
        raise _not_found("entity", ref, "GET /api/entities?q=NAME finds entities by name.")
    return rows.row(0, named=True)


def neighbourhood(data: QueryData, title: str) -> pl.DataFrame:
    """The relationships of an entity, strongest first: other end, weight, description."""
    touching = data.relationships_touching([title])
    return touching.with_columns(
        pl.when(pl.col("source") == title).then(pl.col("target")).otherwise(pl.col("source")).alias("other")
    ).sort(["weight", "other"], descending=[True, False], nulls_last=True)


def entity_detail(data: QueryData, ref: str, page: Page) -> dict[str, Any]:
    """An entity with one page of its neighbourhood, its communities and its sources."""
    entity = find_entity(data, ref)
    around = neighbourhood(data, entity["title"])
    others = data.entities.select(
        pl.col("title").alias("other"),
        pl.col("human_readable_id").alias("other_hrid"),
        pl.col("type").alias("other_type"),
    ).unique("other", keep="first")
    rows, meta = page.take(around)
    rows = rows.join(others, on="other", how="left", maintain_order="left")
    relationships = [
        {
            "id": r["id"],
            "human_readable_id": r["human_readable_id"],
            "weight": r["weight"],
            "description": r["description"] or "",
            "other": {"title": r["other"], "human_readable_id": r["other_hrid"], "type": r["other_type"]},
        }
        for r in rows.iter_rows(named=True)
    ]
    return {
        **_entity_row(entity, preview=False),
        "aliases": list(entity.get("aliases") or []),
        "frequency": entity["frequency"],
        "relationships": {**meta, "items": relationships},
        "communities": entity_communities(data, entity["id"]),
        "sources": source_list(data, list(entity["text_unit_ids"] or [])),
    }


def entity_communities(data: QueryData, entity_id: str) -> list[dict[str, Any]]:
    member = data.communities.filter(pl.col("entity_ids").list.contains(entity_id)).sort("level")
    titles = dict(data.community_reports.select("community", "title").iter_rows())
    return [
        {"community": c, "level": level, "size": size, "title": titles.get(c) or f"Community {c}"}
        for c, level, size in member.select("community", "level", "size").iter_rows()
    ]


def neighbourhood_view(data: QueryData, ref: str, limit: int) -> dict[str, Any]:
    """An entity and its ``limit`` strongest neighbours in the graph view's data shape: one
    "community" holding them, laid out like a leaf community of ``export --format html``, so the
    same drawing code (``GraphView.mount``) draws it."""
    entity = find_entity(data, ref)
    everything = neighbourhood(data, entity["title"])
    around = everything.head(limit)
    titles = [entity["title"], *dict.fromkeys(t for t in around["other"].to_list() if t != entity["title"])]
    found = data.entities.filter(pl.col("title").is_in(titles)).unique("title", keep="first")
    order = {t: i for i, t in enumerate(titles)}
    found = found.with_columns(pl.col("title").replace_strict(order, return_dtype=pl.Int64).alias("_o")).sort("_o")
    index = {t: i for i, t in enumerate(found["title"].to_list())}
    inside = data.relationships_touching(list(index)).filter(
        pl.col("source").is_in(list(index)) & pl.col("target").is_in(list(index))
    )
    pairs = relationship_pairs(inside, index)
    members = list(range(found.height))
    layout = leaf_layout(len(members), sorted({(min(a, b), max(a, b)) for a, b, _ in pairs if a != b}))
    center = index.get(entity["title"], 0)
    return {
        "title": f"{entity['title']}: {around.height} of {everything.height} relationships",
        "entities": {
            "title": found["title"].to_list(),
            "type": found["type"].to_list(),
            "degree": found["degree"].to_list(),
            "description": found["description"].to_list(),
            "community": [0] * found.height,
        },
        "relationships": pairs,
        "communities": [
            {
                "community": 0,
                "level": 0,
                "parent": -1,
                "title": f"Neighbourhood of {entity['title']}",
                "size": len(members),
                "x": 0.0,
                "y": 0.0,
                "r": 1.0,
                "members": members,
                "layout": [round(v, 4) for point in layout for v in point],
                "report": None,
            }
        ],
        "center": center,
    }


# --- relationships, claims, sources --------------------------------------------------------------


def relationship_detail(data: QueryData, ref: str) -> dict[str, Any]:
    rows = _relationship_by_ref(data, ref)
    if rows.is_empty():
        raise _not_found(
            "relationship", ref, "relationships are cited by their number, as in [Data: Relationships (12)]."
        )
    r = rows.row(0, named=True)
    ends = {
        row["title"]: row
        for row in data.entities.filter(pl.col("title").is_in([r["source"], r["target"]])).iter_rows(named=True)
    }

    def end(title: str) -> dict[str, Any]:
        row = ends.get(title)
        return {
            "title": title,
            "human_readable_id": row["human_readable_id"] if row else None,
            "type": row["type"] if row else None,
        }

    return {
        "id": r["id"],
        "human_readable_id": r["human_readable_id"],
        "source": end(r["source"]),
        "target": end(r["target"]),
        "description": r["description"] or "",
        "weight": r["weight"],
        "combined_degree": r["combined_degree"],
        "sources": source_list(data, list(r["text_unit_ids"] or [])),
    }


def claim_detail(data: QueryData, ref: str) -> dict[str, Any]:
    rows = _by_ref(data.covariates, ref)
    if rows.is_empty():
        raise _not_found("claim", ref, "claims are cited by their number, as in [Data: Claims (3)].")
    c = rows.row(0, named=True)
    keys = ("id", "human_readable_id", *CLAIM_FIELDS)
    return {**{k: c[k] for k in keys}, "sources": source_list(data, [c["text_unit_id"]] if c["text_unit_id"] else [])}


def _short_ids(data: QueryData) -> dict[str, str]:
    """Short id (as sources are cited) → text unit id, built once per build."""
    cached = data.derived.get(SHORT_IDS_KEY)
    if cached is None:
        cached = {short_id(i): i for i in data.text_units["id"].to_list()}
        data.derived[SHORT_IDS_KEY] = cached
    return cached


def _documents(data: QueryData) -> dict[str, dict[str, Any]]:
    return {
        row["id"]: {"id": row["id"], "title": row["title"], "path": row["path"]}
        for row in data.documents.iter_rows(named=True)
    }


def source_list(data: QueryData, unit_ids: list[str]) -> list[dict[str, Any]]:
    """The text units (citation, document, position) of a record, in the record's order."""
    units = data.text_units.filter(pl.col("id").is_in(unit_ids)).select("id", "document_id", "chunk_index", "n_tokens")
    documents = _documents(data)
    by_id = {row["id"]: row for row in units.iter_rows(named=True)}
    return [
        {
            "id": u,
            "citation": short_id(u),
            "chunk_index": by_id[u]["chunk_index"],
            "n_tokens": by_id[u]["n_tokens"],
            "document": documents.get(by_id[u]["document_id"]),
        }
        for u in dict.fromkeys(unit_ids)
        if u in by_id
    ]


def source_detail(data: QueryData, ref: str) -> dict[str, Any]:
    """A text unit's text and where it comes from (``ref``: its short id or full id)."""
    unit_id = _short_ids(data).get(ref.strip(), ref.strip())
    rows = data.text_units.filter(pl.col("id") == unit_id)
    if rows.is_empty():
        raise _not_found("source", ref, "sources are cited by their short id, as in [Data: Sources (3f9a2c1b)].")
    u = rows.row(0, named=True)
    return {
        "id": u["id"],
        "citation": short_id(u["id"]),
        "text": u["text"] or "",
        "n_tokens": u["n_tokens"],
        "chunk_index": u["chunk_index"],
        "start_char": u["start_char"],  # where the text lies in its document (characters; null when imported)
        "end_char": u["end_char"],
        "document": _documents(data).get(u["document_id"]),
    }


# --- communities and reports ---------------------------------------------------------------------


def list_communities(data: QueryData, level: int | None, page: Page) -> dict[str, Any]:
    """Communities (largest first) with their report's title, rank and summary, at one level or all."""
    communities = data.communities
    levels = sorted(communities["level"].unique().to_list()) if not communities.is_empty() else []
    if level is not None:
        communities = communities.filter(pl.col("level") == level)
    reports = data.community_reports.select(
        "community", pl.col("title").alias("report_title"), "rank", "summary"
    ).unique("community", keep="first")
    ordered = communities.join(reports, on="community", how="left").sort(
        ["size", "community"], descending=[True, False]
    )
    rows, meta = page.take(ordered)
    items = [
        {
            "community": r["community"],
            "level": r["level"],
            "parent": r["parent"],
            "children": list(r["children"] or []),
            "size": r["size"],
            "title": r["report_title"] or r["title"] or f"Community {r['community']}",
            "rank": r["rank"],
            "summary": _preview(r["summary"]),
            "has_report": r["report_title"] is not None,
        }
        for r in rows.iter_rows(named=True)
    ]
    return {**meta, "levels": levels, "items": items}


def report_detail(data: QueryData, ref: str) -> dict[str, Any]:
    """The report of a community (``ref``: the community number, which reports are cited by, or the report id)."""
    rows = _by_ref(data.community_reports, ref)
    if rows.is_empty() and as_number(ref) is not None:
        rows = data.community_reports.filter(pl.col("community") == as_number(ref))
    if rows.is_empty():
        raise _not_found("report", ref, "GET /api/communities lists the communities and their reports.")
    r = rows.row(0, named=True)
    keys = (
        "id",
        "human_readable_id",
        "community",
        "level",
        "parent",
        "size",
        "rank",
        "title",
        "summary",
        "full_content",
        "rating_explanation",
    )
    return {
        **{k: r[k] for k in keys},
        "children": list(r["children"] or []),
        "findings": [dict(f) for f in (r["findings"] or [])],
    }
