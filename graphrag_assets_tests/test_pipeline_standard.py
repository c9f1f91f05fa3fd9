"""The standard (LLM) pipeline end to end through Dagster, against the scripted model server."""

import shutil
from pathlib import Path

import pytest
from dagster import AssetKey

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import IndexOptions, index_project
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.conftest import make_llm_project

REPORT_PROMPT = "You are writing a briefing about one community"
EXTRACT_PROMPT = "You are helping to build a knowledge graph"


def chat_prompts(server, prefix: str) -> list[str]:
    prompts = []
    for call in server.calls("chat"):
        messages = call["body"].get("messages", [])
        text = "\n".join(str(m.get("content") or "") for m in messages)
        if text.lstrip().startswith(prefix):
            prompts.append(text)
    return prompts


def test_standard_index_fills_every_table(standard_index: Path) -> None:
    counts = dict(query_db(standard_index, "select record_type, count(*) from graph_extractions group by 1"))
    assert counts["entity"] > 50 and counts["relationship"] > 50
    (entities, relationships, communities, reports) = query_db(
        standard_index,
        "select (select count(*) from entities), (select count(*) from relationships), "
        "(select count(*) from communities), (select count(*) from community_reports)",
    )[0]
    assert entities > 30 and relationships > 30
    assert communities > 3 and reports == communities
    assert query_db(standard_index, "select count(*) from community_reports where generation <> 'llm'") == [(0,)]
    # every relationship endpoint is an entity, titles are unique
    assert query_db(
        standard_index, "select count(*) from relationships r anti join entities e on r.source = e.title"
    ) == [(0,)]
    assert query_db(standard_index, "select count(*) - count(distinct title) from entities") == [(0,)]
    # embeddings: one vector per row, dimension taken from the model (the server's 64)
    assert query_db(standard_index, "select count(*), min(len(vector)), max(len(vector)) from entity_embeddings") == [
        (entities, 64, 64)
    ]


def test_usage_is_recorded_per_materialization(standard_index: Path) -> None:
    rows = dict(
        (purpose, (requests, prompt, completion))
        for purpose, requests, prompt, completion in query_db(
            standard_index,
            "select purpose, sum(requests)::int, sum(prompt_tokens)::int, sum(completion_tokens)::int from llm_usage group by 1",
        )
    )
    assert rows["extract_graph"][0] >= 13 * 2  # a first call and one gleaning per text unit
    assert rows["extract_graph"][1] > 0 and rows["extract_graph"][2] > 0
    assert rows["community_report"][0] > 0 and rows["summarize_descriptions"][0] > 0
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(standard_index))
    event = instance.get_latest_materialization_event(AssetKey("graph_extractions"))
    metadata = event.asset_materialization.metadata
    # the sample's eight files ran as one range: the model usage is the run's, and says so
    assert metadata["run/llm/total/prompt_tokens"].value > 0
    assert metadata["run/llm/total/requests"].value >= 26 and metadata["run/documents"].value == 8


def test_each_partition_describes_its_own_rows(standard_index: Path) -> None:
    """A range run writes eight partitions at once; each materialization counts only its file's rows."""
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(standard_index))
    for asset, table in (
        ("text_units", "text_units"),
        ("graph_extractions", "graph_extractions"),
        ("text_unit_embeddings", "text_unit_embeddings"),
    ):
        for key in ("interviews.jsonl", "storm_odile_incident_report.md"):
            records = instance.fetch_materializations(AssetKey(asset), limit=50).records
            latest = next(r for r in records if r.partition_key == key)
            metadata = latest.asset_materialization.metadata
            rows = query_db(standard_index, f"select count(*) from {table} where document_key = '{key}'")[0][0]
            assert metadata["dagster/row_count"].value == rows, (asset, key)


def test_api_key_never_stored(standard_index: Path) -> None:
    for path in (standard_index / "data").rglob("*"):
        if path.is_file() and path.stat().st_size < 50_000_000:
            assert b"sk-test-not-secret" not in path.read_bytes(), path


