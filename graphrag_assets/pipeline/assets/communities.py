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
from graphrag_assets.index import coded_graph
from graphrag_assets.index.coded_graph import CodedEdges
from graphrag_assets.index.communities import community_rows, community_table_chunks
from graphrag_assets.index.community_checks import check_hierarchy
from graphrag_assets.index.stable_communities import (
    ClusteringOutcome,
    ClusteringRequest,
    cluster_for_update,
    entity_titles,
    last_fresh_modularity,
    previous_assignments,
)
from graphrag_assets.pipeline.assets.metadata import largest_communities, preview
from graphrag_assets.pipeline.partitions import STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.storage.community_graph import staged_edge_list, staged_internal_lists
from graphrag_assets.storage.corpus import (
    CLUSTERING_TABLE,
    last_clustering,
    read_published_columns,
    read_staged_columns,
    write_staged,
    write_staged_batches,
)

# what stable mode's warm start needs of the last build's communities (not their lists)
PREVIOUS_COLUMNS = ("community", "level", "parent", "entity_ids")
# what the step needs of the entities: the whole table (descriptions) was 0.5 GB at 100,000 documents
ENTITY_COLUMNS = ("id", "title", "degree")

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
    # read by the step itself: the entities' ENTITY_COLUMNS, the relationships by DuckDB (stage_communities)
    ins={"entities": AssetIn(dagster_type=Nothing), "relationships": AssetIn(dagster_type=Nothing)},
    check_specs=CHECKS,
    group_name="graph",
)
def communities(context: AssetExecutionContext, project: GraphRAGProject):
    settings = project.settings
    entities = read_staged_columns(settings.database_path, "entities", ENTITY_COLUMNS)
    if entities is None:
        raise RuntimeError(
            f"table entities does not exist yet in {settings.database_path}; materialize entities first."
        )
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

    The process holds the normalized edge list in codes and the rows, nothing of the relationships
    table as strings: DuckDB makes the edge list (:func:`~graphrag_assets.storage.community_graph.staged_edge_list`)
    and, once the clustering is known, each community's ``relationship_ids`` and ``text_unit_ids``
    a chunk of communities at a time, each chunk written before the next. Coding the 15 M
    relationships of 100,000 documents in polars (ids, unit entries, ends and weights) and
    normalising them there took the step to 5.5 GB.
    """
    titles = entity_titles(entities)
    codes, edges = staged_edge_list(database, titles)
    outcome = cluster_for_update(CodedEdges(titles.gather(codes), edges), request)
    del edges
    rows = community_rows(entities.select("id", "title").unique().sort("title", "id"), outcome.assignments, period)
    lists = staged_internal_lists(database, outcome.assignments, coded_graph.LIST_CHUNK_MEMBERSHIPS)
    write_staged_batches(database, "communities", community_table_chunks(rows, lists))
    return rows, outcome


def _cluster(context: AssetExecutionContext, settings, entities: pl.DataFrame, period: str):
    """The communities' rows (written with their lists) and the clustering metadata, fresh or
    warm-started (stable mode).

    Stable mode reads the published ``communities`` table (the last build's: this run's goes to
    staging; its membership columns only) and the warm-start count the last build recorded; the
    algorithm itself is pure.
    """
    section = settings.communities
    previous, last = None, {}
    if section.update == "stable":
        published = read_published_columns(settings.database_path, "communities", PREVIOUS_COLUMNS)
        previous = previous_assignments(published, entities)
        last = last_clustering(settings.database_path)
    recluster = (context.run.tags.get(RECLUSTER_TAG) == "true") if context.run else False
    request = ClusteringRequest(
        section,
        previous=previous,
        warm_starts=int(last.get("warm_starts") or 0),
        recluster=recluster,
        last_fresh=last_fresh_modularity(last),
    )
    table, outcome = stage_communities(settings.database_path, entities, request, period)
    metadata = {
        "update_mode": section.update,
        "clustering": outcome.strategy,
        "clustering_reason": outcome.reason,
        "modularity": round(outcome.modularity, 6),
        "fresh_modularity": round(outcome.fresh_modularity, 6),
        "drift": round(outcome.drift, 6),
        "warm_starts": outcome.warm_starts,
        "drift_age": outcome.drift_age,
    }
    context.log.info(f"communities: {outcome.strategy} clustering ({outcome.reason}); drift {outcome.drift:.2%}")
    # Published with the build, so status and the next run read how these communities were made.
    write_staged(settings.database_path, CLUSTERING_TABLE, pl.DataFrame([metadata]))
    return table, metadata
