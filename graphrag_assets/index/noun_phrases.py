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

Known limits: no part-of-speech tagging, so verbs missing from the list can end up in a common
phrase ("the dog barks" → "DOG BARKS"); Title Case headings that are not in capitals produce
long name runs; a name made only of function words ("The Who") is lost; the pronoun "I" always
breaks a name ("Henry I" → "HENRY"); a one-word name seen only at sentence starts is missed
("Scrooge left." alone gives nothing), which matters more for very small chunks; homographs of
function words cut phrases ("free will" → "will" is a modal). Output phrases are upper-case (Microsoft's convention),
unique, in order of first appearance.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from importlib import resources

import polars as pl

from graphrag_assets.schemas import GRAPH_EXTRACTIONS, conform, empty_frame

WORD_LISTS_FILE = "data/stopwords_en.txt"
MAX_COMMON_PHRASE_WORDS = 6
_I_FORMS = frozenset({"i", "i'm", "i've", "i'll", "i'd"})


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


@functools.cache
def word_lists() -> WordLists:
    """The word lists shipped in ``data/stopwords_en.txt`` (read once)."""
    text = resources.files("graphrag_assets.index").joinpath(WORD_LISTS_FILE).read_text(encoding="utf-8")
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
    )


def function_words() -> frozenset[str]:
    """Lower-case English function words (used by the local embedder to down-weight them)."""
    return word_lists().function


# ---------------------------------------------------------------------------------------------
# Text preparation and tokenisation (shared with sentence splitting)

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"',
                         "\u201e": '"', "\u00ab": '"', "\u00bb": '"', "\u2011": "-", "\u00a0": " "})
_SOFT_HYPHEN = "\u00ad"
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[^\W\d_])")
_URL = re.compile(r"(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_HEADING_WORD = re.compile(r"[^\W\d_]{2,}")
_WORD = r"[^\W_]+(?:'[^\W_]+)*(?:-[^\W_]+(?:'[^\W_]+)*)*"
_TOKEN = re.compile(
    r"(?P<para>\n[ \t]*(?:\n[ \t]*)+)"
    r"|(?P<acronym>(?:[^\W\d_]\.){2,})"
    rf"|(?P<word>{_WORD})(?P<dot>\.)?"
    r"|(?P<end>[.!?\u2026]+)"
    r"|(?P<open>[\"\[])"
    r"|(?P<colon>:)"
    r"|(?P<other>[^\s])"
)
_ROMAN = re.compile(r"^(?=[MDCLXVI])M{0,4}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})$")
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th|s)?$", re.IGNORECASE)


def prepare_text(text: str) -> str:
    """Normalise quotes and hyphens, join words split across lines, blank out headings and URLs.

    Heading lines (no lower-case letter, at least one word of two letters) become empty lines,
    so they also end the paragraph before them. A text with no lower-case letter is lower-cased.
    """
    text = unicodedata.normalize("NFC", text).translate(_QUOTES).replace(_SOFT_HYPHEN, "")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _LINE_HYPHEN.sub("-", text)
    text = _URL.sub(" ; ", text)
    if not any(ch.islower() for ch in text):
        return text.lower()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not any(ch.islower() for ch in line) and _HEADING_WORD.search(line):
            lines[i] = ""
    return "\n".join(lines)


@dataclass(slots=True)
class Token:
    kind: str  # word | poss | end | para | open | colon | break
    text: str
    start: int
    end: int
    initial: bool = False  # word: first word of a sentence


_NEXT_WORD = re.compile(r"\s*([^\W_]+)")


def _initial_before(prepared: str, position: int, lists: WordLists) -> bool:
    """Whether "X." at ``position`` is an initial: the next word is a capitalised non-function word."""
    m = _NEXT_WORD.match(prepared, position)
    return bool(m) and m.group(1)[:1].isupper() and m.group(1).lower() not in lists.function


