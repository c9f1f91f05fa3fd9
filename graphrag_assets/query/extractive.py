"""Answers without a language model: the most relevant sentences of the retrieved context.

When no chat model is configured, a query engine still builds its context (text units,
reports, ...) and hands the labelled sources here. Every sentence is scored against the
question and the best ones are returned verbatim, each with its citation in Microsoft's
``[Data: Sources (3f9a2c1b)]`` form, under a first line that says plainly that no model was
used. Nothing is paraphrased, so nothing can be invented.

Score of a sentence = cosine similarity of the local embeddings of sentence and question
+ ``KEYWORD_WEIGHT`` × the share of the question's content words (function words removed,
crudely stemmed) that the sentence contains. Embeddings reward shared word pieces and pairs;
the keyword share rewards exact hits on names and rare words. A sentence with no keyword hit
and a cosine below ``MIN_COSINE`` is not shown. Ties keep source order, then sentence order;
identical sentences are shown once (with the first citation). Deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from graphrag_assets.core.sentences import split_sentences
from graphrag_assets.core.words import function_words
from graphrag_assets.llm.local_embedder import LocalEmbedder, words_of
from graphrag_assets.query.model_calls import ModelCalls
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.results import ContextRecords

HEADER = "(Extractive answer: no language model was used; these are the most relevant passages.)"
NO_MATCH = "No passage in the retrieved context matches the question."
EXTRACTIVE_SENTENCES = 5
KEYWORD_WEIGHT = 0.5
MIN_COSINE = 0.1
_SUFFIXES = ("ing", "es", "ed", "s")


@dataclass(frozen=True)
class _Candidate:
    label: str
    text: str


def stem(word: str) -> str:
    """A crude English stem: possessive and one common suffix removed when 3+ letters remain."""
    word = word.removesuffix("'s")
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def keywords(text: str) -> set[str]:
    """Stemmed content words of a text."""
    stop = function_words()
    return {stem(w) for w in words_of(text) if w not in stop}


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.MULTILINE)
_CITATION = re.compile(r"\s*\[Data:[^\]]*\]")


def prose(text: str) -> str:
    """The running text of a source: markdown headings and ``[Data: ...]`` citations removed.

    Headings (report titles, finding summaries, document titles) are labels, not statements,
    and a source's own citations would be cited twice.
    """
    return _CITATION.sub("", _HEADING.sub("", text))


def extractive_answer(
    question: str,
    sources: Sequence[tuple[str, str]],
    embedder: LocalEmbedder,
    *,
    max_sentences: int = 5,
) -> str:
    """The most relevant sentences of ``sources`` (``(citation label, text)`` pairs), cited.

    A label such as ``"Sources (3f9a2c1b)"`` or ``"Reports (12)"`` becomes
    ``[Data: Sources (3f9a2c1b)]`` after each sentence.
    """
    candidates: list[_Candidate] = []
    seen: set[str] = set()
    for label, text in sources:
        for sentence in split_sentences(prose(text or "")):
            if sentence not in seen:
                seen.add(sentence)
                candidates.append(_Candidate(label, sentence))
    if not candidates or max_sentences < 1:
        return f"{HEADER}\n\n{NO_MATCH}"

    vectors = embedder.embed_sync([question] + [c.text for c in candidates])
    cosine = vectors[1:] @ vectors[0]
    wanted = keywords(question)
    overlap = np.array(
        [len(wanted & keywords(c.text)) / len(wanted) if wanted else 0.0 for c in candidates],
        dtype=np.float64,
    )
    score = cosine.astype(np.float64) + KEYWORD_WEIGHT * overlap
    eligible = [i for i in range(len(candidates)) if overlap[i] > 0 or cosine[i] >= MIN_COSINE]
    ranked = sorted(eligible, key=lambda i: (-round(float(score[i]), 9), i))[:max_sentences]
    if not ranked:
        return f"{HEADER}\n\n{NO_MATCH}"
    lines = [f"{candidates[i].text} [Data: {candidates[i].label}]" for i in ranked]
    return HEADER + "\n\n" + "\n\n".join(lines)


def extractive_sources(data: QueryData, records: ContextRecords) -> list[tuple[str, str]]:
    """(citation label, text) of the sources, then the reports, of a context, for the no-LLM answer."""
    texts = dict(data.text_units.filter(pl.col("id").is_in(records.ids("sources"))).select("id", "text").iter_rows())
    reports = dict(
        data.community_reports.filter(pl.col("id").is_in(records.ids("reports")))
        .select("id", "full_content")
        .iter_rows()
    )
    pairs = [(f"Sources ({r.citation})", texts[r.id]) for r in records.sources if texts.get(r.id)]
    pairs += [(f"Reports ({r.citation})", reports[r.id]) for r in records.reports if reports.get(r.id)]
    return pairs


def no_llm_answer(question: str, data: QueryData, records: ContextRecords, calls: ModelCalls) -> str:
    """The extractive answer used when no chat model is configured (it says that no model was used).

    Sentences are ranked with the offline hashing embedder whatever embedder the query used: the
    ranking only compares sentences with the question, so it needs no stored vectors, and it costs
    no calls to an embedding server.
    """
    embedder = calls.embedder if isinstance(calls.embedder, LocalEmbedder) else LocalEmbedder()
    return extractive_answer(question, extractive_sources(data, records), embedder, max_sentences=EXTRACTIVE_SENTENCES)
