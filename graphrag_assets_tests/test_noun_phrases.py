"""The offline noun-phrase extractor on small tricky texts (exact expected phrases)."""

from __future__ import annotations

import polars as pl
import pytest

from graphrag_assets.core.schemas import GRAPH_EXTRACTIONS
from graphrag_assets.core.sentences import mention_key, sentences_with_keys, split_sentences
from graphrag_assets.core.words import function_words
from graphrag_assets.index.noun_phrases import extract_noun_phrases, noun_phrase_records


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # hyphenation across a line break is joined, the hyphen kept
        ("Scrooge sat in the counting-\n   house all day.", ["COUNTING-HOUSE"]),
        # possessives end the name and are not part of it
        ("He met Scrooge's nephew and Fred's wife.", ["SCROOGE", "FRED"]),
        # capitalised function words at sentence starts are not entities
        ("The fog came. When it lifted, Scrooge saw Marley. It was cold.", ["SCROOGE", "MARLEY"]),
        # an unknown capitalised first word without evidence is not a name
        ("Darkness is cheap, and Scrooge liked it.", ["SCROOGE"]),
        # ... but a possessive or a second capitalised word is evidence
        ("Scrooge's nephew laughed.", ["SCROOGE"]),
        ("Bob Cratchit smiled.", ["BOB CRATCHIT"]),
        # a first word the text also uses in lower case is dropped from the name
        ("Old Fezziwig laid down his pen. The old man smiled.", ["FEZZIWIG", "OLD MAN"]),
        # all-caps heading lines and section labels give nothing
        (
            "STAVE ONE\n\nMARLEY'S GHOST\n\nThe clerk said that Marley was dead.\n\nCHAPTER IV\n\n"
            "In Chapter 4 and Stave Two, nothing happened to Scrooge.",
            ["MARLEY", "SCROOGE"],
        ),
        # a capitalised caption inside a line is silenced; a lone acronym is a name
        ("[Illustration: NOTHING VERY CHEERFUL IN THE CLIMATE] The NASA probe landed.", ["NASA"]),
        # non-English letters are letters
        (
            "Åsa Lindqvist met Sørina at Café Noir near Lake Mirren.",
            ["ÅSA LINDQVIST", "SØRINA", "CAFÉ NOIR", "LAKE MIRREN"],
        ),
        # abbreviation periods are not sentence ends; honorifics are dropped, initials kept
        (
            "Mr. Fezziwig danced with Mrs. Fezziwig. Dr. Watson met J. B. Lippincott in St. Paul's.",
            ["FEZZIWIG", "WATSON", "J B LIPPINCOTT", "ST PAUL"],
        ),
        # numbers alone are not phrases; a regnal numeral stays with its name
        ("George III ruled in 1760. In 1843 there were 3 ghosts, Stave III began and XIV ended.", ["GEORGE III"]),
        # common noun phrases after a determiner, cut at a known verb
        (
            "The old man sat in his counting house with a well-known miser.",
            ["OLD MAN", "COUNTING HOUSE", "WELL-KNOWN MISER"],
        ),
        # a hyphenated compound on its own
        ("He was well-known.", ["WELL-KNOWN"]),
        # coordinated modifiers inherit the determiner
        ("It was a cold, dark night.", ["DARK NIGHT"]),
        # names join across "of", common phrases do not
        ("They saw the Ghost of Christmas Past and the ghost of a chance.", ["GHOST OF CHRISTMAS PAST"]),
        # leading function words of a name are dropped
        ("He read The Times daily.", ["TIMES"]),
        # a name used as a modifier after a determiner gives both phrases
        ("They ate the Christmas dinner.", ["CHRISTMAS", "CHRISTMAS DINNER"]),
        # a text without lower-case letters is read as lower case
        ("THE OLD MAN SAT IN HIS COUNTING HOUSE.", ["OLD MAN", "COUNTING HOUSE"]),
        # URLs are not words
        ("See www.gutenberg.org for the Project Gutenberg License.", ["PROJECT GUTENBERG LICENSE"]),
        ("", []),
    ],
)
def test_extract_noun_phrases(text: str, expected: list[str]) -> None:
    assert extract_noun_phrases(text) == expected


def test_phrases_are_unique_in_order_of_first_appearance() -> None:
    text = "Marley met Scrooge in London. Scrooge met Marley. The Bank of England closed."
    assert extract_noun_phrases(text) == ["MARLEY", "SCROOGE", "LONDON", "BANK OF ENGLAND"]


def test_words_longer_than_max_word_length_drop_their_phrase() -> None:
    text = "The Honorificabilitudinitatibus Society met Scrooge."
    assert extract_noun_phrases(text) == ["SCROOGE"]
    assert extract_noun_phrases(text, max_word_length=30) == ["HONORIFICABILITUDINITATIBUS SOCIETY", "SCROOGE"]
    assert extract_noun_phrases(text, max_word_length=6) == []


