"""Reading one input file into document rows.

Plain-text files (.txt, .md) give one document; tabular files (.csv, .json, .jsonl) give one
document per row, with configurable text / title / id columns. Problems with a file are returned
as warnings naming the file rather than raised, so one bad file never stops the others.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core import ids, schemas
from graphrag_assets.core.settings import InputSettings
from graphrag_assets.index.input_files import open_regular

BINARY_SNIFF_BYTES = 8192
EXTRA_FIELDS = "_extra_fields"  # where a CSV row's values beyond the header's columns are kept
_WIDE_ENCODINGS = ("utf-16", "utf-32")  # text in these holds NUL bytes (every ASCII letter has one)
_UNICODE_BOMS = (  # UTF-32 first: its little-endian BOM begins with the UTF-16 one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Past this many undecodable bytes per character of text a file is not text in the encoding (random
# high bytes read as UTF-8 are ~3/4 replacements; text in another 8-bit encoding stays far below,
# its accented letters being a few percent of it): it is skipped, not indexed as replacement marks.
UNDECODABLE_SHARE = 0.25
# Fed to the CSV reader after the file's last line: it comes back as a row of its own unless the
# file ended inside a quoted value, which then swallowed it (a noncharacter never occurs in text).
_CSV_END = "\ufdd0graphrag-end-of-file"
_REPLACED = "graphrag-count-replace"
_replacement_counter: list[int] = [0]


def _count_and_replace(error: UnicodeDecodeError) -> tuple[str, int]:
    _replacement_counter[0] += error.end - error.start
    return "\ufffd", error.end


codecs.register_error(_REPLACED, _count_and_replace)


def _raise_csv_field_limit() -> None:
    """Lift the csv module's 128 KiB cell limit: one long document in a cell must not skip its file.

    ``sys.maxsize`` overflows the C long on platforms where that is 32 bits (Windows).
    """
    try:
        csv.field_size_limit(sys.maxsize)
    except OverflowError:
        csv.field_size_limit(2**31 - 1)


_raise_csv_field_limit()


@dataclass
class FileDocuments:
    """The documents read from one file, plus anything the user should hear about."""

    frame: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    replaced_chars: int = 0
    skipped: bool = False
    content_hash: str | None = None


def decode(data: bytes, encoding: str = "utf-8") -> tuple[str, int]:
    """Decode bytes, replacing invalid sequences; returns the text and how many bytes were replaced."""
    _replacement_counter[0] = 0
    if data.startswith(codecs.BOM_UTF8) and encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        data = data[len(codecs.BOM_UTF8) :]
    text = data.decode(encoding, errors=_REPLACED)
    return text, _replacement_counter[0]


def normalize_newlines(text: str) -> str:
    """Windows (CRLF) and old Mac (CR) line ends become LF, so a file's text, chunks and tokens do
    not depend on the editor that saved it."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def file_encoding(data: bytes, configured: str) -> str:
    """The encoding to read ``data`` with: a UTF-16/UTF-32 byte-order mark wins over the setting,
    since such a file (e.g. Notepad's "Unicode") read as anything else is all NULs and garbage."""
    for bom, encoding in _UNICODE_BOMS:
        if data.startswith(bom):
            return encoding
    return configured


def _is_wide(encoding: str) -> bool:
    return codecs.lookup(encoding).name.startswith(_WIDE_ENCODINGS)


def looks_binary(data: bytes, encoding: str = "utf-8") -> bool:
    """True for data that is evidently not text in ``encoding``.

    For byte-oriented encodings (utf-8, latin-1, cp125x, ...) a NUL byte never occurs in text, so
    one means binary. UTF-16/UTF-32 text is full of NUL bytes, so it is decoded first and judged
    by its characters instead (NULs, other control characters, undecodable sequences).
    """
    sample = data[:BINARY_SNIFF_BYTES]
    if not sample:
        return False
    if _is_wide(encoding):
        # A cut through the last character only adds one replacement character.
        text = sample.decode(encoding, errors="replace")
        odd = sum(1 for ch in text if (ch < " " and ch not in "\t\n\f\r") or ch == "\ufffd")
        return odd / len(text) > 0.10
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
    return control / len(sample) > 0.10


def _iso_mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).isoformat()


class UnclosedQuote(csv.Error):
    """A quote that is never closed: the csv module silently reads the rest of the file as one value."""


