"""Entity resolution: one entity per real thing, between the merged extractions and the summaries.

The steps, each in its own module:

1. **candidates** (:mod:`.resolution_candidates`): blocking on names and, when an embedder is
   given, on nearest neighbours of the entities' embeddings;
2. **verdicts**: the model judges each candidate group in one cached JSON call
   (:mod:`.resolution_verdicts`, standard method), or deterministic rules judge the candidate
   pairs (:mod:`.resolution_rules`, offline methods);
3. **clusters** around centres and the ``entity_aliases`` rows (:mod:`.resolution_clusters`),
   which the caller applies to the extraction records before merging them again.

Everything is a function of the current extractions (and cached model answers), so an
incremental update equals a rebuild, and an alias disappears with the last document naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.resolution_candidates import (
    candidate_groups,
    merge_candidates,
    name_candidates,
    neighbour_candidates,
)
from graphrag_assets.index.resolution_clusters import build_clusters
from graphrag_assets.index.resolution_rules import NameEvidence, rule_verdicts
from graphrag_assets.index.resolution_verdicts import Member, judge_groups
from graphrag_assets.llm.types import ChatModel, EmbeddingModel
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt

# Bumped when a release changes blocking, the rules or the clustering, so indexes built with
# resolution on resolve their entities again on the next run.
RESOLUTION_VERSION = 1
EMBED_PURPOSE = "embed_resolution"
EMBEDDING_TEXT_CHARS = 2000

# profiles: one row per merged entity
PROFILES = {
    "title": pl.String,
    "type": pl.String,
    "frequency": pl.Int64,
    "descriptions": pl.List(pl.String),
    "text_unit_ids": pl.List(pl.String),
}


@dataclass(frozen=True)
class ResolutionOptions:
    max_group_size: int = 12
    neighbours: int = 8
    min_similarity: float = 0.3
    template: PromptTemplate | None = None  # the model's prompt (None: rules only)


@dataclass(frozen=True)
class Resolution:
    aliases: pl.DataFrame  # schemas.ENTITY_ALIASES
    candidate_pairs: int
    groups: int  # candidate groups judged by the model (0 with rules)
    unusable_answers: int = 0

    @property
    def merged_entities(self) -> int:
        return self.aliases.height


def verdict_method(settings: Settings) -> Literal["model", "rules"]:
    """Who judges the candidates: ``resolution.verdicts``, or the method's default for ``auto``."""
    chosen = settings.resolution.verdicts
    steps = method_steps(settings.resolved_method)
    if chosen == "auto":
        return steps.resolution
    if chosen == "model" and steps.extraction != "model" and not steps.model_reports:
        raise UserError(
            f"resolution.verdicts is 'model' but the {settings.resolved_method} method uses no model; "
            "set resolution.verdicts to rules (or auto), or use method: standard."
        )
    return chosen


def resolution_options(settings: Settings) -> ResolutionOptions:
    """Options from ``settings.resolution``; the prompt is loaded only for the model's verdicts."""
    resolution = settings.resolution
    template = None
    if verdict_method(settings) == "model":
        template = load_prompt("resolve_entities", resolution.prompt, settings.root)
    return ResolutionOptions(resolution.max_group_size, resolution.neighbours, resolution.min_similarity, template)


def resolution_fingerprint(settings: Settings) -> dict[str, object]:
    """What the resolution's output depends on, for the corpus settings fingerprint."""
    options = resolution_options(settings)
    model = options.template is not None
    return {
        "version": RESOLUTION_VERSION,
        "settings": settings.resolution.model_dump(exclude={"prompt", "verdicts"}),
        "verdicts": "model" if model else "rules",
        "prompt": options.template.version if model else None,
        "chat_model": settings.llm.chat_model if model else None,
    }


def resolve_with_rules(profiles: pl.DataFrame, evidence: NameEvidence, options: ResolutionOptions) -> Resolution:
    """Offline resolution: name blocking and the deterministic rules."""
    candidates = name_candidates(profiles.get_column("title").to_list())
    verdicts = rule_verdicts(profiles, candidates, evidence)
    return Resolution(build_clusters(profiles, verdicts), candidates.height, groups=0)


async def resolve_with_model(
    chat: ChatModel, embedder: EmbeddingModel, profiles: pl.DataFrame, options: ResolutionOptions
) -> Resolution:
    """Resolution with the model's verdicts on candidate groups (names and embedding neighbours)."""
    if options.template is None:
        raise ValueError("resolve_with_model needs the resolution prompt in options.template")
    candidates = await model_candidates(embedder, profiles, options)
    groups = candidate_groups(candidates, options.max_group_size)
    members = {
        title: Member(title, kind or "", tuple(descriptions or ()))
        for title, kind, descriptions in profiles.select("title", "type", "descriptions").iter_rows()
    }
    judged = await judge_groups(chat, options.template, groups, members)
    return Resolution(build_clusters(profiles, judged.verdicts), candidates.height, len(groups), judged.unusable)


async def model_candidates(
    embedder: EmbeddingModel, profiles: pl.DataFrame, options: ResolutionOptions
) -> pl.DataFrame:
    """Candidate pairs from names plus the nearest neighbours of the entities' embeddings."""
    titles = profiles.get_column("title").to_list()
    by_name = name_candidates(titles)
    if options.neighbours <= 0 or len(titles) < 2:
        return by_name
    vectors = await embedder.embed(embedding_texts(profiles), purpose=EMBED_PURPOSE)
    nearest = neighbour_candidates(titles, vectors, options.neighbours, options.min_similarity)
    return merge_candidates(by_name, nearest)


def embedding_texts(profiles: pl.DataFrame) -> list[str]:
    """``"TITLE: description description ..."`` per entity (sorted distinct descriptions, shortened).

    All the descriptions, not one: "FRED" meets "SCROOGE'S NEPHEW" through the description that
    says so, which need not be the first.
    """
    texts = []
    for title, descriptions in profiles.select("title", "descriptions").iter_rows():
        distinct = sorted({d.strip() for d in descriptions or () if d and d.strip()})
        texts.append(f"{title}: {' '.join(distinct)}"[:EMBEDDING_TEXT_CHARS])
    return texts


def merged_profiles(merged_entities: pl.DataFrame) -> pl.DataFrame:
    """Profiles from ``graph_merge.MERGED_ENTITIES`` (the standard method's merged records)."""
    return merged_entities.select(
        "title",
        pl.col("type").fill_null(""),
        pl.col("frequency").fill_null(0),
        pl.col("descriptions").fill_null([]),
        pl.col("text_unit_ids").fill_null([]),
    ).cast(PROFILES)


def noun_phrase_profiles(records: pl.DataFrame, phrase_type: str) -> pl.DataFrame:
    """Profiles of noun phrases: title, the given type, the text units mentioning it, no descriptions."""
    phrases = records.filter(
        (pl.col("record_type") == "noun_phrase") & pl.col("title").is_not_null() & (pl.col("title") != "")
    )
    return (
        phrases.group_by("title")
        .agg(
            pl.col("text_unit_id").n_unique().cast(pl.Int64).alias("frequency"),
            pl.col("text_unit_id").drop_nulls().unique().sort().alias("text_unit_ids"),
        )
        .with_columns(pl.lit(phrase_type).alias("type"), pl.lit([], dtype=pl.List(pl.String)).alias("descriptions"))
        .select(list(PROFILES))
        .sort("title")
        .cast(PROFILES)
    )
