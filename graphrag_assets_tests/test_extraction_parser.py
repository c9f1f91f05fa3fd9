"""Tests of the tolerant extraction-answer parser, on hand-made answers and on 84 real gpt-4o answers."""

from __future__ import annotations

import json
import random

import pytest

from graphrag_assets.index.extraction_parser import (
    ClaimRecord,
    EntityRecord,
    RelationshipRecord,
    normalize_title,
    parse_claims_answer,
    parse_graph_answer,
    parse_weight,
    split_records,
)
from graphrag_assets_testkit.shared_data import NANO_MOCK_CACHE, require


def titles(text: str) -> list[str]:
    return [e.title for e in parse_graph_answer(text).entities]


def edges(text: str) -> list[tuple[str, str, float]]:
    return [(r.source, r.target, r.weight) for r in parse_graph_answer(text).relationships]


# --- the documented format ------------------------------------------------------------------


def test_well_formed_answer_exact_records():
    answer = (
        '("entity"<|>Ada Lovelace<|>person<|>Ada Lovelace wrote the first program.)##\n'
        '("entity"<|>Analytical Engine<|>technology<|>A mechanical computer.)##\n'
        '("relationship"<|>Ada Lovelace<|>Analytical Engine<|>She wrote a program for it.<|>9)\n'
        "<|COMPLETE|>"
    )
    parsed = parse_graph_answer(answer)
    assert parsed.entities == [
        EntityRecord(0, "ADA LOVELACE", "PERSON", "Ada Lovelace wrote the first program."),
        EntityRecord(1, "ANALYTICAL ENGINE", "TECHNOLOGY", "A mechanical computer."),
    ]
    assert parsed.relationships == [
        RelationshipRecord(2, "ADA LOVELACE", "ANALYTICAL ENGINE", "She wrote a program for it.", 9.0)
    ]
    assert parsed.failures == [] and parsed.ignored == 0


@pytest.mark.parametrize("record_type", ['"entity"', "'entity'", "entity", "“entity”", " Entity ", '"ENTITY"'])
def test_record_type_in_any_quotes_or_case(record_type):
    assert titles(f"({record_type}<|>Kessmoor<|>geo<|>A village.)") == ["KESSMOOR"]


def test_fields_with_mixed_quotes_are_unquoted():
    parsed = parse_graph_answer('("entity"<|>"Kessmoor"<|>“geo”<|>"A village, called ""old"" by some.")')
    assert parsed.entities == [EntityRecord(0, "KESSMOOR", "GEO", 'A village, called ""old"" by some.')]


def test_missing_parentheses_and_newline_separated_records():
    answer = '"entity"<|>A<|>person<|>first\n"entity"<|>B<|>person<|>second\n"relationship"<|>A<|>B<|>knows<|>3'
    assert titles(answer) == ["A", "B"]
    assert edges(answer) == [("A", "B", 3.0)]


def test_records_separated_by_blank_line_without_delimiter():
    answer = '("entity"<|>A<|>person<|>first)\n\n("relationship"<|>A<|>B<|>knows<|>4)'
    assert titles(answer) == ["A"] and edges(answer) == [("A", "B", 4.0)]


def test_description_broken_over_two_lines_stays_one_record():
    answer = '("entity"<|>A<|>person<|>first line\ncontinues here)##("entity"<|>B<|>geo<|>x)'
    parsed = parse_graph_answer(answer)
    assert [e.description for e in parsed.entities] == ["first line continues here", "x"]


def test_completion_marker_glued_to_next_record_and_any_case():
    answer = '("entity"<|>A<|>person<|>a)<|COMPLETE|>("entity"<|>B<|>person<|>b)<|complete|>("entity"<|>C<|>geo<|>c)'
    assert titles(answer) == ["A", "B", "C"]


def test_markdown_fences_headings_numbering_and_bold_delimiters():
    answer = (
        "```plaintext\n**Entities:**\n\n"
        '1. ("entity"<|>A<|>person<|>a)\n'
        '2. ("entity"<|>B<|>person<|>b)\n\n'
        "**Relationships:**\n\n"
        '- ("relationship"<|>A<|>B<|>r<|>6)\n\n**##**\n```'
    )
    parsed = parse_graph_answer(answer)
    assert [e.title for e in parsed.entities] == ["A", "B"]
    assert [(r.source, r.target) for r in parsed.relationships] == [("A", "B")]
    assert parsed.failures == []
    assert parsed.ignored == 4  # two headings and the two halves of "**##**"