def _csv_records(text: str) -> Iterator[list[str]]:
    """The records of a CSV text, raising UnclosedQuote (naming the line its record starts on)
    where the csv module would silently swallow every line after an unclosed quote."""

    def lines() -> Iterator[str]:
        yield from io.StringIO(text, newline="")
        yield _CSV_END + "\n"

    reader = csv.reader(lines())
    starts_on = 1
    for record in reader:
        if record == [_CSV_END]:
            return
        if any(_CSV_END in value for value in record):
            raise UnclosedQuote(
                f"a quote in the row starting on line {starts_on} is never closed, so the rest of the file "
                'would be read as one value; close it, or write a quote inside a value as ""'
            )
        starts_on = reader.line_num + 1
        yield record


def _csv_rows(text: str, rel_path: str, warnings: list[str]) -> list[dict[str, Any]]:
    """Rows as :class:`csv.DictReader` makes them (blank lines skipped, missing values None, values
    past the header's columns under ``EXTRA_FIELDS``), from records checked for unclosed quotes."""
    records = _csv_records(text)
    header = next(records, [])
    rows: list[dict[str, Any]] = []
    for record in records:
        if not record:
            continue
        row: dict[str, Any] = dict(zip(header, record, strict=False))
        if len(record) > len(header):
            row[EXTRA_FIELDS] = record[len(header) :]
        row.update((name, None) for name in header[len(record) :])
        rows.append(row)
    long_rows = sum(1 for row in rows if EXTRA_FIELDS in row)
    if long_rows:
        warnings.append(
            f"{rel_path}: {long_rows} row(s) have more fields than the header; "
            f"the extra values are kept in raw_data under '{EXTRA_FIELDS}'"
        )
    return rows


