"""Extractive answers: the right sentences, cited, under a plain no-LLM notice."""

from __future__ import annotations

import polars as pl

from graphrag_assets.core.sentences import mention_key
from graphrag_assets.llm.local_embedder import LocalEmbedder
from graphrag_assets.query.extractive import (
    HEADER,
    NO_MATCH,
    extractive_answer,
    keywords,
    may_name,
    question_sources,
    stem,
    subject_sources,
)
from graphrag_assets.query.lexical import Bm25Index
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.results import ContextRecord, ContextRecords

SOURCES = [
    ("Sources (3f9a2c1b)", "The market in the square sells fish and bread every morning. Prices rose this week."),
    (
        "Sources (0a1b2c3d)",
        "The lighthouse on the northern cape is old. Tomas, the lighthouse keeper, runs the light every night. "
        "He lives alone.",
    ),
    ("Reports (12)", "# Harbour community\n\nThe harbour master, Ines, keeps the fishing fleet in order."),
]


def answer(question: str, max_sentences: int = 5, sources=SOURCES) -> str:
    return extractive_answer(question, sources, LocalEmbedder(), max_sentences=max_sentences)


def test_picks_the_right_sentence_and_cites_it() -> None:
    assert answer("Who runs the lighthouse?", max_sentences=1) == (
        f"{HEADER}\n\nTomas, the lighthouse keeper, runs the light every night. [Data: Sources (0a1b2c3d)]"
    )


def test_first_line_says_no_language_model_was_used() -> None:
    text = answer("What does the market sell?")
    assert text.splitlines()[0] == (
        "(Extractive answer: no language model was used; these are the most relevant passages.)"
    )
    assert text.splitlines()[2] == (
        "The market in the square sells fish and bread every morning. [Data: Sources (3f9a2c1b)]"
    )


def test_reports_are_cited_with_their_own_label() -> None:
    text = answer("Who is the harbour master?", max_sentences=1)
    assert text.endswith("The harbour master, Ines, keeps the fishing fleet in order. [Data: Reports (12)]")


def test_ranked_by_relevance_and_bounded() -> None:
    text = answer("lighthouse keeper", max_sentences=2)
    body = text.split("\n\n")[1:]
    assert body == [
        "Tomas, the lighthouse keeper, runs the light every night. [Data: Sources (0a1b2c3d)]",
        "The lighthouse on the northern cape is old. [Data: Sources (0a1b2c3d)]",
    ]


def test_unrelated_question_finds_nothing() -> None:
    assert answer("quantum chromodynamics") == f"{HEADER}\n\n{NO_MATCH}"
    assert answer("anything", sources=[]) == f"{HEADER}\n\n{NO_MATCH}"


def test_duplicate_sentences_are_shown_once() -> None:
    doubled = SOURCES + [("Sources (ffffffff)", "Tomas, the lighthouse keeper, runs the light every night.")]
    text = answer("Who runs the lighthouse?", sources=doubled)
    assert text.count("Tomas, the lighthouse keeper") == 1
    assert "[Data: Sources (ffffffff)]" not in text


def test_deterministic() -> None:
    assert answer("Who keeps the fleet?") == answer("Who keeps the fleet?")


def test_keywords_are_stemmed_content_words() -> None:
    assert stem("keepers") == "keeper" and stem("runs") == "run" and stem("tomas's") == stem("tomas")
    assert keywords("Who runs the lighthouse?") == {"run", "lighthouse"}


def test_headings_and_existing_citations_are_not_quoted_as_answers() -> None:
    from graphrag_assets.llm.local_embedder import LocalEmbedder
    from graphrag_assets.query.extractive import extractive_answer

    report = "# SØREN HOLM and the lighthouse\n\nSøren Holm keeps the lighthouse. [Data: Sources (abc12345)]\n\n## Søren Holm at sea\n\nHe relayed a mayday."
    answer = extractive_answer("Who is Søren Holm?", [("Reports (3)", report)], LocalEmbedder(), max_sentences=3)
    assert "# " not in answer and "abc12345" not in answer
    assert "Søren Holm keeps the lighthouse. [Data: Reports (3)]" in answer


def test_a_question_naming_nothing_reads_the_passages_its_words_find() -> None:
    units = pl.DataFrame(
        {
            "id": ["u-context", "u-bell", "u-other"],
            "human_readable_id": [1, 2, 3],
            "document_id": ["d", "d", "d"],
            "text": [
                "The Spirit stood beside him in the doorway.",
                "Expect the first spirit to-morrow, when the bell tolls One.",
                "The fog came pouring in at every chink.",
            ],
        }
    )
    data = QueryData(text_units=units, text_unit_lexical=Bm25Index(units["id"].to_list(), units["text"].to_list()))
    records = ContextRecords(sources=[ContextRecord("u-context", 1, "ctx", "")])
    found = question_sources("When will the first spirit come?", data, records)
    assert [label for label, _ in found] == ["Sources (ubell)"]  # the context's own passage is not repeated
    assert "bell tolls One" in found[0][1]
    # a question that names its subject is widened by subject_sources instead
    assert question_sources("When will Scrooge see the first spirit?", data, records) == []
    assert question_sources("When will the first spirit come?", QueryData(text_units=units), records) == []


def test_the_subject_s_passages_keep_the_sentences_that_continue_them() -> None:
    units = pl.DataFrame(
        {
            "id": ["u-context", "u-mara"],
            "document_id": ["d", "d"],
            "chunk_index": [0, 1],
            "text": [
                "Mara sat by the fire.",
                "The fair opened at noon.\n\nMara walked into the hall at dusk. The lantern she carried hung from a pole. "
                "It was made of brass and green glass. Nobody else had one.\n\nTom came late.",
            ],
        }
    )
    entities = pl.DataFrame({"title": ["MARA"], "text_unit_ids": [["u-context", "u-mara"]]})
    data = QueryData(entities=entities, text_units=units)
    records = ContextRecords(sources=[ContextRecord("u-context", 1, "ctx", "")])
    assert subject_sources("What was Mara's lantern made of?", data, records) == [
        (
            "Sources (umara)",
            "Mara walked into the hall at dusk. The lantern she carried hung from a pole. "
            "It was made of brass and green glass.",
        )
    ]


TITLES = [
    "MARA",
    "Mara's lantern",
    "U.S.A.",
    "the U.N. council",
    "Søren Holm",
    "SØREN HOLM",
    "So\u0308ren Holm",  # decomposed
    "Storm Odile",
    "STORM-ODILE RESCUE",
    "O'Brien",
    "1,000 LANTERNS",
    "Northern Grace",
    "Vellmouth harbour",
    "Mr. Topper",
    "Straße",
    None,
    "",
]
SUBJECTS = [
    "MARA",
    "USA",
    "UN",
    "SØREN HOLM",
    "SOREN",
    "STORM ODILE",
    "O'BRIEN",
    "OBRIEN",
    "1,000",
    "TOPPER",
    "STRASSE",
]


def test_the_title_filter_keeps_every_title_that_names_a_subject_and_drops_others() -> None:
    # subject_sources tokenizes only the titles may_name keeps: it must keep every one that matches
    titles = pl.Series(TITLES, dtype=pl.String)
    for subject in SUBJECTS:
        kept = may_name(titles, [subject]).to_list()
        for title, may in zip(TITLES, kept, strict=True):
            key = mention_key(title or "").strip()
            matches = bool(key) and (f" {subject} " in f" {key} " or f" {key} " in f" {subject} ")
            assert may or not matches, (subject, title)
    assert may_name(titles, ["NORTHERN GRACE"]).to_list() == [title == "Northern Grace" for title in TITLES]
