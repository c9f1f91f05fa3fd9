"""The noun-phrase extractor's stop-phrase filter on chat text: chat phrases out, names kept.

Chat logs (LiHua-World) used to turn "OK", "SOUNDS GREAT", "HI LI HUA", "SUNDAY" and
"MOMENTUM GOING" into entities that link every chat saying them. The word lists behind the
filter are ``[interjection]``, ``[weekday]``, ``[stance]``, ``[predicate]`` and ``[participle]``
in ``core/data/stopwords_en.txt``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.index.noun_phrases import extract_noun_phrases
from graphrag_assets.project import fingerprints

CHAT = (
    "Time: 20260107_10:00\n"
    "Li Hua: Hi Wolfgang! OK, see you on Sunday?\n"
    "Wolfgang: OK, Sounds Great! Thanks, Li Hua. Bye!\n"
    "Li Hua: Yeah, lol. Good Morning Everyone, Jennifer is at the Sunday Market.\n"
    "Wolfgang: SOUNDS GREAT\n"
)


def test_the_stop_phrase_filter_drops_interjections_but_keeps_names() -> None:
    phrases = extract_noun_phrases(CHAT)
    assert phrases == ["LI HUA", "WOLFGANG", "JENNIFER", "SUNDAY MARKET"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # interjections, greetings and thanks are never names, nor the front of one
        ("Hi Li Hua, how are you?", ["LI HUA"]),
        ("Ok Thanks Wolfgang, Sounds Good", ["WOLFGANG"]),
        ("Hi! Hello! Thanks Jennifer. Yeah, lol.", ["JENNIFER"]),
        ("Wolfgang said OK. Then Wolfgang said Okay.", ["WOLFGANG"]),
        # weekdays and times of day alone are dates; a name that contains one is kept
        ("Let's meet Saturday and Sunday at Café Noir.", ["CAFÉ NOIR"]),
        ("We met on Sunday Morning at the Sunday Market.", ["SUNDAY MARKET"]),
        ("See you Saturday Night at the Night Market.", ["NIGHT MARKET"]),
        # evaluative words alone are not names, but they stay inside real ones
        ("Great Britain and the Good Hope.", ["GREAT BRITAIN", "GOOD HOPE"]),
        ("Wolfgang: Great! Perfect!\nJennifer: Sure!\nWolfgang: Awesome!\nJennifer: Cool!", ["WOLFGANG", "JENNIFER"]),
    ],
)
def test_chat_phrases_are_not_names(text: str, expected: list[str]) -> None:
    assert extract_noun_phrases(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # evaluative words are cut from both ends of a common noun phrase
        (
            "What a great jam session! The best part was the amazing guitar solo.",
            ["JAM SESSION", "GUITAR SOLO"],
        ),
        ("That is a nice idea.", []),
        # a clause end is not part of the phrase: predicates and -ing verbs after the noun
        ("We should keep the momentum going and keep the energy high.", []),
        ("Keep the ideas flowing.", []),
        ("We booked the rehearsal room today.", ["REHEARSAL ROOM"]),
        # "that's", "let's", "it's" are contractions, not possessives introducing a phrase
        ("That's great fun. Let's grab lunch.", []),
        ("It's Wolfgang birthday party.", ["WOLFGANG"]),
        # ... while a real possessive still does
        ("Wolfgang's guitar solo was long.", ["WOLFGANG", "GUITAR SOLO"]),
    ],
)
def test_common_phrases_lose_stance_words_and_clause_ends(text: str, expected: list[str]) -> None:
    assert extract_noun_phrases(text) == expected


def test_speaker_labels_are_names_even_at_line_starts() -> None:
    """A capitalised word before a colon at the start of two lines is a speaker; once is not."""
    log = "Jennifer: Are you coming?\nWolfgang: Yes!\nJennifer: OK, see you.\nWolfgang: Bye!"
    assert extract_noun_phrases(log) == ["JENNIFER", "WOLFGANG"]
    assert extract_noun_phrases("Note: take it daily.\nDose: one tablet.") == []


def test_a_new_rules_version_makes_offline_documents_re_extract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old and new phrases must not mix in one index: the rules version is in the document fingerprint."""
    settings = load_settings(tmp_path, environ={})
    assert settings.resolved_method == "nlp"
    before = fingerprints.document_fingerprint(settings)
    monkeypatch.setattr(fingerprints, "NOUN_PHRASE_RULES_VERSION", fingerprints.NOUN_PHRASE_RULES_VERSION + 1)
    assert fingerprints.document_fingerprint(settings) != before
