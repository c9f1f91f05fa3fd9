"""Token-window chunking.

Windows of ``size`` tokens that overlap by ``overlap`` tokens, like Microsoft GraphRAG's default
chunker. A long document is encoded in line-aligned segments rather than at once: encoding 50 MB
of text in one call builds a Python list of ~12 million ints (~0.4 GB); segments keep only one
window's worth of tokens in memory. Tokens are identical to one-shot encoding except possibly
at a segment boundary, which always falls after a newline.

A token is a run of UTF-8 bytes, not of characters: a CJK character or an emoji is often split
over two to four tokens, so a window edge can cut one in half. Such a half character is left out
of the window's text instead of becoming a U+FFFD replacement character; with an overlap of at
least three tokens it is whole in the neighbouring window. ``n_tokens`` and ``start_token`` still
describe the whole window.

Each chunk also knows where its text lies in the document: ``start_char`` and ``end_char`` are
character (code point) offsets into the text that was chunked, so ``text[start_char:end_char]``
is the chunk's text, and a citation can point at the exact characters of the source. They are
counted from the bytes the tokens cover (a character starts at every byte that is not a UTF-8
continuation byte), so they cost no second pass over the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import polars as pl

from graphrag_assets.core import ids, schemas
from graphrag_assets.core.tokens import get_tokenizer

SEGMENT_CHARS = 1 << 16
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


@dataclass(frozen=True)
class Chunk:
    index: int
    start_token: int
    text: str
    n_tokens: int
    start_char: int = 0  # where ``text`` starts in the chunked text (characters)

    @property
    def end_char(self) -> int:
        return self.start_char + len(self.text)


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


def _is_continuation(byte: int) -> bool:
    """True for a UTF-8 byte inside a character (0b10xxxxxx), never the first of one."""
    return byte & 0xC0 == 0x80


def _utf8_length(lead: int) -> int:
    """Bytes in the UTF-8 character that starts with byte ``lead``."""
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4


def characters_begun(data: bytes) -> int:
    """How many characters begin in a slice of UTF-8 (its bytes that are not continuation bytes)."""
    return len(data.translate(None, _CONTINUATION_BYTES))


def whole_characters(data: bytes) -> str:
    """Decode a slice of UTF-8, leaving out a character cut off at either end of it."""
    start = 0
    while start < len(data) and _is_continuation(data[start]):
        start += 1
    end = len(data)
    lead = end - 1
    while lead > start and _is_continuation(data[lead]):
        lead -= 1
    if lead >= start and lead + _utf8_length(data[lead]) > end:
        end = lead
    return data[start:end].decode("utf-8")


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
    buffer_start_char = 0  # characters begun before buffer[0]'s first byte
    index = 0
    emitted_until = 0  # absolute position up to which tokens have been covered by a chunk
    for segment in _segments(text, segment_chars):
        buffer.extend(tokenizer.encode_ordinary(segment))
        while len(buffer) >= size:
            window = buffer[:size]
            yield Chunk(
                index, buffer_start, whole_characters(tokenizer.decode_bytes(window)), len(window), buffer_start_char
            )
            index += 1
            emitted_until = buffer_start + size
            buffer_start_char += characters_begun(tokenizer.decode_bytes(buffer[:step]))
            del buffer[:step]
            buffer_start += step
    if buffer and buffer_start + len(buffer) > emitted_until:
        yield Chunk(
            index, buffer_start, whole_characters(tokenizer.decode_bytes(buffer)), len(buffer), buffer_start_char
        )


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
                    "start_char": chunk.start_char,
                    "end_char": chunk.end_char,
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
