"""Tolerant parsing of extraction answers into records.

The prompts ask for Microsoft GraphRAG's record format::

    ("entity"<|>NAME<|>TYPE<|>DESCRIPTION)##
    ("relationship"<|>SOURCE<|>TARGET<|>DESCRIPTION<|>STRENGTH)##
    <|COMPLETE|>

and, for claims, ``(SUBJECT<|>OBJECT<|>TYPE<|>STATUS<|>START<|>END<|>DESCRIPTION<|>QUOTES)``.
Real answers drift from it (see the 84 gpt-4o answers used in the tests): quotes of several
kinds around fields, markdown fences, headings and numbered lists, records separated only by
newlines, ``<|COMPLETE|>`` in lower case or glued to the next record, a delimiter written
``|>`` or ``</|>``, strengths like ``6.5`` or ``8/10``. Microsoft's parser drops such records
silently; this one recovers what is unambiguous and reports the rest as :class:`ParseFailure`
with a reason. Parsing never raises.

Text that holds no field delimiter at all (a heading such as ``**Entities:**``, stray ``**``,
a sentence of commentary) is not a record and is only counted in ``ignored``.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

TUPLE_DELIMITER = "<|>"
RECORD_DELIMITER = "##"
COMPLETION_DELIMITER = "<|COMPLETE|>"

ENTITY_FIELDS = 4
RELATIONSHIP_FIELDS = 5
CLAIM_FIELDS = 8
DEFAULT_WEIGHT = 1.0

_RECORD_TYPES = {"entity": "entity", "relationship": "relationship", "relation": "relationship"}
_DOUBLE_QUOTES = '"“”„«»'
_SINGLE_QUOTES = "'‘’`"
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # all but whitespace ones
_WHITESPACE = re.compile(r"\s+")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_CODE_FENCE = re.compile(r"```[A-Za-z0-9_+-]*")
_LIST_MARKER = re.compile(r"^(?:[-*•]\s+|\d{1,4}[.)]\s+)")
_EDGE_NOISE = "*` \t\r\n"
_BROKEN_DELIMITER = re.compile(r"(?<![<|])(?:(?<=[\"”’'])\|>|\|>(?=\s*[\"“‘'\d.+-]))")


R = TypeVar("R")


@dataclass(frozen=True)
class EntityRecord:
    index: int  # position of the record among the record-like segments of the answer
    title: str
    type: str
    description: str


@dataclass(frozen=True)
class RelationshipRecord:
    index: int
    source: str
    target: str
    description: str
    weight: float


@dataclass(frozen=True)
class ClaimRecord:
    index: int
    subject: str
    object: str
    type: str
    status: str
    start_date: str
    end_date: str
    description: str
    source_text: str


@dataclass(frozen=True)
class ParseFailure:
    index: int
    text: str  # the record as it appeared (after splitting), for the user to inspect
    reason: str


@dataclass(frozen=True)
class ParsedAnswer:
    entities: list[EntityRecord] = field(default_factory=list)
    relationships: list[RelationshipRecord] = field(default_factory=list)
    failures: list[ParseFailure] = field(default_factory=list)
    ignored: int = 0  # segments without any field delimiter (headings, commentary)


@dataclass(frozen=True)
class ParsedClaims:
    claims: list[ClaimRecord] = field(default_factory=list)
    failures: list[ParseFailure] = field(default_factory=list)
    ignored: int = 0


def parse_graph_answer(
    text: str,
    *,
    tuple_delimiter: str = TUPLE_DELIMITER,
    record_delimiter: str = RECORD_DELIMITER,
    completion_delimiter: str = COMPLETION_DELIMITER,
) -> ParsedAnswer:
    """Entity and relationship records of one (possibly joined) extraction answer."""
    records, failures, ignored = _parse(text, _graph_record, tuple_delimiter, record_delimiter, completion_delimiter)
    entities = [r for r in records if isinstance(r, EntityRecord)]
    relationships = [r for r in records if isinstance(r, RelationshipRecord)]
    return ParsedAnswer(entities, relationships, failures, ignored)


def parse_claims_answer(
    text: str,
    *,
    tuple_delimiter: str = TUPLE_DELIMITER,
    record_delimiter: str = RECORD_DELIMITER,
    completion_delimiter: str = COMPLETION_DELIMITER,
) -> ParsedClaims:
    """Claim records of one (possibly joined) claim-extraction answer."""
    records, failures, ignored = _parse(text, _claim_record, tuple_delimiter, record_delimiter, completion_delimiter)
    return ParsedClaims([r for r in records if isinstance(r, ClaimRecord)], failures, ignored)


def _parse(
    text: str,
    read_record: Callable[[int, str, str], R | str],
    tuple_delimiter: str,
    record_delimiter: str,
    completion_delimiter: str,
) -> tuple[list[R], list[ParseFailure], int]:
    """Records, failures and the number of ignored non-record segments of an answer.

    ``read_record`` returns a record or, as a string, the reason it could not read one.
    Failures take a position (``index``) like records do, so positions match the answer.
    """
    records: list[R] = []
    failures: list[ParseFailure] = []
    ignored = 0
    for segment in split_records(text, tuple_delimiter, record_delimiter, completion_delimiter):
        body = _record_body(segment)
        if tuple_delimiter not in body:
            ignored += 1
            continue
        index = len(records) + len(failures)
        record = read_record(index, body, tuple_delimiter)
        if isinstance(record, str):
            failures.append(ParseFailure(index, segment.strip(), record))
        else:
            records.append(record)
    return records, failures, ignored


def split_records(
    text: str,
    tuple_delimiter: str = TUPLE_DELIMITER,
    record_delimiter: str = RECORD_DELIMITER,
    completion_delimiter: str = COMPLETION_DELIMITER,
) -> list[str]:
    """Cut an answer into record-sized segments (non-empty, in order).

    Records end at the record delimiter, at a completion marker, at a blank line, and at a line
    break followed by something that starts a record (an opening parenthesis, a list marker, a
    record type). A line that continues an unfinished record (one not yet closed by ``)``) is
    joined to it, so a description broken over two lines stays one record.
    """
    text = _CODE_FENCE.sub("\n", text)
    text = _completion_pattern(completion_delimiter).sub(f"\n{record_delimiter}\n", text)
    if tuple_delimiter == TUPLE_DELIMITER:
        text = _repair_default_delimiter(text)
    segments: list[str] = []
    for piece in text.split(record_delimiter):
        current: list[str] = []
        for line in piece.splitlines():
            stripped = line.strip()
            if not stripped:
                _flush(current, segments)
                continue
            if current and (_starts_record(stripped, tuple_delimiter) or current[-1].rstrip().endswith(")")):
                _flush(current, segments)
            current.append(stripped)
        _flush(current, segments)
    return segments


def ends_mid_record(
    text: str,
    tuple_delimiter: str = TUPLE_DELIMITER,
    record_delimiter: str = RECORD_DELIMITER,
    completion_delimiter: str = COMPLETION_DELIMITER,
) -> bool:
    """Whether an answer stops inside a record: it was cut short, whatever ``finish_reason`` said.

    A server or proxy can end an answer early and still report ``stop``; parsing it then loses
    every record after the cut and reports at most the one it cut through. An answer is whole
    when it holds the completion marker the prompts ask for. Without one, it is cut when it ends
    on a record delimiter (a record was announced and never written), or when its last segment is
    a record left open: opened with ``(``, or unclosed after records that this model does close.
    An answer that ends right after a closed record cannot be told from one whose model left the
    marker out, and counts as whole; so does one that ends in commentary.
    """
    if _completion_pattern(completion_delimiter).search(text):
        return False
    tail = _CODE_FENCE.sub("\n", text).strip(_EDGE_NOISE)
    if not tail:
        return False
    if tail.endswith(record_delimiter):
        return True
    segments = split_records(text, tuple_delimiter, record_delimiter, completion_delimiter)
    last = segments[-1].strip(_EDGE_NOISE)
    opened = _LIST_MARKER.sub("", last).lstrip(_EDGE_NOISE).startswith("(")
    if last.endswith(")") or not (opened or tuple_delimiter in last):
        return False
    return opened or any(s.strip(_EDGE_NOISE).endswith(")") for s in segments[:-1])


def clean_text(value: str) -> str:
    """HTML-unescape, drop control characters, collapse whitespace, strip surrounding quotes."""
    value = html.unescape(value)
    value = _CONTROL_CHARS.sub("", value)
    value = _WHITESPACE.sub(" ", value).strip()
    return _strip_quotes(value)


def normalize_title(value: str) -> str:
    """The identity of an entity name: cleaned, quotes removed, single spaces, upper case."""
    return clean_text(value).upper()


def parse_weight(value: str) -> float:
    """A relationship strength: the number in the field, else the first number in it, else 1.0."""
    cleaned = clean_text(value)
    try:
        number = float(cleaned)
    except ValueError:
        match = _NUMBER.search(cleaned)
        number = float(match.group()) if match else DEFAULT_WEIGHT
    return number if math.isfinite(number) else DEFAULT_WEIGHT


def _graph_record(index: int, body: str, tuple_delimiter: str) -> EntityRecord | RelationshipRecord | str:
    """A record, or the reason it could not be read."""
    fields = _fields(body, tuple_delimiter)
    raw_type = clean_text(fields[0]).lower()
    kind = _RECORD_TYPES.get(raw_type)
    if kind is None:
        shown = raw_type[:40] or "(empty)"
        return f"unknown record type {shown!r}; expected 'entity' or 'relationship'"
    if kind == "entity":
        if len(fields) != ENTITY_FIELDS:
            return f"entity record has {len(fields)} fields; expected {ENTITY_FIELDS}"
        title = normalize_title(fields[1])
        if not title:
            return "entity record has an empty name"
        return EntityRecord(index, title, normalize_title(fields[2]), clean_text(fields[3]))
    # A relationship without a strength (4 fields) is kept with the default weight, as MS does
    # for a strength that is not a number.
    if len(fields) not in (RELATIONSHIP_FIELDS, RELATIONSHIP_FIELDS - 1):
        return f"relationship record has {len(fields)} fields; expected {RELATIONSHIP_FIELDS}"
    source, target = normalize_title(fields[1]), normalize_title(fields[2])
    if not source or not target:
        return "relationship record has an empty source or target"
    weight = parse_weight(fields[4]) if len(fields) == RELATIONSHIP_FIELDS else DEFAULT_WEIGHT
    return RelationshipRecord(index, source, target, clean_text(fields[3]), weight)


def _claim_record(index: int, body: str, tuple_delimiter: str) -> ClaimRecord | str:
    fields = _fields(body, tuple_delimiter)
    if len(fields) == CLAIM_FIELDS + 1 and clean_text(fields[0]).lower() == "claim":
        fields = fields[1:]
    if len(fields) != CLAIM_FIELDS:
        return f"claim record has {len(fields)} fields; expected {CLAIM_FIELDS}"
    subject = normalize_title(fields[0])
    if not subject:
        return "claim record has an empty subject"
    return ClaimRecord(
        index=index,
        subject=subject,
        object=normalize_title(fields[1]) or "NONE",
        type=normalize_title(fields[2]),
        status=normalize_title(fields[3]),
        start_date=_date(fields[4]),
        end_date=_date(fields[5]),
        description=clean_text(fields[6]),
        source_text=clean_text(fields[7]),
    )


def _date(value: str) -> str:
    cleaned = clean_text(value)
    return "NONE" if cleaned.lower() in ("", "none", "null", "n/a", "unknown") else cleaned


def _fields(body: str, tuple_delimiter: str) -> list[str]:
    fields = [f.strip() for f in body.split(tuple_delimiter)]
    while len(fields) > 1 and not clean_text(fields[-1]):
        fields.pop()  # a trailing delimiter before the closing parenthesis
    return fields


def _record_body(segment: str) -> str:
    """The text between the parentheses of a record, with list markers and markdown removed."""
    body = segment.strip(_EDGE_NOISE)
    body = _LIST_MARKER.sub("", body).strip(_EDGE_NOISE)
    body = body.rstrip(",;").rstrip()
    if body.startswith("("):
        body = body[1:]
    if body.endswith(")"):
        body = body[:-1]
    return body.strip()


def _starts_record(line: str, tuple_delimiter: str) -> bool:
    if _LIST_MARKER.match(line):
        return True
    start = line.lstrip(_EDGE_NOISE)
    if start.startswith("("):
        return True
    head = start.split(tuple_delimiter, 1)[0] if tuple_delimiter in start else ""
    return clean_text(head).lower() in _RECORD_TYPES


def _flush(current: list[str], segments: list[str]) -> None:
    if current:
        segments.append(" ".join(current))
        current.clear()


def _strip_quotes(value: str) -> str:
    """Remove quotes around a value: double quotes on either side, single quotes only in pairs.

    Single quotes are kept when unpaired because they are also apostrophes ('Tis, the Joneses').
    """
    while value:
        before = value
        if value[0] in _DOUBLE_QUOTES:
            value = value[1:].lstrip()
        if value and value[-1] in _DOUBLE_QUOTES:
            value = value[:-1].rstrip()
        if len(value) >= 2 and value[0] in _SINGLE_QUOTES and value[-1] in _SINGLE_QUOTES:
            value = value[1:-1].strip()
        if value == before:
            break
    return value


def _completion_pattern(completion_delimiter: str) -> re.Pattern[str]:
    """The completion marker in any letter case, with optional spaces inside its brackets."""
    if completion_delimiter == COMPLETION_DELIMITER:
        return re.compile(r"<\|\s*complete\s*\|>", re.IGNORECASE)
    return re.compile(re.escape(completion_delimiter), re.IGNORECASE)


def _repair_default_delimiter(text: str) -> str:
    """Restore ``<|>`` written as ``</|>``, ``<|/>`` or with its ``<`` missing (``"|>8``).

    A bare ``|>`` is repaired only next to a quote or before a number, where it can only be a
    broken delimiter; elsewhere (``x |> f`` in a passage about F# code) it is left alone.
    """
    text = text.replace("</|>", TUPLE_DELIMITER).replace("<|/>", TUPLE_DELIMITER)
    return _BROKEN_DELIMITER.sub(TUPLE_DELIMITER, text)
