"""Answers without a language model: the sentences of the retrieved context that answer the question.

When no chat model is configured, a query engine still builds its context (text units, the
question's entities, reports, ...) and hands the labelled sources here. Every sentence is scored
against the question and the best ones are returned verbatim, each with its citation in
Microsoft's ``[Data: Sources (3f9a2c1b)]`` form, under a first line that says plainly that no model
was used. Nothing is paraphrased, so nothing can be invented.

Score of a sentence (the cues come from :mod:`graphrag_assets.query.answer_focus`):

- relevance: cosine similarity of the hashing embeddings of sentence and question, both without
  the words of the question's names (the subject term below scores those)
  + ``KEYWORD_WEIGHT`` × the share of the question's content words other than its names (crudely
  stemmed, irregular past forms to their verb, weighted by rarity among the candidate sentences) it
  contains; a sentence opening with a pronoun also holds the words of the sentence before it ("It
  was made of cash-boxes" after "The chain he drew ..." is about the chain);
- subject: + ``SUBJECT_WEIGHT`` × the share of the question's names it mentions, each weighted by
  its rarity among the candidates (at least ``MIN_RARITY``; a surname counts, but only
  ``PART_SHARE`` after another given name or a title: "Mrs. Cratchit" for Martha Cratchit;
  a sentence right after one about the subject counts ``PRONOUN_SHARE`` of it when it starts with
  a pronoun, or names no one and holds a third-person pronoun: "The chain he drew ..." after
  "Marley in his pigtail ..."); when the question's verb is a speech act ("what did X say /
  promise / offer ..."), every line of a paragraph of dialogue whose tag names X ("'No, no,' said
  Scrooge.") names X: the lines after the tag are X's words too;
- answer kind: + ``KIND_WEIGHT`` when, next to the subject (or holding ``NEAR_OVERLAP`` of the
  asked words), it holds what the
  question asks for and the question lacks: a name for "who", a time for "when", a quantity for
  "how many/much", a place for "where"; ``DEFINITION_WEIGHT`` for "X, a ..." / "X is the ..." when
  the question is "who/what is X?"; + ``KIND_WEIGHT`` more, when the question's verb is an
  undertaking ("what did X promise / offer?"), for a sentence that undertakes ("I'll raise your salary"
  in X's own line, "X promised ..." told); + ``VERB_WEIGHT`` when X (or, in a sentence that
  continues one about X, he/she/they) does the question's verb: "Ada bought a kite" for "what did
  Ada buy?", "said Scrooge" for "what did Scrooge say?";
- graph: + ``GRAPH_WEIGHT`` when it names the subject together with an entity the graph links to it;
- form: − ``DIALOGUE_PENALTY`` × (1 − keyword share) for a line of speech whose narration is only
  "... said X" (the speech may hold the answer, but a line that merely names the subject does not), and
  − ``QUESTION_PENALTY`` for a sentence that is itself a question: both repeat words, neither answers;
  − ``SHORT_PENALTY`` below ``MIN_WORDS`` words; − ``REPORT_PENALTY`` for a report's sentence (a
  summary of what the sources say first-hand).

Sentences are taken paragraph by paragraph (a paragraph's sentences know the one before them and
who speaks them). Sources are the context's text units, then its entities' description sentences (the graph's own
summary of each entity), then the other text units of a rarely mentioned entity the question names
(:func:`subject_sources`) or, for a question that names nothing, the passages the full-text index
finds for its words (:func:`question_sources`), then the reports. A sentence with no keyword or subject hit and a cosine
below ``MIN_COSINE`` is not shown. Ties keep source order, then sentence order; identical sentences
are shown once (with the first citation). Deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.sentences import mention_key, sentences_with_keys
from graphrag_assets.core.words import function_words
from graphrag_assets.llm.local_embedder import LocalEmbedder, words_of
from graphrag_assets.query.answer_focus import (
    DEFINITION,
    PART_SHARE,
    Focus,
    another_bearer,
    commits,
    is_dialogue_tag,
    mentions,
    offers,
    question_focus,
    speaker,
)
from graphrag_assets.query.model_calls import ModelCalls
from graphrag_assets.query.prose import prose
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.results import ContextRecords

HEADER = "(Extractive answer: no language model was used; these are the most relevant passages.)"
NO_MATCH = "No passage in the retrieved context matches the question."
EXTRACTIVE_SENTENCES = 5
KEYWORD_WEIGHT = 0.5
SUBJECT_WEIGHT = 0.6
KIND_WEIGHT = 0.5
DEFINITION_WEIGHT = 0.8
GRAPH_WEIGHT = 0.15
VERB_WEIGHT = 0.3
VERB_REACH = 3  # "Scrooge quickly bought", "Scrooge had bought": the verb a few words after its subject
DIALOGUE_PENALTY = 0.5
QUESTION_PENALTY = 0.4
SHORT_PENALTY = 0.4
MIN_WORDS = 3  # "Scrooge." or "Christmas Day." answer nothing
REPORT_PENALTY = 0.3  # a report sums up sentences the sources state first-hand
MIN_COSINE = 0.1
NEAR_OVERLAP = 0.5  # a sentence holding this share of the asked words is about the question, named subject or not
MIN_RARITY = 0.3  # the least weight a subject's mention keeps, however common the subject
MAX_SUBJECT_UNITS = 40
QUESTION_UNITS = 5
PRONOUN_SHARE = 0.8  # "She was refloated ..." right after a sentence naming the Meridian Crest
_PRONOUN_START = frozenset({"he", "she", "it", "they", "his", "her", "its", "their", "this", "these"})
_SUBJECT_PRONOUNS = frozenset({"HE", "SHE", "THEY"})  # X by a pronoun, in a sentence that continues one about X
_THIRD_PERSON = frozenset({"he", "him", "his", "she", "her", "it", "its", "they", "them", "their"})
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_SUFFIXES = ("ing", "es", "ed", "s")


@dataclass(frozen=True)
class _Candidate:
    label: str
    text: str
    key: str  # its mention_key
    previous: int = -1  # the candidate holding the sentence before it in its paragraph (-1: none)
    speaker: str = ""  # mention key of who says it, in a paragraph of dialogue whose tag names one


# the past forms of common irregular verbs: "what did Scrooge say?" is answered by "said Scrooge"
_IRREGULAR = {
    past: base
    for base, forms in {
        "say": "said",
        "make": "made",
        "come": "came",
        "go": "went gone",
        "see": "saw seen",
        "take": "took taken",
        "give": "gave given",
        "buy": "bought",
        "tell": "told",
        "find": "found",
        "think": "thought",
        "bring": "brought",
        "know": "knew known",
        "eat": "ate eaten",
        "leave": "left",
        "feel": "felt",
        "keep": "kept",
        "hold": "held",
        "stand": "stood",
        "sit": "sat",
        "begin": "began begun",
        "run": "ran",
        "write": "wrote written",
        "speak": "spoke spoken",
        "get": "got gotten",
        "pay": "paid",
        "sell": "sold",
        "send": "sent",
        "spend": "spent",
        "build": "built",
        "meet": "met",
        "lose": "lost",
        "win": "won",
        "become": "became",
        "die": "died",
    }.items()
    for past in forms.split()
}


def stem(word: str) -> str:
    """A crude English stem: an irregular past form's verb, else the word without its possessive
    and one common suffix (when 3+ letters remain)."""
    word = word.removesuffix("'s")
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def keywords(text: str) -> set[str]:
    """Stemmed content words of a text."""
    stop = function_words()
    return {stem(w) for w in words_of(text) if w not in stop}


def extractive_answer(
    question: str,
    sources: Sequence[tuple[str, str]],
    embedder: LocalEmbedder,
    *,
    max_sentences: int = 5,
    related: Sequence[str] = (),
) -> str:
    """The sentences of ``sources`` (``(citation label, text)`` pairs) that best answer ``question``, cited.

    A label such as ``"Sources (3f9a2c1b)"`` or ``"Reports (12)"`` becomes
    ``[Data: Sources (3f9a2c1b)]`` after each sentence. ``related`` are the names of entities the
    graph links to the question's entities (the graph bonus of the module docstring).
    """
    candidates = _candidates(sources)
    if not candidates or max_sentences < 1:
        return f"{HEADER}\n\n{NO_MATCH}"

    focus = question_focus(question)
    # Names are scored as subjects; the keywords then say what is asked about them.
    wanted = keywords(question) - (keywords(" ".join(focus.subjects).lower()) if focus.named else set())
    vectors = embedder.embed_sync(_without_subjects([question] + [c.text for c in candidates], focus))
    cosine = vectors[1:] @ vectors[0]
    overlap = _keyword_overlap(wanted, _continued_keywords(candidates))
    cues = _cue_scores(focus, candidates, overlap, related)
    score = cosine.astype(np.float64) + KEYWORD_WEIGHT * overlap + cues.bonus
    eligible = [i for i in range(len(candidates)) if overlap[i] > 0 or cues.subject[i] > 0 or cosine[i] >= MIN_COSINE]
    ranked = sorted(eligible, key=lambda i: (-round(float(score[i]), 9), i))[:max_sentences]
    if not ranked:
        return f"{HEADER}\n\n{NO_MATCH}"
    lines = [f"{candidates[i].text} [Data: {candidates[i].label}]" for i in ranked]
    return HEADER + "\n\n" + "\n\n".join(lines)


def _candidates(sources: Sequence[tuple[str, str]]) -> list[_Candidate]:
    """The sentences of the sources, each once (the first citation wins), paragraph by paragraph:
    each knows the sentence before it and, in a paragraph of dialogue, who speaks it."""
    candidates: list[_Candidate] = []
    index: dict[str, int] = {}
    for label, text in sources:
        for paragraph in _PARAGRAPH.split(prose(text or "")):
            sentences = sentences_with_keys(paragraph)
            speaks = speaker([sentence for sentence, _ in sentences])
            previous = -1
            for sentence, key in sentences:
                if sentence not in index:
                    index[sentence] = len(candidates)
                    candidates.append(_Candidate(label, sentence, key, previous, speaks))
                previous = index[sentence]
    return candidates


def _continued_keywords(candidates: Sequence[_Candidate]) -> list[set[str]]:
    """Each sentence's keywords, with those of the sentence before it when it opens with a pronoun:
    "It was made of cash-boxes" after "The chain he drew ..." is about the chain."""
    own = [keywords(c.text) for c in candidates]
    return [
        own[i] | own[c.previous] if c.previous >= 0 and _first_word(c.text) in _PRONOUN_START else own[i]
        for i, c in enumerate(candidates)
    ]


def _does(text: str, heads: frozenset[str], verb: str, speech: bool) -> bool:
    """Whether the sentence has one of ``heads`` (upper case) doing the verb (by its stem): the
    verb within ``VERB_REACH`` words after it ("Scrooge bought"), or, for a verb of speech, right
    before it ("said Scrooge"; "bought Ada" makes Ada the object); a possessive is someone else
    ("said Scrooge's nephew")."""
    words = _WORD.findall(text)
    for i, word in enumerate(words):
        if word.upper() in heads:
            after = words[i + 1 : i + 1 + VERB_REACH]
            before = words[i - 1 : i] if i and speech else []
            if any(stem(w.lower()) == verb for w in after + before):
                return True
    return False


def _first_word(text: str) -> str:
    found = _WORD.search(text)
    return found.group().lower() if found else ""


def _refers_back(text: str) -> bool:
    """Whether a sentence continues the one before it about the same one: it opens with a pronoun
    ("She was refloated ..."), or it names no one and holds a third-person pronoun ("The chain he
    drew was clasped about his middle.")."""
    words = _WORD.findall(text)
    if not words:
        return False
    if words[0].lower() in _PRONOUN_START:
        return True
    names = any(w[:1].isupper() and w != "I" for w in words[1:])
    return not names and any(w.lower() in _THIRD_PERSON for w in words)


def _without_subjects(texts: list[str], focus: Focus) -> list[str]:
    """The texts with the words of the question's subjects taken out.

    The subject is scored on its own (``SUBJECT_WEIGHT``); left in, it would count again in the
    cosine, most in the shortest sentences ("Ah, poor Tiny Tim!"), which name it and say nothing.
    """
    words = {w for s in focus.subjects for w in s.lower().split() if len(w) > 2 and w not in function_words()}
    if not words or not focus.named:  # a phrase the question defines ("the mediator in the reef case") is what it asks
        return texts
    names = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")(?:'s)?\b", re.IGNORECASE)
    return [names.sub(" ", text) for text in texts]


