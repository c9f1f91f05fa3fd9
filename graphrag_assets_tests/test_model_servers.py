"""Every kind of server the README has a snippet for, end to end: a small index and the four query
methods through an emulation of that server (see ``server_profiles``), configured with the README's
own snippet, must give the same tables as the well-behaved server given the same answers, and the
project must remember what the server accepts."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import AssetKey

from graphrag_assets.core import progress
from graphrag_assets.core.settings import load_settings
from graphrag_assets.llm.capabilities import stored_capabilities
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets.project.querying import answer_question
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.storage.database import let_go
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer
from graphrag_assets_tests.profile_servers import VLLM_WINDOW, configure, environment

DOCUMENTS = {
    "harbour.txt": "Marta Quell chairs the Vellmouth Fishing Cooperative. Rafael Duarte skippers the trawler Gull's Pride "
    "for the Vellmouth Fishing Cooperative. Helga Brandt is harbour master of Port Auberon.",
    "storm.txt": "Søren Holm keeps the Kestrel Point Lighthouse. Søren Holm relayed a mayday from Rafael Duarte during "
    "Storm Odile. Mira Santos commands the lifeboat Northern Grace of the Coastal Rescue Service.",
    "accord.txt": "The Kestrel Accord was signed at Vellmouth Town Hall by Marta Quell and Lucien Marchetti. Lucien "
    "Marchetti runs Auberon Freight Lines in Port Auberon.",
    "minutes.txt": "the meeting opened at nine and closed at ten; nothing else was decided.",  # nothing to extract
}
TABLES = {
    "documents": ["id"],
    "text_units": ["id"],
    "graph_extractions": ["text_unit_id", "record_index"],
    "entities": ["title"],
    "relationships": ["source", "target"],
    "communities": ["level", "community"],
    "community_reports": ["level", "community"],
}
IGNORED_COLUMNS = {"period", "creation_date"}  # the run date and file modification times
QUESTION = "Who is Søren Holm and what did he do during Storm Odile?"


@pytest.fixture(scope="module")
def small_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared input: three short documents (copied for each server)."""
    root = make_project(tmp_path_factory.mktemp("servers") / "template", with_sample=False)
    for name, text in DOCUMENTS.items():
        (root / "data" / "input" / name).write_text(text, encoding="utf-8")
    return root


def index_and_ask(profile: str, server: ScriptedOpenAIServer, root: Path) -> Path:
    """Index ``root`` through ``server`` and ask the question with each query method."""
    warnings: list[str] = []
    with pytest.MonkeyPatch.context() as monkeypatch:  # the pipeline reads the settings (and ${VARS}) itself
        settings = configure(root, profile, server, monkeypatch)
        progress.set_warning_listener(warnings.append)
        try:
            report = index_project(settings)
        finally:
            progress.set_warning_listener(None)
        assert report.success and not report.failed_documents, report.as_dict()
        # the unit without names is a warning naming the model, not a silent "0 entities"
        empty = [w for w in warnings if "gave no entity or relationship" in w]
        assert len(empty) == 1 and f"from chat model '{settings.llm.chat_model}'" in empty[0], warnings
        for method in ("local", "global", "drift", "basic"):
            result = answer_question(settings, QUESTION, QueryOptions(method))
            assert result.llm_used and result.answer.startswith("Answer to:"), (profile, method, result.answer[:200])
            assert "<think>" not in result.answer
    let_go()  # the queries' cache writes left a warm read-write instance; the tests read with DuckDB directly
    return root


@pytest.fixture(scope="module")
def indexed(profile_servers, small_project, tmp_path_factory: pytest.TempPathFactory):
    """``indexed(profile)``: the small project indexed and queried through that server (once)."""
    built: dict[str, Path] = {}

    def build(profile: str) -> Path:
        if profile not in built:
            root = tmp_path_factory.mktemp("through") / profile
            shutil.copytree(small_project, root)
            built[profile] = index_and_ask(profile, profile_servers[profile], root)
        return built[profile]

    return build


def tables(root: Path) -> dict[str, pl.DataFrame]:
    with duckdb.connect(str(root / "data" / "graphrag.duckdb"), read_only=True) as conn:
        out = {}
        for table, order in TABLES.items():
            frame = conn.sql(f"select * from {table}").pl()
            out[table] = frame.drop([c for c in frame.columns if c in IGNORED_COLUMNS]).sort(order)
    return out


@pytest.fixture(scope="module")
def reference(indexed) -> dict[str, pl.DataFrame]:
    """The tables built through the well-behaved server, configured with the OpenAI snippet."""
    built = tables(indexed("openai"))
    assert built["entities"].height >= 8 and built["community_reports"].height >= 1
    return built


# profile -> what the project must remember about the chat or embedding endpoint afterwards
EXPECTED = {
    "reasoning": ("chat", {"temperature": False, "json_schema": "honoured"}),
    "azure": ("chat", {"json_schema": "honoured", "temperature": True}),
    "ollama": ("chat", {"think_blocks": True, "json_schema": "ignored"}),
    "vllm": ("chat", {"json_schema": "honoured", "context_window": VLLM_WINDOW}),
    "no-dimensions": ("embedding", {"dimensions": "ignored"}),
    "base64": ("embedding", {"base64_embeddings": True}),
}


@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_each_server_kind_indexes_and_answers_like_the_well_behaved_one(profile, profile_servers, indexed, reference):
    root = indexed(profile)
    built = tables(root)
    for name, frame in reference.items():
        assert built[name].equals(frame), f"{profile}: table {name} differs from the well-behaved server's"
    settings = load_settings(root, environ=environment(profile_servers[profile]))
    kind, expected = EXPECTED[profile]
    model = settings.llm.chat_model if kind == "chat" else settings.llm.embedding_model
    url = settings.llm.base_url if kind == "chat" else settings.llm.embedding_base_url or settings.llm.base_url
    known = stored_capabilities(settings.database_path)[(str(url), model, kind)].as_dict()
    assert {k: known[k] for k in expected} == expected


def test_what_was_adapted_is_counted_in_the_run_metadata(profile_servers, indexed):
    root = indexed("ollama")
    instance = open_instance(load_settings(root, environ=environment(profile_servers["ollama"])))
    extraction = instance.get_latest_materialization_event(AssetKey("graph_extractions")).asset_materialization.metadata
    reports = instance.get_latest_materialization_event(AssetKey("community_reports")).asset_materialization.metadata
    # figures of the range run that extracted every document
    assert extraction["run/llm/notes/think_blocks_stripped"].value >= 2 * len(
        DOCUMENTS
    )  # a first answer and a gleaning per unit
    assert extraction["run/empty_units"].value == 1  # minutes.txt
    assert reports["llm/notes/json_repaired"].value >= 1
