"""Tests of merging extracted records into entities, relationships and covariates."""

from __future__ import annotations

import json

import polars as pl
import pytest

from graphrag_assets.core import ids, schemas
from graphrag_assets.index.extraction_parser import parse_graph_answer
from graphrag_assets.index.graph_merge import (
    MERGED_ENTITIES,
    MERGED_RELATIONSHIPS,
    MergeStats,
    finalize_covariates,
    finalize_graph,
    merge_graph,
)
from graphrag_assets_testkit.shared_data import NANO_MOCK_CACHE, require


def entity(unit, title, type_, description):
    return {"text_unit_id": unit, "record_type": "entity", "title": title, "type": type_, "description": description}


def edge(unit, source, target, description, weight):
    return {
        "text_unit_id": unit,
        "record_type": "relationship",
        "source": source,
        "target": target,
        "description": description,
        "weight": weight,
    }


def claim(unit, subject, object_, type_, description, status="TRUE"):
    return {
        "text_unit_id": unit,
        "record_type": "claim",
        "source": subject,
        "target": object_,
        "type": type_,
        "status": status,
        "start_date": "NONE",
        "end_date": "NONE",
        "description": description,
        "source_text": "q",
    }


def frame(rows) -> pl.DataFrame:
    return schemas.conform(pl.DataFrame(rows, infer_schema_length=None), schemas.GRAPH_EXTRACTIONS)


ROWS = [
    entity("u1", "SCROOGE", "PERSON", "A miser."),
    entity("u1", "SCROOGE", "PERSON", "A miser."),  # repeated by a gleaning
    entity("u2", "SCROOGE", "PERSON", "Changes his ways."),
    entity("u3", "SCROOGE", "ORGANIZATION", "A firm's name."),
    entity("u1", "MARLEY", "PERSON", "Dead partner."),
    entity("u2", "MARLEY", "PERSON", "  "),
    entity("u2", "FRED", "PERSON", "The nephew."),
    entity("u3", "LONDON", "GEO", "A city."),
    entity("u3", "LONDON", "PERSON", "Mistaken type."),  # tie: alphabetical type wins
    edge("u1", "SCROOGE", "MARLEY", "Partners.", 8.0),
    edge("u1", "MARLEY", "SCROOGE", "Partners.", 9.0),  # same unit, reversed: max, not sum
    edge("u2", "MARLEY", "SCROOGE", "Haunts him.", 5.0),
    edge("u2", "FRED", "SCROOGE", "Nephew.", 7.0),
    edge("u2", "FRED", "FRED", "Self.", 1.0),  # self-loop
    edge("u3", "SCROOGE", "BELLE", "Former love.", 6.0),  # BELLE is not an entity
    edge("u3", "GHOST", "SCROOGE", "Visits.", 6.0),  # GHOST is not an entity
    claim("u1", "SCROOGE", "NONE", "GREED", "He hoards."),
]


def test_merged_entities_exact():
    merged = merge_graph(frame(ROWS))
    assert merged.entities.schema == pl.Schema(MERGED_ENTITIES)
    assert merged.entities.rows() == [
        ("FRED", "PERSON", ["The nephew."], ["u2"], 1),
        ("LONDON", "GEO", ["A city.", "Mistaken type."], ["u3"], 1),
        ("MARLEY", "PERSON", ["Dead partner."], ["u1", "u2"], 2),
        ("SCROOGE", "PERSON", ["A firm's name.", "A miser.", "Changes his ways."], ["u1", "u2", "u3"], 3),
    ]