def test_broken_field_delimiters_are_repaired():
    answer = (
        '("relationship"<|>"A"<|>"B"<|>"r1"|>8)##'
        '("relationship"<|>"A"<|>"C"<|>"r2"</|>7)##'
        '("relationship"<|>"A"<|>"D"<|>"r3"<|/>6)'
    )
    assert edges(answer) == [("A", "B", 8.0), ("A", "C", 7.0), ("A", "D", 6.0)]


def test_pipe_operator_in_a_description_is_not_a_delimiter():
    parsed = parse_graph_answer('("entity"<|>F#<|>technology<|>Code like xs |> map f reads left to right.)')
    assert [e.description for e in parsed.entities] == ["Code like xs |> map f reads left to right."]


def test_completion_marker_is_not_mistaken_for_a_broken_delimiter():
    assert split_records('("entity"<|>A<|>person<|>a)<|COMPLETE|>') == ['("entity"<|>A<|>person<|>a)']


@pytest.mark.parametrize(
    ("field", "weight"),
    [
        ("8", 8.0),
        ("6.5", 6.5),
        ('"7"', 7.0),
        ("8/10", 8.0),
        ("strength: 9", 9.0),
        ("high", 1.0),
        ("", 1.0),
        ("nan", 1.0),
    ],
)
def test_strength_values(field, weight):
    assert parse_weight(field) == weight


def test_relationship_without_strength_gets_default_weight():
    assert edges('("relationship"<|>A<|>B<|>linked)') == [("A", "B", 1.0)]


def test_relation_is_accepted_as_relationship():
    assert edges('("relation"<|>A<|>B<|>linked<|>2)') == [("A", "B", 2.0)]


def test_html_entities_and_control_characters():
    parsed = parse_graph_answer('("entity"<|>Tom &amp; Jerry<|>org&#39;n<|>A &quot;duo&quot;\x07 of\x00 cartoons.)')
    assert parsed.entities == [EntityRecord(0, "TOM & JERRY", "ORG'N", 'A "duo" of cartoons.')]


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ('  "scrooge\'s   nephew" ', "SCROOGE'S NEPHEW"),
        ("'Tis the Season", "'TIS THE SEASON"),  # an apostrophe, not a quote
        ("the Joneses'", "THE JONESES'"),
        ("'Marley'", "MARLEY"),
        ("“Fezziwig”", "FEZZIWIG"),
        ("Bob\nCratchit", "BOB CRATCHIT"),
        ('""', ""),
        ("Scroo\x00ge\tand\x1f\nco", "SCROOGE AND CO"),
    ],
)
def test_title_normalization(raw, title):
    assert normalize_title(raw) == title


def test_unparseable_records_are_reported_with_reasons_and_positions():
    answer = (
        '("entity"<|>A<|>person)##'  # too few fields
        '("entity"<|>B<|>person<|>b)##'
        '("event"<|>C<|>x<|>y)##'  # unknown record type
        '("relationship"<|>""<|>B<|>r<|>1)##'  # empty source
        '("relationship"<|>A<|>B<|>r<|>1<|>extra)##'  # too many fields
        '("entity"<|>""<|>person<|>nameless)##'
        "Here are the entities I found:"
    )
    parsed = parse_graph_answer(answer)
    assert parsed.entities == [EntityRecord(1, "B", "PERSON", "b")]
    assert parsed.relationships == []
    assert [(f.index, f.reason) for f in parsed.failures] == [
        (0, "entity record has 3 fields; expected 4"),
        (2, "unknown record type 'event'; expected 'entity' or 'relationship'"),
        (3, "relationship record has an empty source or target"),
        (4, "relationship record has 6 fields; expected 5"),
        (5, "entity record has an empty name"),
    ]
    assert parsed.failures[0].text == '("entity"<|>A<|>person)'
    assert parsed.ignored == 1


def test_trailing_empty_field_is_tolerated():
    assert titles('("entity"<|>A<|>person<|>a<|>)') == ["A"]


