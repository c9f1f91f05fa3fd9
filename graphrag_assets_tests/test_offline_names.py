"""The offline (``nlp``) graph keeps its most frequent names, and its community titles are names.

Microsoft's ``remove_ego_nodes`` drops the most connected phrase, which in a story is its
protagonist: *A Christmas Carol* indexed without SCROOGE. These tests run the index's own steps
in-process (extraction, graph, pruning with the default settings, communities, extractive
reports) on the bundled sample and, when ../shared is present, on the Carol.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from graphrag_assets.core.settings import PruneSettings
from graphrag_assets.index.chunking import chunk_text
from graphrag_assets.index.communities import build_communities
from graphrag_assets.index.extractive_reports import extractive_reports
from graphrag_assets.index.nlp_graph import code_noun_graph, materialize, prune_codes
from graphrag_assets.index.noun_phrases import PROPER_NAME_TYPE, noun_phrase_records
from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL, require

SAMPLE_INPUT = Path(__file__).resolve().parents[1] / "data" / "input"


def text_units(texts: dict[str, str]) -> pl.DataFrame:
    """``id``, ``text``, ``document_key`` of 1200-token chunks (the default chunking), in reading order."""
    rows = [
        (f"{name}-{chunk.index:04d}", chunk.text, name)
        for name, text in texts.items()
        for chunk in chunk_text(text, 1200, 100)
    ]
    return pl.DataFrame(rows, schema=["id", "text", "document_key"], orient="row")


def offline_graph(units: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Extraction records, and the entities and relationships left by the default pruning."""
    records = noun_phrase_records(units)
    graph = code_noun_graph(records)
    entities, relationships = materialize(graph, prune_codes(graph, PruneSettings()), units)
    return records, entities, relationships


def most_frequent_name(records: pl.DataFrame) -> str:
    """The proper name found in most text units (ties: alphabetical)."""
    counts = (
        records.filter(pl.col("type") == PROPER_NAME_TYPE)
        .group_by("title")
        .agg(units=pl.col("text_unit_id").n_unique())
        .sort(["units", "title"], descending=[True, False])
    )
    return counts["title"][0]


def test_the_most_frequent_name_of_the_sample_survives_pruning() -> None:
    texts = {
        p.name: p.read_text(encoding="utf-8") for p in sorted(SAMPLE_INPUT.glob("*")) if p.suffix in (".md", ".txt")
    }
    records, entities, _ = offline_graph(text_units(texts))
    name = most_frequent_name(records)
    assert name == "AUBERON FREIGHT LINES"  # also the node of highest degree, which the ego rule dropped
    assert name in entities["title"].to_list()


def spelled_as_name(title: str, text: str) -> bool:
    """Whether ``text`` has ``title`` inside a sentence with a capital first letter ("said Scrooge")."""
    first, *rest = title.split(" ")
    words = [re.escape(first[0]) + "(?i:" + re.escape(first[1:]) + ")"] + [f"(?i:{re.escape(w)})" for w in rest]
    return re.search(r"[a-z,;] " + r"\s+".join(words) + r"\b", text) is not None


def test_a_christmas_carol_keeps_scrooge_and_titles_its_communities_with_names() -> None:
    text = require(CHRISTMAS_CAROL).read_text(encoding="utf-8-sig")
    units = text_units({"carol": text})
    records, entities, relationships = offline_graph(units)
    assert most_frequent_name(records) == "SCROOGE"
    assert "SCROOGE" in entities["title"].to_list()

    communities = build_communities(entities, relationships, period="2026-01-01")
    reports = extractive_reports(communities, entities, relationships, units.select("id", "text"))
    largest = reports.filter(pl.col("level") == 0).sort(["size", "community"], descending=[True, False]).head(5)
    for title in largest["title"]:
        # names first, then plain phrases, hyphenated words last; most members are names
        kinds = [0 if spelled_as_name(m, text) else 2 if "-" in m else 1 for m in re.split(r", | and ", title)]
        assert kinds == sorted(kinds) and kinds.count(0) >= 2, title
