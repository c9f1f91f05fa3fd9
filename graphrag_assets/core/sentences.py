"""Sentence splitting and word tokenisation of running text (no model, no download).

Shared by the noun-phrase extractor, the extractive reports and the extractive answers, so a
"sentence" and a "word" mean the same thing everywhere. Abbreviations and initials come from the
word lists (:mod:`graphrag_assets.core.words`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from graphrag_assets.core.words import WordLists, word_lists

# Bump when what this module calls a sentence or a word changes: the phrase descriptions and the
# name votes a build stores (index/phrase_descriptions.py, index/extractive_reuse.py) were read
# under these rules, and are not kept under others.
SENTENCE_RULES_VERSION = 1

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u02bc": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2011": "-",
        "\u00a0": " ",
    }
)
_SOFT_HYPHEN = "\u00ad"
_LINE_HYPHEN = re.compile(r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[^\W\d_])")
_URL = re.compile(r"(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_HEADING_WORD = re.compile(r"[^\W\d_]{2,}")
_WORD = r"[^\W_]+(?:'[^\W_]+)*(?:-[^\W_]+(?:'[^\W_]+)*)*"
_TOKEN = re.compile(
    r"(?P<para>\n[ \t]*(?:\n[ \t]*)+)"
    r"|(?P<number>\d+(?:[.,:]\d+)+)"  # 1.8, 3.14159, 2,500, 10:30 - a period inside a number ends nothing
    r"|(?P<acronym>(?:[^\W\d_]\.){2,})"
    rf"|(?P<word>{_WORD})(?P<dot>\.)?"
    r"|(?P<end>[.!?\u2026]+)"
    r"|(?P<open>[\"\[])"
    r"|(?P<colon>:)"
    r"|(?P<other>[^\s])"
)


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
        elif kind == "number":
            tokens.append(Token("word", m.group("number"), start, end, initial=at_start))
            at_start = False
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
            is_abbreviation = (
                dot
                and not possessive
                and (
                    base.lower() in lists.abbreviations
                    or (len(base) == 1 and base.isupper() and _initial_before(prepared, end, lists))
                )
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
    return [(sentence, key) for _, _, sentence, key, _ in _sentence_bounds(prepare_text(text))]


def sentences_with_words(text: str) -> list[tuple[str, str, list[Token]]]:
    """:func:`sentences_with_keys` with each sentence's word tokens, from the same tokenisation.

    A sentence's words are the ones :func:`tokenize` gives for the sentence alone when it has a
    lower-case letter (the same characters, and the same words around each one); a sentence
    without one is lower-cased when prepared alone, which these tokens are not.
    """
    return [(sentence, key, words) for _, _, sentence, key, words in _sentence_bounds(prepare_text(text))]


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    """A sentence of :func:`split_sentences` and where it lies in the text it was split from."""

    text: str  # as split_sentences gives it (quotes normalised, whitespace collapsed)
    key: str  # its mention_key
    start: int  # text[start:end] is the sentence as written, from its first character to its last
    end: int


def sentence_spans(text: str) -> list[SentenceSpan]:
    """The sentences of :func:`sentences_with_keys`, each with its span in ``text``.

    A citation quotes the characters as written, while a sentence is shown normalised: the text is
    prepared as :func:`prepare_text` does, but every prepared character remembers the characters
    it came from, so a sentence's first and last characters lead back to the original.
    """
    prepared = _MappedText.prepared(text)
    spans = []
    for begin, stop, sentence, key, _ in _sentence_bounds(prepared.text):
        start, end = prepared.starts[begin], prepared.ends[stop - 1]
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        spans.append(SentenceSpan(sentence, key, start, end))
    return spans


def _sentence_bounds(prepared: str) -> list[tuple[int, int, str, str, list[Token]]]:
    """(begin, stop, sentence, mention key, word tokens) of each sentence of a prepared text."""
    result: list[tuple[int, int, str, str, list[Token]]] = []
    begin: int | None = None
    pending_end: int | None = None
    words: list[Token] = []

    def flush(stop: int) -> None:
        nonlocal begin, pending_end, words
        if begin is not None:
            sentence = " ".join(prepared[begin:stop].split())
            if any(ch.isalpha() for ch in sentence):
                key = " " + " ".join(word.text.upper() for word in words) + " "
                result.append((begin, stop, sentence, key, words))
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
            words.append(token)
    if pending_end is not None:
        flush(pending_end)
    flush(len(prepared))
    return result


_SOFT_HYPHENS = re.compile(_SOFT_HYPHEN)
_LINE_ENDS = re.compile(r"\r\n?")
_MARKS_AFTER = re.compile(r".[\u1160-\u11ff]*", re.DOTALL)  # Hangul vowel / final jamo compose with the syllable before


@dataclass(slots=True)
class _MappedText:
    """A text derived from an original one, each character with the span of the original it came from."""

    text: str
    starts: list[int]
    ends: list[int]

    @classmethod
    def prepared(cls, original: str) -> _MappedText:
        """:func:`prepare_text` step by step, keeping the map (its text equals prepare_text's)."""
        mapped = cls(original, list(range(len(original))), list(range(1, len(original) + 1)))
        mapped = mapped.normalized()
        mapped.text = mapped.text.translate(_QUOTES)  # one character for one
        for pattern, replacement in (
            (_SOFT_HYPHENS, ""),
            (_LINE_ENDS, "\n"),
            (_LINE_HYPHEN, "-"),
            (_URL, " ; "),
        ):
            mapped = mapped.replaced(pattern, replacement)
        if not any(ch.islower() for ch in mapped.text):
            return mapped.lowered()
        offset = 0
        headings = []
        for line in mapped.text.split("\n"):
            if not any(ch.islower() for ch in line) and _HEADING_WORD.search(line):
                headings.append((offset, offset + len(line)))
            offset += len(line) + 1
        return mapped.removed(headings)

    def _rebuilt(self, pieces: list[tuple[int, int, str]]) -> _MappedText:
        """The text with each (start, end, replacement) piece replaced; a replacement's characters
        all map to the whole original span of what they replace."""
        if not pieces:
            return self
        text: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        last = 0
        for start, end, replacement in pieces:
            text.append(self.text[last:start])
            starts.extend(self.starts[last:start])
            ends.extend(self.ends[last:start])
            if replacement:
                text.append(replacement)
                starts.extend([self.starts[start]] * len(replacement))
                ends.extend([self.ends[end - 1]] * len(replacement))
            last = end
        text.append(self.text[last:])
        starts.extend(self.starts[last:])
        ends.extend(self.ends[last:])
        return _MappedText("".join(text), starts, ends)

    def replaced(self, pattern: re.Pattern[str], replacement: str) -> _MappedText:
        return self._rebuilt([(m.start(), m.end(), replacement) for m in pattern.finditer(self.text)])

    def removed(self, spans: list[tuple[int, int]]) -> _MappedText:
        return self._rebuilt([(start, end, "") for start, end in spans if end > start])

    def normalized(self) -> _MappedText:
        """NFC, composed one character (with the marks that follow it) at a time."""
        if unicodedata.is_normalized("NFC", self.text):
            return self
        pieces = []
        for m in _MARKS_AFTER.finditer(self.text):
            end = m.end()
            while end < len(self.text) and unicodedata.combining(self.text[end]):
                end += 1
            if end > m.end() or not unicodedata.is_normalized("NFC", m.group()):
                pieces.append((m.start(), end, unicodedata.normalize("NFC", self.text[m.start() : end])))
        return self._rebuilt(_disjoint(pieces))

    def lowered(self) -> _MappedText:
        lower = self.text.lower()
        if len(lower) == len(self.text):
            return _MappedText(lower, self.starts, self.ends)
        return self._rebuilt(
            [(i, i + 1, ch.lower()) for i, ch in enumerate(self.text) if len(ch.lower()) != 1]
        ).lowered()


def _disjoint(pieces: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Pieces without overlaps (a later piece starting inside an earlier one is dropped)."""
    kept: list[tuple[int, int, str]] = []
    for piece in pieces:
        if not kept or piece[0] >= kept[-1][1]:
            kept.append(piece)
    return kept


def mention_key(text: str) -> str:
    """Upper-case words of ``text`` joined by single spaces, padded with a space at each end.

    A phrase occurs in the text when ``f" {phrase} " in mention_key(text)``: possessives and
    periods are gone and honorifics stay in place (the phrase simply skips them), matching the
    way :func:`extract_noun_phrases` spells phrases.
    """
    words = [t.text.upper() for t in tokenize(prepare_text(text)) if t.kind == "word"]
    return " " + " ".join(words) + " "


def shorten(text: str, max_chars: int) -> str:
    """``text`` cut at a word boundary to at most ``max_chars`` characters, with "…" if cut."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"