@pytest.mark.parametrize("answer", ["", "   ", "<|COMPLETE|>", "##\n##", "No entities found."])
def test_answers_without_records(answer):
    parsed = parse_graph_answer(answer)
    assert parsed.entities == [] and parsed.relationships == [] and parsed.failures == []


def test_parser_never_raises_on_garbage():
    rng = random.Random(7)
    alphabet = [
        "(",
        ")",
        '"',
        "'",
        "<|>",
        "##",
        "<|COMPLETE|>",
        "|>",
        "\n",
        " ",
        "entity",
        "relationship",
        "x",
        "7",
        "&amp;",
        "\x00",
        "```",
        "1. ",
        "**",
    ]
    records = 0
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        parsed = parse_graph_answer(text)
        claims = parse_claims_answer(text)
        records += len(parsed.entities) + len(parsed.relationships) + len(parsed.failures) + len(claims.claims)
    assert records > 0  # the generator does produce record-like text


# --- claims ------------------------------------------------------------------------------------


def test_claim_records():
    answer = (
        "(Corvel Shipping<|>Harbour Authority<|>environmental violation<|>true<|>2021-05-04<|>2021-05-04"
        "<|>Corvel was fined.<|>the authority fined Corvel)##\n"
        '("Ruth Mays"<|>""<|>fraud<|>SUSPECTED<|>none<|><|>Alleged.<|>"she denies it")\n<|COMPLETE|>'
    )
    parsed = parse_claims_answer(answer)
    assert parsed.claims == [
        ClaimRecord(
            0,
            "CORVEL SHIPPING",
            "HARBOUR AUTHORITY",
            "ENVIRONMENTAL VIOLATION",
            "TRUE",
            "2021-05-04",
            "2021-05-04",
            "Corvel was fined.",
            "the authority fined Corvel",
        ),
        ClaimRecord(1, "RUTH MAYS", "NONE", "FRAUD", "SUSPECTED", "NONE", "NONE", "Alleged.", "she denies it"),
    ]
    assert parsed.failures == []


def test_claim_with_type_prefix_and_bad_claim():
    answer = '("claim"<|>A<|>B<|>T<|>TRUE<|>NONE<|>NONE<|>d<|>q)##(A<|>B<|>T<|>TRUE<|>NONE<|>d<|>q)'
    parsed = parse_claims_answer(answer)
    assert [c.subject for c in parsed.claims] == ["A"]
    assert [(f.index, f.reason) for f in parsed.failures] == [(1, "claim record has 7 fields; expected 8")]


def test_claims_separated_by_newlines_only():
    answer = "(A<|>B<|>T<|>TRUE<|>NONE<|>NONE<|>d1<|>q1)\n(C<|>D<|>T<|>FALSE<|>NONE<|>NONE<|>d2<|>q2)"
    assert [(c.subject, c.object) for c in parse_claims_answer(answer).claims] == [("A", "B"), ("C", "D")]


# --- 84 real gpt-4o answers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cached_answers() -> dict[str, str]:
    data = json.loads(require(NANO_MOCK_CACHE).read_text(encoding="utf-8"))
    return {key: entry["return"] for key, entry in data.items()}


@pytest.fixture(scope="module")
def extraction_answers(cached_answers) -> dict[str, str]:
    """Extraction answers are the ones using the field delimiter; the rest are report JSON or prose."""
    return {key: text for key, text in cached_answers.items() if "<|>" in text}


def test_real_answers_are_classified(cached_answers, extraction_answers):
    others = [text for key, text in cached_answers.items() if key not in extraction_answers]
    json_answers = 0
    for text in others:
        try:
            json.loads(text)
            json_answers += 1
        except json.JSONDecodeError:
            pass
    assert (len(cached_answers), len(extraction_answers), json_answers, len(others) - json_answers) == (187, 84, 101, 2)


