"""Entity resolution's pure steps: name forms, blocking, groups, offline rules, clusters, application."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest

from graphrag_assets.core import schemas
from graphrag_assets.core.ids import entity_id
from graphrag_assets.index.entity_names import parse_name
from graphrag_assets.index.entity_resolution import (
    ResolutionOptions,
    merged_profiles,
    noun_phrase_profiles,
    resolve_with_rules,
)
from graphrag_assets.index.graph_merge import finalize_covariates, finalize_graph, merge_graph
from graphrag_assets.index.nlp_graph import NOUN_PHRASE_TYPE
from graphrag_assets.index.resolution_candidates import candidate_groups, name_candidates, neighbour_candidates
from graphrag_assets.index.resolution_clusters import apply_aliases, build_clusters, with_aliases
from graphrag_assets.index.resolution_frames import verdict_frame
from graphrag_assets.index.resolution_rules import NameEvidence, rule_verdicts


def pairs(frame: pl.DataFrame) -> dict[tuple[str, str], str]:
    return {(a, b): e for a, b, e in frame.select("left", "right", "evidence").iter_rows()}


def profiles(rows: list[tuple[str, str, int]], units: dict[str, list[str]] | None = None) -> pl.DataFrame:
    """Profiles (title, type, frequency); each title in its own text units unless ``units`` says."""
    units = units or {}
    return pl.DataFrame(
        {
            "title": [r[0] for r in rows],
            "type": [r[1] for r in rows],
            "frequency": [r[2] for r in rows],
            "descriptions": [[] for _ in rows],
            "text_unit_ids": [units.get(r[0], [f"u-{r[0]}"]) for r in rows],
        },
        schema={
            "title": pl.String,
            "type": pl.String,
            "frequency": pl.Int64,
            "descriptions": pl.List(pl.String),
            "text_unit_ids": pl.List(pl.String),
        },
    )


def merges(frame: pl.DataFrame, evidence_text: str = "", **options) -> dict[str, str]:
    """alias -> canonical title, resolving ``frame`` with the offline rules."""
    resolution = resolve_with_rules(frame, NameEvidence.from_texts([evidence_text]), ResolutionOptions(**options))
    return dict(resolution.aliases.select("alias", "canonical_title").iter_rows())


# --- names -----------------------------------------------------------------------------------


def test_name_forms_strip_case_punctuation_articles_honorifics_and_brackets() -> None:
    assert parse_name("THE GHOST OF CHRISTMAS PAST").key == parse_name("GHOST OF CHRISTMAS PAST").key
    assert parse_name("MR. SCROOGE").key == "SCROOGE" and parse_name("MR. SCROOGE").gender == "m"
    assert parse_name("MRS. CRATCHIT").gender == "f" and parse_name("DR. VARGA").gender == "n"
    assert parse_name("CHRISTMAS-TIME").key == parse_name("CHRISTMAS TIME").key
    assert parse_name("PROJECT GUTENBERG™").key == "PROJECT GUTENBERG"
    irs = parse_name("INTERNAL REVENUE SERVICE (IRS)")
    assert irs.key == "INTERNAL REVENUE SERVICE" and irs.parenthetical == "IRS" and irs.initials == "IRS"
    assert parse_name("U.S. COPYRIGHT LAW").words == ("U", "S", "COPYRIGHT", "LAW")
    ghost = parse_name("MARLEY’S GHOST")  # a typographic apostrophe
    assert ghost.key == "MARLEY 'S GHOST" and ghost.phrase_about_something_else and ghost.tokens == {"MARLEY", "GHOST"}
    nephew = parse_name("MR. SCROOGE'S NEPHEW")
    assert nephew.key == "SCROOGE 'S NEPHEW" and nephew.gender is None  # the honorific is the owner's
    assert parse_name("MICHAEL S. HART").tokens == {"MICHAEL", "HART"}


# --- blocking --------------------------------------------------------------------------------


def test_blocking_finds_containment_honorific_article_acronym_and_initial_variants() -> None:
    found = pairs(
        name_candidates(
            [
                "SCROOGE",
                "EBENEZER SCROOGE",
                "MR. SCROOGE",
                "E. SCROOGE",
                "THE GHOST OF CHRISTMAS PAST",
                "GHOST OF CHRISTMAS PAST",
                "MARLEY",
                "MARLEY'S GHOST",
                "INTERNAL REVENUE SERVICE",
                "IRS",
                "LONDON",
            ]
        )
    )
    assert found[("EBENEZER SCROOGE", "SCROOGE")] == "containment"
    assert found[("MR. SCROOGE", "SCROOGE")] == "name"
    assert found[("E. SCROOGE", "SCROOGE")] == "containment"  # an initial is not a content word
    assert found[("E. SCROOGE", "EBENEZER SCROOGE")] == "containment"
    assert found[("GHOST OF CHRISTMAS PAST", "THE GHOST OF CHRISTMAS PAST")] == "name"
    assert found[("MARLEY", "MARLEY'S GHOST")] == "containment"  # a trap, for the verdict to reject
    assert found[("INTERNAL REVENUE SERVICE", "IRS")] == "acronym"
    assert not [p for p in found if "LONDON" in p]
    assert all(a < b for a, b in found)


def test_a_name_contained_in_very_many_others_keeps_the_closest() -> None:
    owners = ["ASH", "BIRCH", "CEDAR", "ELM", "FIR", "HAZEL", "LARCH", "MAPLE", "OAK", "PINE", "ROWAN", "YEW"]
    titles = ["HOUSE", "BIG OLD RED HOUSE"] + [f"{owner} HOUSE" for owner in owners]
    found = pairs(name_candidates(titles, max_containers=5))
    assert sorted(p for p in found if "HOUSE" in p) == [(f"{o} HOUSE", "HOUSE") for o in owners[:5]]


def test_neighbours_come_from_embeddings_above_the_threshold_and_never_from_an_empty_vector() -> None:
    titles = ["FRED", "SCROOGE'S NEPHEW", "LONDON", "UNEMBEDDED"]
    vectors = np.array([[1.0, 0.1, 0.0], [0.9, 0.2, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    found = pairs(neighbour_candidates(titles, vectors, neighbours=1, min_similarity=0.5))
    assert found == {("FRED", "SCROOGE'S NEPHEW"): "neighbour"}
    everything = pairs(neighbour_candidates(titles, vectors, neighbours=3, min_similarity=-1.0))
    assert not [p for p in everything if "UNEMBEDDED" in p]


def test_candidate_groups_cover_every_pair_within_the_size_limit() -> None:
    rng = random.Random(3)
    titles = [f"E{i:02d}" for i in range(40)]
    rows = {tuple(sorted(rng.sample(titles, 2))) for _ in range(120)}
    candidates = pl.DataFrame(
        {
            "left": [a for a, _ in rows],
            "right": [b for _, b in rows],
            "score": [rng.random() for _ in rows],
            "evidence": ["x"] * len(rows),
        }
    )
    for size in (2, 5, 12):
        groups = candidate_groups(candidates, size)
        covered = {(a, b) for g in groups for i, a in enumerate(g) for b in g[i + 1 :]}
        assert set(rows) <= covered and max(len(g) for g in groups) <= size
        assert groups == candidate_groups(candidates.reverse(), size)  # input order does not matter
    small = pl.DataFrame({"left": ["A", "B"], "right": ["B", "C"], "score": [1.0, 1.0], "evidence": ["x", "x"]})
    assert candidate_groups(small, 3) == [("A", "B", "C")]


# --- offline rules ---------------------------------------------------------------------------


def test_rules_merge_spelling_honorific_and_proper_name_article_variants() -> None:
    frame = profiles(
        [
            ("SCROOGE", "PERSON", 9),
            ("MR. SCROOGE", "PERSON", 2),
            ("THE GHOST OF CHRISTMAS PAST", "PERSON", 3),
            ("GHOST OF CHRISTMAS PAST", "PERSON", 1),
            ("CHRISTMAS-TIME", "EVENT", 2),
            ("CHRISTMAS TIME", "EVENT", 1),
            ("INTERNAL REVENUE SERVICE (IRS)", "ORGANIZATION", 1),
            ("INTERNAL REVENUE SERVICE", "ORGANIZATION", 1),
        ]
    )
    assert merges(frame, "the ghost said") == {
        "MR. SCROOGE": "SCROOGE",
        "GHOST OF CHRISTMAS PAST": "THE GHOST OF CHRISTMAS PAST",
        "CHRISTMAS TIME": "CHRISTMAS-TIME",
        "INTERNAL REVENUE SERVICE": "INTERNAL REVENUE SERVICE (IRS)",
    }


def test_rules_keep_traps_apart() -> None:
    frame = profiles(
        [
            ("BOB CRATCHIT", "PERSON", 9),
            ("MRS. CRATCHIT", "PERSON", 6),
            ("MARLEY", "PERSON", 5),
            ("MARLEY'S GHOST", "PERSON", 4),
            ("FEZZIWIG", "PERSON", 5),
            ("MR. FEZZIWIG", "PERSON", 1),
            ("MRS. FEZZIWIG", "PERSON", 4),
            ("THE MISTRESS", "PERSON", 1),
            ("MISTRESS", "PERSON", 1),
            ("GULL'S PRIDE", "GEO", 3),
            ("PRIDE", "PERSON", 2),
            ("LORD", "PERSON", 1),
            ("THE LORD MAYOR", "PERSON", 1),
        ]
    )
    # "mistress" is written in lower case, so it is a common noun: the article does not make it one thing
    assert merges(frame, "the mistress of the house") == {}


def test_a_full_name_takes_its_parts_only_when_no_other_name_extends_them() -> None:
    frame = profiles(
        [
            ("SCROOGE", "PERSON", 37),
            ("EBENEZER SCROOGE", "PERSON", 4),
            ("EBENEZER", "PERSON", 3),
            ("TIM", "PERSON", 1),
            ("TINY TIM", "PERSON", 9),
            ("TIM CRATCHIT", "PERSON", 1),
            ("JOE", "PERSON", 4),
            ("OLD JOE", "PERSON", 1),
            ("JOE MILLER", "PERSON", 1),
        ]
    )
    assert merges(frame, "an old man") == {"EBENEZER SCROOGE": "SCROOGE", "EBENEZER": "SCROOGE"}


def test_a_type_conflict_stays_apart_under_the_rules() -> None:
    same_type = profiles([("CHRISTMAS-TIME", "EVENT", 2), ("CHRISTMAS TIME", "EVENT", 1)])
    other_type = profiles([("CHRISTMAS-TIME", "EVENT", 2), ("CHRISTMAS TIME", "PERSON", 1)])
    assert merges(same_type) == {"CHRISTMAS TIME": "CHRISTMAS-TIME"}
    assert merges(other_type) == {}


def test_noun_phrases_merge_a_first_or_last_name_only_where_the_full_name_is_used_too() -> None:
    frame = profiles(
        [
            ("SCROOGE", NOUN_PHRASE_TYPE, 30),
            ("EBENEZER SCROOGE", NOUN_PHRASE_TYPE, 3),
            ("JOE", NOUN_PHRASE_TYPE, 3),
            ("JOE MILLER", NOUN_PHRASE_TYPE, 1),
        ],
        units={"SCROOGE": ["u1", "u2"], "EBENEZER SCROOGE": ["u2"], "JOE": ["u3"], "JOE MILLER": ["u4"]},
    )
    assert merges(frame) == {"EBENEZER SCROOGE": "SCROOGE"}


def test_initials_and_acronyms_need_name_like_expansions() -> None:
    frame = profiles(
        [
            ("U.S. COPYRIGHT LAW", "EVENT", 1),
            ("UNITED STATES COPYRIGHT LAW", "EVENT", 1),
            ("MICHAEL S. HART", "PERSON", 2),
            ("MICHAEL HART", "PERSON", 1),
            ("PGLAF", "ORGANIZATION", 1),
            ("PROJECT GUTENBERG LITERARY ARCHIVE FOUNDATION", "ORGANIZATION", 3),
            ("UT", "GEO", 1),
            ("USUAL TIME", "GEO", 1),
        ]
    )
    assert merges(frame, "at the usual time") == {
        "U.S. COPYRIGHT LAW": "UNITED STATES COPYRIGHT LAW",
        "MICHAEL HART": "MICHAEL S. HART",
        "PGLAF": "PROJECT GUTENBERG LITERARY ARCHIVE FOUNDATION",
    }


def test_a_possessive_is_its_of_phrase_when_the_owners_are_one() -> None:
    frame = profiles(
        [
            ("MARLEY'S GHOST", "PERSON", 5),
            ("GHOST OF JACOB MARLEY", "PERSON", 1),
            ("JACOB MARLEY", "PERSON", 8),
            ("MARLEY", "PERSON", 5),
            ("BELLE'S DAUGHTER", "PERSON", 1),
            ("DAUGHTER OF FAN", "PERSON", 1),
            ("FAN", "PERSON", 2),
        ]
    )
    assert merges(frame, "the ghost") == {"MARLEY": "JACOB MARLEY", "GHOST OF JACOB MARLEY": "MARLEY'S GHOST"}


def test_rule_verdicts_say_why() -> None:
    frame = profiles([("MR. TOPPER", "PERSON", 1), ("TOPPER", "PERSON", 4)])
    verdicts = rule_verdicts(frame, name_candidates(frame["title"].to_list()), NameEvidence.from_texts([]))
    assert verdicts.rows() == [("MR. TOPPER", "TOPPER", "rules", 0.95, "same name apart from the honorific MR.")]


# --- clusters --------------------------------------------------------------------------------


def test_a_chain_without_a_verdict_is_not_merged() -> None:
    frame = profiles([("ALPHA", "PERSON", 5), ("BRAVO", "PERSON", 3), ("CHARLIE", "PERSON", 1)])
    chain = verdict_frame([("ALPHA", "BRAVO", "model", 1.0, "a"), ("BRAVO", "CHARLIE", "model", 1.0, "b")])
    aliases = build_clusters(frame, chain)
    assert aliases.select("alias", "canonical_title").rows() == [("BRAVO", "ALPHA")]
    # with a verdict linking the centre to CHARLIE as well, all three are one
    closed = verdict_frame([*chain.iter_rows(), ("ALPHA", "CHARLIE", "model", 0.8, "c")])
    assert build_clusters(frame, closed).select("alias", "canonical_title", "reason").rows() == [
        ("BRAVO", "ALPHA", "a"),
        ("CHARLIE", "ALPHA", "c"),
    ]


def test_the_centre_is_the_most_mentioned_name_and_gives_the_canonical_id() -> None:
    frame = profiles([("EBENEZER SCROOGE", "PERSON", 4), ("SCROOGE", "PERSON", 37)])
    aliases = build_clusters(frame, verdict_frame([("EBENEZER SCROOGE", "SCROOGE", "rules", 0.85, "r")]))
    assert aliases.rows() == [("EBENEZER SCROOGE", entity_id("SCROOGE"), "SCROOGE", "rules", 0.85, "r")]
    assert aliases.schema == pl.Schema(schemas.ENTITY_ALIASES)


# --- application -----------------------------------------------------------------------------


def record(
    unit: str,
    kind: str,
    title: str | None = None,
    ends: tuple[str, str] = ("", ""),
    weight: float | None = None,
    doc: str = "d1",
) -> dict:
    source, target = ends
    return {
        "text_unit_id": unit,
        "record_index": 0,
        "record_type": kind,
        "title": title,
        "type": "PERSON" if kind == "entity" else None,
        "source": source or None,
        "target": target or None,
        "description": f"{kind} {title or ''}{source}-{target} in {unit}",
        "weight": weight,
        "document_key": doc,
    }


def extractions(rows: list[dict]) -> pl.DataFrame:
    return schemas.conform(pl.DataFrame(rows), schemas.GRAPH_EXTRACTIONS)


def test_relationships_are_repointed_and_deduplicated_and_text_unit_links_kept() -> None:
    rows = extractions(
        [
            record("u4", "entity", "SCROOGE"),
            record("u1", "entity", "SCROOGE"),
            record("u1", "entity", "BOB CRATCHIT"),
            record("u2", "entity", "EBENEZER SCROOGE"),
            record("u2", "entity", "BOB CRATCHIT"),
            record("u3", "entity", "SCROOGE"),
            record("u3", "entity", "EBENEZER SCROOGE"),
            record("u1", "relationship", ends=("SCROOGE", "BOB CRATCHIT"), weight=2.0),
            record("u2", "relationship", ends=("EBENEZER SCROOGE", "BOB CRATCHIT"), weight=3.0),
            record("u3", "relationship", ends=("EBENEZER SCROOGE", "SCROOGE"), weight=1.0),
            record("u2", "claim", ends=("EBENEZER SCROOGE", "BOB CRATCHIT")),
        ]
    )
    aliases = build_clusters(
        merged_profiles(merge_graph(rows).entities),
        verdict_frame([("EBENEZER SCROOGE", "SCROOGE", "rules", 0.85, "r")]),
    )
    merged = merge_graph(apply_aliases(rows, aliases))
    entities, relationships = finalize_graph(merged.entities, merged.relationships, {}, {})
    entities = with_aliases(entities, aliases)
    assert entities.select("title", "text_unit_ids", "frequency", "aliases").rows() == [
        ("BOB CRATCHIT", ["u1", "u2"], 2, []),
        ("SCROOGE", ["u1", "u2", "u3", "u4"], 4, ["EBENEZER SCROOGE"]),
    ]
    assert relationships.select("source", "target", "weight", "text_unit_ids").rows() == [
        ("BOB CRATCHIT", "SCROOGE", 5.0, ["u1", "u2"])
    ]
    assert merged.stats.self_loops_dropped == 1  # the relationship between the two names of Scrooge
    assert finalize_covariates(apply_aliases(rows, aliases))["subject_id"].to_list() == ["SCROOGE"]


def test_deleting_the_only_document_that_mentions_an_alias_removes_the_alias() -> None:
    both = extractions(
        [
            record("u1", "entity", "SCROOGE", doc="a"),
            record("u2", "entity", "SCROOGE", doc="b"),
            record("u2", "entity", "EBENEZER SCROOGE", doc="b"),
        ]
    )

    def resolved(rows: pl.DataFrame) -> pl.DataFrame:
        return resolve_with_rules(
            merged_profiles(merge_graph(rows).entities), NameEvidence.from_texts([]), ResolutionOptions()
        ).aliases

    assert resolved(both)["alias"].to_list() == ["EBENEZER SCROOGE"]
    assert resolved(both.filter(pl.col("document_key") != "b")).is_empty()


def test_noun_phrase_profiles_count_text_units() -> None:
    rows = extractions(
        [
            record("u1", "noun_phrase", "SCROOGE"),
            record("u2", "noun_phrase", "SCROOGE"),
            record("u2", "noun_phrase", "BOB"),
        ]
    )
    frame = noun_phrase_profiles(rows, NOUN_PHRASE_TYPE)
    assert frame.select("title", "type", "frequency", "text_unit_ids").rows() == [
        ("BOB", NOUN_PHRASE_TYPE, 1, ["u2"]),
        ("SCROOGE", NOUN_PHRASE_TYPE, 2, ["u1", "u2"]),
    ]


@pytest.mark.parametrize("seed", [0, 1])
def test_resolution_does_not_depend_on_row_order(seed: int) -> None:
    frame = profiles(
        [
            ("SCROOGE", "PERSON", 9),
            ("EBENEZER SCROOGE", "PERSON", 2),
            ("EBENEZER", "PERSON", 1),
            ("MR. SCROOGE", "PERSON", 1),
            ("THE CRATCHIT FAMILY", "ORGANIZATION", 2),
            ("CRATCHIT FAMILY", "ORGANIZATION", 2),
        ]
    )
    expected = resolve_with_rules(frame, NameEvidence.from_texts([]), ResolutionOptions()).aliases
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    assert resolve_with_rules(shuffled, NameEvidence.from_texts([]), ResolutionOptions()).aliases.equals(expected)
    assert expected.height == 4
