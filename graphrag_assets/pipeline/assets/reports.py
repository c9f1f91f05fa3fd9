"""Corpus-wide ``community_reports``: one report per community, deepest level first.

``standard``: LLM reports from the community's entities, relationships and claims, with child
reports substituted when the raw context does not fit. ``fast``: LLM reports from the
community's text units. ``nlp``: extractive reports, no model. Report calls are cached by prompt,
so an unchanged community costs nothing on the next run.
"""

import polars as pl
from dagster import AssetExecutionContext, AssetIn, MetadataValue, Nothing, asset

from graphrag_assets.core.progress import Counter, warn
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.index.community_reports import generate_reports, report_options
from graphrag_assets.index.extractive_reuse import (
    SENTENCES,
    KeptVotes,
    PreviousReports,
    update_extractive_reports,
)
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.report_context import ReportTables
from graphrag_assets.index.report_reuse import REUSE_PURPOSE, ReuseSummary, summarize_reuse
from graphrag_assets.index.report_tokens import with_content_tokens
from graphrag_assets.llm.usage import record_outcomes
from graphrag_assets.pipeline.assets.metadata import largest_communities, preview
from graphrag_assets.pipeline.assets.model_session import ModelSession
from graphrag_assets.pipeline.partitions import STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.storage.corpus import (
    append_staged,
    internal_link_counts,
    read_kept_rows,
    read_staged,
    read_staged_without,
    write_staged,
)
from graphrag_assets.storage.name_votes import stage_kept_votes
from graphrag_assets.storage.table_names import REPORT_NAME_VOTES, REPORT_SENTENCES
from graphrag_assets.storage.tables import read_table


@asset(
    ins={
        # communities and relationships: read by the step, as much of them as the method needs
        "communities": AssetIn(dagster_type=Nothing),
        "entities": AssetIn(),
        "relationships": AssetIn(dagster_type=Nothing),
        "covariates": AssetIn(),
        "text_units": AssetIn(),
    },
    group_name="reports",
    metadata=STAGED_METADATA,
    description="A report per community (MS GraphRAG v3 columns): title, summary, rating, findings and markdown full_content; 'generation' says llm or extractive.",
)
def community_reports(
    context: AssetExecutionContext,
    project: GraphRAGProject,
    entities: pl.DataFrame,
    covariates: pl.DataFrame,
    text_units: pl.DataFrame,
) -> pl.DataFrame:
    settings = project.settings
    method = settings.resolved_method
    database = settings.database_path
    extractive = not method_steps(method).model_reports
    # Extractive reports need a count of each community's relationships, which DuckDB makes;
    # the ids themselves (every relationship once per level) and the relationships stay on disk.
    communities = (
        read_staged_without(database, "communities", ["relationship_ids"])
        if extractive
        else read_staged(database, "communities")
    )
    if communities is None:
        raise RuntimeError("table communities does not exist yet; materialize communities first.")
    progress = Counter("community reports", communities.height, context.log).start()
    units = text_units.sort("document_key", "chunk_index").select("id", "text")
    usage: dict = {}
    reuse: dict = {}
    failed: list[tuple[int, str]] = []
    if extractive:
        previous = PreviousReports(
            read_table(database, "community_reports"),
            StagedVotes(database),
            read_kept_rows(database, REPORT_SENTENCES, list(SENTENCES)),
        )
        update = update_extractive_reports(communities, entities, units, internal_link_counts(database), previous)
        append_staged(database, REPORT_NAME_VOTES, update.new_votes)  # to the kept ones StagedVotes staged
        write_staged(database, REPORT_SENTENCES, update.sentences)
        frame = update.frame
        reuse = {"reports_kept": update.kept, "text_units_read": update.units_read}
        context.log.info(f"{update.kept} of {frame.height} reports kept, {update.units_read} text units read")
        progress.step(communities.height)
    else:
        relationships = read_staged(database, "relationships")
        tables = ReportTables(communities, entities, relationships, covariates, units)
        previous = read_table(settings.database_path, "community_reports")  # the published build's
        with ModelSession(context, settings) as session:
            result = session.run(
                generate_reports(
                    session.chat, tables, report_options(settings), on_progress=lambda done, total: progress.step()
                )
            )
        usage = session.metadata()
        frame = result.frame
        reuse = _record_reuse(context, settings, summarize_reuse(previous, frame))
        failed = result.failed
        for community, reason in failed:
            warn(f"community {community}: no report ({reason})", context.log)
    frame = with_content_tokens(frame, token_counter(settings.chunking.encoding))  # so queries need not count them
    top = frame.sort("rank", descending=True).head(3)
    context.add_output_metadata(
        {
            **usage,
            **reuse,
            "method": method,
            "reports": frame.height,
            "levels": MetadataValue.json(
                {str(k): v for k, v in frame.group_by("level").agg(pl.len()).sort("level").iter_rows()}
            ),
            "failed": len(failed),
            "failed_communities": MetadataValue.json([{"community": c, "reason": r} for c, r in failed]),
            "substituted_contexts": int((frame["substituted_reports"].fill_null(0) > 0).sum()) if frame.height else 0,
            "top_reports": MetadataValue.md("\n\n---\n\n".join(top["full_content"].to_list()) or "_(none)_"),
            "preview": preview(frame.select("community", "level", "rank", "title", "generation")),
            "largest_communities": largest_communities(communities, entities, frame),
        }
    )
    return frame


class StagedVotes:
    """The published name votes, kept in DuckDB: those that still hold are staged there as this
    run's table, and only their units and totals are read (:mod:`graphrag_assets.storage.name_votes`)."""

    def __init__(self, database) -> None:
        self.database = database

    def kept(self, keys: pl.DataFrame) -> KeptVotes:
        return KeptVotes(*stage_kept_votes(self.database, keys))


def _record_reuse(context: AssetExecutionContext, settings, summary: ReuseSummary) -> dict:
    """Log the reuse counts, store them on the run's ``llm_usage`` row and return them as metadata."""
    figures = summary.as_dict()
    context.log.info(f"community reports: {summary.line()}")
    run_id = context.run.run_id if context.run else "unknown"
    record_outcomes(
        settings.database_path,
        run_id,
        "community_reports",
        REUSE_PURPOSE,
        {
            "reused": figures["reused"],
            "regenerated": figures["regenerated"],
            "deleted": figures["deleted"],
            "reasons": figures["reasons"],
        },
    )
    return {
        "reports_reused": figures["reused"],
        "reports_regenerated": figures["regenerated"],
        "reports_deleted": figures["deleted"],
        "regenerated_reasons": MetadataValue.json(figures["reasons"]),
    }
