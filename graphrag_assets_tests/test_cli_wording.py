"""What `index`, `index --dry-run`, `doctor` and `query` say: costs in dollars, report outcomes a
reader understands, the off-topic warning before the passages."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.cli.output import render_index_report, render_query_result, render_report_outcomes
from graphrag_assets.core.settings import PRICE_TABLE, default_price_table, load_settings
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.index.report_reuse import CONTEXT_CHANGED, MEMBERS_CHANGED
from graphrag_assets.llm.usage import estimate_cost
from graphrag_assets.project.index_run import IndexReport
from graphrag_assets.query.results import ContextRecords, QueryResult, QueryUsage
from graphrag_assets_tests.conftest import make_llm_project


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.output


def reports(total: int, reused: int, deleted: int, **reasons: int) -> dict:
    named = {"members": MEMBERS_CHANGED, "context": CONTEXT_CHANGED}
    counts = {named[key]: n for key, n in reasons.items()}
    return {
        "total": total,
        "reused": reused,
        "regenerated": sum(counts.values()),
        "deleted": deleted,
        "reasons": counts,
    }


def test_report_outcomes_read_as_sentences() -> None:
    assert render_report_outcomes(reports(15, 0, 0, members=15)) == "15 written (no earlier reports to reuse)"
    assert render_report_outcomes(reports(15, 0, 60, members=15)) == (
        "15 in all: 0 reused, 15 regenerated (15 new or changed communities); "
        "60 earlier reports deleted (their communities are gone)"
    )
    assert render_report_outcomes(reports(12, 10, 1, members=1, context=1)) == (
        "12 in all: 10 reused, 2 regenerated (1 new or changed community, 1 whose entities or relationships changed); "
        "1 earlier report deleted (their communities are gone)"
    )


def usage(calls: int, cost: float) -> dict:
    return {"calls": calls, "cached": 3, "failed": 0, "prompt_tokens": 100, "completion_tokens": 20, "cost_usd": cost}


def test_index_says_what_the_model_calls_cost() -> None:
    report = IndexReport(ChangeSet(), usage={"extract_graph": usage(4, 0.0123), "community_report": usage(2, 0.002)})
    assert "cost: ~$0.0143 (estimated from token counts and llm.prices)" in render_index_report(report).splitlines()
    unpriced = IndexReport(ChangeSet(), usage={"extract_graph": usage(4, 0.0)})
    assert "cost: not estimated (no price for the model; set llm.prices.<model> to see it)" in render_index_report(
        unpriced
    )
    cached = IndexReport(ChangeSet(), usage={"extract_graph": usage(0, 0.0)})
    assert "cost:" not in render_index_report(cached)  # no call made, nothing spent


def test_openai_models_have_dated_default_prices_that_settings_override(tmp_path: Path) -> None:
    as_of, prices = default_price_table()
    assert as_of in PRICE_TABLE.read_text(encoding="utf-8")
    assert {
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "text-embedding-3-small",
        "text-embedding-3-large",
    } <= set(prices)
    settings = load_settings(tmp_path, environ={})
    assert estimate_cost(settings.llm.prices, "gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    (tmp_path / "graphrag.yaml").write_text(
        "llm:\n  prices:\n    gpt-4o-mini: {input_per_million: 1, output_per_million: 2}\n"
        "    my-model: {input_per_million: 3}\n",
        encoding="utf-8",
    )
    settings = load_settings(tmp_path, environ={})
    assert estimate_cost(settings.llm.prices, "gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(3.0)
    assert estimate_cost(settings.llm.prices, "my-model", 1_000_000) == pytest.approx(3.0)
    assert estimate_cost(settings.llm.prices, "text-embedding-3-small", 1_000_000) == pytest.approx(0.02)


def test_the_off_topic_warning_comes_before_the_passages() -> None:
    warning = "little in the index matches this question (capital, france); the passages below may not answer it."
    result = QueryResult(
        "With a dimpled, surprised-looking, capital face…",
        "basic",
        ContextRecords(),
        "",
        QueryUsage(),
        False,
        [warning],
    )
    lines = render_query_result(result).splitlines()
    assert lines[0] == f"warning: {warning}" and lines[2].startswith("With a dimpled")
    assert sum(line.startswith("warning:") for line in lines) == 1


def test_index_prints_cost_and_first_build_wording(graphrag_server, tmp_path: Path) -> None:
    root = make_llm_project(tmp_path / "project", graphrag_server.base_url, with_sample=False)
    sample = make_llm_project(tmp_path / "sample", graphrag_server.base_url) / "data" / "input"
    shutil.copy(sample / "letter_holm_to_varga.txt", root / "data" / "input")
    code, out = cli("index", "--root", str(root))
    assert code == 0, out
    lines = out.splitlines()
    assert any(line.startswith("cost: ~$0.0") for line in lines), out  # gpt-4o-mini from the default table
    assert any(
        line.startswith("community reports: ") and "written (no earlier reports to reuse)" in line for line in lines
    )
    assert "members changed" not in out
    code, out = cli("doctor", "--root", str(root))
    assert code == 0, out
    assert "not set (llm.prices" not in out
    assert "$0.15 input / $0.6 output per million tokens (OpenAI's list price of" in out


def test_a_dry_run_after_an_offline_build_knows_the_graph_exists(nlp_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    (root / "graphrag.yaml").write_text(
        "method: standard\nllm:\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-test-not-secret\n  embeddings: local\n",
        encoding="utf-8",
    )
    code, out = cli("index", "--root", str(root), "--dry-run")
    assert code == 0, out
    assert "not built yet" not in out
    assert "corpus stage: the current graph was made without model calls" in out