def _jsonl_rows(text: str, rel_path: str, warnings: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    bad = 0
    # Only "\n" ends a record: str.splitlines() would also split at U+2028/U+2029 and other
    # Unicode line breaks, which JSON allows raw inside strings (json.dumps(ensure_ascii=False)).
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            bad += 1
            continue
        if isinstance(value, dict):
            rows.append(value)
        else:
            bad += 1
    if bad:
        warnings.append(f"{rel_path}: skipped {bad} line(s) that are not JSON objects")
    return rows


def _rows_from_tabular(text: str, suffix: str, rel_path: str, warnings: list[str]) -> list[dict[str, Any]]:
    if suffix == ".csv":
        return _csv_rows(text, rel_path, warnings)
    if suffix == ".jsonl":
        return _jsonl_rows(text, rel_path, warnings)
    value = json.loads(text)
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        objects = [v for v in value if isinstance(v, dict)]
        if len(objects) != len(value):
            warnings.append(f"{rel_path}: skipped {len(value) - len(objects)} array item(s) that are not JSON objects")
        return objects
    raise ValueError("the top level must be a JSON object or an array of objects")


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _row_key(row: dict[str, Any], index: int, id_column: str | None) -> str:
    """What names a row within its file (its document id is derived from it): the value in
    ``input.id_column``, or the row's number when there is no such column or value."""
    value = row.get(id_column) if id_column else None
    return str(index) if value in (None, "") else _as_text(value)


def _duplicate_id(rows: list[dict[str, Any]], id_column: str | None) -> str | None:
    """Why the rows' ids are not unique (two rows named alike would become one document id), else None.

    The whole file is refused, like a database refusing a load that breaks a primary key, rather
    than guessing which row is meant or indexing half of the file.
    """
    if not id_column:
        return None
    first: dict[str, int] = {}
    for index, row in enumerate(rows):
        key = _row_key(row, index, id_column)
        if key in first:
            unnamed = [n for n in (first[key], index) if rows[n].get(id_column) in (None, "")]
            why = f" (row #{unnamed[0]} has none and is named by its number)" if unnamed else ""
            return (
                f"rows #{first[key]} and #{index} have the same id {key!r} in input.id_column '{id_column}'{why}; "
                "give every row its own id"
            )
        first[key] = index
    return None


def read_file_documents(input_dir: Path, rel_path: str, document_key: str, settings: InputSettings) -> FileDocuments:
    """Read ``input_dir / rel_path`` into rows of the ``documents`` schema (without text_unit_ids)."""
    path = input_dir / rel_path
    warnings: list[str] = []
    empty = FileDocuments(schemas.empty_frame(schemas.DOCUMENTS), warnings, skipped=True)
    try:
        with open_regular(path) as handle:
            data = handle.read()
    except OSError as exc:
        warnings.append(f"{rel_path}: skipped, could not be read ({exc.strerror or exc})")
        return empty
    content_hash = hashlib.sha256(data).hexdigest()
    empty.content_hash = content_hash
    encoding = file_encoding(data, settings.encoding)
    if looks_binary(data, encoding):
        warnings.append(
            f"{rel_path}: skipped, it looks like a binary file, not {encoding} text (input.encoding sets the text encoding)"
        )
        return empty
    text, replaced = decode(data, encoding)
    del data
    if not text.strip():  # judged on the text: blank UTF-16 still holds NUL bytes
        warnings.append(f"{rel_path}: skipped, the file is empty")
        return empty
    if replaced > UNDECODABLE_SHARE * len(text):
        warnings.append(
            f"{rel_path}: skipped, {replaced} of its bytes are not valid {encoding}, so it is binary or in another "
            "encoding; if it is text, set input.encoding in graphrag.yaml (e.g. latin-1)"
        )
        return empty
    text = normalize_newlines(text)
    if replaced:
        warnings.append(
            f"{rel_path}: {replaced} byte(s) were not valid {encoding} and were replaced; "
            "if the file uses another encoding, set input.encoding in graphrag.yaml (e.g. latin-1)"
        )
    created = _iso_mtime(path)
    suffix = path.suffix.lower()
    base = {
        "creation_date": created,
        "document_key": document_key,
        "path": rel_path,
        "content_hash": content_hash,
        "replaced_chars": replaced,
    }
    if suffix in (".txt", ".md"):
        row = {
            "id": ids.document_id(document_key, 0),
            "human_readable_id": 0,
            "title": path.name,
            "text": text,
            "raw_data": None,
            **base,
        }
        return FileDocuments(
            schemas.conform(pl.DataFrame([row]), schemas.DOCUMENTS), warnings, replaced, content_hash=content_hash
        )

    try:
        rows = _rows_from_tabular(text, suffix, rel_path, warnings)
    except (ValueError, csv.Error, RecursionError) as exc:  # RecursionError: JSON nested too deeply
        warnings.append(f"{rel_path}: skipped, it could not be parsed as {suffix[1:].upper()} ({exc})")
        return FileDocuments(empty.frame, warnings, replaced, skipped=True, content_hash=content_hash)
    if not rows:
        warnings.append(f"{rel_path}: skipped, it holds no rows")
        return FileDocuments(empty.frame, warnings, replaced, skipped=True, content_hash=content_hash)
    columns = sorted({k for row in rows for k in row})
    if settings.text_column not in columns:
        warnings.append(
            f"{rel_path}: skipped, it has no '{settings.text_column}' column (columns: {', '.join(columns[:10])}); "
            f"set input.text_column in graphrag.yaml"
        )
        return FileDocuments(empty.frame, warnings, replaced, skipped=True, content_hash=content_hash)
    duplicate = _duplicate_id(rows, settings.id_column)
    if duplicate:
        warnings.append(f"{rel_path}: skipped, {duplicate}")
        return FileDocuments(empty.frame, warnings, replaced, skipped=True, content_hash=content_hash)
    out: list[dict[str, Any]] = []
    blank = 0
    for index, row in enumerate(rows):
        body = _as_text(row.get(settings.text_column)).strip()
        if not body:
            blank += 1
            continue
        row_key = _row_key(row, index, settings.id_column)
        title = _as_text(row.get(settings.title_column)).strip() if settings.title_column else ""
        raw = row if not settings.metadata_columns else {k: row.get(k) for k in settings.metadata_columns}
        out.append(
            {
                "id": ids.document_id(document_key, row_key),
                "human_readable_id": index,
                "title": title or f"{path.name} #{index}",
                "text": body,
                "raw_data": json.dumps(raw, ensure_ascii=False, default=str),
                **base,
            }
        )
    if blank:
        warnings.append(f"{rel_path}: skipped {blank} row(s) with an empty '{settings.text_column}'")
    if not out:
        return FileDocuments(empty.frame, warnings, replaced, skipped=True, content_hash=content_hash)
    return FileDocuments(
        schemas.conform(pl.DataFrame(out), schemas.DOCUMENTS), warnings, replaced, content_hash=content_hash
    )