def test_real_answers_totals(extraction_answers):
    parsed = [parse_graph_answer(text) for text in extraction_answers.values()]
    assert sum(len(p.entities) for p in parsed) == 654
    assert sum(len(p.relationships) for p in parsed) == 520
    assert sum(len(p.failures) for p in parsed) == 0
    assert sum(p.ignored for p in parsed) == 14  # markdown headings and "**" in six answers
    assert all(p.entities for p in parsed)
    weights = sorted({r.weight for p in parsed for r in p.relationships})
    assert weights == [4.0, 5.0, 6.0, 6.5, 7.0, 8.0, 9.0, 10.0]
    types = {e.type for p in parsed for e in p.entities}
    assert types == {"PERSON", "EVENT", "GEO", "ORGANIZATION", "CONCEPT", "LOCATION", "TECHNOLOGY", "OBJECT"}
    for p in parsed:
        for e in p.entities:
            assert e.title == e.title.upper().strip() and '"' not in e.title and e.description
            assert not e.description.startswith('"') and not e.description.endswith('"')


# Answers that break the format, how, and what must be recovered from them:
# key -> (entities, relationships, ignored segments)
MALFORMED = {
    "587cd9809b0bd6b7f79edc675c717dda": (6, 5, 0),  # record type "relation" instead of "relationship"
    "4a56564cb9925eb9c7ff069ae186a6fa": (8, 8, 0),  # strength 6.5
    "47f7f7f38ad3a8c64452a5d1b333665b": (9, 7, 0),  # curly quotes “relationship”
    "5c242ddd99813b118311df044a748a27": (3, 2, 0),  # ``` fences and "|>8" (missing "<")
    "08e3f86743dead684fc94f3e900ec57a": (7, 7, 0),  # ``` fences and seven "|>N" delimiters
    "a4e8e3ec3dc5c90110a50b92bf1481b6": (13, 13, 0),  # "</|>8" delimiter
    "6cf7c967ce656b4c9fd7ec33cff46e35": (10, 9, 0),  # lower-case <|complete|>
    "d2b14e1e9efe92d57b1f0160f95f7b51": (9, 6, 4),  # numbered lists, headings, no "##", "**##**"
    "be0dce3bdce9b8818b904c412dd18809": (7, 6, 0),  # last entity and first relationship without "##"
    "720d56c2cbc5c2d968c0e4e39a40813b": (7, 4, 2),  # headings and "##(" at line starts
    "b236a613dd72159bd0c1078cf5fd3aa8": (5, 4, 2),  # "**Additional Entities:**" + numbered records
}


@pytest.mark.parametrize("key", sorted(MALFORMED))
def test_real_malformed_answers(extraction_answers, key):
    parsed = parse_graph_answer(extraction_answers[key])
    assert (len(parsed.entities), len(parsed.relationships), parsed.ignored) == MALFORMED[key]
    assert parsed.failures == []


def test_real_malformed_answers_field_values(extraction_answers):
    relation = parse_graph_answer(extraction_answers["587cd9809b0bd6b7f79edc675c717dda"]).relationships
    assert (relation[0].source, relation[0].target, relation[0].weight) == ("SCROOGE", "JACOB MARLEY", 10.0)
    fractional = parse_graph_answer(extraction_answers["4a56564cb9925eb9c7ff069ae186a6fa"]).relationships
    assert ("THE TOOTHPICK", "SCROOGE", 6.5) in [(r.source, r.target, r.weight) for r in fractional]
    curly = parse_graph_answer(extraction_answers["47f7f7f38ad3a8c64452a5d1b333665b"]).relationships
    assert ("PROFESSOR MICHAEL S. HART", "PROJECT GUTENBERG LITERARY ARCHIVE FOUNDATION", 9.0) in [
        (r.source, r.target, r.weight) for r in curly
    ]
    repaired = parse_graph_answer(extraction_answers["08e3f86743dead684fc94f3e900ec57a"]).relationships
    assert [r.weight for r in repaired] == [9.0, 8.0, 7.0, 6.0, 5.0, 7.0, 9.0]
    assert (
        repaired[-1].description
        == "U.S. copyright law applies to the distribution and use of works within the United States."
    )
    slash = parse_graph_answer(extraction_answers["a4e8e3ec3dc5c90110a50b92bf1481b6"]).relationships
    assert ("THE ROOM", "EBENEZER SCROOGE", 8.0) in [(r.source, r.target, r.weight) for r in slash]
    glued = parse_graph_answer(extraction_answers["be0dce3bdce9b8818b904c412dd18809"])
    assert glued.entities[-1].title == "THE YOUNG CRATCHITS"
    assert glued.relationships[0].source == "BOB CRATCHIT"
