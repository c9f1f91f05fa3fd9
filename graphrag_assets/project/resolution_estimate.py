"""The dry run's count of entity-resolution calls (``index --dry-run`` with ``resolution.enabled``).

Resolution judges the entities of the whole corpus, so the estimate rebuilds what the next corpus
run will see: the stored extraction records of the documents that stay, plus the records the dry
run just parsed for new and changed documents (known only for answers already in the cache). It
then runs the real blocking and builds every verdict request against the cache with dry-run
models, which count and send nothing. The count is exact when every extraction answer and every
entity embedding it needs is cached; otherwise it is a lower bound (what is not known yet cannot
be grouped), and the estimate says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.index.entity_resolution import (
    EMBED_PURPOSE,
    merged_profiles,
    resolution_options,
    resolve_with_model,
)
from graphrag_assets.index.graph_merge import merge_graph
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.storage.tables import read_table


@dataclass
class ResolutionEstimate:
    verdicts: str  # model | rules
    entities: int = 0
    candidate_pairs: int = 0
    groups: int = 0
    calls: int = 0  # verdict calls to make
    cached: int = 0  # verdict calls answered by the cache
    embedding_calls: int = 0
    prompt_tokens: int = 0
    exact: bool = True
    why_not_exact: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def render(self) -> str:
        if self.verdicts == "rules":
            return "entity resolution: offline rules, no model calls."
        bound = "exact" if self.exact else "at least: " + "; ".join(self.why_not_exact)
        return (
            f"entity resolution: {self.entities} entities, {self.candidate_pairs} candidate pair(s) in {self.groups} group(s): "
            f"{self.calls} call(s) to make, {self.cached} cached, {self.embedding_calls} embedding batch(es); "
            f"~{self.prompt_tokens:,} prompt tokens ({bound})"
        )


def next_extractions(settings: Settings, changes: ChangeSet, simulated: pl.DataFrame) -> pl.DataFrame:
    """The extraction records the next corpus run will merge (as far as they are known now)."""
    stored = read_table(settings.database_path, "graph_extractions", read_only=True)
    redone = set(changes.new) | set(changes.changed) | set(changes.deleted)
    kept = (
        schemas.empty_frame(schemas.GRAPH_EXTRACTIONS)
        if stored is None
        else stored.filter(~pl.col("document_key").is_in(list(redone)))
    )
    status = read_table(settings.database_path, "extraction_status", read_only=True)
    if status is not None:
        failed = status.filter(pl.col("status") == "failed")["document_key"].to_list()
        kept = kept.filter(~pl.col("document_key").is_in(failed))
    return pl.concat(
        [schemas.conform(kept, schemas.GRAPH_EXTRACTIONS), schemas.conform(simulated, schemas.GRAPH_EXTRACTIONS)]
    )


async def estimate_resolution(
    settings: Settings, changes: ChangeSet, simulated: pl.DataFrame, extraction_misses: int
) -> ResolutionEstimate:
    """Count the verdict calls (and embedding batches) the next corpus run's resolution makes.

    ``simulated`` holds the records the dry run parsed for new and changed documents;
    ``extraction_misses`` counts their extraction calls that were not in the cache.
    """
    options = resolution_options(settings)
    if options.template is None:
        return ResolutionEstimate("rules")
    profiles = merged_profiles(merge_graph(next_extractions(settings, changes, simulated)).entities)
    meter = UsageMeter()
    with ModelSet(settings, meter, dry_run=True) as models:
        resolution = await resolve_with_model(models.chat, models.embedder, profiles, options)
    estimate = ResolutionEstimate("model", profiles.height, resolution.candidate_pairs, resolution.groups)
    for (purpose, _model), counts in meter.snapshot().items():
        if purpose == EMBED_PURPOSE:
            estimate.embedding_calls += counts.requests
        else:
            estimate.calls += counts.requests
            estimate.cached += counts.cache_hits
            estimate.prompt_tokens += counts.prompt_tokens
    if extraction_misses:
        estimate.exact = False
        estimate.why_not_exact.append(f"{extraction_misses} extraction answer(s) are not known before they are made")
    if estimate.embedding_calls:
        estimate.exact = False
        estimate.why_not_exact.append("entities not embedded yet have no neighbours in this estimate")
    return estimate
