"""Token-window chunking.

Windows of ``size`` tokens that overlap by ``overlap`` tokens, like Microsoft GraphRAG's default
chunker. A long document is encoded in line-aligned segments rather than at once: encoding 50 MB
of text in one call builds a Python list of ~12 million ints (~0.4 GB); segments keep only one
window's worth of tokens in memory. Tokens are identical to one-shot encoding except possibly
at a segment boundary, which always falls after a newline.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import polars as pl

from graphrag_assets import ids, schemas
from graphrag_assets.tokens import get_tokenizer

SEGMENT_CHARS = 1 << 16


@dataclass(frozen=True)
class Chunk:
    index: int
    start_token: int
    text: str
    n_tokens: int


def _segments(text: str, segment_chars: int) -> Iterator[str]:
    """Split text into pieces of about ``segment_chars``, each ending just after a newline."""
    start = 0
    length = len(text)
    while start < length:
        end = start + segment_chars
        if end >= length:
            yield text[start:]
            return
        newline = text.rfind("\n", start, end)
        if newline <= start:
            newline = text.find("\n", end)
            if newline == -1:
                yield text[start:]
                return
        yield text[start : newline + 1]
        start = newline + 1


def chunk_text(
    text: str, size: int = 1200, overlap: int = 100, encoding: str = "cl100k_base", segment_chars: int = SEGMENT_CHARS
) -> Iterator[Chunk]:
    """Yield token windows over ``text`` (nothing for empty text)."""
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    tokenizer = get_tokenizer(encoding)
    step = size - overlap
    buffer: list[int] = []
    buffer_start = 0  # absolute token position of buffer[0]
    index = 0
    emitted_until = 0  # absolute position up to which tokens have been covered by a chunk
    for segment in _segments(text, segment_chars):
        buffer.extend(tokenizer.encode_ordinary(segment))
        while len(buffer) >= size:
            window = buffer[:size]
            yield Chunk(index, buffer_start, tokenizer.decode(window), len(window))
            index += 1
            emitted_until = buffer_start + size
            del buffer[:step]
            buffer_start += step
    if buffer and buffer_start + len(buffer) > emitted_until:
        yield Chunk(index, buffer_start, tokenizer.decode(buffer), len(buffer))


def chunk_documents(documents: pl.DataFrame, size: int, overlap: int, encoding: str) -> pl.DataFrame:
    """Rows of the ``text_units`` schema for every document in the frame."""
    rows: list[dict[str, object]] = []
    for doc in documents.select("id", "text", "document_key").iter_rows(named=True):
        for chunk in chunk_text(doc["text"] or "", size, overlap, encoding):
            rows.append(
                {
                    "id": ids.text_unit_id(doc["id"], chunk.index, chunk.text),
                    "human_readable_id": chunk.index,
                    "text": chunk.text,
                    "n_tokens": chunk.n_tokens,
                    "document_id": doc["id"],
                    "document_key": doc["document_key"],
                    "chunk_index": chunk.index,
                    "start_token": chunk.start_token,
                }
            )
    if not rows:
        return schemas.empty_frame(schemas.TEXT_UNITS)
    return pl.DataFrame(rows, schema=schemas.TEXT_UNITS)


def attach_text_unit_ids(documents: pl.DataFrame, text_units: pl.DataFrame) -> pl.DataFrame:
    """Fill ``documents.text_unit_ids`` (in chunk order) from the chunks made of them."""
    if documents.is_empty():
        return documents
    lists = (
        text_units.sort("document_id", "chunk_index")
        .group_by("document_id", maintain_order=True)
        .agg(pl.col("id").alias("_ids"))
    )
    return (
        documents.join(lists, left_on="id", right_on="document_id", how="left")
        .with_columns(pl.col("_ids").fill_null(pl.lit([], dtype=schemas.STR_LIST)).alias("text_unit_ids"))
        .drop("_ids")
        .select(list(schemas.DOCUMENTS))
    )
