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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets import ids, schemas
from graphrag_assets.settings import InputSettings

BINARY_SNIFF_BYTES = 8192
_REPLACED = "graphrag-count-replace"
_replacement_counter: list[int] = [0]


def _count_and_replace(error: UnicodeDecodeError) -> tuple[str, int]:
    _replacement_counter[0] += error.end - error.start
    return "\ufffd", error.end


codecs.register_error(_REPLACED, _count_and_replace)


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
        data = data[len(codecs.BOM_UTF8):]
    text = data.decode(encoding, errors=_REPLACED)
    return text, _replacement_counter[0]


def normalize_newlines(text: str) -> str:
    """Windows (CRLF) and old Mac (CR) line ends become LF, so a file's text, chunks and tokens do
    not depend on the editor that saved it."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def looks_binary(data: bytes) -> bool:
    """True for data that is evidently not text (NUL bytes or mostly control characters)."""
    sample = data[:BINARY_SNIFF_BYTES]
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
    return control / len(sample) > 0.10


def _iso_mtime(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).isoformat()


def _rows_from_tabular(text: str, suffix: str, rel_path: str, warnings: list[str]) -> list[dict[str, Any]]:
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        return [dict(row) for row in reader]
    if suffix == ".jsonl":
        rows: list[dict[str, Any]] = []
        bad = 0
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(value, dict):
                rows.append(value)
            else:
                bad += 1
        if bad:
            warnings.append(f"{rel_path}: skipped {bad} line(s) that are not JSON objects")
        return rows
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


def read_file_documents(input_dir: Path, rel_path: str, document_key: str, settings: InputSettings) -> FileDocuments:
    """Read ``input_dir / rel_path`` into rows of the ``documents`` schema (without text_unit_ids)."""
    path = input_dir / rel_path
    warnings: list[str] = []
    empty = FileDocuments(schemas.empty_frame(schemas.DOCUMENTS), warnings, skipped=True)
    try:
        data = path.read_bytes()
    except OSError as exc:
        warnings.append(f"{rel_path}: skipped, could not be read ({exc.strerror or exc})")
        return empty
    content_hash = hashlib.sha256(data).hexdigest()
    empty.content_hash = content_hash
    if not data.strip():
        warnings.append(f"{rel_path}: skipped, the file is empty")
        return empty
    if looks_binary(data):
        warnings.append(f"{rel_path}: skipped, it looks like a binary file, not text")
        return empty
    text, replaced = decode(data, settings.encoding)
    del data
    text = normalize_newlines(text)
    if replaced:
        warnings.append(f"{rel_path}: {replaced} byte(s) were not valid {settings.encoding} and were replaced")
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
        return FileDocuments(schemas.conform(pl.DataFrame([row]), schemas.DOCUMENTS), warnings, replaced, content_hash=content_hash)

    try:
        rows = _rows_from_tabular(text, suffix, rel_path, warnings)
    except (ValueError, csv.Error) as exc:
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
    out: list[dict[str, Any]] = []
    blank = 0
    seen_keys: set[str] = set()
    for index, row in enumerate(rows):
        body = _as_text(row.get(settings.text_column)).strip()
        if not body:
            blank += 1
            continue
        row_key = _as_text(row.get(settings.id_column)) if settings.id_column and row.get(settings.id_column) not in (None, "") else str(index)
        if row_key in seen_keys:
            warnings.append(f"{rel_path}: duplicate id {row_key!r} in row {index}; using the row number instead")
            row_key = f"row-{index}"
        seen_keys.add(row_key)
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
    return FileDocuments(schemas.conform(pl.DataFrame(out), schemas.DOCUMENTS), warnings, replaced, content_hash=content_hash)
