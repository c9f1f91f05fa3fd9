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


async def embed_frame(
    model: EmbeddingModel, texts: pl.DataFrame, *, purpose: str, kept: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The frame without ``text`` plus ``text_hash`` and a ``vector`` column (float32, fixed size
    from the model), made from the vectors' bytes by polars (see :mod:`graphrag_assets.core.float32`).

    ``kept`` (``text_hash``, ``vector``: the last build's vectors that :func:`reusable_vectors`
    let through) stands in for the model, so only texts that changed are embedded: at 100,000
    documents the local model took ~5 s for the 50,000 entities at every update, nearly all of
    them unchanged. The rows come out in ``texts``' order either way.
    """
    texts = texts.with_columns(
        pl.Series("text_hash", text_hashes(model.model, texts["text"].to_list()), dtype=pl.String)
    )
    if kept is None:
        return texts.drop("text").with_columns(await _vectors(model, texts["text"].to_list(), purpose))
    texts = texts.with_row_index("_row")
    found = texts.join(kept, on="text_hash", how="inner")
    missing = texts.join(kept, on="text_hash", how="anti")
    vectors = await _vectors(model, missing["text"].to_list(), purpose) if missing.height else []
    missing = missing.with_columns(pl.Series("vector", vectors).cast(kept.schema["vector"]))
    return pl.concat([found, missing]).sort("_row").drop("_row", "text")


def reusable_vectors(model: EmbeddingModel, stored: pl.DataFrame | None) -> pl.DataFrame | None:
    """The ``stored`` vectors (one per ``text_hash``) that equal what ``model`` would return, or None.

    Only a model marked ``reproducible`` (the local embedders: their vector is a function of the
    model name, which ``text_hash`` holds, and the text) and only vectors of its ``dimension``: an
    endpoint's vectors can change under one model name (a ``dimensions`` setting, another server),
    and its calls are answered by the response cache instead.
    """
    if stored is None or stored.is_empty() or not getattr(model, "reproducible", False):
        return None
    vector = stored.schema.get("vector")
    if not isinstance(vector, pl.Array) or vector.size != getattr(model, "dimension", None):
        return None
    return stored.select("text_hash", "vector").unique("text_hash", keep="first")


async def _vectors(model: EmbeddingModel, texts: list[str], purpose: str) -> pl.Series:
    blobs = [to_le_bytes(vector) for vector in await model.embed(texts, purpose=purpose)]
    if not blobs or len(blobs) != len(texts):
        raise ValueError(f"the embedding model returned {len(blobs)} vectors for {len(texts)} texts")
    sizes = {len(blob) for blob in blobs}
    if len(sizes) != 1:
        raise ValueError(f"the embedding model returned vectors of {len(sizes)} different sizes")
    return pl.Series("vector", blobs, dtype=pl.Binary).bin.reinterpret(
        dtype=pl.Array(pl.Float32, sizes.pop() // 4), endianness="little"
    )
