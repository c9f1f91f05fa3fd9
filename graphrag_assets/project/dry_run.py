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

from graphrag_assets.core import schemas
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.chunking import chunk_documents
from graphrag_assets.index.documents import read_file_documents
from graphrag_assets.index.embedding_texts import text_unit_texts
from graphrag_assets.index.graph_extraction import GRAPH_PURPOSE, extract_graph_records, extraction_plan
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.report_reuse import entities_of_text_units, mentioned_entities, predict_reuse
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import CORPUS_MODEL_ASSETS, UsageMeter, last_corpus_run_usage
from graphrag_assets.project.resolution_estimate import ResolutionEstimate, estimate_resolution
from graphrag_assets.project.state import document_state
from graphrag_assets.storage.corpus import published_build
from graphrag_assets.storage.tables import read_table


@dataclass
class DryRunEstimate:
    method: str
    new: list[str]
    changed: list[str]
    deleted: list[str]
    text_units: int = 0
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_corpus_run: dict[str, dict[str, Any]] = field(default_factory=dict)
    resolution: ResolutionEstimate | None = None
    reports: dict[str, Any] = field(default_factory=dict)  # ReusePrediction.as_dict() and the update mode
    corpus_built: bool = False  # a corpus graph is published (by any method)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "new": self.new,
            "changed": self.changed,
            "deleted": self.deleted,
            "text_units_to_process": self.text_units,
            "per_document_stage": self.usage,
            "last_corpus_run": self.last_corpus_run,
            "resolution": self.resolution.as_dict() if self.resolution else None,
            "reports": self.reports,
            "corpus_built": self.corpus_built,
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
                lines.append(
                    "corpus stage (depends on what extraction finds; only summaries and reports whose inputs change are called)."
                )
                lines.append("The last corpus run for reference:")
                for purpose, u in self.last_corpus_run.items():
                    lines.append(f"  {purpose:<22} {u['calls']:>6} made, {u['cached']:>6} cached")
            else:
                state = (
                    "the current graph was made without model calls (nlp method or an import), so the next run builds it anew"
                    if self.corpus_built
                    else "not built yet"
                )
                lines.append(
                    f"corpus stage: {state}; expect one summary call per entity or relationship with several descriptions and one report call per community."
                )
        if self.resolution is not None:
            lines.append(self.resolution.render())
        if self.reports:
            r = self.reports
            extra = "; exact mode re-clusters, which can move more" if r["update"] == "exact" else ""
            lines.append(
                f"community reports: at least {r['regenerate_at_least']} of {r['total']} to regenerate, at most {r['reuse_at_most']} reused "
                f"({r['affected_entities']} known entities in the changed documents{extra})"
            )
        return "\n".join(lines)


def estimate_next_run(settings: Settings) -> DryRunEstimate:
    changes = document_state(settings).changes
    estimate = DryRunEstimate(settings.resolved_method, changes.new, changes.changed, changes.deleted)
    units = _chunks(settings, changes.new + changes.changed, changes.paths)
    estimate.text_units = units.height
    meter = UsageMeter()
    with ModelSet(settings, meter, dry_run=True) as models:
        records = asyncio.run(_simulate(settings, units, models))
    estimate.usage = _usage(meter)
    if settings.resolution.enabled:
        misses = estimate.usage.get(GRAPH_PURPOSE, {}).get("calls", 0)
        estimate.resolution = asyncio.run(estimate_resolution(settings, changes, records, misses))
    estimate.last_corpus_run = last_corpus_run_usage(settings.database_path, CORPUS_MODEL_ASSETS)
    estimate.corpus_built = published_build(settings.database_path) is not None
    if changes.any and estimate.method != "nlp":
        estimate.reports = _report_prediction(settings, units, changes.changed + changes.deleted)
    return estimate


def _report_prediction(settings: Settings, units: pl.DataFrame, replaced: list[str]) -> dict[str, Any]:
    """Which stored reports the changes reach (see :class:`~graphrag_assets.index.report_reuse.ReusePrediction`)."""
    read = {
        name: read_table(settings.database_path, name, read_only=True)
        for name in ("communities", "entities", "text_units")
    }
    communities, entities, text_units = read["communities"], read["entities"], read["text_units"]
    if communities is None or entities is None:
        return {}
    old_units = [] if text_units is None else text_units.filter(pl.col("document_key").is_in(replaced))["id"].to_list()
    affected = entities_of_text_units(entities, old_units) | mentioned_entities(
        entities, units["text"].to_list() if units.height else []
    )
    return {**predict_reuse(communities, affected).as_dict(), "update": settings.communities.update}


def _chunks(settings: Settings, keys: list[str], paths: dict[str, str]) -> pl.DataFrame:
    """The text units of ``keys``, read from the files the change detection found (``paths``: no second scan)."""
    frames = [read_file_documents(settings.input_dir, paths[k], k, settings.input).frame for k in keys if k in paths]
    documents = pl.concat(frames) if frames else schemas.empty_frame(schemas.DOCUMENTS)
    return chunk_documents(documents, settings.chunking.size, settings.chunking.overlap, settings.chunking.encoding)


async def _simulate(settings: Settings, units: pl.DataFrame, models: ModelSet) -> pl.DataFrame:
    """Build every request of the per-document stage as a real run would; the models only count.

    Returns the extraction records read from answers already in the cache (a miss gives none).
    """
    records = schemas.empty_frame(schemas.GRAPH_EXTRACTIONS)
    if units.is_empty():
        return records
    if method_steps(settings.resolved_method).extraction == "model":
        plan = extraction_plan(settings.extraction, settings.root)
        records = (await extract_graph_records(models.chat, units.select("id", "text", "document_key"), plan)).records
    if not settings.llm.use_local_embedder:
        await models.embedder.embed(text_unit_texts(units)["text"].to_list(), purpose="embed_text_units")
    return records


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
