"""Corpus-wide ``communities``: hierarchical Leiden over the entity graph."""

from datetime import datetime, timezone

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    MetadataValue,
    Output,
    multi_asset,
)

from graphrag_assets.core.progress import Counter
from graphrag_assets.pipeline.assets.metadata import largest_communities, preview
from graphrag_assets.index.community_checks import check_hierarchy
from graphrag_assets.index.communities import build_communities_from_settings
from graphrag_assets.pipeline.partitions import STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject

CHECKS = [
    AssetCheckSpec("strict_hierarchy", asset="communities", description="Every child's parent exists one level up and children partition their parent's entities."),
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
    ins={"entities": AssetIn(), "relationships": AssetIn()},
    check_specs=CHECKS,
    group_name="graph",
)
def communities(context: AssetExecutionContext, project: GraphRAGProject, entities: pl.DataFrame, relationships: pl.DataFrame):
    settings = project.settings
    period = datetime.now(timezone.utc).date().isoformat()
    progress = Counter("communities", 1, context.log).start()
    table = build_communities_from_settings(entities, relationships, settings.communities, period)
    progress.step()
    report = check_hierarchy(table, max_cluster_size=settings.communities.max_cluster_size)
    levels = {str(level): count for level, count in report.levels.items()}
    yield Output(
        table,
        output_name="communities",
        metadata={
            "communities": table.height,
            "levels": MetadataValue.json(levels),
            "entities_in_communities": int(table.filter(pl.col("level") == 0)["size"].sum() or 0),
            "unsplittable_oversized": report.unsplit_oversized_count,
            "backend": settings.communities.backend,
            "preview": preview(table.select("community", "level", "parent", "size", "children")),
            "largest_communities": largest_communities(table, entities),
        },
    )
    yield AssetCheckResult(check_name="strict_hierarchy", passed=report.ok, metadata={"problems": MetadataValue.json(report.problems)})
    yield AssetCheckResult(
        check_name="clusters_within_max_size",
        passed=not report.unsplit_oversized,
        severity=AssetCheckSeverity.WARN,
        metadata={"unsplittable": MetadataValue.json(report.unsplit_oversized[:50]), "count": report.unsplit_oversized_count},
    )
