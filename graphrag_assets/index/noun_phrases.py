"""Offline noun-phrase extraction for the ``nlp`` method (no model, no download).

Microsoft GraphRAG's fast method tags text with TextBlob/NLTK (or spaCy) and keeps noun phrases
that contain a proper noun, have more than one word after stop-word removal, or contain a
hyphenated compound (reference §1.2). Those taggers download models at first use, which is
exactly what an offline install cannot do, so this module gets similar phrases from spelling
alone: capitalisation, punctuation and a few small word lists
(``data/stopwords_en.txt``). It is English-centred but treats every Unicode letter as a letter.

What becomes a phrase:

- **Names**: runs of capitalised words ("Ebenezer Scrooge", "Lake Mirren", "Åsa Lindqvist").
  Two capitalised parts may be joined by a lower-case name particle ("Ghost of Christmas Past",
  "Ludwig van Beethoven"): names join across "of", ordinary noun phrases do not. Personal titles
  with or without their period ("Mr.", "Mrs", "Dr.") are dropped, so "Mr. Scrooge" and
  "Scrooge" are one node (at the price of "Mrs. Cratchit" merging with "Mr. Cratchit"). Other
  abbreviations and initials keep their letters, without the period ("St. Paul" → "ST PAUL",
  "J. B. Lippincott" → "J B LIPPINCOTT"). A possessive ends the name ("Scrooge's nephew" →
  "SCROOGE"). Leading function words are removed ("The Times" → "TIMES").
- **Sentence starts**: every sentence starts with a capital, so a capitalised word there is a
  name only when it is not a function word and the text shows it is one: the word also appears
  capitalised mid-sentence, or a possessive follows it, or a second capitalised word follows it
  ("Bob Cratchit"). A first word that the text also uses in lower case is dropped from a
  multi-word run ("Old Fezziwig" → "FEZZIWIG" when "old" occurs elsewhere). Opening quotes,
  "[", colons and blank lines start sentences too; the period of an abbreviation or an initial
  (a capital letter followed by a capitalised non-function word: "J. B. Lippincott") does not.
- **Common noun phrases**: runs of two or more lower-case content words that directly follow a
  determiner, possessive, number or preposition ("the counting house", "his former partner"),
  cut at known finite verbs and trimmed of a trailing -ly adverb or -ed verb form; coordinated
  modifiers inherit the introducer ("the cold, dark night" → "DARK NIGHT"). Phrases stop at
  "of" ("ghost of a chance" gives nothing). A common phrase right after a name that itself
  follows a determiner or possessive includes the name ("the Christmas dinner" →
  "CHRISTMAS DINNER", in addition to "CHRISTMAS"); after a preposition it does not ("with
  Scrooge sitting nearby"). Common phrases longer than six words are dropped as likely junk.
- **Hyphenated compounds**: a lower-case hyphenated word is a phrase on its own ("well-known",
  "counting-house") unless it is part of a longer phrase ("north-east road"). A hyphen split
  across a line break is joined first ("counting-\\nhouse" → "COUNTING-HOUSE"); "--" is a dash.

What never becomes a phrase: lines written entirely in capitals (headings such as
"STAVE ONE" or "CHAPTER IV" — they are skipped whole, names in them included); runs of
capitalised words inside a line that contain a function word (a caption such as "NOTHING VERY
CHEERFUL IN THE CLIMATE"; a lone acronym like "NASA" stays a name); a section word
followed by a numeral in running text ("Chapter 4", "Stave One"); numbers, number words and
roman numerals on their own; phrases with a word longer than ``max_word_length`` characters
(Microsoft's rule); URLs and e-mail addresses. A text with no lower-case letter at all is read
as lower case, so it yields common phrases but no names.

Chat text (stop phrases, measured on LiHua-World's chat logs; the word lists are the
``[interjection]``, ``[weekday]``, ``[stance]``, ``[predicate]`` and ``[participle]`` sections):
interjections, greetings and chat abbreviations count as function words ("OK", "Hi Li Hua" →
"LI HUA", "Thanks Jennifer" → "JENNIFER"); a name made only of weekdays, times of day,
evaluative words and function words is a date or a greeting ("SUNDAY", "SUNDAY MORNING",
"GOOD MORNING EVERYONE", "SOUNDS GREAT"); evaluative words are cut from both ends of a common
phrase ("a great jam session" → "JAM SESSION"), and so are clause ends after the noun
("keep the energy high", "the momentum going", "ideas flowing"); "that's", "let's", "it's" are
contractions, not possessives. A capitalised word followed by a colon at the start of two or
more lines is a speaker label, so a name even though it is only ever seen at line starts.

Each phrase is marked as a proper name or not (:func:`noun_phrase_records` writes it in the
record's ``type``): a name is a phrase found as a run of capitalised words, in at least one of its
text units. Pruning never drops a name for being frequent or central, and extractive report
titles name names first.

Known limits: no part-of-speech tagging, so verbs missing from the list can end up in a common
phrase ("the dog barks" → "DOG BARKS"); Title Case headings that are not in capitals produce
long name runs; a name made only of function words ("The Who") is lost; the pronoun "I" always
breaks a name ("Henry I" → "HENRY"); a one-word name seen only at sentence starts is missed
("Scrooge left." alone gives nothing), which matters more for very small chunks; homographs of
function words cut phrases ("free will" → "will" is a modal). Output phrases are upper-case (Microsoft's convention),
unique, in order of first appearance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from graphrag_assets.core.schemas import GRAPH_EXTRACTIONS, conform, empty_frame
from graphrag_assets.core.sentences import Token, prepare_text, tokenize
from graphrag_assets.core.words import WordLists, word_lists

MAX_COMMON_PHRASE_WORDS = 6
# Bumped when a release changes which phrases a text yields, so nlp/fast indexes re-extract their
# documents on the next run instead of mixing old and new phrases. 2: chat stop phrases.
# 3: records say which phrases are proper names (pruning never drops a name for being frequent).
NOUN_PHRASE_RULES_VERSION = 3
NOUN_PHRASE_TYPE = "NOUN PHRASE"  # the entity type of the offline graph's nodes
# The ``type`` of a noun_phrase extraction record that is a proper name ("SCROOGE", "LAKE MIRREN");
# other phrases carry NOUN_PHRASE_TYPE. Entities keep NOUN_PHRASE_TYPE either way.
PROPER_NAME_TYPE = "PROPER NAME"
_I_FORMS = frozenset({"i", "i'm", "i've", "i'll", "i'd"})
_ROMAN = re.compile(r"^(?=[MDCLXVI])M{0,4}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th|s)?$", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------
# Phrase extraction


@dataclass(slots=True)
class _Word:
    text: str
    lower: str
    initial: bool
    role: str  # name | particle | honorific | common | other
    functional: bool  # in a function / verb / number list (may still be a name part mid-sentence)


def _is_number(lower: str, lists: WordLists) -> bool:
    if _ORDINAL.match(lower):
        return True
    parts = lower.split("-")
    return all(p.replace(".", "").replace(",", "").replace(":", "").isdigit() or p in lists.numbers for p in parts)


def _classify(token: Token, lists: WordLists) -> _Word:
    text, lower = token.text, token.text.lower()
    functional = (
        lower in lists.function or lower in lists.verbs or lower in lists.interjections or _is_number(lower, lists)
    )
    capitalised = text[:1].isupper()
    if lower in lists.honorifics and capitalised:
        role = "honorific"
    elif capitalised:
        if lower in _I_FORMS or _is_number(lower, lists):
            role = "other"
        elif token.initial and (functional or (lower.endswith("ly") and lower not in lists.ly_nouns)):
            role = "other"
        else:
            role = "name"
    elif lower in lists.particles:
        role = "particle"
    elif functional or not any(ch.isalpha() for ch in lower):
        role = "other"
    else:
        role = "common"
    return _Word(text, lower, token.initial, role, functional)


def _mark_section_labels(words: list[_Word], lists: WordLists) -> None:
    """Turn "Chapter IV" / "Stave One" / "Part 2" into non-phrase words."""
    for i in range(len(words) - 1):
        here, nxt = words[i], words[i + 1]
        if (
            here.role == "name"
            and here.lower in lists.sections
            and (_is_number(nxt.lower, lists) or _ROMAN.match(nxt.text))
        ):
            here.role = nxt.role = "other"


def _mark_capital_captions(words: list[_Word]) -> None:
    """Silence runs of capitals that contain a function word ("NOTHING VERY CHEERFUL IN THE
    CLIMATE" in a caption): shouting or a caption, not a name. Lone acronyms are unaffected."""
    i, n = 0, len(words)
    while i < n:
        j = i
        while j < n and words[j].text.isupper():
            j += 1
        if j - i >= 2 and any(w.functional for w in words[i:j]):
            for w in words[i:j]:
                w.role = "other"
        i = max(j, i + 1)


def _trim_common(run: list[_Word], lists: WordLists) -> list[_Word]:
    while run:
        last = run[-1].lower
        adverb = last.endswith("ly") and len(last) > 3 and last not in lists.ly_nouns
        past = (
            last.endswith("ed") and len(last) >= 5 and not last.endswith(("eed", "ead")) and last not in lists.ed_nouns
        )
        # "that sounds great", "keep the energy high", "keep the momentum going", "ideas flowing"
        clause_end = (
            last in lists.stance
            or last in lists.predicates
            or last in lists.participles
            or (last.endswith("ing") and len(run) >= 2 and _plural(run[-2].lower))
        )
        if not (adverb or past or clause_end):
            break
        run = run[:-1]
    return run


def _plural(lower: str) -> bool:
    """Looks like an English plural ("ideas", not "class", "bus" or "analysis")."""
    return len(lower) > 3 and lower.endswith("s") and not lower.endswith(("ss", "us", "is"))


def _strip_stance(run: list[_Word], lists: WordLists) -> list[_Word]:
    """Drop leading evaluative words: "a great jam session" and "a jam session" are one node."""
    while run and run[0].lower in lists.stance:
        run = run[1:]
    return run


def _speaker_labels(prepared: str, tokens: list[Token]) -> set[str]:
    """Speaker labels of a chat log or script ("Li: ...", "Wolfgang: ..."), lower-cased.

    A capitalised word that starts a line and is directly followed by a colon, at least twice in
    the text: a name even though it only ever appears at line starts, where a capital proves
    nothing.
    """
    counts: dict[str, int] = {}
    for token, following in zip(tokens, tokens[1:]):
        if token.kind != "word" or following.kind != "colon" or following.start != token.end:
            continue
        line_start = prepared.rfind("\n", 0, token.start) + 1
        if token.text[:1].isupper() and not prepared[line_start : token.start].strip():
            counts[token.text.lower()] = counts.get(token.text.lower(), 0) + 1
    return {word for word, n in counts.items() if n >= 2}


class _Extractor:
    """One text's extraction state: evidence about capitalisation, and the phrases found."""

    def __init__(self, prepared: str, tokens: list[Token], max_word_length: int) -> None:
        self.lists = word_lists()
        self.max_word_length = max_word_length
        self.tokens = tokens
        self.phrases: dict[str, bool] = {}  # phrase -> emitted as a proper name at least once
        words = [t for t in tokens if t.kind == "word"]
        self.capitalised_mid = {t.text.lower() for t in words if t.text[:1].isupper() and not t.initial}
        self.seen_lower = {t.text for t in words if t.text[:1].islower()}
        self.labels = _speaker_labels(prepared, tokens)

    def emit(self, words: list[str], *, name: bool = False) -> None:
        if words and all(len(w) <= self.max_word_length for w in words):
            phrase = " ".join(w.upper() for w in words)
            self.phrases[phrase] = self.phrases.get(phrase, False) or name

    def run(self) -> dict[str, bool]:
        previous_common_introduced = False
        for segment, context, possessive_after in self._segments():
            previous_common_introduced = self._segment(segment, context, possessive_after, previous_common_introduced)
        return self.phrases

    def _segments(self) -> list[tuple[list[_Word], str, bool]]:
        """Runs of adjacent words, each with what preceded it (poss | comma | boundary | other)
        and whether a possessive follows it."""
        segments: list[tuple[list[_Word], str, bool]] = []
        context = "boundary"
        current: list[_Word] = []
        for token in self.tokens:
            if token.kind == "word":
                current.append(_classify(token, self.lists))
                continue
            # "that's", "it's", "let's": a contraction, not a possessive that makes a modifier
            contraction = token.kind == "poss" and bool(current) and current[-1].lower + "'s" in self.lists.function
            if current:
                segments.append((current, context, token.kind == "poss" and not contraction))
                current = []
            if contraction:
                context = "other"
            elif token.kind == "poss":
                context = "poss"
            elif token.kind == "break" and token.text == ",":
                context = "comma"
            elif token.kind in ("end", "para", "open", "colon"):
                context = "boundary"
            else:
                context = "other"
        if current:
            segments.append((current, context, False))
        return segments

    def _segment(self, words: list[_Word], context: str, possessive_after: bool, inherit: bool) -> bool:
        """Emit the phrases of one segment; return whether it ended with an introduced common run."""
        lists = self.lists
        _mark_section_labels(words, lists)
        _mark_capital_captions(words)
        i, n = 0, len(words)
        introduced = context == "poss" or (context == "comma" and inherit)
        determined = context == "poss"  # a name here may be a modifier: "the Christmas dinner"
        last_common_introduced = False
        while i < n:
            word = words[i]
            if word.role in ("name", "honorific"):
                j, name = self._name_run(words, i)
                name_words = self._accept_name(name, possessive_next=j == n and possessive_after)
                k = j
                while k < n and words[k].role == "common":
                    k += 1
                if name_words:
                    self.emit([w.text for w in name_words], name=True)
                    tail = _trim_common(words[j:k], lists) if determined else []
                    if tail and len(name_words) + len(tail) <= MAX_COMMON_PHRASE_WORDS:
                        self.emit([w.text for w in name_words] + [w.text for w in tail])
                        j = k
                introduced = determined = False
                last_common_introduced = False
                i = j
                continue
            if word.role == "common":
                j = i
                while j < n and words[j].role == "common":
                    j += 1
                run = words[i:j]
                emitted = False
                if introduced:
                    trimmed = _trim_common(_strip_stance(run, lists), lists)
                    long_enough = len(trimmed) >= 2 or any("-" in w.lower for w in trimmed)
                    if long_enough and len(trimmed) <= MAX_COMMON_PHRASE_WORDS:
                        self.emit([w.text for w in trimmed])
                        emitted = True
                if not emitted:
                    for w in run:
                        if "-" in w.lower and any(ch.isalpha() for ch in w.lower):
                            self.emit([w.text])
                last_common_introduced = introduced
                introduced = determined = False
                i = j
                continue
            # a function word, particle, number or other non-phrase word
            lower = word.lower
            if lower in ("and", "or") and last_common_introduced:
                introduced = True
            else:
                introduced = lower in lists.introducers or _is_number(lower, lists)
            determined = lower in lists.determiners
            last_common_introduced = False
            i += 1
        return last_common_introduced

    def _name_run(self, words: list[_Word], i: int) -> tuple[int, list[_Word]]:
        """Collect a name starting at ``i``: name words, honorifics skipped, particles inside."""
        run: list[_Word] = []
        j, n = i, len(words)
        while j < n:
            w = words[j]
            if w.role == "name":
                run.append(w)
            elif w.role == "honorific":
                pass
            elif w.role == "particle" and run and j + 1 < n and words[j + 1].role == "name":
                run.append(w)
            else:
                break
            j += 1
        return j, run

    def _accept_name(self, run: list[_Word], possessive_next: bool) -> list[_Word]:
        while run and (run[0].functional or run[0].role == "particle"):
            run = run[1:]
        if not run:
            return []
        first = run[0]
        if first.initial and first.lower not in self.capitalised_mid and first.lower not in self.labels:
            if len(run) == 1:
                if not possessive_next:
                    return []
            elif first.lower in self.seen_lower:
                run = run[1:]
        if all(w.functional or w.role == "particle" or _ROMAN.match(w.text) for w in run):
            return []
        if all(w.functional or w.lower in self.lists.weekdays or w.lower in self.lists.stance for w in run):
            return []
        if not any(sum(ch.isalpha() for ch in w.text) >= 2 for w in run):
            return []
        return run


def extract_noun_phrases(text: str, *, max_word_length: int = 15) -> list[str]:
    """Upper-cased noun phrases of ``text``, unique, in order of first appearance.

    See the module docstring for the heuristics and their limits. Deterministic and offline.
    """
    return list(_phrases(text, max_word_length))


def _phrases(text: str, max_word_length: int) -> dict[str, bool]:
    """Each phrase of ``text`` (first-appearance order) and whether it was found as a proper name."""
    prepared = prepare_text(text)
    return _Extractor(prepared, tokenize(prepared), max_word_length).run()


def noun_phrase_records(text_units: pl.DataFrame, max_word_length: int = 15) -> pl.DataFrame:
    """``graph_extractions`` rows (record_type ``noun_phrase``) for the text units of one partition.

    ``text_units`` needs ``id``, ``text`` and ``document_key``; ``record_index`` is the phrase's
    order of first appearance in its unit; ``type`` is ``PROPER_NAME_TYPE`` for a phrase the unit
    spells as a proper name and ``NOUN_PHRASE_TYPE`` otherwise.
    """
    if text_units.is_empty():
        return empty_frame(GRAPH_EXTRACTIONS)
    unit_ids: list[str] = []
    indexes: list[int] = []
    titles: list[str] = []
    keys: list[str | None] = []
    kinds: list[str] = []
    for unit_id, text, key in text_units.select("id", "text", "document_key").iter_rows():
        for index, (phrase, name) in enumerate(_phrases(text or "", max_word_length).items()):
            unit_ids.append(unit_id)
            indexes.append(index)
            titles.append(phrase)
            keys.append(key)
            kinds.append(PROPER_NAME_TYPE if name else NOUN_PHRASE_TYPE)
    frame = pl.DataFrame(
        {
            "text_unit_id": unit_ids,
            "record_index": indexes,
            "record_type": ["noun_phrase"] * len(titles),
            "title": titles,
            "type": kinds,
            "document_key": keys,
        },
        schema={
            "text_unit_id": pl.String,
            "record_index": pl.Int64,
            "record_type": pl.String,
            "title": pl.String,
            "type": pl.String,
            "document_key": pl.String,
        },
    )
    return conform(frame, GRAPH_EXTRACTIONS)
