"""Offline verdicts for entity resolution: deterministic, conservative rules on names.

Without a model, two names are judged the same thing only when their spelling says so and nothing
in the corpus contradicts it. Every rule below needs the two entities to have the same type
("different types merge only when a verdict says so", and a rule is not that verdict). A rule
judges candidate pairs only (:mod:`.resolution_candidates`) and says why in ``reason``; ``score``
is a fixed confidence per rule, for ordering and reading, not a calibrated probability.

1. **Same name** (score 1.0, or 0.95 with an article, honorific or parenthetical): equal
   :attr:`NameForm.key`. A dropped article counts only for a proper name (a word of the key is
   name-like, see :class:`NameEvidence`): "THE GHOST OF CHRISTMAS PAST" is "GHOST OF CHRISTMAS
   PAST", but "THE MISTRESS" of one chapter is not "MISTRESS" of another. Honorifics must agree
   in gender ("MRS. FEZZIWIG" is never "MR. FEZZIWIG"), and a bare name joins a gendered form only
   when the corpus does not use the same name with both genders (then "FEZZIWIG" is ambiguous).
2. **Full name** (0.85): a name that is the first or last words of exactly one longer name, both
   made of name-like words only, for people (type PERSON, or untyped noun phrases: then one word
   in a two-word name): "SCROOGE" and "EBENEZER" are the full name "EBENEZER SCROOGE" when no
   other name extends them; "TIM" stays alone beside "TINY TIM" and "TIM CRATCHIT". The names
   that lead to one full name form one verdict with it. A name with a female honorific is left
   out: "MRS. CRATCHIT" is, by the usual convention, the wife of the Cratchit, not "BOB CRATCHIT".
3. **Initials** (0.9): the names agree word by word except where one has an initial that starts
   the other's word, a name-like one ("U.S. COPYRIGHT LAW" / "UNITED STATES COPYRIGHT LAW"), or
   a person's name lacks a middle initial ("MICHAEL S. HART" / "MICHAEL HART"); the match must be
   unique.
4. **Acronym** (0.9): a one-word name equals the initials of exactly one longer name made of
   name-like words ("IRS" / "INTERNAL REVENUE SERVICE", not "UT" / "USUAL TIME"), or appears in
   brackets after it.
5. **Possessive and "of"** (0.85): "X'S Y" is "Y OF X'" when the owners X and X' are one name or
   an earlier rule judged them one ("MARLEY'S GHOST" / "GHOST OF JACOB MARLEY" once "MARLEY" is
   part of the full name "JACOB MARLEY").

Possessives, "of" phrases and conjunctions ("MARLEY'S GHOST", "GHOST OF JACOB MARLEY", "SCROOGE
AND MARLEY") name something else and never take part in rules 2–4.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from graphrag_assets.core.words import word_lists
from graphrag_assets.index.entity_names import HONORIFIC_GENDER, ROLE_WORDS, NameForm, genders_compatible, parse_name
from graphrag_assets.index.noun_phrases import NOUN_PHRASE_TYPE
from graphrag_assets.index.resolution_frames import verdict_frame

METHOD = "rules"
PERSON = "PERSON"
UNTYPED = frozenset({"", NOUN_PHRASE_TYPE})
MAX_FULL_NAME_WORDS = 4
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")
_NAME_WORD = re.compile(r"^[^\W\d_]{2,}(?:'[^\W\d_]+)*$")
# Roman numerals and generational suffixes number things apart ("GULL'S PRIDE II" is a new boat).
_NUMBERING = re.compile(r"^(?:(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})|JR|SR)$")

Row = tuple[str, str, str, float, str]


@dataclass(frozen=True)
class NameEvidence:
    """Which words the corpus writes in lower case somewhere (so they are not names).

    Built from running text — the text units, or the model's descriptions — where names keep
    their capitals: "Scrooge" and "Christmas" never appear as "scrooge" or "christmas", while
    "ghost", "mistress" and "old" do.
    """

    lower_words: frozenset[str]

    @classmethod
    def from_texts(cls, texts: Iterable[str | None]) -> NameEvidence:
        words: set[str] = set()
        for text in texts:
            for word in _WORD.findall(text or ""):
                if word.islower():
                    words.add(word)
        return cls(frozenset(words))

    def name_like(self, word: str) -> bool:
        lower = word.lower()
        return (
            bool(_NAME_WORD.match(word))
            and not _NUMBERING.match(word)
            and lower not in self.lower_words
            and lower not in word_lists().function
            and word not in HONORIFIC_GENDER
            and word not in ROLE_WORDS
        )


def rule_verdicts(profiles: pl.DataFrame, candidates: pl.DataFrame, evidence: NameEvidence) -> pl.DataFrame:
    """Verdicts (``resolution_frames.VERDICTS``) the rules give on the candidate pairs.

    ``profiles`` needs ``title``, ``type`` and ``text_unit_ids``; ``candidates`` ``left`` and ``right``.
    """
    types = {t: (k or "").upper() for t, k in profiles.select("title", "type").iter_rows()}
    pairs = [(a, b) for a, b in candidates.select("left", "right").iter_rows() if a in types and b in types]
    forms = {t: parse_name(t) for pair in pairs for t in pair}
    wanted = set(forms)
    units_of = {t: frozenset(u or ()) for t, u in profiles.select("title", "text_unit_ids").iter_rows() if t in wanted}
    corpus = _Corpus(forms, types, units_of, evidence)
    rows = _same_name(pairs, corpus)
    units = _units(forms, rows)
    rows += _full_names(pairs, corpus, units)
    rows += _initials(pairs, corpus)
    rows += _acronyms(pairs, corpus)
    rows += _possessive_and_of(pairs, corpus, rows)
    return verdict_frame(rows)


@dataclass(frozen=True)
class _Corpus:
    """What the rules know about the titles they judge."""

    forms: dict[str, NameForm]
    types: dict[str, str]
    text_units: dict[str, frozenset[str]]
    evidence: NameEvidence

    def names(self, words: Iterable[str]) -> bool:
        return all(self.evidence.name_like(w) for w in words)


def _same_name(pairs: list[tuple[str, str]], corpus: _Corpus) -> list[Row]:
    forms, types, evidence = corpus.forms, corpus.types, corpus.evidence
    genders: dict[tuple[str, str], set[str]] = defaultdict(set)
    for title, form in forms.items():
        if form.gender is not None:
            genders[(form.key, types[title])].add(form.gender)
    rows: list[Row] = []
    for a, b in pairs:
        fa, fb = forms[a], forms[b]
        if fa.key != fb.key or not fa.words or types[a] != types[b]:
            continue
        if fa.article != fb.article and not any(evidence.name_like(w) for w in fa.words):
            continue
        if not genders_compatible(fa.gender, fb.gender):
            continue
        both = genders[(fa.key, types[a])] >= {"m", "f"}
        if both and (fa.gender is None or fb.gender is None):
            continue
        rows.append((a, b, METHOD, *_same_name_reason(fa, fb)))
    return rows


def _same_name_reason(fa: NameForm, fb: NameForm) -> tuple[float, str]:
    parts = []
    if fa.article != fb.article:
        parts.append("a leading article")
    if fa.honorific != fb.honorific:
        shown = " / ".join(h for h in (fa.honorific, fb.honorific) if h)
        parts.append(f"the honorific {shown}")
    if fa.parenthetical != fb.parenthetical:
        shown = " / ".join(f"({p})" for p in (fa.parenthetical, fb.parenthetical) if p)
        parts.append(f"the bracketed {shown}")
    if not parts:
        return 1.0, "same name apart from punctuation or spelling of symbols"
    return 0.95, "same name apart from " + " and ".join(parts)


def _units(forms: dict[str, NameForm], same_name_rows: list[Row]) -> dict[str, frozenset[str]]:
    """Titles the same-name rule joined, as one set per title (itself alone when none)."""
    parent = {t: t for t in forms}

    def find(t: str) -> str:
        while parent[t] != t:
            parent[t] = parent[parent[t]]
            t = parent[t]
        return t

    for a, b, *_ in same_name_rows:
        parent[find(a)] = find(b)
    groups: dict[str, set[str]] = defaultdict(set)
    for t in forms:
        groups[find(t)].add(t)
    return {t: frozenset(groups[find(t)]) for t in forms}


def _full_names(pairs: list[tuple[str, str]], corpus: _Corpus, units: dict[str, frozenset[str]]) -> list[Row]:
    forms, types, evidence = corpus.forms, corpus.types, corpus.evidence

    def usable(unit: frozenset[str]) -> bool:
        return all(
            types[t] in UNTYPED | {PERSON}
            and forms[t].gender != "f"
            and not forms[t].phrase_about_something_else
            and all(evidence.name_like(w) for w in forms[t].words)
            for t in unit
        )

    containers: dict[frozenset[str], set[frozenset[str]]] = defaultdict(set)
    usable_pairs: set[tuple[frozenset[str], frozenset[str]]] = set()
    for a, b in pairs:
        short, long = (a, b) if len(forms[a].words) < len(forms[b].words) else (b, a)
        ws, wl = forms[short].words, forms[long].words
        if types[a] != types[b] or not ws or len(ws) >= len(wl) or not (wl[: len(ws)] == ws or wl[-len(ws) :] == ws):
            continue
        if forms[long].phrase_about_something_else:
            continue  # "MARLEY'S GHOST" does not extend the name MARLEY
        containers[units[short]].add(units[long])  # every extension counts against uniqueness
        if types[a] in UNTYPED:
            limit_ok = len(ws) == 1 and len(wl) == 2 and bool(corpus.text_units[short] & corpus.text_units[long])
        else:
            limit_ok = len(wl) <= MAX_FULL_NAME_WORDS
        if limit_ok and usable(units[short]) and usable(units[long]):
            usable_pairs.add((units[short], units[long]))
    full_name_of: dict[frozenset[str], list[frozenset[str]]] = defaultdict(list)
    for part, found in containers.items():
        minimal = [u for u in found if not any(v != u and _contains(forms, u, v) for v in found)]
        if len(minimal) == 1 and (part, minimal[0]) in usable_pairs:
            full_name_of[minimal[0]].append(part)
    rows: list[Row] = []
    for full, parts in sorted(full_name_of.items(), key=lambda item: sorted(item[0])):
        shown = min(full, key=lambda t: (len(t), t))
        members = [(t, unit) for unit in [full, *parts] for t in sorted(unit)]
        for i, (a, unit_a) in enumerate(members):
            for b, unit_b in members[i + 1 :]:
                if unit_a is unit_b:
                    continue
                if unit_a is full or unit_b is full:
                    part = b if unit_a is full else a
                    reason = f"{part} is part of the full name {shown}, the only longer name that extends it"
                else:
                    reason = f"both are parts of the full name {shown}, the only longer name that extends either"
                rows.append((a, b, METHOD, 0.85, reason))
    return rows


def _contains(forms: dict[str, NameForm], outer: frozenset[str], inner: frozenset[str]) -> bool:
    """Whether the words of ``inner`` occur contiguously inside the words of ``outer``."""
    wo, wi = forms[min(outer)].words, forms[min(inner)].words
    return len(wi) < len(wo) and any(wo[i : i + len(wi)] == wi for i in range(len(wo) - len(wi) + 1))


def _initials(pairs: list[tuple[str, str]], corpus: _Corpus) -> list[Row]:
    forms, types = corpus.forms, corpus.types
    matches: dict[str, list[str]] = defaultdict(list)  # a name written with initials -> its expansions
    for a, b in pairs:
        fa, fb = forms[a], forms[b]
        if types[a] != types[b] or fa.phrase_about_something_else or fb.phrase_about_something_else:
            continue
        if not genders_compatible(fa.gender, fb.gender):
            continue
        people = types[a] in UNTYPED | {PERSON}
        for x, y in ((a, b), (b, a)):
            wx, wy = forms[x].words, forms[y].words
            expanded = _expands(wx, wy) and corpus.names(w for w, i in zip(wy, wx) if w != i)
            if expanded or (people and _lacks_middle_initial(wx, wy) and corpus.names(wy)):
                matches[x].append(y)
    return [
        (x, ys[0], METHOD, 0.9, f"the same name written with initials: {x} / {ys[0]}")
        for x, ys in matches.items()
        if len(ys) == 1
    ]


def _expands(initials: tuple[str, ...], words: tuple[str, ...]) -> bool:
    """Word by word equal, except initials in ``initials`` that start the word in ``words``."""
    if len(initials) != len(words) or initials == words:
        return False
    return all(x == y or (len(x) == 1 and len(y) > 1 and y[0] == x) for x, y in zip(initials, words))


def _lacks_middle_initial(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    return len(longer) == len(shorter) + 1 >= 3 and any(
        len(longer[i]) == 1 and longer[:i] + longer[i + 1 :] == shorter for i in range(1, len(longer) - 1)
    )


def _acronyms(pairs: list[tuple[str, str]], corpus: _Corpus) -> list[Row]:
    forms, types = corpus.forms, corpus.types
    expansions: dict[str, list[str]] = defaultdict(list)
    bracketed: list[Row] = []
    for a, b in pairs:
        if types[a] != types[b]:
            continue
        for short, long in ((a, b), (b, a)):
            fs, fl = forms[short], forms[long]
            if fl.parenthetical and fl.parenthetical == fs.key:
                bracketed.append((short, long, METHOD, 0.95, f"{long} gives {short} in brackets"))
            elif len(fs.words) == 1 and fs.words[0].isalpha() and len(fl.tokens) >= 2 and fl.initials == fs.words[0]:
                if not fl.phrase_about_something_else and corpus.names(fl.tokens):
                    expansions[short].append(long)
    rows = list(bracketed)
    for short, longs in expansions.items():
        if len(longs) == 1:
            rows.append((short, longs[0], METHOD, 0.9, f"{short} is the acronym of {longs[0]}"))
    return rows


def _possessive_and_of(pairs: list[tuple[str, str]], corpus: _Corpus, judged: list[Row]) -> list[Row]:
    """ "X'S Y" / "Y OF X'" where X and X' are one name, or titles for them were judged the same."""
    same_titles = {frozenset((a, b)) for a, b, *_ in judged}
    titles_of: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for title, form in corpus.forms.items():
        titles_of[form.words].append(title)

    def one_name(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
        return x == y or any(
            frozenset((a, b)) in same_titles for a in titles_of.get(x, ()) for b in titles_of.get(y, ())
        )

    rows: list[Row] = []
    for a, b in pairs:
        if corpus.types[a] != corpus.types[b]:
            continue
        for x, y in ((a, b), (b, a)):
            owned, of = _owner_and_thing(corpus.forms[x].words, "'S"), _owner_and_thing(corpus.forms[y].words, "OF")
            if owned and of and owned[1] == of[1] and one_name(owned[0], of[0]):
                rows.append((x, y, METHOD, 0.85, f"{x} and {y} name the same {' '.join(of[1])} of the same owner"))
    return rows


def _owner_and_thing(words: tuple[str, ...], marker: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(owner, thing) of "OWNER 'S THING" (marker "'S") or "THING OF OWNER" (marker "OF"), else None."""
    if words.count("'S") + words.count("OF") != 1 or marker not in words:
        return None
    i = words.index(marker)
    before, after = words[:i], words[i + 1 :]
    if not before or not after:
        return None
    return (before, after) if marker == "'S" else (after, before)
