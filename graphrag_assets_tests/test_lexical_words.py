"""The in-memory BM25 index finds a text by each part of a word joined with underscores."""

from __future__ import annotations

from graphrag_assets.query.lexical import Bm25Index


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
