"""Entity resolution through Dagster and the CLI: the stored tables, metadata, dry run, deletions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import AssetKey

from graphrag_assets.cli.main import main
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.project.dry_run import estimate_next_run
from graphrag_assets.project.fingerprints import corpus_fingerprint
from graphrag_assets_testkit.projects import make_project, query_db


def enable_resolution(root: Path, extra: str = "") -> None:
    with (root / "graphrag.yaml").open("a", encoding="utf-8") as handle:
        handle.write("resolution:\n  enabled: true\n" + extra)


@pytest.fixture(scope="module")
def resolved_index(standard_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The standard sample index with resolution switched on afterwards (only the corpus step reruns)."""
    root = tmp_path_factory.mktemp("resolved") / "project"
    shutil.copytree(standard_index, root)
    enable_resolution(root)
    report = index_project(load_settings(root))
    assert report.success and [run["job"] for run in report.runs] == ["corpus_job"]
    return root


def test_enabling_resolution_merges_entities_and_keeps_the_graph_consistent(
    resolved_index: Path, standard_index: Path
) -> None:
    aliases = query_db(
        resolved_index, "select alias, canonical_id, canonical_title, method, reason from entity_aliases order by alias"
    )
    assert len(aliases) >= 3 and all(method == "model" and reason for _, _, _, method, reason in aliases)
    entities = {
        title: (eid, names) for eid, title, names in query_db(resolved_index, "select id, title, aliases from entities")
    }
    for alias, canonical_id, canonical, _, _ in aliases:
        assert alias not in entities and entities[canonical][0] == canonical_id and alias in entities[canonical][1]
    assert sum(len(names) for _, names in entities.values()) == len(aliases)
    before = query_db(standard_index, "select count(*) from entities")[0][0]
    assert len(entities) == before - len(aliases)
    assert query_db(
        resolved_index,
        "select count(*) from relationships r where r.source not in (select title from entities) or r.target not in (select title from entities)",
    ) == [(0,)]
    assert query_db(standard_index, "select count(*) from entity_aliases") == [
        (0,)
    ]  # the table exists, empty, when resolution is off


def test_sql_shows_every_merge_and_why(resolved_index: Path) -> None:
    stored = query_db(resolved_index, "select alias, canonical_title, reason from entity_aliases order by alias")
    shown = CliRunner().invoke(main, ["sql", "select * from entity_aliases", "--root", str(resolved_index)])
    assert shown.exit_code == 0, shown.output
    for column in ("alias", "canonical_id", "canonical_title", "method", "score", "reason"):
        assert column in shown.output
    assert all(alias in shown.output for alias, _, _ in stored)
    as_json = CliRunner().invoke(
        main,
        [
            "sql",
            "select alias, canonical_title, reason from entity_aliases order by alias",
            "--json",
            "--root",
            str(resolved_index),
        ],
    )
    assert [tuple(row.values()) for row in json.loads(as_json.output)] == stored


def test_dagster_metadata_shows_the_count_and_the_largest_groups(resolved_index: Path) -> None:
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(resolved_index))
    metadata = instance.get_latest_materialization_event(AssetKey("entity_aliases")).asset_materialization.metadata
    count = query_db(resolved_index, "select count(*) from entity_aliases")[0][0]
    largest = query_db(
        resolved_index, "select canonical_title, count(*) n from entity_aliases group by 1 order by n desc, 1 limit 1"
    )[0][0]
    assert metadata["aliases"].value == count and metadata["resolution"].value == "on"
    assert f"| {largest} |" in metadata["largest_groups"].value
    graph = instance.get_latest_materialization_event(AssetKey("entities")).asset_materialization.metadata
    assert graph["resolution/entities_merged"].value == count and graph["resolution/groups_judged_by_model"].value > 0


def test_the_dry_run_counts_the_resolution_calls_of_the_next_run(
    resolved_index: Path, tmp_path: Path, graphrag_server
) -> None:
    root = tmp_path / "project"
    shutil.copytree(resolved_index, root)
    settled = estimate_next_run(load_settings(root)).resolution
    assert settled is not None and settled.exact and settled.calls == 0 and settled.cached == settled.groups > 0
    settings_file = root / "graphrag.yaml"
    settings_file.write_text(
        settings_file.read_text().replace("  enabled: true\n", "  enabled: true\n  max_group_size: 4\n")
    )
    before = len(graphrag_server.calls())
    estimate = estimate_next_run(load_settings(root)).resolution
    assert len(graphrag_server.calls()) == before  # the dry run sends nothing
    assert estimate.exact and estimate.calls > 0 and estimate.prompt_tokens > 0
    report = index_project(load_settings(root))
    assert report.usage["resolve_entities"]["calls"] == estimate.calls
    text = CliRunner().invoke(main, ["index", "--dry-run", "--root", str(root)]).output
    assert "entity resolution:" in text and "0 call(s) to make" in text and "(exact)" in text
    (root / "data" / "input" / "visit.txt").write_text(
        "Ines Varga visited Helga Brandt at Port Auberon.", encoding="utf-8"
    )
    unknown = estimate_next_run(load_settings(root)).resolution
    assert not unknown.exact and "extraction answer(s) are not known" in unknown.render()


