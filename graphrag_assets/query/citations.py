"""Which context records an answer cites, and the exact characters of the sources it cites.

Answers cite ``[Data: Sources (3f9a2c1b); Reports (12)]``: ids a reader cannot look up. The
context records know what each one is (a file, a report title, an entity name), so the CLI prints
the cited records by name and the server marks them in the references it returns.

A cited source (a text unit) is also resolved down to characters of its document
(:func:`answer_citations`). A text unit remembers where it lies in its document's text
(``start_char``/``end_char``, from chunking); when the words an answer cites it for are one of the
unit's sentences (an extractive answer quotes sentences whole, a model may quote one), the
citation is that sentence's span, else the whole unit. Offsets count characters (code points) of:

- ``.txt`` / ``.md``: the file's text as decoded (a UTF-8 byte-order mark is not part of it, and
  line ends count as one ``\\n``, as Python's text mode reads them);
- ``.csv`` / ``.json`` / ``.jsonl``: the text field (``input.text_column``) of the record numbered
  ``record`` (from 0: the n-th row of the CSV after its header, blank lines not counted; the n-th
  object of the JSON array, or 0 for a file holding one object; the n-th JSON object line of the
  JSONL file, blank lines not counted), with the whitespace around the value removed, as it was
  indexed (a value that is not a string is indexed, and counted, as its JSON text).

Units without offsets (imported from Microsoft GraphRAG, or indexed by a version before offsets and
not indexed again yet: the next ``index`` run reads every document again) are cited without them
(``start``/``end`` None).
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.sentences import SentenceSpan, sentence_spans, split_sentences
from graphrag_assets.query.prose import prose_in_place
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.results import Citation, ContextRecords

_CITATION = re.compile(r"\[Data:([^\]]*)\]")
_CITED_KIND = re.compile(r"(Reports|Entities|Relationships|Claims|Sources)\s*\(([^)]*)\)")
_CITED_SOURCES = re.compile(r"Sources\s*\(([^)]*)\)")
SENTENCE = "sentence"
TEXT_UNIT = "text_unit"


def cited_records(answer: str, records: ContextRecords) -> list[tuple[str, str, str]]:
    """(kind, citation, title) of each record the answer cites, in order of first citation."""
    known = {(kind, r.citation): r.title for kind in records.KINDS for r in getattr(records, kind)}
    cited: dict[tuple[str, str], str] = {}
    for block in _CITATION.findall(answer):
        for kind, ids in _CITED_KIND.findall(block):
            for citation in (part.strip() for part in ids.split(",")):
                key = (kind.lower(), citation)
                if key in known and key not in cited:
                    cited[key] = known[key]
    return [(kind, citation, title) for (kind, citation), title in cited.items()]


def cited_sources(answer: str) -> list[tuple[str, str]]:
    """(claim, short id) for each source the answer cites: the claim is the answer's text between
    the previous citation (or line break) and this one."""
    pairs: list[tuple[str, str]] = []
    last = 0
    for match in _CITATION.finditer(answer):
        claim = answer[last : match.start()]
        claim = claim[claim.rfind("\n") + 1 :].lstrip(" \t.;,").rstrip()
        last = match.end()
        for ids in _CITED_SOURCES.findall(match.group(1)):
            pairs.extend((claim, part.strip()) for part in ids.split(",") if part.strip())
    return pairs


def answer_citations(answer: str, data: QueryData, records: ContextRecords) -> list[Citation]:
    """The cited sources of ``answer``, each with its document and character span (once per span).

    Reads the text units only when the answer cites a source, and only the documents it cites.
    """
    pairs = cited_sources(answer)
    if not pairs:
        return []
    units = _units_by_short_id(data, records, {short for _, short in pairs})
    documents = _documents(data, {unit["document_id"] for unit in units.values()})
    spans: dict[str, list[SentenceSpan]] = {}
    citations: list[Citation] = []
    seen: set[tuple[str, int | None, str]] = set()
    for claim, short in pairs:
        unit = units.get(short)
        if unit is None:
            continue
        text = unit["text"] or ""
        if short not in spans:
            spans[short] = sentence_spans(prose_in_place(text))
        sentence = _quoted_sentence(claim, spans[short])
        citation = _citation(short, unit, documents.get(unit["document_id"], {}), sentence, claim)
        key = (unit["id"], citation.start, citation.text)
        if key not in seen:
            seen.add(key)
            citations.append(citation)
    return citations


def _quoted_sentence(claim: str, sentences: list[SentenceSpan]) -> SentenceSpan | None:
    """The unit's sentence the claim is (an extractive answer's line), or ends with (a model
    quoting its source before citing it); None when the claim is in the answer's own words."""
    by_text = {s.text: s for s in reversed(sentences)}  # the first of equal sentences
    if claim in by_text:
        return by_text[claim]
    said = split_sentences(claim)
    return by_text.get(said[-1]) if said else None


def _citation(
    short: str, unit: dict[str, Any], document: dict[str, Any], sentence: SentenceSpan | None, claim: str
) -> Citation:
    text = unit["text"] or ""
    begin, stop = (sentence.start, sentence.end) if sentence else (0, len(text))
    offset = unit["start_char"]
    return Citation(
        citation=short,
        text_unit_id=unit["id"],
        document_id=unit["document_id"],
        title=document.get("title") or "",
        path=document.get("path"),
        record=document.get("human_readable_id") if document.get("raw_data") is not None else None,
        start=None if offset is None else offset + begin,
        end=None if offset is None else offset + stop,
        text=text[begin:stop],
        scope=SENTENCE if sentence else TEXT_UNIT,
        claim=claim,
    )


def _units_by_short_id(data: QueryData, records: ContextRecords, shorts: set[str]) -> dict[str, dict[str, Any]]:
    """The cited text units by the short id they are cited by. The context's own sources come first:
    a short id is a prefix, so at scale two units can share one, and the context says which was meant."""
    in_context = {r.citation: r.id for r in records.sources if r.citation in shorts}
    wanted = list(in_context.values())
    elsewhere = shorts - set(in_context)
    if elsewhere:  # sources an extractive answer found outside the context: the whole id column is scanned
        ids = data.key_columns("text_units", ("id",))
        short = pl.col("id").str.replace_all("-", "").str.slice(0, 8)
        wanted += ids.filter(short.is_in(list(elsewhere)))["id"].to_list()
    units: dict[str, dict[str, Any]] = {}
    # only the cited rows: an index read on demand need not load its 100,000 text units
    rows = data.rows_where("text_units", "id", wanted).select("id", "text", "document_id", "start_char", "end_char")
    for row in rows.iter_rows(named=True):
        short = short_id(row["id"])
        if in_context.get(short, row["id"]) == row["id"] and short not in units:
            units[short] = row
    return units


def _documents(data: QueryData, ids: set[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    rows = data.rows_where("documents", "id", sorted(ids))  # not all 100,000 of a big index
    return {
        row["id"]: row
        for row in rows.select("id", "title", "path", "human_readable_id", "raw_data").iter_rows(named=True)
    }
