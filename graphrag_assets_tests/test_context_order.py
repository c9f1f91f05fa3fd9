"""The local context does not depend on the order of the index's rows.

An incremental build writes its rows in another order than a rebuild of the same corpus; with
tables equal as sets of rows, the context of a question (and so its answer) must be equal too.
Here a hub entity has six neighbours joined to it by relationships of equal weight and degree,
so every ranking meets ties, and the budget keeps only some of the tied rows.
"""

from __future__ import annotations

import asyncio

import polars as pl
import pytest

from graphrag_assets.core.ids import entity_id, relationship_id, stable_uuid, text_unit_id
from graphrag_assets.core.schemas import COMMUNITIES, COMMUNITY_REPORTS, ENTITIES, RELATIONSHIPS, TEXT_UNITS, conform
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.engine import run_query
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.request import QueryOptions, SearchRequest
from graphrag_assets_tests.test_query_local import ScriptedEmbedder, words

HUB = "HUB"
NEIGHBOURS = [f"N{i}" for i in range(6)]
TITLES = [HUB, *NEIGHBOURS]
DOC_ID = stable_uuid("document", "order")
UNITS = [text_unit_id(DOC_ID, i, f"unit {i}") for i in range(len(TITLES))]


def tables() -> dict[str, pl.DataFrame]:
    """Every neighbour alike: the same weight, degree, mentions and community as the others."""
    entities = conform(
        pl.DataFrame(
            {
                "id": [entity_id(t) for t in TITLES],
                "human_readable_id": list(range(len(TITLES))),
                "title": TITLES,
                "type": ["THING"] * len(TITLES),
                "description": [f"about {t.lower()}" for t in TITLES],
                "text_unit_ids": [[UNITS[0]], *[[UNITS[0], UNITS[i + 1]] for i in range(len(NEIGHBOURS))]],
                "degree": [len(NEIGHBOURS), *[1] * len(NEIGHBOURS)],
            }
        ),
        ENTITIES,
    )
    relationships = conform(
        pl.DataFrame(
            {
                "id": [relationship_id(HUB, n) for n in NEIGHBOURS],
                "human_readable_id": [None] * len(NEIGHBOURS),  # no dense id to break a tie with
                "source": [HUB] * len(NEIGHBOURS),
                "target": NEIGHBOURS,
                "description": [f"the hub meets {n.lower()}" for n in NEIGHBOURS],
                "weight": [2.0] * len(NEIGHBOURS),
                "combined_degree": [len(NEIGHBOURS) + 1] * len(NEIGHBOURS),
                "text_unit_ids": [[UNITS[0]]] * len(NEIGHBOURS),
            },
            schema_overrides={"human_readable_id": pl.Int64},
        ),
        RELATIONSHIPS,
    )
    text_units = conform(
        pl.DataFrame(
            {
                "id": UNITS,
                "human_readable_id": list(range(len(UNITS))),
                "text": [f"hub text {i}" for i in range(len(UNITS))],
                "document_id": [DOC_ID] * len(UNITS),
                "n_tokens": [3] * len(UNITS),
            }
        ),
        TEXT_UNITS,
    )
    communities = conform(
        pl.DataFrame(
            {
                "id": [stable_uuid("community", c) for c in (0, 1)],
                "human_readable_id": [0, 1],
                "community": [0, 1],
                "level": [0, 0],
                "title": ["Community 0", "Community 1"],
                "entity_ids": [[entity_id(t) for t in TITLES[:4]], [entity_id(t) for t in TITLES[4:]]],
            }
        ),
        COMMUNITIES,
    )
    reports = conform(
        pl.DataFrame(
            {
                "id": [stable_uuid("report", c) for c in (0, 1)],
                "human_readable_id": [0, 1],
                "community": [0, 1],
                "level": [0, 0],
                "title": ["Report 0", "Report 1"],
                "summary": ["summary 0", "summary 1"],
                "full_content": ["report zero", "report one"],
                "rank": [1.0, 1.0],
            }
        ),
        COMMUNITY_REPORTS,
    )
    return {
        "entities": entities,
        "relationships": relationships,
        "text_units": text_units,
        "communities": communities,
        "community_reports": reports,
    }


def index(frames: dict[str, pl.DataFrame]) -> QueryData:
    """The index; the question's vector is nearest the hub, and equally near every neighbour."""
    ids = [entity_id(t) for t in TITLES]
    return QueryData(
        **frames,
        entity_description=ArrayVectorIndex(ids, [[1.0, 0.0], *[[0.5, 0.5]] * len(NEIGHBOURS)]),
        text_unit_text=ArrayVectorIndex(UNITS, [[1.0, 0.0]] * len(UNITS)),
    )


def context(frames: dict[str, pl.DataFrame], ranking: str) -> str:
    settings = QuerySettings.model_validate(
        {"local": {"ranking": ranking, "top_k_entities": 3, "top_k_relationships": 1, "max_context_tokens": 500}}
    )
    options = QueryOptions(method="local", context_only=True)
    request = SearchRequest(
        "What does the hub meet?",
        index(frames),
        settings,
        None,
        ScriptedEmbedder(default=(1.0, 0.0)),
        options,
        count=words,
    )
    result = asyncio.run(run_query(request))
    assert "-----Relationships-----" in result.context_text
    return result.context_text


def reordered(frames: dict[str, pl.DataFrame], names: tuple[str, ...], seed: int) -> dict[str, pl.DataFrame]:
    return {
        name: frame.sample(fraction=1.0, shuffle=True, seed=seed) if name in names else frame
        for name, frame in frames.items()
    }


@pytest.mark.parametrize("ranking", ["graph", "msgraphrag"])
@pytest.mark.parametrize(
    "names", [("relationships",), ("entities", "relationships", "text_units", "communities", "community_reports")]
)
def test_the_same_rows_in_another_order_give_the_same_context(ranking: str, names: tuple[str, ...]) -> None:
    frames = tables()
    expected = context(frames, ranking)
    backwards = {name: frame.reverse() if name in names else frame for name, frame in frames.items()}
    assert context(backwards, ranking) == expected
    for seed in range(5):
        assert context(reordered(frames, names, seed), ranking) == expected