def _keyword_overlap(wanted: set[str], found: list[set[str]]) -> np.ndarray:
    """Per sentence, the share of the question's keywords it holds, each keyword weighted by its
    rarity among the candidate sentences (``log(1 + n / sentences holding it)``): in a novel about
    Scrooge, "Scrooge" tells the sentences apart less than "chain" does."""
    if not wanted or not found:
        return np.zeros(len(found))
    weight = {w: np.log1p(len(found) / max(1, sum(w in f for f in found))) for w in wanted}
    total = sum(weight.values())
    return np.array([sum(weight[w] for w in wanted & f) / total for f in found], dtype=np.float64)


@dataclass(frozen=True)
class _Cues:
    subject: np.ndarray  # share of the question's subjects each sentence names (0.5: by a pronoun)
    bonus: np.ndarray  # everything but relevance: subject, answer kind, graph, form


def _cue_scores(focus: Focus, candidates: Sequence[_Candidate], overlap: np.ndarray, related: Sequence[str]) -> _Cues:
    keys = [c.key for c in candidates]
    subject_words = frozenset(w.lower() for s in focus.subjects for w in s.split())
    neighbours = [mention_key(name).strip() for name in related]
    verb = stem(focus.verb) if focus.verb else ""
    heads = frozenset(s.rsplit(" ", 1)[-1] for s in focus.subjects)  # "CRATCHIT" of "BOB CRATCHIT"
    subject = np.zeros(len(candidates))
    bonus = np.zeros(len(candidates))
    # A subject named by most candidates (the hero of a novel) tells them apart little.
    named_by = [sum(mentions(key, s) == 1.0 for key in keys) / max(1, len(keys)) for s in focus.subjects]
    rarity = [max(MIN_RARITY, 1.0 - share) for share in named_by]
    for i, (candidate, key) in enumerate(zip(candidates, keys, strict=True)):
        shares = [
            PART_SHARE if share == 1.0 and f" {s} " not in key and another_bearer(candidate.text, s) else share
            for s, share in zip(focus.subjects, (mentions(key, s) for s in focus.subjects), strict=True)
        ]
        if focus.speech and candidate.speaker:  # "what did Scrooge promise?": Scrooge's own lines, tagged or not
            shares = [
                max(share, mentions(candidate.speaker, s)) for s, share in zip(focus.subjects, shares, strict=True)
            ]
        named = [s for s, share in zip(focus.subjects, shares, strict=True) if share == 1.0]
        if focus.subjects:
            subject[i] = sum(share * rarity[j] for j, share in enumerate(shares)) / len(focus.subjects)
            previous = candidate.previous
            if not subject[i] and previous >= 0 and subject[previous] > 0 and _refers_back(candidate.text):
                subject[i] = PRONOUN_SHARE * subject[previous]
        # next to the subject, or holding most of what is asked ("by Three Spirits" for "how many spirits will haunt Scrooge?")
        near = subject[i] > 0 or overlap[i] >= NEAR_OVERLAP or (not focus.subjects and overlap[i] > 0)
        if near:
            bonus[i] += (DEFINITION_WEIGHT if focus.wants == DEFINITION else KIND_WEIGHT) * offers(
                focus, candidate.text, subject_words
            )
            own_line = bool(candidate.speaker) and any(mentions(candidate.speaker, s) == 1.0 for s in focus.subjects)
            if focus.commits and commits(candidate.text, own_line):  # "what did X promise?": "I'll raise your salary"
                bonus[i] += KIND_WEIGHT
            if verb and _does(candidate.text, heads if named else heads | _SUBJECT_PRONOUNS, verb, focus.speech):
                bonus[i] += VERB_WEIGHT
        if named and any(n and n not in focus.subjects and f" {n} " in key for n in neighbours):
            bonus[i] += GRAPH_WEIGHT
        if is_dialogue_tag(candidate.text):  # a line of speech holding none of the asked words says nothing
            bonus[i] -= DIALOGUE_PENALTY * (1.0 - overlap[i])
        if candidate.text.rstrip("\"')]").endswith("?"):
            bonus[i] -= QUESTION_PENALTY
        if len(key.split()) < MIN_WORDS:
            bonus[i] -= SHORT_PENALTY
        if candidate.label.startswith("Reports"):
            bonus[i] -= REPORT_PENALTY
    return _Cues(subject, bonus + SUBJECT_WEIGHT * subject)