def test_merged_relationships_exact():
    merged = merge_graph(frame(ROWS))
    assert merged.relationships.schema == pl.Schema(MERGED_RELATIONSHIPS)
    assert merged.relationships.rows() == [
        ("FRED", "SCROOGE", ["Nephew."], ["u2"], 7.0),
        ("MARLEY", "SCROOGE", ["Haunts him.", "Partners."], ["u1", "u2"], 9.0 + 5.0),
    ]
    assert merged.stats == MergeStats(
        entity_records=9,
        relationship_records=7,
        self_loops_dropped=1,
        orphan_relationships_dropped=2,
        entities_with_several_types=2,
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merge_and_finalize_do_not_depend_on_row_order(seed):
    expected = merge_graph(frame(ROWS))
    shuffled = merge_graph(frame(ROWS).sample(fraction=1.0, shuffle=True, seed=seed))
    assert shuffled.entities.equals(expected.entities)
    assert shuffled.relationships.equals(expected.relationships)
    assert shuffled.stats == expected.stats
    a = finalize_graph(expected.entities, expected.relationships, {}, {})
    b = finalize_graph(shuffled.entities.reverse(), shuffled.relationships.reverse(), {}, {})
    assert a[0].equals(b[0]) and a[1].equals(b[1])


def test_finalize_graph_exact():
    merged = merge_graph(frame(ROWS))
    entities, relationships = finalize_graph(
        merged.entities,
        merged.relationships,
        entity_summaries={"SCROOGE": "Scrooge, summarized."},
        relationship_summaries={("MARLEY", "SCROOGE"): "Partners, then haunting."},
    )
    assert entities.schema == pl.Schema(schemas.ENTITIES)
    assert relationships.schema == pl.Schema(schemas.RELATIONSHIPS)
    assert entities.select("human_readable_id", "title", "description", "frequency", "degree").rows() == [
        (0, "FRED", "The nephew.", 1, 1),
        (1, "LONDON", "A city.\nMistaken type.", 1, 0),  # no summary given: one per line
        (2, "MARLEY", "Dead partner.", 2, 1),
        (3, "SCROOGE", "Scrooge, summarized.", 3, 2),
    ]
    assert entities.get_column("id").to_list() == [ids.entity_id(t) for t in ["FRED", "LONDON", "MARLEY", "SCROOGE"]]
    assert relationships.select(
        "human_readable_id", "source", "target", "description", "weight", "combined_degree"
    ).rows() == [
        (0, "FRED", "SCROOGE", "Nephew.", 7.0, 3),
        (1, "MARLEY", "SCROOGE", "Partners, then haunting.", 14.0, 3),
    ]
    assert relationships.get_column("id").to_list() == [
        ids.relationship_id("FRED", "SCROOGE"),
        ids.relationship_id("MARLEY", "SCROOGE"),
    ]


def test_degree_counts_distinct_neighbours_even_for_unnormalized_input():
    """finalize_graph is also fed by other merges (e.g. the NLP path); reversed duplicates count once."""
    merged_entities = pl.DataFrame(
        {
            "title": ["A", "B", "C"],
            "type": ["X"] * 3,
            "descriptions": [[], [], []],
            "text_unit_ids": [["u"]] * 3,
            "frequency": [1] * 3,
        },
        schema=MERGED_ENTITIES,
    )
    merged_relationships = pl.DataFrame(
        {
            "source": ["A", "B", "A"],
            "target": ["B", "A", "C"],
            "descriptions": [[], [], []],
            "text_unit_ids": [["u"]] * 3,
            "weight": [1.0] * 3,
        },
        schema=MERGED_RELATIONSHIPS,
    )
    entities, relationships = finalize_graph(merged_entities, merged_relationships, {}, {})
    assert entities.select("title", "degree", "description").rows() == [("A", 2, ""), ("B", 1, ""), ("C", 1, "")]
    assert relationships.select("source", "target", "combined_degree").rows() == [
        ("A", "B", 3),
        ("A", "C", 3),
        ("B", "A", 3),
    ]


def test_relationship_with_a_missing_end_is_an_orphan():
    merged = merge_graph(
        frame([entity("u1", "A", "X", "a"), edge("u1", "A", None, "r", 1.0), edge("u1", None, None, "r", 1.0)])
    )
    assert merged.relationships.height == 0
    assert (merged.stats.self_loops_dropped, merged.stats.orphan_relationships_dropped) == (0, 2)


def test_empty_input_gives_empty_tables_with_schemas():
    merged = merge_graph(schemas.empty_frame(schemas.GRAPH_EXTRACTIONS))
    assert merged.entities.height == merged.relationships.height == 0
    assert merged.stats == MergeStats(0, 0, 0, 0, 0)
    entities, relationships = finalize_graph(merged.entities, merged.relationships, {}, {})
    assert entities.schema == pl.Schema(schemas.ENTITIES) and entities.height == 0
    assert relationships.schema == pl.Schema(schemas.RELATIONSHIPS) and relationships.height == 0
    covariates = finalize_covariates(schemas.empty_frame(schemas.GRAPH_EXTRACTIONS))
    assert covariates.schema == pl.Schema(schemas.COVARIATES) and covariates.height == 0


def test_finalize_covariates_exact_and_deterministic():
    rows = [
        claim("u2", "SCROOGE", "BOB CRATCHIT", "UNDERPAYMENT", "Pays little."),
        claim("u2", "SCROOGE", "BOB CRATCHIT", "UNDERPAYMENT", "Pays little."),  # gleaning repeat
        claim("u1", "SCROOGE", "BOB CRATCHIT", "UNDERPAYMENT", "Pays little."),  # other unit: kept
        claim("u1", "FEZZIWIG", "NONE", "GENEROSITY", "Throws a ball.", status="SUSPECTED"),
        entity("u1", "SCROOGE", "PERSON", "ignored here"),
    ]
    covariates = finalize_covariates(frame(rows))
    assert covariates.schema == pl.Schema(schemas.COVARIATES)
    assert covariates.select(
        "human_readable_id", "covariate_type", "subject_id", "object_id", "type", "status", "text_unit_id"
    ).rows() == [
        (0, "claim", "FEZZIWIG", "NONE", "GENEROSITY", "SUSPECTED", "u1"),
        (1, "claim", "SCROOGE", "BOB CRATCHIT", "UNDERPAYMENT", "TRUE", "u1"),
        (2, "claim", "SCROOGE", "BOB CRATCHIT", "UNDERPAYMENT", "TRUE", "u2"),
    ]
    assert covariates.get_column("id").n_unique() == 3
    assert covariates.row(0, named=True)["id"] == ids.stable_uuid(
        "covariate", "u1", "FEZZIWIG", "NONE", "GENEROSITY", "SUSPECTED", "NONE", "NONE", "Throws a ball.", "q"
    )
    reshuffled = finalize_covariates(frame(rows).sample(fraction=1.0, shuffle=True, seed=5))
    assert reshuffled.equals(covariates)


def test_covariates_with_missing_fields_keep_nulls():
    row = claim("u1", "A", None, "T", "d")
    row["start_date"] = None
    covariates = finalize_covariates(frame([row]))
    assert covariates.row(0, named=True)["start_date"] is None
    assert covariates.row(0, named=True)["object_id"] is None


def test_real_gpt4o_answers_merge_into_one_graph():
    """The 84 real extraction answers (one text unit each) parsed, merged and finalized."""
    data = json.loads(require(NANO_MOCK_CACHE).read_text(encoding="utf-8"))
    rows = []
    for key, entry in sorted(data.items()):
        if "<|>" not in entry["return"]:
            continue
        parsed = parse_graph_answer(entry["return"])
        rows += [entity(key, e.title, e.type, e.description) for e in parsed.entities]
        rows += [edge(key, r.source, r.target, r.description, r.weight) for r in parsed.relationships]
    merged = merge_graph(frame(rows))
    assert merged.stats == MergeStats(
        entity_records=654,
        relationship_records=520,
        self_loops_dropped=0,
        orphan_relationships_dropped=1,
        entities_with_several_types=9,
    )
    entities, relationships = finalize_graph(merged.entities, merged.relationships, {}, {})
    assert (entities.height, relationships.height) == (433, 412)
    top = entities.sort("frequency", "title", descending=[True, False]).head(3)
    assert top.select("title", "frequency", "degree").rows() == [
        ("SCROOGE", 37, 131),
        ("BOB CRATCHIT", 10, 22),
        ("TINY TIM", 9, 11),
    ]
    assert relationships.select((pl.col("source") < pl.col("target")).all()).item()
    assert entities.get_column("degree").sum() == 2 * relationships.height
