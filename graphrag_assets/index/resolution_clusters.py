"""From verdicts to canonical entities, and from canonical entities back to the graph.

:func:`build_clusters` forms clusters around centres, never by transitive closure: entities are
visited from the most mentioned down (``frequency``, then the longer name, then the title); an
entity not yet placed becomes a centre and takes every unplaced entity that a verdict links to
*it*. So "A is B" and "B is C" put C with A only if A is the centre and a verdict also says "A is
C" — otherwise C stays apart (or becomes a centre itself). The centre's title is the canonical
name; each other member becomes an alias, with the verdict that joined it to the centre.

:func:`apply_aliases` renames aliases to their canonical title in the extraction records
(entities, relationship ends, claim subjects and objects, noun phrases), so merging the records
again re-points relationships, drops the self-loops a merge creates, de-duplicates relationships
and unions text-unit links exactly as for names that were equal from the start.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl

from graphrag_assets.core import ids, schemas

NAME_COLUMNS = ("title", "source", "target")


def build_clusters(profiles: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """The ``schemas.ENTITY_ALIASES`` rows for the verdicts (``profiles``: ``title``, ``frequency``)."""
    frequency = dict(profiles.select("title", pl.col("frequency").fill_null(0)).iter_rows())
    links: dict[str, dict[str, tuple[str, float, str]]] = defaultdict(dict)
    for left, right, method, score, reason in verdicts.select("left", "right", "method", "score", "reason").iter_rows():
        if left in frequency and right in frequency:
            links[left][right] = (method, score, reason)
            links[right][left] = (method, score, reason)
    order = sorted(links, key=lambda t: (-frequency[t], -len(t.split()), t))
    placed: set[str] = set()
    rows: list[tuple[str, str, str, str, float, str]] = []
    for centre in order:
        if centre in placed:
            continue
        placed.add(centre)
        for member in sorted(links[centre]):
            if member in placed:
                continue
            placed.add(member)
            method, score, reason = links[centre][member]
            rows.append((member, ids.entity_id(centre), centre, method, score, reason))
    frame = pl.DataFrame(rows, schema=list(schemas.ENTITY_ALIASES), orient="row")
    return schemas.conform(frame, schemas.ENTITY_ALIASES).sort("canonical_title", "alias")


def apply_aliases(extractions: pl.DataFrame, aliases: pl.DataFrame) -> pl.DataFrame:
    """Extraction records with every alias renamed to its canonical title."""
    if aliases.is_empty():
        return extractions
    mapping = dict(aliases.select("alias", "canonical_title").iter_rows())
    return extractions.with_columns(
        pl.col(column).replace(mapping) for column in NAME_COLUMNS if column in extractions.columns
    )


def with_aliases(entities: pl.DataFrame, aliases: pl.DataFrame) -> pl.DataFrame:
    """``entities`` with its ``aliases`` column filled: the sorted aliases of each entity, or []."""
    lists = aliases.group_by("canonical_title").agg(pl.col("alias").sort().alias("_aliases"))
    return (
        entities.join(lists, left_on="title", right_on="canonical_title", how="left", maintain_order="left")
        .with_columns(pl.col("_aliases").fill_null(pl.lit([], dtype=schemas.STR_LIST)).alias("aliases"))
        .drop("_aliases")
        .select(entities.columns)
    )


def kept_aliases(aliases: pl.DataFrame, entities: pl.DataFrame) -> pl.DataFrame:
    """Alias rows whose canonical entity is in the final graph (pruning may drop it)."""
    return aliases.filter(pl.col("canonical_title").is_in(entities.get_column("title").implode()))


def largest_clusters(aliases: pl.DataFrame, limit: int = 10) -> list[dict[str, object]]:
    """The canonical entities with the most aliases: title, size (aliases + 1) and the aliases."""
    grouped = (
        aliases.group_by("canonical_title")
        .agg(pl.col("alias").sort().alias("aliases"), pl.len().alias("n"))
        .sort(["n", "canonical_title"], descending=[True, False])
        .head(limit)
    )
    return [
        {"canonical": title, "size": int(n) + 1, "aliases": list(names)}
        for title, names, n in grouped.select("canonical_title", "aliases", "n").iter_rows()
    ]