def _texts_of(data: QueryData, table: str, ids: list[str], column: str) -> dict[str, str]:
    """``column`` of the rows of ``table`` with these ids, by id: only those rows are read from an
    index read on demand (a basic search need not load 100,000 text units for the ten it cites)."""
    if not ids:
        return {}
    return dict(data.rows_where(table, "id", ids, ("id", column)).iter_rows())  # not the rows' unit lists


def extractive_sources(data: QueryData, records: ContextRecords) -> list[tuple[str, str]]:
    """(citation label, text) of the sources, then the reports, of a context, for the no-LLM answer."""
    texts = _texts_of(data, "text_units", records.ids("sources"), "text")
    reports = _texts_of(data, "community_reports", records.ids("reports"), "full_content")
    descriptions = _texts_of(data, "entities", records.ids("entities"), "description")
    pairs = [(f"Sources ({r.citation})", texts[r.id]) for r in records.sources if texts.get(r.id)]
    pairs += [(f"Entities ({r.citation})", descriptions[r.id]) for r in records.entities if descriptions.get(r.id)]
    pairs += [(f"Reports ({r.citation})", reports[r.id]) for r in records.reports if reports.get(r.id)]
    return pairs


# what Python's [\W_] is (polars' Unicode tables are newer: a few recent letters differ)
_NOT_ALPHANUMERIC = r"[^\p{L}\p{N}]+"


