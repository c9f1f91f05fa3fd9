"""``graphrag-assets index --dry-run``: what the next run would cost, without calling the model.

The new and changed documents are read and chunked in memory and their extraction and embedding
requests are built exactly as a real run would build them; each is looked up in the response
cache and only misses are counted (prompt tokens exactly, completion tokens estimated). Summaries
and reports depend on what extraction finds, so they can only be bounded: we report what the last
corpus run needed and what it would cost to redo everything.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.settings import Settings


@dataclass
class DryRunEstimate:
    method: str
    new: list[str]
    changed: list[str]
    deleted: list[str]
    text_units: int = 0
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_corpus_run: dict[str, dict[str, Any]] = field(default_factory=dict)
    reports: dict[str, Any] = field(default_factory=dict)  # ReusePrediction.as_dict() and the update mode

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "new": self.new,
            "changed": self.changed,
            "deleted": self.deleted,
            "text_units_to_process": self.text_units,
            "per_document_stage": self.usage,
            "last_corpus_run": self.last_corpus_run,
            "reports": self.reports,
        }

    def render(self) -> str:
        lines = [
            f"dry run ({self.method} method): {len(self.new)} new, {len(self.changed)} changed, {len(self.deleted)} deleted document file(s); "
            f"{self.text_units} text unit(s) to process",
        ]
        if self.method == "nlp":
            lines.append("the nlp method makes no model calls.")
        if self.usage:
            lines.append("per-document stage (exact: each request is checked against the cache):")
            for purpose, u in self.usage.items():
                cost = f", ~${u['cost_usd']:.4f}" if u.get("cost_usd") else ""
                lines.append(
                    f"  {purpose:<22} {u['calls']:>6} call(s) to make, {u['cached']:>6} cached; "
                    f"~{u['prompt_tokens']:,} prompt + ~{u['completion_tokens']:,} completion tokens{cost}"
                )
        elif self.method != "nlp":
            lines.append("per-document stage: nothing to do")
        if self.method != "nlp":
            if self.last_corpus_run:
                lines.append("corpus stage (depends on what extraction finds; only summaries and reports whose inputs change are called).")
                lines.append("The last corpus run for reference:")
                for purpose, u in self.last_corpus_run.items():
                    lines.append(f"  {purpose:<22} {u['calls']:>6} made, {u['cached']:>6} cached")
            else:
                lines.append("corpus stage: not built yet; expect one summary call per entity or relationship with several descriptions and one report call per community.")
        if self.reports:
            r = self.reports
            extra = "; exact mode re-clusters, which can move more" if r["update"] == "exact" else ""
            lines.append(
                f"community reports: at least {r['regenerate_at_least']} of {r['total']} to regenerate, at most {r['reuse_at_most']} reused "
                f"({r['affected_entities']} known entities in the changed documents{extra})"
            )
        return "\n".join(lines)


def estimate_next_run(settings: Settings, overrides: dict[str, Any] | None = None) -> DryRunEstimate:
    from graphrag_assets.document_state import document_state
    from graphrag_assets.runner import open_instance

    changes = document_state(settings, open_instance(settings)).changes
    estimate = DryRunEstimate(settings.resolved_method, changes.new, changes.changed, changes.deleted)
    units = _chunks(settings, changes.new + changes.changed)
    estimate.text_units = units.height
    meter = UsageMeter()
    asyncio.run(_simulate(settings, units, meter))
    estimate.usage = _usage(meter)
    estimate.last_corpus_run = _last_corpus_run(settings)
    if changes.any and estimate.method != "nlp":
        estimate.reports = _report_prediction(settings, units, changes.changed + changes.deleted)
    return estimate


def _report_prediction(settings: Settings, units: pl.DataFrame, replaced: list[str]) -> dict[str, Any]:
    """Which stored reports the changes reach (see :class:`~graphrag_assets.index.report_reuse.ReusePrediction`)."""
    from graphrag_assets.index.report_reuse import entities_of_text_units, mentioned_entities, predict_reuse
    from graphrag_assets.storage.tables import read_table

    read = {name: read_table(settings.database_path, name, read_only=True) for name in ("communities", "entities", "text_units")}
    communities, entities, text_units = read["communities"], read["entities"], read["text_units"]
    if communities is None or entities is None:
        return {}
    old_units = [] if text_units is None else text_units.filter(pl.col("document_key").is_in(replaced))["id"].to_list()
    affected = entities_of_text_units(entities, old_units) | mentioned_entities(entities, units["text"].to_list() if units.height else [])
    return {**predict_reuse(communities, affected).as_dict(), "update": settings.communities.update}


def _chunks(settings: Settings, keys: list[str]) -> pl.DataFrame:
    from graphrag_assets import schemas
    from graphrag_assets.index.chunking import chunk_documents
    from graphrag_assets.index.documents import read_file_documents
    from graphrag_assets.index.input_files import discover_input_files

    files = {f.key: f for f in discover_input_files(settings.input_dir, settings.input.file_types)}
    frames = [read_file_documents(settings.input_dir, files[k].path, k, settings.input).frame for k in keys if k in files]
    documents = pl.concat(frames) if frames else schemas.empty_frame(schemas.DOCUMENTS)
    return chunk_documents(documents, settings.chunking.size, settings.chunking.overlap, settings.chunking.encoding)


async def _simulate(settings: Settings, units: pl.DataFrame, meter: UsageMeter) -> None:
    from graphrag_assets.index.embedding_texts import text_unit_texts
    from graphrag_assets.llm.factory import build_chat_model, build_embedding_model

    if units.is_empty():
        return
    if settings.resolved_method == "standard":
        from graphrag_assets.index.graph_extraction import ClaimOptions, claim_prompts, extract_graph_records, graph_prompts

        extraction = settings.extraction
        claims = None
        if extraction.claims.enabled:
            claims = ClaimOptions(extraction.claims.description, claim_prompts(extraction.claims.prompt, settings.root), extraction.claims.max_gleanings)
        chat = build_chat_model(settings.llm, settings.database_path, meter, dry_run=True)
        try:
            await extract_graph_records(
                chat,
                units.select("id", "text", "document_key"),
                entity_types=extraction.entity_types,
                max_gleanings=extraction.max_gleanings,
                prompts=graph_prompts(extraction.prompt, settings.root),
                claims=claims,
            )
        finally:
            await chat.aclose()
    if not settings.llm.use_local_embedder:
        embedder = build_embedding_model(settings.llm, settings.embeddings, settings.database_path, meter, dry_run=True)
        try:
            await embedder.embed(text_unit_texts(units)["text"].to_list(), purpose="embed_text_units")
        finally:
            await embedder.aclose()


def _usage(meter: UsageMeter) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for (purpose, _model), counts in sorted(meter.snapshot().items()):
        out[purpose] = {
            "calls": counts.requests,
            "cached": counts.cache_hits,
            "prompt_tokens": counts.prompt_tokens + counts.embedding_tokens,
            "completion_tokens": counts.completion_tokens,
            "cost_usd": round(counts.cost_usd, 6),
        }
    return out


def _last_corpus_run(settings: Settings) -> dict[str, dict[str, Any]]:
    from graphrag_assets.storage.database import connect, table_exists

    if not settings.database_path.exists():
        return {}
    with connect(settings.database_path, read_only=True) as conn:
        if not table_exists(conn, "llm_usage"):
            return {}
        rows = conn.sql(
            "with last as (select run_id from llm_usage where asset_key in ('graph', 'community_reports') "
            "order by recorded_at desc limit 1) "
            "select purpose, sum(requests)::bigint, sum(cache_hits)::bigint from llm_usage "
            "where run_id in (select run_id from last) group by purpose order by purpose"
        ).fetchall()
    return {purpose: {"calls": calls, "cached": cached} for purpose, calls, cached in rows}
