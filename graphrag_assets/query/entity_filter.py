"""Which entities a question is about, decided without a model (seeds of the graph ranking).

HippoRAG 2 has a language model drop retrieved facts that do not fit the question before they
seed its graph walk. Offline there is no model to ask, and the entities of the ``nlp`` method make
the need plain: a noun-phrase entity's description is one sentence that mentions the phrase, so
vector search over descriptions maps a question to whatever phrase sits in a sentence sharing its
words. On LiHua-World's chat logs that brought in "SOUNDS GREAT", "MAKE SURE" or "GREAT WAY" for
almost any question (the extractor now drops such chat phrases, but any corpus has its own). So:

- a noun-phrase entity found by vector search seeds the walk only when the question names it:
  every word of its title occurs among the question's words;
- an entity whose title is one of the question's own noun phrases (found with the indexer's
  extractor, so the keys agree) seeds it too, with score 1, even when vector search missed it.

Entities of other types (extracted by a model, whose descriptions are about the entity) pass as
vector search found them.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from graphrag_assets.index.noun_phrases import NOUN_PHRASE_TYPE, extract_noun_phrases
from graphrag_assets.llm.local_embedder import words_of

NAMED_SCORE = 1.0


def named_in(question: str, title: str) -> bool:
    """Whether every word of ``title`` occurs in ``question`` (case-insensitive)."""
    title_words = set(words_of(title))
    return bool(title_words) and title_words <= set(words_of(question))


def seed_entities(question: str, hits: Sequence[tuple[str, float]], entities: pl.DataFrame) -> list[tuple[str, float]]:
    """(entity id, score) of the seeds: hits that pass the filter in hit order, then named entities.

    Hits whose id is not in the entity table are skipped.
    """
    hit_ids = [entity_id for entity_id, _ in hits]
    known = {
        entity_id: (title, kind)
        for entity_id, title, kind in entities.filter(pl.col("id").is_in(hit_ids))
        .select("id", "title", "type")
        .iter_rows()
    }
    seeds: dict[str, float] = {}
    for entity_id, score in hits:
        if entity_id not in known or entity_id in seeds:
            continue
        title, kind = known[entity_id]
        if kind != NOUN_PHRASE_TYPE or named_in(question, title or ""):
            seeds[entity_id] = score
    phrases = extract_noun_phrases(question)
    if phrases:
        for entity_id in entities.filter(pl.col("title").is_in(phrases))["id"].to_list():
            seeds.setdefault(entity_id, NAMED_SCORE)
    return list(seeds.items())
