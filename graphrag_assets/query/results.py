"""What a search gives back: the answer with the records and rendered context it was built from, the
model usage and warnings (:class:`QueryResult`; ``to_dict()`` is JSON-serializable)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ContextRecord:
    """One row put into a context: its id, its dense id, and how answers cite it."""

    id: str
    human_readable_id: int | None
    citation: str  # the value of the table's id column: a human_readable_id, or short_id for sources
    title: str  # report title, entity name, "SOURCE -> TARGET", claim type, or document title


@dataclass
class ContextRecords:
    """The records a context was built from, by kind, in the order they appear in it."""

    reports: list[ContextRecord] = field(default_factory=list)
    entities: list[ContextRecord] = field(default_factory=list)
    relationships: list[ContextRecord] = field(default_factory=list)
    claims: list[ContextRecord] = field(default_factory=list)
    sources: list[ContextRecord] = field(default_factory=list)

    KINDS = ("reports", "entities", "relationships", "claims", "sources")

    def merge(self, other: ContextRecords) -> None:
        """Add ``other``'s records that are not already here (first appearance keeps its place)."""
        for kind in self.KINDS:
            mine: list[ContextRecord] = getattr(self, kind)
            seen = {r.id for r in mine}
            for record in getattr(other, kind):
                if record.id not in seen:
                    seen.add(record.id)
                    mine.append(record)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return {kind: [asdict(r) for r in getattr(self, kind)] for kind in self.KINDS}

    def ids(self, kind: str) -> list[str]:
        return [r.id for r in getattr(self, kind)]

    def citations(self, kind: str) -> list[str]:
        return [r.citation for r in getattr(self, kind)]


@dataclass(frozen=True)
class Citation:
    """A passage an answer cites, down to its characters in the original document.

    ``start``/``end`` are character (code point) offsets into the document's text: the decoded
    file for .txt/.md, the text field of record number ``record`` for .csv/.json/.jsonl (see
    :mod:`graphrag_assets.query.citations`); ``text`` is exactly those characters. They are None
    for text units that carry no offsets (an index imported from Microsoft GraphRAG).
    """

    citation: str  # the short id the answer cites, as in [Data: Sources (3f9a2c1b)]
    text_unit_id: str
    document_id: str
    title: str  # the document's title
    path: str | None  # the file, relative to the input folder
    record: int | None  # the record's number in a .csv/.json/.jsonl file (from 0); None for .txt/.md
    start: int | None
    end: int | None
    text: str
    scope: str  # "sentence": the cited sentence itself; "text_unit": the whole passage the answer drew on
    claim: str  # the answer's words the citation is attached to


@dataclass
class QueryUsage:
    """Model usage of one query. Tokens come from the server; for streamed answers they are estimated."""

    chat_calls: int = 0
    cached_calls: int = 0
    embedding_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    calls_by_purpose: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3)}


@dataclass
class QueryResult:
    answer: str
    method: str
    context_records: ContextRecords
    context_text: str
    usage: QueryUsage
    llm_used: bool
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # method-specific, JSON-serializable
    citations: list[Citation] = field(default_factory=list)  # the cited sources' passages (query.citations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "method": self.method,
            "llm_used": self.llm_used,
            "context_records": self.context_records.to_dict(),
            "context_text": self.context_text,
            "usage": self.usage.to_dict(),
            "warnings": list(self.warnings),
            "details": self.details,
            "citations": [asdict(c) for c in self.citations],
        }


NO_LLM_NOTICE = "No LLM was used to answer this question (no chat model is configured)."