def test_resolution_settings_are_part_of_the_corpus_fingerprint(tmp_path: Path) -> None:
    def fingerprint(**resolution) -> str:
        return corpus_fingerprint(
            load_settings(tmp_path, environ={}, overrides={"method": "nlp", "resolution": resolution})
        )

    off = fingerprint()
    assert load_settings(tmp_path, environ={}).resolution.enabled is False  # off by default, in every method
    assert fingerprint(max_group_size=5) == off  # settings of a step that does not run change nothing
    assert fingerprint(enabled=True) != off
    assert fingerprint(enabled=True, neighbours=3) != fingerprint(enabled=True)
    prompt = tmp_path / "resolve.txt"
    prompt.write_text("Same? {entity_list}", encoding="utf-8")
    standard = {"method": "standard", "llm": {"base_url": "http://127.0.0.1:1/v1"}}
    with_prompt = load_settings(
        tmp_path, environ={}, overrides={**standard, "resolution": {"enabled": True, "prompt": "resolve.txt"}}
    )
    without = load_settings(tmp_path, environ={}, overrides={**standard, "resolution": {"enabled": True}})
    assert corpus_fingerprint(with_prompt) != corpus_fingerprint(without)


@pytest.mark.parametrize(
    ("method", "verdicts", "expected"),
    [
        ("standard", "auto", "model"),
        ("standard", "rules", "rules"),
        ("nlp", "auto", "rules"),
        ("fast", "auto", "rules"),
        ("fast", "model", "model"),
    ],
)
def test_who_judges_follows_the_method_unless_set(tmp_path: Path, method: str, verdicts: str, expected: str) -> None:
    from graphrag_assets.index.entity_resolution import resolution_options

    settings = load_settings(
        tmp_path, environ={}, overrides={"method": method, "resolution": {"enabled": True, "verdicts": verdicts}}
    )
    assert ("model" if resolution_options(settings).template is not None else "rules") == expected


def test_a_bad_resolution_setting_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "resolve.txt").write_text("Are these the same?", encoding="utf-8")
    settings = load_settings(
        tmp_path, environ={}, overrides={"method": "standard", "resolution": {"enabled": True, "prompt": "resolve.txt"}}
    )
    with pytest.raises(UserError, match=r"has no \{entity_list\} placeholder"):
        corpus_fingerprint(settings)
    nlp = load_settings(
        tmp_path, environ={}, overrides={"method": "nlp", "resolution": {"enabled": True, "verdicts": "model"}}
    )
    with pytest.raises(UserError, match="the nlp method uses no model"):
        corpus_fingerprint(nlp)


NOTES = {
    "ledger.txt": "Ebenezer Scrooge kept the ledger of the counting-house. Scrooge counted every coin twice. "
    "Bob Cratchit copied letters for Scrooge by a tiny fire.",
    "fog.txt": "In the fog, Scrooge walked home. Bob Cratchit ran home to Camden Town. Then Scrooge locked the door.",
    "supper.txt": "Bob Cratchit carved the goose at Camden Town. Alone, Scrooge ate his gruel. Bob Cratchit laughed with Tiny Tim.",
}


def test_deleting_the_only_document_that_mentions_an_alias_removes_the_alias(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", with_sample=False)
    (root / "graphrag.yaml").write_text(
        "method: nlp\nllm:\n  embeddings: local\nresolution:\n  enabled: true\n", encoding="utf-8"
    )
    for name, text in NOTES.items():
        (root / "data" / "input" / name).write_text(text, encoding="utf-8")
    assert index_project(load_settings(root, environ={})).success
    assert query_db(root, "select alias, canonical_title, method from entity_aliases") == [
        ("EBENEZER SCROOGE", "SCROOGE", "rules")
    ]
    assert query_db(root, "select aliases from entities where title = 'SCROOGE'") == [(["EBENEZER SCROOGE"],)]
    (root / "data" / "input" / "ledger.txt").unlink()
    assert index_project(load_settings(root, environ={})).success
    assert query_db(root, "select count(*) from entity_aliases") == [(0,)]
    assert query_db(root, "select aliases from entities where title = 'SCROOGE'") == [([],)]
