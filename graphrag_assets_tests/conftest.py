"""Shared fixtures: temporary projects built from the bundled sample corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_assets_testkit.projects import make_project

pytest_plugins = ["graphrag_assets_tests.openai_fixtures", "graphrag_assets_tests.graph_fixtures"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model endpoint configured, whatever the developer's shell has."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT"):
        monkeypatch.delenv(name, raising=False)


RESPONDER = "graphrag_assets_testkit.graphrag_responder:respond"


def llm_settings_yaml(base_url: str, extra: str = "") -> str:
    """graphrag.yaml pointing a project at a scripted server (the file wins over the shell's env)."""
    return (
        "method: standard\n"
        "llm:\n"
        f"  base_url: {base_url}\n"
        "  api_key: sk-test-not-secret\n"
        "  embeddings: openai\n"
        "  max_retries: 2\n"
        "  retry_base_delay: 0.01\n"
        "  retry_max_delay: 0.05\n"
        "  request_timeout: 20\n" + extra
    )


def make_llm_project(root: Path, base_url: str, with_sample: bool = True, extra: str = "") -> Path:
    make_project(root, with_sample=with_sample)
    (root / "graphrag.yaml").write_text(llm_settings_yaml(base_url, extra), encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def graphrag_server():
    """A scripted server answering our prompts like a model would (session-wide)."""
    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    server = ScriptedOpenAIServer.start(responder=RESPONDER)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def standard_index(graphrag_server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus indexed once with the standard (LLM) method through the scripted server.

    Tests must not modify it; copy it (``copy_project``) to change things.
    """
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.indexing import index_project

    root = make_llm_project(tmp_path_factory.mktemp("standard") / "project", graphrag_server.base_url)
    report = index_project(load_settings(root))
    assert report.success, report.as_dict()
    return root


@pytest.fixture(scope="session")
def nlp_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample corpus indexed once offline (nlp method, local embedder)."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.indexing import index_project

    root = make_project(tmp_path_factory.mktemp("nlp") / "project")
    (root / "graphrag.yaml").write_text("method: nlp\nllm:\n  embeddings: local\n", encoding="utf-8")
    report = index_project(load_settings(root, environ={}))
    assert report.success, report.as_dict()
    return root


@pytest.fixture(scope="session")
def big_build_index(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample indexed as a big build is: its text units over ``query.in_memory_search_max_tokens``
    (set to 0), so the build has LanceDB tables and its search tables. Tests must not modify it."""
    import shutil

    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.indexing import index_project

    root = tmp_path_factory.mktemp("big") / "project"
    shutil.copytree(nlp_index, root, ignore=shutil.ignore_patterns("*.lock"))
    with open(root / "graphrag.yaml", "a", encoding="utf-8") as settings:
        settings.write("query:\n  in_memory_search_max_tokens: 0\n")
    report = index_project(load_settings(root, environ={}))
    assert report.success, report.as_dict()
    return root


# Fixtures that index a corpus or start a browser / graph database, and modules whose tests index
# corpora themselves: those tests are end-to-end, and `make test-fast` leaves them out.
SLOW_FIXTURES = {"nlp_index", "big_build_index", "standard_index", "graphrag_server", "chromium", "falkordb_server"}
SLOW_MODULES = {
    "test_crash_consistency",
    "test_serve_process",
    "test_serve_page",
    "test_html_export",
    "test_dev_command",
    "test_incremental_end_to_end",
    "test_model_servers",
    "test_resolution_pipeline",
    "test_pipeline_standard",
    "test_cli_foundation",
    "test_export",
    "test_bucketed_partitions",
    "test_postgres_instance",
    "test_dask_workers",
    "test_worker_limits",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