@pytest.fixture
def copy_of_index(standard_index: Path, tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(standard_index, target)
    return target


def test_rerun_with_warm_cache_makes_no_model_calls(copy_of_index: Path, graphrag_server) -> None:
    before = len(graphrag_server.calls())
    report = index_project(load_settings(copy_of_index), IndexOptions(force_corpus=True))
    assert report.success
    assert len(graphrag_server.calls()) == before
    assert all(u["calls"] == 0 for u in report.usage.values()) and sum(u["cached"] for u in report.usage.values()) > 0


def test_adding_a_document_pays_only_for_what_changed(copy_of_index: Path, graphrag_server) -> None:
    first_reports = {p for p in chat_prompts(graphrag_server, REPORT_PROMPT)}
    start = len(graphrag_server.calls())
    (copy_of_index / "data" / "input" / "ferry.md").write_text(
        "The ferry Northern Star now sails from Port Auberon to Vellmouth. Captain Ilse Moreau commands it.",
        encoding="utf-8",
    )
    report = index_project(load_settings(copy_of_index))
    assert report.success and report.changes.new == ["ferry.md"]
    new_calls = graphrag_server.calls()[start:]
    extraction_calls = [
        c for c in new_calls if EXTRACT_PROMPT in str(c["body"].get("messages", [{}])[0].get("content", ""))
    ]
    assert len(extraction_calls) == 2  # the new document's one chunk: first call + one gleaning
    report_prompts = [
        "\n".join(str(m.get("content") or "") for m in c["body"].get("messages", []))
        for c in new_calls
        if str(c["body"].get("messages", [{}])[0].get("content", "")).startswith(REPORT_PROMPT)
    ]
    communities = query_db(copy_of_index, "select count(*) from communities")[0][0]
    assert 0 < len(report_prompts) < communities  # only reports whose context changed
    assert not (set(report_prompts) & first_reports)  # no context was paid for twice
    assert report.usage["community_report"]["cached"] > 0  # untouched communities came from the cache
    # report embeddings ignore citation numbers (which shift when entities are added), so only
    # reports with a new answer are embedded again
    embedded = [
        text
        for c in new_calls
        if c["endpoint"] == "embeddings"
        for text in (c["body"]["input"] if isinstance(c["body"]["input"], list) else [c["body"]["input"]])
    ]
    embedded_reports = [t for t in embedded if isinstance(t, str) and t.startswith("# ")]
    assert 0 < len(embedded_reports) <= len(report_prompts)


def test_failed_extraction_is_isolated(graphrag_server, tmp_path: Path) -> None:
    """A document whose model calls keep failing is left out; the others and the corpus proceed."""
    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    server = ScriptedOpenAIServer.start(responder="graphrag_assets_testkit.graphrag_responder:respond")
    try:
        root = make_llm_project(tmp_path / "project", server.base_url, with_sample=False)
        inputs = root / "data" / "input"
        (inputs / "good.txt").write_text(
            "Marta Quell leads the Vellmouth Fishing Cooperative with Rafael Duarte.", encoding="utf-8"
        )
        (inputs / "also_good.txt").write_text(
            "Søren Holm keeps the Kestrel Point Lighthouse near Vellmouth.", encoding="utf-8"
        )
        (inputs / "poison.txt").write_text("POISONED Lucien Marchetti runs Auberon Freight Lines.", encoding="utf-8")
        server.add_fault("status", status=500, message="boom", times=1000, match="POISONED", endpoint="chat")
        report = index_project(load_settings(root))
        assert report.failed_documents == ["poison.txt"]
        statuses = dict(query_db(root, "select document_key, status from extraction_status"))
        assert statuses == {"also_good.txt": "ok", "good.txt": "ok", "poison.txt": "failed"}
        assert query_db(root, "select count(*) from graph_extractions where document_key = 'poison.txt'") == [(0,)]
        assert query_db(root, "select status from corpus_manifest where document_key = 'poison.txt'") == [("failed",)]
        titles = {row[0] for row in query_db(root, "select title from entities")}
        assert "MARTA QUELL" in titles and "SØREN HOLM" in titles and "LUCIEN MARCHETTI" not in titles
        # the retry of the failed document alone failed its run, so Dagster shows the partition as failed
        assert [run["success"] for run in report.runs if run["partitions"] == ["poison.txt"]] == [False]
    finally:
        server.stop()


def test_a_document_run_that_failed_part_way_is_redone_next_time(tmp_path: Path) -> None:
    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    server = ScriptedOpenAIServer.start(responder="graphrag_assets_testkit.graphrag_responder:respond")
    try:
        root = make_llm_project(tmp_path / "project", server.base_url, with_sample=False)
        inputs = root / "data" / "input"
        (inputs / "a.txt").write_text("Marta Quell leads the Vellmouth Fishing Cooperative.", encoding="utf-8")
        (inputs / "b.txt").write_text("Søren Holm keeps the Kestrel Point Lighthouse.", encoding="utf-8")
        server.add_fault("status", status=503, message="embeddings down", times=1000, endpoint="embeddings")
        first = index_project(load_settings(root))
        assert not first.runs[0]["success"] and "embeddings down" in first.runs[0]["error"]
        server.reset()
        second = index_project(load_settings(root))
        assert second.changes.changed == ["a.txt", "b.txt"] and second.success
        assert query_db(root, "select count(distinct document_key) from text_unit_embeddings") == [(2,)]
        assert index_project(load_settings(root)).runs == []
    finally:
        server.stop()


def test_dry_run_counts_the_calls_of_the_next_run_without_making_any(copy_of_index: Path, graphrag_server) -> None:
    from graphrag_assets.project.dry_run import estimate_next_run

    (copy_of_index / "data" / "input" / "inspection.txt").write_text(
        "Helga Brandt inspected the ferry Northern Star at Port Auberon.", encoding="utf-8"
    )
    (copy_of_index / "data" / "input" / "letter_holm_to_varga.txt").write_text(
        (copy_of_index / "data" / "input" / "letter_holm_to_varga.txt").read_text(encoding="utf-8"), encoding="utf-8"
    )  # rewritten with the same bytes: not a change
    before = len(graphrag_server.calls())
    estimate = estimate_next_run(load_settings(copy_of_index))
    assert len(graphrag_server.calls()) == before
    assert (estimate.new, estimate.changed) == (["inspection.txt"], [])
    assert estimate.usage["extract_graph"]["calls"] == 2 and estimate.usage["extract_graph"]["prompt_tokens"] > 100
    report = index_project(load_settings(copy_of_index))
    assert report.usage["extract_graph"]["calls"] == estimate.usage["extract_graph"]["calls"]
    assert estimate_next_run(load_settings(copy_of_index)).usage == {}


def test_cli_runs_are_listed_under_their_jobs_like_runs_launched_from_the_ui(standard_index: Path) -> None:
    """The UI lists a job's runs with its name and the code location's repository label."""
    from dagster import RunsFilter

    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(standard_index))
    label = {".dagster/repository": "__repository__@graphrag_assets"}
    for job in ("document_job", "corpus_job"):
        runs = instance.get_runs(RunsFilter(job_name=job, tags=label))
        assert runs and runs[0].tags["graphrag/trigger"] == "graphrag-assets index", job
    workspace = (standard_index / "workspace.yaml").read_text(encoding="utf-8")
    assert "location_name: graphrag_assets" in workspace
