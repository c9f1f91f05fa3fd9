"""Is there anything about the question in the context? A weak-evidence signal for every answer.

Retrieval always returns its k best matches, even when nothing in the index is about the
question; "What is the capital of France?" asked of a harbour town's archive would get the
nearest sentences and an answer built on them. The signal here is deliberately simple and
model-free, so it works offline and costs microseconds: the share of the question's content
words (function words and words shorter than three letters left out; a plural matches its
singular) that occur anywhere in the context the method assembled.

Thresholds per method (``weak_evidence_below`` in :mod:`.registry`), calibrated on the bundled
sample with its six sample questions and off-topic ones (capital of France, a football final,
baking bread, Hamlet): on-topic questions found 20–100% of their terms in the context of basic,
local and DRIFT search, off-topic ones 0%
(one, about boiling water, 50%: "water" and "point" occur in harbour documents — the signal
misses what shares vocabulary with the corpus). A name the question asks about (a word capitalised
inside it, "France") that no source mentions makes the evidence weak whatever the share: "What is
the capital of France?" asked of *A Christmas Carol* found "capital" ("a dimpled, surprised-looking,
capital face") and was not flagged. Global search answers corpus-wide questions
("the main themes") whose words need not occur in any report, so it is never flagged; with a
model, its map step rates relevance itself.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from graphrag_assets.core.words import word_lists
from graphrag_assets.query.registry import query_method

MIN_TERM_LENGTH = 3
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Evidence:
    score: float  # share of the question's content words found in the context (1.0 without any)
    threshold: float
    found: list[str]
    missing: list[str]
    missing_names: list[str]  # names the question asks about (capitalised inside it) that the context lacks

    @property
    def weak(self) -> bool:
        """Too few of the question's words in the context, or a name it asks about absent from it
        (unless the method is never flagged: global search's corpus-wide questions)."""
        return self.score < self.threshold or (self.threshold > 0 and bool(self.missing_names))

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "score": round(self.score, 3), "weak": self.weak}

    def warning(self) -> str:
        return (
            f"little in the index matches this question: {', '.join(self.missing)} "
            f"{'does' if len(self.missing) == 1 else 'do'} not occur in the sources found "
            f"({len(self.found)} of {len(self.found) + len(self.missing)} terms do); the answer is probably not about it."
        )


def content_terms(text: str) -> set[str]:
    function = word_lists().function
    return {w for w in _WORD.findall(text.lower()) if len(w) >= MIN_TERM_LENGTH and w not in function}


def named_terms(question: str) -> set[str]:
    """Content words written with a capital inside a sentence ("France" in "What is the capital of
    France?"): what the question is about by name, so a context without them is not about it even
    when it shares a common word ("capital")."""
    names: set[str] = set()
    for sentence in re.split(r"[.!?]\s+", question):
        names |= {w.lower() for w in _WORD.findall(sentence)[1:] if w[:1].isupper()}
    return names & content_terms(question)


def assess(question: str, context_text: str, method: str) -> Evidence:
    """How much of ``question`` the ``context_text`` of ``method`` covers."""
    terms = sorted(content_terms(question))
    present = content_terms(context_text)
    found = [t for t in terms if t in present or t.rstrip("s") in present or f"{t}s" in present]
    missing = [t for t in terms if t not in found]
    score = len(found) / len(terms) if terms else 1.0
    names = named_terms(question)
    return Evidence(score, query_method(method).weak_evidence_below, found, missing, [t for t in missing if t in names])
