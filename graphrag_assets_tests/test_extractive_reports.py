"""Extractive community reports on a tiny hand-made community."""

from __future__ import annotations

import inspect
import json
import random
import re

import polars as pl

from graphrag_assets.core.ids import entity_id, relationship_id, short_id, stable_uuid
from graphrag_assets.core.schemas import COMMUNITY_REPORTS
from graphrag_assets.core.sentences import prepare_text, sentences_with_words, tokenize
from graphrag_assets.index.extractive_reports import (
    LONG_SENTENCE_CHARS,
    Findings,
    _Sentence,
    extractive_reports,
    rating,
    sentence_key,
    titles_by_unit,
    unit_sentences,
)

U1 = "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
U2 = "22222222-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
U3 = "33333333-cccc-4ccc-8ccc-cccccccccccc"

TEXT_UNITS = pl.DataFrame(
    {
        "id": [U1, U2, U3],
        "text": [
            "It was a cold day. Scrooge sat in the counting-house. Marley had been dead for years.",
            "Then Scrooge and Marley shared the counting-house with Fred. Fred laughed at Scrooge.",
            "A different story about Belle.",
        ],
    }
)

DEGREES = {"SCROOGE": 3, "MARLEY": 2, "COUNTING-HOUSE": 2, "FRED": 1, "BELLE": 0}
UNITS_OF = {"SCROOGE": [U1, U2], "MARLEY": [U1, U2], "COUNTING-HOUSE": [U1, U2], "FRED": [U2], "BELLE": [U3]}

ENTITIES = pl.DataFrame(
    {
        "id": [entity_id(t) for t in DEGREES],
        "title": list(DEGREES),
        "degree": list(DEGREES.values()),
        "text_unit_ids": [UNITS_OF[t] for t in DEGREES],
    }
)
EDGES = [("MARLEY", "SCROOGE"), ("COUNTING-HOUSE", "SCROOGE"), ("COUNTING-HOUSE", "MARLEY"), ("FRED", "SCROOGE")]
RELATIONSHIPS = pl.DataFrame(
    {"id": [relationship_id(s, t) for s, t in EDGES], "source": [s for s, _ in EDGES], "target": [t for _, t in EDGES]}
)


def community(number: int, titles: list[str], units: list[str], level: int = 0, parent: int = -1) -> dict:
    return {
        "id": f"community-{number}",
        "human_readable_id": number,
        "community": number,
        "level": level,
        "parent": parent,
        "children": [],
        "title": f"Community {number}",
        "entity_ids": [entity_id(t) for t in titles],
        "relationship_ids": [relationship_id(s, t) for s, t in EDGES if s in titles and t in titles],
        "text_unit_ids": units,
        "period": "2026-01-01",
        "size": len(titles),
    }


COMMUNITIES = pl.DataFrame(
    [
        community(0, ["SCROOGE", "MARLEY", "COUNTING-HOUSE", "FRED"], [U1, U2]),
        community(1, ["BELLE"], []),
    ]
)


def reports(max_findings: int = 5) -> pl.DataFrame:
    return extractive_reports(COMMUNITIES, ENTITIES, RELATIONSHIPS, TEXT_UNITS, max_findings=max_findings)


def test_schema_and_copied_columns() -> None:
    result = reports()
    assert result.schema == pl.Schema(COMMUNITY_REPORTS)
    assert result.select("community", "human_readable_id", "level", "parent", "children", "period", "size").rows() == [
        (0, 0, 0, -1, [], "2026-01-01", 4),
        (1, 1, 0, -1, [], "2026-01-01", 1),
    ]
    assert set(result["generation"]) == {"extractive"}
    assert result["substituted_reports"].to_list() == [0, 0]


def test_title_names_proper_names_first_then_by_degree() -> None:
    # FRED (degree 1) is a name and comes before COUNTING-HOUSE (degree 2), a hyphenated common noun
    assert reports()["title"].to_list() == ["SCROOGE, MARLEY and FRED", "BELLE"]