def _spelled(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(_NOT_ALPHANUMERIC, "")


def may_name(titles: pl.Series, subjects: Sequence[str]) -> pl.Series:
    """Per title, whether its mention key could share a word with a subject: False only when it
    cannot, so that :func:`mention_key` (tokenizing, ~30 µs a title) runs on these titles alone and
    not on an index's 50,000 (as polars expressions: 0.04 s for those, 0.09 s a title at a time).

    A word of a mention key is a run of letters and digits of the title (upper-cased, its acronyms'
    dots dropped; of the lower-cased title when the title has no lower-case letter), so its letters
    and digits occur, in order and adjacent, in the title's letters and digits, upper-cased.
    """
    words = pl.Series([word for subject in subjects for word in subject.split()], dtype=pl.String)
    wanted = set(pl.select(_spelled(pl.lit(words))).to_series().to_list())
    if "" in wanted or not wanted:
        return pl.Series([bool(wanted)] * titles.len(), dtype=pl.Boolean)
    text = pl.col("title").fill_null("").str.normalize("NFC")
    spelled = pl.concat_str(
        _spelled(text.str.to_uppercase()), pl.lit(" "), _spelled(text.str.to_lowercase().str.to_uppercase())
    )
    return titles.to_frame("title").select(spelled.str.contains_any(sorted(wanted))).to_series().rename("")


def subject_sources(question: str, data: QueryData, records: ContextRecords) -> list[tuple[str, str]]:
    """Sentences about the question's subjects from the text units the context left out.

    A character ("Who is Topper?") is often defined once, in a passage that ranks below the
    passages where it merely appears; the graph knows every text unit an entity occurs in, so the
    sentences of those units (and of the units the full-text index finds for the name; the first
    ``MAX_SUBJECT_UNITS`` in reading order) that name a subject of the question become candidates too,
    with the sentences that continue them (the next one, and those that go on with a pronoun), each
    run of consecutive sentences as one text, so that a sentence still follows the one before it.
    """
    subjects = question_focus(question).subjects
    if not subjects:
        return []
    unit_ids: list[str] = []
    titles = data.columns_of("entities", ("title",))["title"]
    named = [title for title in titles.filter(may_name(titles, subjects)).unique().to_list() if _names(title, subjects)]
    # the unit lists of the naming entities only: of the 1,315 a question's words matched on a
    # 100,000-document index, hubs' lists among them, reading every list took ~0.2 s
    for units in data.rows_where("entities", "title", named, ("title", "text_unit_ids"))["text_unit_ids"]:
        if units is not None:
            unit_ids.extend(units)
    if data.text_unit_lexical is not None:  # names the noun-phrase graph missed (a cast list's "Fred,")
        for subject in subjects:
            unit_ids.extend(u for u, _ in data.text_unit_lexical.search(subject.lower(), MAX_SUBJECT_UNITS))
    known = set(records.ids("sources"))
    wanted = [u for u in dict.fromkeys(unit_ids) if u not in known]
    if not wanted:
        return []
    # the first units in reading order, chosen by their keys: the units of a common name run to thousands
    order = ("document_id", "chunk_index", "id")
    first = data.first_rows("text_units", "id", wanted, order, MAX_SUBJECT_UNITS, order)
    texts = _texts_of(data, "text_units", first["id"].to_list(), "text")
    pairs = []
    for unit_id in first["id"].to_list():
        text = texts.get(unit_id)
        sentences = [
            (n, sentence, key)
            for n, paragraph in enumerate(_PARAGRAPH.split(prose(text or "")))
            for sentence, key in sentences_with_keys(paragraph)
        ]
        names = [any(mentions(key, s) for s in subjects) for _, _, key in sentences]
        kept: list[int] = []
        for i, (_, sentence, _) in enumerate(sentences):
            # a sentence naming a subject, right after one ("The chain he drew ..." after "Marley ..."),
            # or continuing a kept one with a pronoun ("It was made of cash-boxes ...")
            follows = bool(kept) and kept[-1] == i - 1 and (names[i - 1] or _refers_back(sentence))
            if names[i] or follows:
                kept.append(i)
        pairs.extend((f"Sources ({short_id(unit_id)})", run) for run in _runs(sentences, kept))
    return pairs


def _names(title: str | None, subjects: Sequence[str]) -> bool:
    """Whether an entity's title names one of the question's subjects (or a subject names it)."""
    key = mention_key(title or "").strip()
    return bool(key) and any(f" {s} " in f" {key} " or f" {key} " in f" {s} " for s in subjects)


def _runs(sentences: list[tuple[int, str, str]], kept: list[int]) -> list[str]:
    """The kept sentences (paragraph number, sentence, key), consecutive ones joined into one text
    (a blank line between paragraphs), so that each still follows the one before it."""
    runs: list[list[int]] = []
    for i in kept:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    texts = []
    for run in runs:
        text = sentences[run[0]][1]
        for before, i in zip(run, run[1:], strict=False):
            text += ("\n\n" if sentences[i][0] != sentences[before][0] else " ") + sentences[i][1]
        texts.append(text)
    return texts


def question_sources(question: str, data: QueryData, records: ContextRecords) -> list[tuple[str, str]]:
    """For a question that names nothing, the text units the full-text index ranks first for its
    words (the first ``QUESTION_UNITS``), when the context left them out.

    :func:`subject_sources` widens the candidates of a question that names a subject; one that names
    none ("when will the first spirit come?") is only about its words, and local search's context,
    the neighbourhood of the entities its words matched, may miss the passage that answers it.
    """
    if data.text_unit_lexical is None or question_focus(question).subjects:
        return []
    known = set(records.ids("sources"))
    wanted = [u for u, _ in data.text_unit_lexical.search(question, QUESTION_UNITS) if u not in known]
    texts = _texts_of(data, "text_units", wanted, "text")
    return [(f"Sources ({short_id(u)})", texts[u]) for u in wanted if texts.get(u)]


def related_names(records: ContextRecords) -> list[str]:
    """Names of the context's entities and of both ends of its relationships ("A -> B")."""
    names = [r.title for r in records.entities]
    for r in records.relationships:
        names.extend(part.strip() for part in r.title.split("->"))
    return list(dict.fromkeys(n for n in names if n))


def no_llm_answer(question: str, data: QueryData, records: ContextRecords, calls: ModelCalls) -> str:
    """The extractive answer used when no chat model is configured (it says that no model was used).

    Sentences are ranked with the offline hashing embedder whatever embedder the query used: the
    ranking only compares sentences with the question, so it needs no stored vectors, and it costs
    no calls to an embedding server.
    """
    embedder = calls.embedder if isinstance(calls.embedder, LocalEmbedder) else LocalEmbedder()
    sources = extractive_sources(data, records)
    reports = [pair for pair in sources if pair[0].startswith("Reports")]
    sources = [pair for pair in sources if not pair[0].startswith("Reports")]
    return extractive_answer(
        question,
        sources + subject_sources(question, data, records) + question_sources(question, data, records) + reports,
        embedder,
        max_sentences=EXTRACTIVE_SENTENCES,
        related=related_names(records),
    )
