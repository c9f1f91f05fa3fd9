"""The in-memory BM25 index finds a text by each part of a word joined with underscores."""

from __future__ import annotations

from graphrag_assets.query.hybrid_search import numbers_of, text_unit_hits
from graphrag_assets.query.lexical import Bm25Index
from graphrag_assets_tests.test_query_local import make_index


def test_a_timestamp_is_found_by_its_date() -> None:
    index = Bm25Index(
        ["a", "b", "c"],
        [
            "Time: 20260405_10:00\nLiHua: Shall we play the new song at the jam session?",
            "Time: 20260402_19:00\nWolfgang: The jam session moves to Sunday.",
            "Time: 20260410_11:00\nYuriko: Bread is delivered at eight.",
        ],
    )
    assert [unit for unit, _ in index.search("20260405", 3)] == ["a"]
    assert index.search("jam session on 20260405", 3)[0][0] == "a"


def test_texts_without_a_query_word_are_not_returned() -> None:
    index = Bm25Index(["a", "b"], ["snake_case names", "plain words"])
    assert [unit for unit, _ in index.search("snake", 2)] == ["a"]
    assert index.search("absent", 2) == []


def test_the_numbers_of_a_question() -> None:
    assert numbers_of("What tip does Jennifer give on 20260630?") == ["20260630"]
    assert numbers_of("What was said on 2026-04-28 at 5 PM?") == ["2026", "20260428"]
    assert numbers_of("Where is t7w3 since 17 May?") == []


def test_a_date_alone_lifts_its_log_above_the_common_words() -> None:
    texts = {
        "gold": "Time: 20260630_15:30\nJennifer: Stretch before you lift.",
        "one": "Time: 20260601_10:00\nJennifer: Welcome, gym members! What a tip: give it all.",
        "two": "Time: 20260602_10:00\nJennifer: The gym members give the best tip.",
    }
    data = make_index()
    data.text_unit_lexical = Bm25Index(list(texts), list(texts.values()))
    question = "What tip does Jennifer give to the gym members on 20260630?"
    # the full-text ranking of the whole question puts the dated log last; its date alone, first
    assert [u for u, _ in data.text_unit_lexical.search(question, 3)][-1] == "gold"
    found = text_unit_hits(data, [1.0, 0.0, 0.0, 0.0], question, 4, "hybrid").hits
    assert found[0][0] == "gold"
