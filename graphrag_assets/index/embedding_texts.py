"""What is embedded for each table, and embedding a frame of texts.

Texts follow Microsoft GraphRAG: text units embed their text, entities ``"title: description"``,
community reports their ``full_content``. ``text_hash`` (of the model name and the text) lets the
vector store update only rows whose text — or embedding model — changed.
"""

from __future__ import annotations

import hashlib

import polars as pl

from graphrag_assets.core.float32 import to_le_bytes
from graphrag_assets.index.report_context import strip_citations
from graphrag_assets.llm.types import EmbeddingModel


def text_hashes(model: str, texts: list[str]) -> list[str]:
    return [hashlib.sha256(f"{model}\x1f{t}".encode()).hexdigest()[:32] for t in texts]


def text_unit_texts(text_units: pl.DataFrame) -> pl.DataFrame:
    return text_units.select("id", "document_key", pl.col("text").fill_null("")).sort("document_key", "id")


def with_text(embedded: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """Embedded rows with the text they embed, for the text units' LanceDB table, which keeps a
    full-text index beside the vectors (DuckDB's embedding tables do not repeat the text)."""
    return embedded.join(texts.select("id", "text"), on="id", how="left", maintain_order="left")


def entity_texts(entities: pl.DataFrame) -> pl.DataFrame:
    return entities.select(
        "id", pl.format("{}: {}", pl.col("title"), pl.col("description").fill_null("")).alias("text")
    ).sort("id")


def report_texts(reports: pl.DataFrame) -> pl.DataFrame:
    """Reports embed their full content without ``[Data: ...]`` citations: the cited numbers shift
    when unrelated entities are added, and they carry no meaning for similarity search."""
    texts = [strip_citations(text or "") for text in reports["full_content"].to_list()]
    return reports.select("id").with_columns(pl.Series("text", texts, dtype=pl.String)).sort("id")


async def embed_frame(model: EmbeddingModel, texts: pl.DataFrame, *, purpose: str) -> pl.DataFrame:
    """The frame without ``text`` plus ``text_hash`` and a ``vector`` column (float32, fixed size
    from the model), made from the vectors' bytes by polars (see :mod:`graphrag_assets.core.float32`)."""
    texts = texts.with_columns(
        pl.Series("text_hash", text_hashes(model.model, texts["text"].to_list()), dtype=pl.String)
    )
    blobs = [to_le_bytes(vector) for vector in await model.embed(texts["text"].to_list(), purpose=purpose)]
    if not blobs or len(blobs) != texts.height:
        raise ValueError(f"the embedding model returned {len(blobs)} vectors for {texts.height} texts")
    sizes = {len(blob) for blob in blobs}
    if len(sizes) != 1:
        raise ValueError(f"the embedding model returned vectors of {len(sizes)} different sizes")
    vectors = pl.Series("vector", blobs, dtype=pl.Binary).bin.reinterpret(
        dtype=pl.Array(pl.Float32, sizes.pop() // 4), endianness="little"
    )
    return texts.drop("text").with_columns(vectors)
