"""Usage accounting: counters per purpose and model, metadata, frame, and the llm_usage table."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from graphrag_assets.core.settings import Price
from graphrag_assets.llm.usage import UsageMeter, estimate_cost


def filled_meter() -> UsageMeter:
    meter = UsageMeter()
    meter.record_request("extract_graph", "gpt", prompt_tokens=100, completion_tokens=20, cost_usd=0.5)
    meter.record_request("extract_graph", "gpt", prompt_tokens=50, completion_tokens=10, cost_usd=0.25)
    meter.record_cache_hits("extract_graph", "gpt", 3)
    meter.record_retry("extract_graph", "gpt")
    meter.record_failure("community_reports", "gpt")
    meter.record_request("embed_entities", "emb", embedding_tokens=40)
    return meter


def test_counts_per_purpose_and_model():
    frame = filled_meter().to_frame()
    assert frame.rows(named=True) == [
        {
            "purpose": "community_reports",
            "model": "gpt",
            "requests": 1,
            "cache_hits": 0,
            "retries": 0,
            "failures": 1,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "embedding_tokens": 0,
            "cost_usd": 0.0,
            "truncated": 0,
        },
        {
            "purpose": "embed_entities",
            "model": "emb",
            "requests": 1,
            "cache_hits": 0,
            "retries": 0,
            "failures": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "embedding_tokens": 40,
            "cost_usd": 0.0,
            "truncated": 0,
        },
        {
            "purpose": "extract_graph",
            "model": "gpt",
            "requests": 2,
            "cache_hits": 3,
            "retries": 1,
            "failures": 0,
            "prompt_tokens": 150,
            "completion_tokens": 30,
            "embedding_tokens": 0,
            "cost_usd": 0.75,
            "truncated": 0,
        },
    ]


def test_metadata_is_flat_json_with_totals_and_per_purpose_figures():
    metadata = filled_meter().as_metadata()
    json.dumps(metadata)
    assert metadata["llm/total/requests"] == 4
    assert metadata["llm/total/cache_hits"] == 3
    assert metadata["llm/total/failures"] == 1
    assert metadata["llm/total/cost_usd"] == 0.75
    assert metadata["llm/extract_graph/prompt_tokens"] == 150
    assert metadata["llm/embed_entities/embedding_tokens"] == 40
    assert metadata["llm/models"] == "emb, gpt"
    assert all(not isinstance(v, (dict, list)) for v in metadata.values())


def test_empty_meter_has_an_empty_frame_and_zero_totals():
    meter = UsageMeter()
    assert meter.to_frame().is_empty()
    assert meter.as_metadata()["llm/total/requests"] == 0


def test_cost_uses_input_and_output_prices_per_million():
    prices = {"gpt": Price(input_per_million=2.0, output_per_million=8.0)}
    assert estimate_cost(prices, "gpt", 1_000_000, 500_000) == pytest.approx(6.0)
    assert estimate_cost(prices, "unpriced", 1_000_000, 1) == 0.0


def test_persist_appends_rows_to_llm_usage(tmp_path: Path):
    db = tmp_path / "db.duckdb"
    meter = filled_meter()
    assert meter.persist(db, run_id="r1", asset_key="entities", partition_key=None) == 3
    assert meter.persist(db, run_id="r2", asset_key="text_units", partition_key="doc-1") == 3
    assert UsageMeter().persist(db, run_id="r3", asset_key="x", partition_key=None) == 0
    with duckdb.connect(str(db)) as conn:
        rows = conn.execute(
            "select run_id, asset_key, partition_key, purpose, model, requests, cache_hits, retries, failures, "
            "prompt_tokens, completion_tokens, embedding_tokens, cost_usd from llm_usage "
            "where purpose = 'extract_graph' order by run_id"
        ).fetchall()
        stamped = conn.execute("select count(*) from llm_usage where recorded_at is not null").fetchone()
    assert rows == [
        ("r1", "entities", None, "extract_graph", "gpt", 2, 3, 1, 0, 150, 30, 0, 0.75),
        ("r2", "text_units", "doc-1", "extract_graph", "gpt", 2, 3, 1, 0, 150, 30, 0, 0.75),
    ]
    assert stamped == (6,)
