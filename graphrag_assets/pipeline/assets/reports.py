"""Corpus-wide ``community_reports``: one report per community, deepest level first.

``standard``: LLM reports from the community's entities, relationships and claims, with child
reports substituted when the raw context does not fit. ``fast``: LLM reports from the
community's text units. ``nlp``: extractive reports, no model. Report calls are cached by prompt,
so an unchanged community costs nothing on the next run.
"""

import polars as pl
from dagster import AssetExecutionContext, AssetIn, MetadataValue, asset

from graphrag_assets.index.community_reports import generate_reports, report_options
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.report_context import ReportTables
from graphrag_assets.index.extractive_reports import extractive_reports
from graphrag_assets.pipeline.assets.metadata import largest_communities, preview
from graphrag_assets.pipeline.assets.model_session import ModelSession
from graphrag_assets.core.progress import Counter, warn
from graphrag_assets.pipeline.partitions import STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject


@asset(
    ins={"communities": AssetIn(), "entities": AssetIn(), "relationships": AssetIn(), "covariates": AssetIn(), "text_units": AssetIn()},
    group_name="reports",
    metadata=STAGED_METADATA,
    description="A report per community (MS GraphRAG v3 columns): title, summary, rating, findings and markdown full_content; 'generation' says llm or extractive.",
)
def community_reports(
    context: AssetExecutionContext,
    project: GraphRAGProject,
    communities: pl.DataFrame,
    entities: pl.DataFrame,
    relationships: pl.DataFrame,
    covariates: pl.DataFrame,
    text_units: pl.DataFrame,
) -> pl.DataFrame:
    settings = project.settings
    method = settings.resolved_method
    progress = Counter("community reports", communities.height, context.log).start()
    units = text_units.sort("document_key", "chunk_index").select("id", "text")
    usage: dict = {}
    failed: list[tuple[int, str]] = []
    if not method_steps(method).model_reports:
        frame = extractive_reports(communities, entities, relationships, units)
        progress.step(communities.height)
    else:
        tables = ReportTables(communities, entities, relationships, covariates, units)
        with ModelSession(context, settings) as session:
            result = session.run(
                generate_reports(session.chat, tables, report_options(settings), on_progress=lambda done, total: progress.step())
            )
        usage = session.metadata()
        frame = result.frame
        failed = result.failed
        for community, reason in failed:
            warn(f"community {community}: no report ({reason})", context.log)
    top = frame.sort("rank", descending=True).head(3)
    context.add_output_metadata(
        {
            **usage,
            "method": method,
            "reports": frame.height,
            "levels": MetadataValue.json({str(k): v for k, v in frame.group_by("level").agg(pl.len()).sort("level").iter_rows()}),
            "failed": len(failed),
            "failed_communities": MetadataValue.json([{"community": c, "reason": r} for c, r in failed]),
            "substituted_contexts": int((frame["substituted_reports"].fill_null(0) > 0).sum()) if frame.height else 0,
            "top_reports": MetadataValue.md("\n\n---\n\n".join(top["full_content"].to_list()) or "_(none)_"),
            "preview": preview(frame.select("community", "level", "rank", "title", "generation")),
            "largest_communities": largest_communities(communities, entities, frame),
        }
    )
    return frame