def tokenize(prepared: str) -> list[Token]:
    """Tokens of a prepared text, with sentence-initial words marked."""
    lists = word_lists()
    tokens: list[Token] = []
    at_start = True
    for m in _TOKEN.finditer(prepared):
        kind = m.lastgroup
        if kind == "dot":  # the word alternative matched together with its trailing period
            kind = "word"
        start, end = m.start(), m.end()
        if kind == "para":
            tokens.append(Token("para", "", start, end))
            at_start = True
        elif kind == "acronym":
            letters = m.group("acronym").replace(".", "")
            tokens.append(Token("word", letters, start, end, initial=at_start))
            at_start = False
        elif kind == "word":
            word = m.group("word")
            dot = m.group("dot") is not None
            word_end = m.end("word")
            possessive = len(word) > 2 and word[-2] == "'" and word[-1] in "sS"
            base = word[:-2] if possessive else word
            is_abbreviation = dot and not possessive and (
                base.lower() in lists.abbreviations
                or (len(base) == 1 and base.isupper() and _initial_before(prepared, end, lists))
            )
            base_end = word_end - (2 if possessive else 0)
            tokens.append(Token("word", base, start, base_end, initial=at_start))
            at_start = False
            if possessive:
                tokens.append(Token("poss", "'s", word_end - 2, word_end))
            if dot and not is_abbreviation:
                tokens.append(Token("end", ".", word_end, end))
                at_start = True
        elif kind == "end":
            tokens.append(Token("end", m.group(), start, end))
            at_start = True
        elif kind == "open":
            opening = m.group() == "[" or start == 0 or prepared[start - 1].isspace() or prepared[start - 1] in "([{"
            tokens.append(Token("open" if opening else "break", m.group(), start, end))
            at_start = at_start or opening
        elif kind == "colon":
            tokens.append(Token("colon", ":", start, end))
            at_start = True
        else:
            tokens.append(Token("break", m.group(), start, end))
    return tokens


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` with whitespace collapsed (headings dropped, abbreviations respected).

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (plus closing quotes or brackets right after
    it) unless the next word is in lower case ("'Why?' said Bob"), or at a blank line.
    Fragments without a letter are dropped.
    """
    return [sentence for sentence, _ in sentences_with_keys(text)]


def sentences_with_keys(text: str) -> list[tuple[str, str]]:
    """:func:`split_sentences` paired with each sentence's :func:`mention_key` (one tokenisation)."""
    prepared = prepare_text(text)
    result: list[tuple[str, str]] = []
    begin: int | None = None
    pending_end: int | None = None
    words: list[str] = []

    def flush(stop: int) -> None:
        nonlocal begin, pending_end, words
        if begin is not None:
            sentence = " ".join(prepared[begin:stop].split())
            if any(ch.isalpha() for ch in sentence):
                result.append((sentence, " " + " ".join(words) + " "))
        begin, pending_end, words = None, None, []

    for token in tokenize(prepared):
        if pending_end is not None:
            if token.kind == "break" and token.text in "\"')]}_" and token.start == pending_end:
                pending_end = token.end
                continue
            if token.kind == "word" and token.text[:1].islower():
                pending_end = None  # "'Why?' said Bob" is one sentence
            else:
                flush(pending_end)
        if token.kind == "para":
            flush(token.start)
            continue
        if token.kind == "end":
            if begin is not None:
                pending_end = token.end
            continue
        if begin is None:
            begin = token.start
        if token.kind == "word":
            words.append(token.text.upper())
    if pending_end is not None:
        flush(pending_end)
    flush(len(prepared))
    return result


def mention_key(text: str) -> str:
    """Upper-case words of ``text`` joined by single spaces, padded with a space at each end.

    A phrase occurs in the text when ``f" {phrase} " in mention_key(text)``: possessives and
    periods are gone and honorifics stay in place (the phrase simply skips them), matching the
    way :func:`extract_noun_phrases` spells phrases.
    """
    words = [t.text.upper() for t in tokenize(prepare_text(text)) if t.kind == "word"]
    return " " + " ".join(words) + " "


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
    return all(p.isdigit() or p in lists.numbers for p in parts)


def _classify(token: Token, lists: WordLists) -> _Word:
    text, lower = token.text, token.text.lower()
    functional = lower in lists.function or lower in lists.verbs or _is_number(lower, lists)
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
        if here.role == "name" and here.lower in lists.sections and (
            _is_number(nxt.lower, lists) or _ROMAN.match(nxt.text)
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
            last.endswith("ed") and len(last) >= 5 and not last.endswith(("eed", "ead"))
            and last not in lists.ed_nouns
        )
        if not (adverb or past):
            break
        run = run[:-1]
    return run


class _Extractor:
    """One text's extraction state: evidence about capitalisation, and the phrases found."""

    def __init__(self, tokens: list[Token], max_word_length: int) -> None:
        self.lists = word_lists()
        self.max_word_length = max_word_length
        self.tokens = tokens
        self.phrases: dict[str, None] = {}
        words = [t for t in tokens if t.kind == "word"]
        self.capitalised_mid = {t.text.lower() for t in words if t.text[:1].isupper() and not t.initial}
        self.seen_lower = {t.text for t in words if t.text[:1].islower()}

    def emit(self, words: list[str]) -> None:
        if words and all(len(w) <= self.max_word_length for w in words):
            self.phrases.setdefault(" ".join(w.upper() for w in words), None)

    def run(self) -> list[str]:
        previous_common_introduced = False
        for segment, context, possessive_after in self._segments():
            previous_common_introduced = self._segment(
                segment, context, possessive_after, previous_common_introduced
            )
        return list(self.phrases)

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
            if current:
                segments.append((current, context, token.kind == "poss"))
                current = []
            if token.kind == "poss":
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
                    self.emit([w.text for w in name_words])
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
                    trimmed = _trim_common(run, lists)
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
        if first.initial and first.lower not in self.capitalised_mid:
            if len(run) == 1:
                if not possessive_next:
                    return []
            elif first.lower in self.seen_lower:
                run = run[1:]
        if all(w.functional or w.role == "particle" or _ROMAN.match(w.text) for w in run):
            return []
        if not any(sum(ch.isalpha() for ch in w.text) >= 2 for w in run):
            return []
        return run


def extract_noun_phrases(text: str, *, max_word_length: int = 15) -> list[str]:
    """Upper-cased noun phrases of ``text``, unique, in order of first appearance.

    See the module docstring for the heuristics and their limits. Deterministic and offline.
    """
    tokens = tokenize(prepare_text(text))
    return _Extractor(tokens, max_word_length).run()


def noun_phrase_records(text_units: pl.DataFrame, max_word_length: int = 15) -> pl.DataFrame:
    """``graph_extractions`` rows (record_type ``noun_phrase``) for the text units of one partition.

    ``text_units`` needs ``id``, ``text`` and ``document_key``; ``record_index`` is the phrase's
    order of first appearance in its unit.
    """
    if text_units.is_empty():
        return empty_frame(GRAPH_EXTRACTIONS)
    unit_ids: list[str] = []
    indexes: list[int] = []
    titles: list[str] = []
    keys: list[str | None] = []
    for unit_id, text, key in text_units.select("id", "text", "document_key").iter_rows():
        for index, phrase in enumerate(extract_noun_phrases(text or "", max_word_length=max_word_length)):
            unit_ids.append(unit_id)
            indexes.append(index)
            titles.append(phrase)
            keys.append(key)
    frame = pl.DataFrame(
        {
            "text_unit_id": unit_ids,
            "record_index": indexes,
            "record_type": ["noun_phrase"] * len(titles),
            "title": titles,
            "document_key": keys,
        },
        schema={"text_unit_id": pl.String, "record_index": pl.Int64, "record_type": pl.String,
                "title": pl.String, "document_key": pl.String},
    )
    return conform(frame, GRAPH_EXTRACTIONS)
