"""The last build's vectors stand in for a local embedder's calls on unchanged texts, and only then."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.core.settings import load_settings
from graphrag_assets.index.embedding_texts import embed_frame, reusable_vectors, text_hashes
from graphrag_assets.llm.local_embedder import LocalEmbedder
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets_testkit.projects import make_project

TEXTS = pl.DataFrame({"id": ["c", "a", "b"], "text": ["the gale rose", "a storm at sea", "calm harbour"]})


def embed(model, texts: pl.DataFrame, kept: pl.DataFrame | None = None) -> pl.DataFrame:
    return asyncio.run(embed_frame(model, texts, purpose="test", kept=kept))


def marker(model: LocalEmbedder, text: str, value: float) -> pl.DataFrame:
    """A stored row for ``text`` whose vector the model would never make: it shows where it is used."""
    vector = pl.Series("vector", [[value] * model.dimension], dtype=pl.Array(pl.Float32, model.dimension))
    return pl.DataFrame({"text_hash": text_hashes(model.model, [text])}).with_columns(vector)


def test_an_unchanged_text_takes_its_stored_vector_and_the_others_are_embedded_in_order() -> None:
    model = LocalEmbedder(8)
    stored = pl.concat([marker(model, "a storm at sea", 0.5), marker(model, "gone from the corpus", 0.25)])
    made = embed(model, TEXTS, reusable_vectors(model, stored))
    fresh = embed(model, TEXTS)
    assert made["id"].to_list() == ["c", "a", "b"] and made.columns == fresh.columns
    assert made.filter(pl.col("id") == "a")["vector"].to_list() == [[0.5] * 8]
    assert made.filter(pl.col("id") != "a").equals(fresh.filter(pl.col("id") != "a"))


def test_reusing_a_build_s_vectors_gives_what_embedding_every_text_gives() -> None:
    model = LocalEmbedder(16)
    before = embed(model, TEXTS)
    edited = TEXTS.with_columns(pl.when(pl.col("id") == "b").then(pl.lit("calm harbour at dawn")).otherwise("text"))
    assert embed(model, edited, reusable_vectors(model, before)).equals(embed(model, edited))
    # every text unchanged: the same frame as the build it came from
    assert embed(model, TEXTS, reusable_vectors(model, before)).equals(before)


def test_vectors_of_another_size_or_from_an_endpoint_are_not_reused() -> None:
    model = LocalEmbedder(8)
    assert reusable_vectors(model, marker(LocalEmbedder(8), "calm harbour", 0.5)) is not None
    assert reusable_vectors(model, marker(LocalEmbedder(4), "calm harbour", 0.5)) is None
    assert reusable_vectors(model, None) is None

    class Endpoint:  # an endpoint's model: the same name may answer with other vectors
        dimension = 8

        def __init__(self, name: str) -> None:
            self.model = name

        async def embed(self, texts, *, purpose):
            return [[1.0] * 8 for _ in texts]

    assert reusable_vectors(Endpoint(model.model), marker(model, "calm harbour", 0.5)) is None


def _vectors(root: Path, table: str) -> pl.DataFrame:
    with duckdb.connect(str(root / "data" / "graphrag.duckdb"), read_only=True) as conn:
        return conn.sql(f"select id, text_hash, vector, model from {table} order by id").pl()


def _reused(root: Path, asset: str) -> int:
    from dagster import AssetKey

    from graphrag_assets.pipeline.runtime.instance import open_instance

    event = open_instance(load_settings(root, environ={})).get_latest_materialization_event(AssetKey(asset))
    return event.asset_materialization.metadata["vectors_reused"].value


def test_an_update_reuses_unchanged_vectors_and_equals_a_rebuild(tmp_path: Path) -> None:
    settings = "method: nlp\nllm:\n  embeddings: local\n"
    root = make_project(tmp_path / "updated")
    (root / "graphrag.yaml").write_text(settings, encoding="utf-8")
    assert index_project(load_settings(root, environ={})).success
    assert _reused(root, "entity_embeddings") == 0  # nothing to reuse in a first build
    inputs = root / "data" / "input"
    (inputs / "zz_added.txt").write_text(
        "Orla Fenwick surveyed Sable Reef for the Halden Marine Institute. Orla Fenwick met Marta Quell at "
        "Café Brisa. Marta Quell and Orla Fenwick mapped Sable Reef. Orla Fenwick wrote to Søren Holm.",
        encoding="utf-8",
    )
    assert index_project(load_settings(root, environ={})).success
    letter = inputs / "letter_holm_to_varga.txt"
    letter.write_text(
        letter.read_text(encoding="utf-8")
        + "\n\nThe Kestrel Point Lighthouse keeper Søren Holm and Dr. Ines Varga counted terns on Sable Reef "
        "with Marta Quell. Helga Brandt of Auberon Freight Lines joined Marta Quell and Søren Holm at Sable Reef.\n",
        encoding="utf-8",
    )
    assert index_project(load_settings(root, environ={})).success
    entities = _vectors(root, "entity_embeddings")
    assert 0 < _reused(root, "entity_embeddings") < entities.height
    assert 0 < _reused(root, "community_report_embeddings") < _vectors(root, "community_report_embeddings").height

    rebuilt = make_project(tmp_path / "rebuilt", with_sample=False)
    shutil.rmtree(rebuilt / "data" / "input")
    shutil.copytree(root / "data" / "input", rebuilt / "data" / "input")
    (rebuilt / "graphrag.yaml").write_text(settings, encoding="utf-8")
    assert index_project(load_settings(rebuilt, environ={})).success
    for table in ("entity_embeddings", "community_report_embeddings"):
        assert _vectors(root, table).equals(_vectors(rebuilt, table)), table
