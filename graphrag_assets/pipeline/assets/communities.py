"""Corpus-wide ``communities``: hierarchical Leiden over the entity graph.

Exact mode clusters from scratch; stable mode (``communities.update: stable``) warm-starts from
the stored table (see :mod:`graphrag_assets.index.stable_communities`). How each run clustered is
recorded in its materialization metadata, which the next run and ``status`` read back.
"""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    MetadataValue,
    Nothing,
    Output,
    multi_asset,
)

from graphrag_assets.core.progress import Counter
from graphrag_assets.index.coded_graph import (
    CodedRelationships,
    code_relationships,
    internal_relationship_chunks,
    normalized_edges,
)
from graphrag_assets.index.communities import community_rows, community_table_chunks
from graphrag_assets.index.community_checks import check_hierarchy
from graphrag_assets.index.stable_communities import (
    ClusteringOutcome,
    ClusteringRequest,
    cluster_for_update,
    entity_titles,
    previous_assignments,
)
from graphrag_assets.pipeline.assets.metadata import largest_communities, preview
from graphrag_assets.pipeline.partitions import STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.storage.corpus import (
    CLUSTERING_TABLE,
    last_clustering,
    read_published_columns,
    read_staged_batches,
    staged_list_values,
    write_staged,
    write_staged_batches,
)

# what stable mode's warm start needs of the last build's communities (not their lists)
PREVIOUS_COLUMNS = ("community", "level", "parent", "entity_ids")

CHECKS = [
    AssetCheckSpec(
        "strict_hierarchy",
        asset="communities",
        description="Every child's parent exists one level up and children partition their parent's entities.",
    ),
    AssetCheckSpec(
        "clusters_within_max_size",
        asset="communities",
        description="No community above max_cluster_size unless Leiden could not split it (then it is reported, as a warning).",
    ),
]


@multi_asset(
    outs={
        "communities": AssetOut(
            description="Hierarchical Leiden communities of the entity graph (MS GraphRAG v3 columns); level 0 is the coarsest.",
            metadata=STAGED_METADATA,
        )
    },
    # relationships: read by the step itself, in coded batches (see stage_communities)
    ins={"entities": AssetIn(), "relationships": AssetIn(dagster_type=Nothing)},
    check_specs=CHECKS,
    group_name="graph",
)
def communities(context: AssetExecutionContext, project: GraphRAGProject, entities: pl.DataFrame):
    settings = project.settings
    period = datetime.now(UTC).date().isoformat()
    progress = Counter("communities", 1, context.log).start()
    table, clustering = _cluster(context, settings, entities, period)
    progress.step()
    # ``table``: every column but the two lists, which only the written table holds
    report = check_hierarchy(table, max_cluster_size=settings.communities.max_cluster_size)
    levels = {str(level): count for level, count in report.levels.items()}
    yield Output(
        None,  # written already, a chunk at a time (stage_communities)
        output_name="communities",
        metadata={
            "table": MetadataValue.text("communities"),
            "dagster/row_count": table.height,
            "communities": table.height,
            "levels": MetadataValue.json(levels),
            "entities_in_communities": int(table.filter(pl.col("level") == 0)["size"].sum() or 0),
            "unsplittable_oversized": report.unsplit_oversized_count,
            "backend": settings.communities.backend,
            **clustering,
            "preview": preview(table.select("community", "level", "parent", "size", "children")),
            "largest_communities": largest_communities(table, entities),
        },
    )
    yield AssetCheckResult(
        check_name="strict_hierarchy", passed=report.ok, metadata={"problems": MetadataValue.json(report.problems)}
    )
    yield AssetCheckResult(
        check_name="clusters_within_max_size",
        passed=not report.unsplit_oversized,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "unsplittable": MetadataValue.json(report.unsplit_oversized[:50]),
            "count": report.unsplit_oversized_count,
        },
    )


# Run tag of a corpus run that must cluster from scratch (``index --recluster``).
RECLUSTER_TAG = "graphrag_assets/recluster"


def stage_communities(
    database: str | Path, entities: pl.DataFrame, request: ClusteringRequest, period: str
) -> tuple[pl.DataFrame, ClusteringOutcome]:
    """Cluster the staged relationships and write the staged ``communities`` table; returns its rows
    without the two list columns (``COMMUNITY_ROWS``) and how it was clustered.

    The relationships are read in coded batches (the table as strings, ids, descriptions and
    unit lists of millions of rows, is what this step must not hold). Each community's
    ``relationship_ids`` and ``text_unit_ids`` are made and written a chunk of communities at a
    time (:func:`~graphrag_assets.index.coded_graph.internal_relationship_chunks`), not every
    level's at once (each relationship once per level it is inside a community: 2.1 M ids at
    20,000 documents), and the checks and metadata use the rows, not a table of lists.
    """
    relationships = _coded_relationships(database, entities)
    outcome = cluster_for_update(normalized_edges(relationships.titles, relationships.edges), request)
    rows = community_rows(entities.select("id", "title").unique().sort("title", "id"), outcome.assignments, period)
    lists = internal_relationship_chunks(relationships, outcome.assignments)
    write_staged_batches(database, "communities", community_table_chunks(rows, lists))
    return rows, outcome


def _coded_relationships(database: str | Path, entities: pl.DataFrame) -> CodedRelationships:
    """This run's relationships in codes, read in batches: the table as strings (ids, descriptions,
    unit lists of millions of rows) was most of this step's memory."""
    return code_relationships(
        entity_titles(entities),
        read_staged_batches(database, "relationships", ("source", "target", "weight", "id", "text_unit_ids")),
        staged_list_values(database, "relationships", "text_unit_ids"),
    )


def _cluster(context: AssetExecutionContext, settings, entities: pl.DataFrame, period: str):
    """The communities' rows (written with their lists) and the clustering metadata, fresh or
    warm-started (stable mode).

    Stable mode reads the published ``communities`` table (the last build's: this run's goes to
    staging; its membership columns only) and the warm-start count the last build recorded; the
    algorithm itself is pure.
    """
    section = settings.communities
    previous = None
    warm_starts = 0
    if section.update == "stable":
        published = read_published_columns(settings.database_path, "communities", PREVIOUS_COLUMNS)
        previous = previous_assignments(published, entities)
        warm_starts = int(last_clustering(settings.database_path).get("warm_starts") or 0)
    recluster = (context.run.tags.get(RECLUSTER_TAG) == "true") if context.run else False
    request = ClusteringRequest(section, previous=previous, warm_starts=warm_starts, recluster=recluster)
    table, outcome = stage_communities(settings.database_path, entities, request, period)
    metadata = {
        "update_mode": section.update,
        "clustering": outcome.strategy,
        "clustering_reason": outcome.reason,
        "modularity": round(outcome.modularity, 6),
        "fresh_modularity": round(outcome.fresh_modularity, 6),
        "drift": round(outcome.drift, 6),
        "warm_starts": outcome.warm_starts,
    }
    context.log.info(f"communities: {outcome.strategy} clustering ({outcome.reason}); drift {outcome.drift:.2%}")
    # Published with the build, so status and the next run read how these communities were made.
    write_staged(settings.database_path, CLUSTERING_TABLE, pl.DataFrame([metadata]))
    return table, metadata
