"""English word lists for the offline steps, read once from ``data/stopwords_en.txt``.

Ground floor: the noun-phrase extractor (``index``), the local hashing embedder (``llm``) and
the extractive answers (``query``) all need to know which words are function words, titles or
abbreviations, and none of them should import the others for it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

WORD_LISTS_FILE = "data/stopwords_en.txt"


@dataclass(frozen=True)
class WordLists:
    determiners: frozenset[str]
    introducers: frozenset[str]  # determiners and prepositions
    function: frozenset[str]  # introducers included
    verbs: frozenset[str]
    honorifics: frozenset[str]
    abbreviations: frozenset[str]  # honorifics included
    particles: frozenset[str]
    sections: frozenset[str]
    numbers: frozenset[str]
    ly_nouns: frozenset[str]
    ed_nouns: frozenset[str]
    # chat stop phrases, for the noun-phrase extractor only (see index/noun_phrases.py)
    interjections: frozenset[str]  # "ok", "hi", "thanks": treated as function words
    weekdays: frozenset[str]  # weekdays and times of day: never a name on their own
    stance: frozenset[str]  # "great", "awesome": cut from both ends of a common phrase
    predicates: frozenset[str]  # "high", "tonight": cut from the end of a common phrase
    participles: frozenset[str]  # "going", "flowing": cut from the end of a common phrase


@functools.cache
def word_lists() -> WordLists:
    """The word lists shipped in ``data/stopwords_en.txt`` (read once)."""
    text = resources.files("graphrag_assets.core").joinpath(WORD_LISTS_FILE).read_text(encoding="utf-8")
    sections: dict[str, set[str]] = {}
    current: set[str] | None = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], set())
        elif current is not None:
            current.add(line.lower())
    get = lambda name: frozenset(sections.get(name, ()))  # noqa: E731
    introducers = get("determiner") | get("preposition")
    return WordLists(
        determiners=get("determiner"),
        introducers=introducers,
        function=introducers | get("function"),
        verbs=get("verb"),
        honorifics=get("honorific"),
        abbreviations=get("abbreviation") | get("honorific"),
        particles=get("particle"),
        sections=get("section"),
        numbers=get("number"),
        ly_nouns=get("ly_noun"),
        ed_nouns=get("ed_noun"),
        interjections=get("interjection"),
        weekdays=get("weekday"),
        stance=get("stance"),
        predicates=get("predicate"),
        participles=get("participle"),
    )


def function_words() -> frozenset[str]:
    """Lower-case English function words (used by the local embedder to down-weight them)."""
    return word_lists().function