def test_curly_quotes_and_apostrophes_are_normalised() -> None:
    assert extract_noun_phrases("\u201cHello,\u201d said Scrooge\u2019s nephew to Bob Cratchit.") == [
        "SCROOGE",
        "BOB CRATCHIT",
    ]


def test_split_sentences_respects_abbreviations_quotes_and_paragraphs() -> None:
    text = "'Why?' said Bob. Mr. Scrooge left J. B. Lippincott behind.\n\nA new paragraph\nSTAVE TWO\nEnds here!"
    assert split_sentences(text) == [
        "'Why?' said Bob.",
        "Mr. Scrooge left J. B. Lippincott behind.",
        "A new paragraph",
        "Ends here!",
    ]


def test_mention_key_matches_phrase_spelling() -> None:
    key = mention_key("Mr. Scrooge's counting-\nhouse, said J. B. Lippincott.")
    assert key == " MR SCROOGE COUNTING-HOUSE SAID J B LIPPINCOTT "
    for phrase in extract_noun_phrases("Mr. Scrooge's counting-\nhouse, said J. B. Lippincott."):
        assert f" {phrase} " in key


def test_sentences_with_keys_tokenise_once_but_agree() -> None:
    text = "'Why?' said Bob. Mr. Scrooge's counting-\nhouse stood near St. Paul's.\n\nSTAVE TWO\n\"Humbug!\" he said."
    pairs = sentences_with_keys(text)
    assert [sentence for sentence, _ in pairs] == split_sentences(text)
    assert [key for _, key in pairs] == [mention_key(sentence) for sentence, _ in pairs]
    assert pairs[1] == (
        "Mr. Scrooge's counting-house stood near St. Paul's.",
        " MR SCROOGE COUNTING-HOUSE STOOD NEAR ST PAUL ",
    )


def test_function_words_list_is_loaded() -> None:
    words = function_words()
    assert {"the", "of", "and", "was", "he"} <= words
    assert "scrooge" not in words


def test_noun_phrase_records_conform_to_graph_extractions() -> None:
    units = pl.DataFrame(
        {
            "id": ["u1", "u2", "u3"],
            "text": [
                "Then Scrooge met Bob Cratchit in the counting house.",
                "Nothing here.",
                "Marley was dead, said Scrooge.",
            ],
            "document_key": ["carol", "carol", "carol"],
        }
    )
    records = noun_phrase_records(units, max_word_length=15)
    assert records.schema == pl.Schema(GRAPH_EXTRACTIONS)
    assert records.select("text_unit_id", "record_index", "title").rows() == [
        ("u1", 0, "SCROOGE"),
        ("u1", 1, "BOB CRATCHIT"),
        ("u1", 2, "COUNTING HOUSE"),
        ("u3", 0, "SCROOGE"),
    ]
    assert set(records["record_type"]) == {"noun_phrase"}
    assert set(records["document_key"]) == {"carol"}
    assert records["type"].to_list() == ["PROPER NAME", "PROPER NAME", "NOUN PHRASE", "PROPER NAME"]
    assert records["weight"].null_count() == records.height


def test_noun_phrase_records_of_nothing_is_an_empty_table() -> None:
    empty = pl.DataFrame(schema={"id": pl.String, "text": pl.String, "document_key": pl.String})
    records = noun_phrase_records(empty, max_word_length=15)
    assert records.is_empty()
    assert records.schema == pl.Schema(GRAPH_EXTRACTIONS)


def test_sentences_keep_decimals_times_abbreviations_and_initials_whole() -> None:
    text = (
        "On 12 May the Kestrel Accord was signed. Auberon Freight Lines pays 1.8 million euros into a fund. "
        'Dr. Varga met St. Paul at 3.30 p.m. on the pier. "Is it over?" she asked. J. R. R. Tolkien wrote it, '
        "i.e. a book. Pi is 3.14159. The crowd was 2,500 strong."
    )
    assert split_sentences(text) == [
        "On 12 May the Kestrel Accord was signed.",
        "Auberon Freight Lines pays 1.8 million euros into a fund.",
        "Dr. Varga met St. Paul at 3.30 p.m. on the pier.",
        '"Is it over?" she asked.',
        "J. R. R. Tolkien wrote it, i.e. a book.",
        "Pi is 3.14159.",
        "The crowd was 2,500 strong.",
    ]


def test_decimal_numbers_introduce_phrases_and_are_not_part_of_them() -> None:
    text = "The 2.5 metre sea wall of Harbour Point cost 1.8 million euros. Keeper Holm saw it."
    assert extract_noun_phrases(text) == ["METRE SEA WALL", "HARBOUR POINT", "KEEPER HOLM"]