def test_title_prefers_plain_phrases_to_hyphenated_and_number_words_and_needs_mid_sentence_capitals() -> None:
    text = (
        "Winter came. The old clerk wore a dressing-gown for three-quarters of an hour. "
        "The old clerk slept. Winter again."
    )
    titles = {"DRESSING-GOWN": 5, "THREE-QUARTERS": 4, "OLD CLERK": 1, "WINTER": 0}
    entities = pl.DataFrame(
        {
            "id": [entity_id(t) for t in titles],
            "title": list(titles),
            "degree": list(titles.values()),
            "text_unit_ids": [[U1]] * len(titles),
        }
    )
    communities = pl.DataFrame([community(0, list(titles), [U1])])
    units = pl.DataFrame({"id": [U1], "text": [text]})
    report = extractive_reports(communities, entities, RELATIONSHIPS.clear(), units)
    # WINTER is only ever capitalised at a sentence start: no evidence of a name, so it ranks by degree
    assert report["title"].to_list() == ["OLD CLERK, WINTER and DRESSING-GOWN"]


def test_findings_are_the_most_central_sentences_with_real_citations() -> None:
    row = reports().row(0, named=True)
    # score = Σ (1 + degree): "Then Scrooge and Marley shared the counting-house with Fred." =
    # 4+3+3+2 = 12, "Scrooge sat in the counting-house." = 4+3 = 7, "Fred laughed at Scrooge." =
    # 2+4 = 6, "Marley had been dead for years." = 3; "It was a cold day." mentions nobody.
    assert [f["explanation"] for f in row["findings"]] == [
        f"Then Scrooge and Marley shared the counting-house with Fred. [Data: Sources ({short_id(U2)})]",
        f"Scrooge sat in the counting-house. [Data: Sources ({short_id(U1)})]",
        f"Fred laughed at Scrooge. [Data: Sources ({short_id(U2)})]",
        f"Marley had been dead for years. [Data: Sources ({short_id(U1)})]",
    ]
    assert row["findings"][0]["summary"] == "Then Scrooge and Marley shared the counting-house with Fred."
    cited = set(re.findall(r"\[Data: Sources \(([0-9a-f]+)\)\]", row["full_content"]))
    assert cited and cited <= {short_id(u) for u in TEXT_UNITS["id"]}
    assert len(reports(max_findings=2).row(0, named=True)["findings"]) == 2


def test_summary_names_size_links_and_units() -> None:
    summary = reports()["summary"][0]
    assert summary.startswith(
        "A community of 4 noun phrases around SCROOGE, MARLEY and FRED, "
        "linked by 4 co-occurrence relationships in 2 text units."
    )


def test_full_content_json_and_id() -> None:
    for row in reports().iter_rows(named=True):
        assert row["full_content"].startswith(f"# {row['title']}\n\n{row['summary']}")
        for finding in row["findings"]:
            assert f"## {finding['summary']}\n\n{finding['explanation']}" in row["full_content"]
        content = json.loads(row["full_content_json"])
        assert content["extractive"] is True
        assert content["title"] == row["title"]
        assert content["rating"] == row["rank"]
        assert content["findings"] == row["findings"]
        assert "no language model" in row["rating_explanation"]
        assert row["id"] == stable_uuid(row["full_content"])


def test_community_without_units_uses_its_entities_units() -> None:
    belle = reports().row(1, named=True)
    assert [f["explanation"] for f in belle["findings"]] == [
        f"A different story about Belle. [Data: Sources ({short_id(U3)})]"
    ]


def test_rating_formula_and_monotonicity() -> None:
    assert rating(5, 3.0) == 2.7
    assert rating(30, 20.0) == 8.6
    assert rating(0, 0.0) == 0.0
    sizes = [rating(size, 4.0) for size in range(1, 200, 7)]
    degrees = [rating(10, degree / 2) for degree in range(0, 200, 7)]
    assert sizes == sorted(sizes) and degrees == sorted(degrees)
    assert all(0.0 <= value <= 10.0 for value in sizes + degrees)
    ranks = reports()["rank"].to_list()
    assert ranks[0] > ranks[1]  # 4 entities, mean degree 2 vs 1 entity, degree 0


def test_deterministic() -> None:
    assert reports().equals(reports())


def test_no_communities_gives_an_empty_table() -> None:
    empty = extractive_reports(COMMUNITIES.clear(), ENTITIES, RELATIONSHIPS, TEXT_UNITS)
    assert empty.is_empty()
    assert empty.schema == pl.Schema(COMMUNITY_REPORTS)


def test_ties_go_to_the_earlier_unit_and_sentence() -> None:
    marley = pl.DataFrame([community(7, ["MARLEY"], [U2, U1])])
    row = extractive_reports(marley, ENTITIES, RELATIONSHIPS, TEXT_UNITS).row(0, named=True)
    # both sentences score 3 (only MARLEY is in this community); U1 comes first in text_units
    assert [f["explanation"] for f in row["findings"]] == [
        f"Marley had been dead for years. [Data: Sources ({short_id(U1)})]",
        f"Then Scrooge and Marley shared the counting-house with Fred. [Data: Sources ({short_id(U2)})]",
    ]


