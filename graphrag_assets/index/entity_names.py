"""How an entity's name is read for entity resolution: its words, its key, its honorific.

Extraction gives one thing several names ("SCROOGE", "MR. SCROOGE", "EBENEZER SCROOGE"; "THE GHOST
OF CHRISTMAS PAST", "GHOST OF CHRISTMAS PAST"; "PROJECT GUTENBERG™"). :func:`parse_name` reads a
title once into a :class:`NameForm`; blocking and the offline rules compare forms, never raw text.

- ``key``: the words with case, punctuation, hyphens, trademark signs, a trailing parenthetical
  ("(IRS)"), a leading article and leading honorifics removed. Two titles with one key differ only
  in those respects. A possessive stays in the key ("MARLEY 'S GHOST"): it names something else.
- ``gender`` of a leading honorific (``m``, ``f``, ``n`` for neutral ones such as "DR."), unless the
  honorific belongs to the owner of a possessive ("MR. SCROOGE'S NEPHEW"): then it says nothing
  about the thing named.
- ``tokens``: the content words for containment tests — no possessive markers, function words or
  single-letter initials ("MICHAEL S. HART" → {MICHAEL, HART}).
- ``structure``: whether the name is a phrase about something else (a possessive, "of", "and"),
  which a short name never stands for.

Honorifics are a small table here, not the noun-phrase extractor's list: the extractor drops only
personal titles that carry no information it needs, while resolution must know that "MRS." and
"MR." name different people.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphrag_assets.core.words import word_lists

POSSESSIVE = "'S"
ARTICLES = frozenset({"THE", "A", "AN"})
CONJUNCTIONS = frozenset({"AND", "&", "OR"})
HONORIFIC_GENDER: dict[str, str] = {
    **{w: "m" for w in ("MR", "MISTER", "MASTER", "SIR", "MESSRS", "SENOR", "HERR", "MONSIEUR")},
    **{w: "f" for w in ("MRS", "MS", "MISS", "MISSUS", "MADAM", "MADAME", "MME", "MLLE", "DAME", "LADY")},
    **{w: "n" for w in ("DR", "DOCTOR", "PROF", "PROFESSOR", "MX", "REV", "REVEREND")},
}

# Words of rank, office or kinship: capitalised like names ("the Lord Mayor", "Uncle Scrooge") but
# not names themselves, so a name made of them ("LORD", "LORD MAYOR") never gets a full-name merge.
ROLE_WORDS = frozenset(
    """
    LORD LADY KING QUEEN PRINCE PRINCESS DUKE DUCHESS EARL COUNT COUNTESS BARON BARONESS EMPEROR EMPRESS
    SULTAN POPE BISHOP CARDINAL SAINT CAPTAIN COLONEL GENERAL MAJOR SERGEANT ADMIRAL JUDGE MAYOR
    GOVERNOR SENATOR PRESIDENT MINISTER CHANCELLOR SHERIFF FATHER MOTHER SISTER BROTHER UNCLE AUNT
    """.split()
)

_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "ʼ": "'", "‐": "-", "‑": "-", "–": "-"})
_DECORATION = re.compile(r"[™®©]")
_PARENTHETICAL = re.compile(r"\s*\(([^()]*)\)\s*$")
_DOTTED_INITIALS = re.compile(r"^(?:[^\W\d_]\.)+[^\W\d_]?$")
_EDGE_PUNCTUATION = "\"'.,;:!?()[]{}*"


@dataclass(frozen=True)
class NameForm:
    title: str
    words: tuple[str, ...]  # the key's words; a possessive is the separate word "'S"
    gender: str | None  # of a leading honorific that applies to the thing named
    article: bool  # the title began with an article
    honorific: str  # the leading honorific(s) removed, as written ("MR."), or ""
    parenthetical: str  # a trailing "(...)" removed, without the brackets

    @property
    def key(self) -> str:
        return " ".join(self.words)

    @property
    def tokens(self) -> frozenset[str]:
        """Content words: no possessive markers, function words or single-letter initials."""
        function = _function_words()
        return frozenset(w for w in self.words if w != POSSESSIVE and len(w) > 1 and w.lower() not in function)

    @property
    def phrase_about_something_else(self) -> bool:
        """A possessive ("SCROOGE'S NEPHEW"), an "of" phrase or a conjunction ("SCROOGE AND MARLEY")."""
        return POSSESSIVE in self.words or "OF" in self.words or any(w in CONJUNCTIONS for w in self.words)

    @property
    def initials(self) -> str:
        """First letters of the content words, in order ("INTERNAL REVENUE SERVICE" → "IRS")."""
        function = _function_words()
        return "".join(w[0] for w in self.words if w != POSSESSIVE and w.lower() not in function)


def parse_name(title: str) -> NameForm:
    """Read an entity title (already upper-case) into its :class:`NameForm`."""
    text = title.translate(_QUOTES).upper()
    cleaned = _DECORATION.sub("", text)
    parenthetical = ""
    match = _PARENTHETICAL.search(cleaned)
    if match and match.start() > 0:
        parenthetical = match.group(1).strip()
        cleaned = cleaned[: match.start()]
    words = _words(cleaned.replace("-", " ").replace("/", " "))
    article = bool(words) and len(words) > 1 and words[0] in ARTICLES
    if article:
        words = words[1:]
    removed: list[str] = []
    while len(words) > 1 and words[0].rstrip(".") in HONORIFIC_GENDER:
        removed.append(words.pop(0))
    gender = HONORIFIC_GENDER[removed[-1].rstrip(".")] if removed else None
    if gender is not None and POSSESSIVE in words:
        gender = None  # "MR. SCROOGE'S NEPHEW": the honorific is the owner's
    return NameForm(
        title=title,
        words=tuple(b for b in (_bare(w) for w in words) if b),
        gender=gender,
        article=article,
        honorific=" ".join(removed),
        parenthetical=parenthetical,
    )


def genders_compatible(a: str | None, b: str | None) -> bool:
    """Two honorific genders may name one person (neutral and absent fit either)."""
    return a is None or b is None or a == "n" or b == "n" or a == b


def _words(text: str) -> list[str]:
    """Whitespace words, with "X'S" split into "X" and "'S" and dotted initials into letters."""
    out: list[str] = []
    for raw in text.split():
        word = raw.strip(_EDGE_PUNCTUATION.replace(".", "").replace("'", "")) or raw
        if _DOTTED_INITIALS.match(word):
            out.extend(ch for ch in word if ch != ".")
            continue
        if word.endswith("'S") and len(word) > 2:
            out.extend([word[:-2], POSSESSIVE])
        elif word.endswith("S'") and len(word) > 2:
            out.extend([word[:-1], POSSESSIVE])
        else:
            out.append(word)
    return out


def _bare(word: str) -> str:
    """A word without surrounding punctuation (a possessive marker is kept as it is)."""
    if word == POSSESSIVE:
        return word
    return word.strip(_EDGE_PUNCTUATION)


def _function_words() -> frozenset[str]:
    return word_lists().function
