"""The offline entity filter: which vector hits may seed the graph walk, and which entities the question names."""

from __future__ import annotations

import polars as pl
import pytest

from graphrag_assets.core.ids import entity_id
from graphrag_assets.core.schemas import ENTITIES, conform
from graphrag_assets.query.entity_filter import named_in, seed_entities

# title -> type: noun phrases of the nlp method, and one entity a model extracted
ENTITY_TYPES = {
    "SOUNDS GREAT": "NOUN PHRASE",
    "JAM SESSION": "NOUN PHRASE",
    "LI HUA": "NOUN PHRASE",
    "CENTRAL PERK": "NOUN PHRASE",
    "WOLFGANG SCHULZ": "PERSON",
}


def entities() -> pl.DataFrame:
    titles = sorted(ENTITY_TYPES)
    return conform(
        pl.DataFrame(
            {"id": [entity_id(t) for t in titles], "title": titles, "type": [ENTITY_TYPES[t] for t in titles]}
        ),
        ENTITIES,
    )


@pytest.mark.parametrize(
    ("question", "title", "expected"),
    [
        ("Did Li Hua say it sounds great?", "SOUNDS GREAT", True),
        ("When is the next jam session?", "JAM SESSION", True),
        ("What is a great way to relax?", "SOUNDS GREAT", False),  # one word of two
        ("Was the jam good?", "JAM SESSION", False),
        ("anything", "", False),
    ],
)
def test_named_in(question, title, expected):
    assert named_in(question, title) is expected


def test_noun_phrase_hits_seed_only_when_the_question_names_them():
    hits = [
        (entity_id("SOUNDS GREAT"), 0.9),  # matched through its description sentence only
        (entity_id("WOLFGANG SCHULZ"), 0.8),  # a model's entity: kept as vector search found it
        ("missing-id", 0.7),
        (entity_id("JAM SESSION"), 0.6),
    ]
    seeds = seed_entities("Who joined the jam session with Li Hua?", hits, entities())
    # the hits that pass, in hit order; then the question's own noun phrase LI HUA with score 1
    assert seeds == [(entity_id("WOLFGANG SCHULZ"), 0.8), (entity_id("JAM SESSION"), 0.6), (entity_id("LI HUA"), 1.0)]


def test_named_entities_seed_even_without_vector_hits():
    seeds = seed_entities("Did Yuriko book a seat at Central Perk?", [], entities())
    assert seeds == [(entity_id("CENTRAL PERK"), 1.0)]


def test_a_hit_keeps_its_similarity_when_the_question_also_names_it():
    seeds = seed_entities("Who organised the Jam Session?", [(entity_id("JAM SESSION"), 0.4)], entities())
    assert seeds == [(entity_id("JAM SESSION"), 0.4)]