def test_unknown_entity_ids_are_ignored() -> None:
    extra = COMMUNITIES.with_columns(pl.col("entity_ids").list.concat(pl.lit(["unknown-entity"])))
    result = extractive_reports(extra, ENTITIES, RELATIONSHIPS, TEXT_UNITS)
    assert result["title"].to_list() == reports()["title"].to_list()


def test_links_count_distinct_ids_that_relationships_hold() -> None:
    extra = COMMUNITIES.with_columns(
        pl.col("relationship_ids").list.concat(pl.col("relationship_ids")).list.concat(pl.lit(["not-a-relationship"]))
    )
    summary = extractive_reports(extra, ENTITIES, RELATIONSHIPS, TEXT_UNITS)["summary"][0]
    assert "linked by 4 co-occurrence relationships" in summary
    # without relationships to check against, every distinct id counts
    summary = extractive_reports(extra, ENTITIES, RELATIONSHIPS.clear(), TEXT_UNITS)["summary"][0]
    assert "linked by 5 co-occurrence relationships" in summary


def test_a_community_keeps_the_best_sentences_of_distinct_text_as_sorting_them_all_would() -> None:
    """The findings are chosen as the sentences stream past (a community keeps its best few, not
    every sentence of its units): the same as sorting every sentence and skipping repeated texts."""
    rng = random.Random(7)
    titles = ["A", "B", "C", "D"]
    degree = {"A": 4, "B": 1, "C": 0}
    checked = 0
    for _ in range(200):
        texts = [rng.choice(["one", "two", "three", "four", "x" * (LONG_SENTENCE_CHARS + 1)]) for _ in range(12)]
        sentences = [
            _Sentence(
                "u",
                rng.randrange(5),
                index,
                text,
                sentence_key(text),
                len(text) > LONG_SENTENCE_CHARS,
                frozenset(rng.sample(titles, rng.randrange(1, 3))),
            )
            for index, text in enumerate(texts[: rng.randrange(12)])
        ]
        limit = rng.randrange(1, 4)
        findings = Findings(degree, limit)
        for sentence in sentences:
            findings.offer(sentence)
        ranked = sorted(
            (
                (
                    len(s.text) > LONG_SENTENCE_CHARS,
                    -sum(1 + degree[t] for t in s.mentions & degree.keys()),
                    s.position,
                    s.index,
                ),
                s,
            )
            for s in sentences
            if s.mentions & degree.keys()
        )
        expected, seen = [], set()
        for _, sentence in ranked:
            if sentence.text not in seen and len(expected) < limit:
                seen.add(sentence.text)
                expected.append(sentence)
        assert findings.best() == expected
        checked += bool(expected)
    assert checked > 100


def test_sentences_are_made_one_unit_at_a_time_not_held_for_the_whole_corpus() -> None:
    entities = pl.DataFrame({"title": ["SCROOGE"], "text_unit_ids": [[U1, U2]]})
    sentences = unit_sentences({U1, U2}, titles_by_unit(entities, {U1, U2}), TEXT_UNITS)
    assert inspect.isgenerator(sentences)
    assert [(s.unit_id, s.index) for s in sentences] == [(U1, 1), (U2, 0), (U2, 1)]


def test_a_sentences_words_from_its_units_tokenisation_are_those_of_the_sentence_alone() -> None:
    """The reports read each sentence's words from its unit's tokenisation instead of tokenising
    the sentence again; the words and their sentence-initial marks must be the same."""
    text = (
        "Mr. Scrooge met J. R. Marley at 10:30 on the U.S.A. stage. 'Why?' said Bob. \"Hello,\" she "
        'said."Next" came Fred\'s turn: he paid 2,500 pounds to Dr. Topper. Look at www.example.com now!\n'
        "A line\nthat goes on... and on. Ghost of Christmas Past — the first spirit — spoke.\n\n"
        "THE END OF IT. the last words were lower case; Then TINY TIM said it."
    )
    checked = 0
    for sentence, _, words in sentences_with_words(text):
        if any(ch.islower() for ch in sentence):
            alone = [(t.text, t.initial) for t in tokenize(prepare_text(sentence)) if t.kind == "word"]
            assert [(w.text, w.initial) for w in words] == alone, sentence
            checked += 1
    assert checked >= 8
