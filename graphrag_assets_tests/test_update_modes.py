"""Update modes end to end: locality of exact updates, stable mode, re-clustering and reuse counts.

Runs the real pipeline against the suite's scripted model server (deterministic answers), so
reports that are reused are exactly those whose prompt did not change.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets_testkit.builds import TABLE_ORDER
from graphrag_assets_tests.conftest import make_llm_project
from graphrag_assets_tests.test_rebuild_equivalence import tables

# Two groups of people that never meet: two connected components. The "A" group sorts first, so
# the entity and relationship numbers of its rows do not move when the "Z" group grows.
GROUP_A = (
    "Anna Berg met Arvid Holm at Alder Quay. Arvid Holm sailed with Astrid Lund to Alder Quay. "
    "Astrid Lund wrote to Axel Dahl about Alder Quay. Axel Dahl rowed Anna Berg across Alder Quay. "
    "Alma Strand sold nets to Anna Berg. Alma Strand met Axel Dahl at Alder Quay. "
    "Agnes Wik taught Alma Strand and Astrid Lund. Agnes Wik and Arvid Holm mended the Alder Quay lamps."
)
GROUP_Z = (
    "Zora Quint met Zeno Marsh at Zephyr Hall. Zeno Marsh argued with Zita Flood at Zephyr Hall. "
    "Zita Flood sold salt to Zora Quint. Zoltan Reed met Zita Flood and Zeno Marsh. "
    "Zuri Vale wrote to Zoltan Reed about Zephyr Hall. Zuri Vale and Zora Quint rowed past Zephyr Hall."
)
Z_ADDITION = " Zelda Crane met Zora Quint and Zuri Vale at Zephyr Hall. Zelda Crane sold a boat to Zoltan Reed."
COMMUNITY_SETTINGS = "communities:\n  use_lcc: false\n  max_cluster_size: 4\n"

POSITIONAL = ["community", "human_readable_id", "title", "parent", "children", "period"]  # numbers, not content


def project(root: Path, server, update: str = "exact", extra: str = "") -> Path:
    make_llm_project(
        root, server.base_url, with_sample=False, extra=COMMUNITY_SETTINGS + f"  update: {update}\n" + extra
    )
    (root / "data" / "input" / "a.txt").write_text(GROUP_A, encoding="utf-8")
    (root / "data" / "input" / "z.txt").write_text(GROUP_Z, encoding="utf-8")
    return root


def read(root: Path, sql: str) -> pl.DataFrame:
    with duckdb.connect(str(root / "data" / "graphrag.duckdb"), read_only=True) as conn:
        return conn.sql(sql).pl()


def a_group(root: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Communities and reports of the A component (their members' titles start with A)."""
    titles = dict(read(root, "select id, title from entities").iter_rows())
    communities = read(root, "select * from communities")
    ours = communities.filter(
        pl.col("entity_ids").map_elements(lambda ids: titles[ids[0]].startswith("A"), return_dtype=pl.Boolean)
    )
    reports = read(root, "select * from community_reports").filter(pl.col("community_id").is_in(ours["id"].implode()))
    return ours.drop(POSITIONAL).sort("id"), reports.drop(POSITIONAL).sort("community_id")


def run_cli(*args: str) -> dict:
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_an_untouched_component_keeps_its_communities_and_reports_byte_identical(
    graphrag_server, tmp_path: Path
) -> None:
    root = project(tmp_path / "p", graphrag_server)
    assert index_project(load_settings(root)).success
    communities_before, reports_before = a_group(root)
    assert communities_before.height >= 2 and reports_before.height == communities_before.height

    (root / "data" / "input" / "z.txt").write_text(GROUP_Z + Z_ADDITION, encoding="utf-8")
    calls_before = len(graphrag_server.calls("chat"))
    report = index_project(load_settings(root))
    assert report.success
    communities_after, reports_after = a_group(root)
    assert communities_after.equals(communities_before)
    assert reports_after.equals(reports_before)
    new_calls = graphrag_server.calls("chat")[calls_before:]
    report_prompts = [json.dumps(c["body"]) for c in new_calls if "Anna Berg".upper() in json.dumps(c["body"]).upper()]
    assert not [p for p in report_prompts if "-----Entities-----" in p]  # no report prompt about the A group
    assert report.reports["reused"] >= reports_before.height
    assert report.reports["regenerated"] >= 1  # the Z group's did change


def test_reason_counts_add_up_and_match_the_calls_made(graphrag_server, tmp_path: Path) -> None:
    root = project(tmp_path / "p", graphrag_server)
    first = index_project(load_settings(root))
    total = read(root, "select count(*) as n from community_reports")["n"][0]
    assert first.reports == {
        "total": total,
        "reused": 0,
        "regenerated": total,
        "deleted": 0,
        "reasons": {"members changed": total, "child report changed": 0, "context changed": 0},
    }
    (root / "data" / "input" / "z.txt").write_text(GROUP_Z + Z_ADDITION, encoding="utf-8")
    second = index_project(load_settings(root)).reports
    total = read(root, "select count(*) as n from community_reports")["n"][0]
    assert second["reused"] + second["regenerated"] == second["total"] == total
    assert sum(second["reasons"].values()) == second["regenerated"] > 0
    usage = read(
        root,
        "select requests, reused, regenerated, deleted, reasons from llm_usage where reused is not null order by recorded_at",
    )
    last = usage.row(-1, named=True)
    assert last["requests"] == second["regenerated"]  # each regenerated prompt was new: one call each
    assert (last["reused"], last["regenerated"], last["deleted"]) == (
        second["reused"],
        second["regenerated"],
        second["deleted"],
    )
    assert json.loads(last["reasons"]) == second["reasons"]


def test_stable_mode_keeps_warm_starting_then_recluster_equals_a_rebuild(graphrag_server, tmp_path: Path) -> None:
    # a high threshold: this test is about the warm start and --recluster, not about drift
    root = project(tmp_path / "p", graphrag_server, update="stable", extra="  drift_threshold: 1.0\n")
    assert index_project(load_settings(root)).success
    status = run_cli("status", "--root", str(root))["communities"]
    assert status["update"] == "stable" and status["last_run"]["clustering_reason"] == "no previous communities"

    (root / "data" / "input" / "z.txt").write_text(GROUP_Z + Z_ADDITION, encoding="utf-8")
    (root / "data" / "input" / "a.txt").write_text(
        GROUP_A + " Zelda Crane visited Anna Berg at Alder Quay.", encoding="utf-8"
    )
    assert index_project(load_settings(root)).success
    last = run_cli("status", "--root", str(root))["communities"]["last_run"]
    assert last["clustering"] == "warm" and last["warm_starts"] == 1 and "drift" in last
    assert last["drift_age"] == 1  # against the first run's fresh clustering (drift_every: 10)

    output = run_cli("index", "--root", str(root), "--recluster")
    assert [run["job"] for run in output["runs"]] == ["corpus_job"]  # nothing changed: --recluster alone runs it
    last = run_cli("status", "--root", str(root))["communities"]["last_run"]
    assert (
        last["clustering"] == "fresh"
        and last["clustering_reason"] == "re-cluster requested"
        and last["warm_starts"] == 0
    )

    rebuilt = project(tmp_path / "rebuilt", graphrag_server, update="stable")
    for path in (root / "data" / "input").iterdir():
        shutil.copy2(path, rebuilt / "data" / "input" / path.name)
    assert index_project(load_settings(rebuilt)).success
    ours, theirs = tables(root), tables(rebuilt)
    for name in TABLE_ORDER:
        assert ours[name].equals(theirs[name]), name


def test_scheduled_recluster_after_the_given_number_of_warm_starts(graphrag_server, tmp_path: Path) -> None:
    root = project(
        tmp_path / "p", graphrag_server, update="stable", extra="  recluster_every: 1\n  drift_threshold: 1.0\n"
    )
    assert index_project(load_settings(root)).success
    strategies = []
    for addition in (" Zelda Crane met Zora Quint.", " Zelda Crane met Zeno Marsh."):
        with (root / "data" / "input" / "z.txt").open("a", encoding="utf-8") as handle:
            handle.write(addition)
        assert index_project(load_settings(root)).success
        last = run_cli("status", "--root", str(root))["communities"]["last_run"]
        strategies.append((last["clustering"], last["warm_starts"]))
    assert strategies == [("warm", 1), ("fresh", 0)]


def test_switching_the_update_mode_rebuilds_nothing(graphrag_server, tmp_path: Path) -> None:
    root = project(tmp_path / "p", graphrag_server)
    assert index_project(load_settings(root)).success
    settings_file = root / "graphrag.yaml"
    settings_file.write_text(
        settings_file.read_text(encoding="utf-8").replace("update: exact", "update: stable"), encoding="utf-8"
    )
    assert run_cli("status", "--root", str(root))["corpus"]["stale"] is False
    assert index_project(load_settings(root)).runs == []


def test_dry_run_predicts_a_lower_bound_of_regenerated_reports(graphrag_server, tmp_path: Path) -> None:
    root = project(tmp_path / "p", graphrag_server, update="stable")
    assert index_project(load_settings(root)).success
    (root / "data" / "input" / "z.txt").write_text(GROUP_Z + Z_ADDITION, encoding="utf-8")
    stored = read(root, "select count(*) as n from communities")["n"][0]
    predicted = run_cli("index", "--root", str(root), "--dry-run")["reports"]
    assert predicted["update"] == "stable" and predicted["affected_entities"] >= 4
    assert predicted["total"] == stored
    done = index_project(load_settings(root)).reports
    assert 0 < predicted["regenerate_at_least"] <= done["regenerated"]
    assert predicted["regenerate_at_least"] < predicted["total"]  # the A group is not reached


def test_reuse_counts_are_materialization_metadata(graphrag_server, tmp_path: Path) -> None:
    from dagster import AssetKey

    from graphrag_assets.pipeline.runtime.instance import open_instance

    root = project(tmp_path / "p", graphrag_server)
    report = index_project(load_settings(root))
    event = open_instance(load_settings(root)).get_latest_materialization_event(AssetKey("community_reports"))
    metadata = event.asset_materialization.metadata
    assert metadata["reports_regenerated"].value == report.reports["regenerated"] > 0
    assert metadata["reports_reused"].value == 0 and metadata["reports_deleted"].value == 0
    assert metadata["regenerated_reasons"].value == report.reports["reasons"]
    clustering = open_instance(load_settings(root)).get_latest_materialization_event(AssetKey("communities"))
    assert clustering.asset_materialization.metadata["clustering"].value == "fresh"


def test_index_and_status_output_lines() -> None:
    from graphrag_assets.cli.output import render_clustering, render_report_outcomes

    reports = {
        "total": 10,
        "reused": 7,
        "regenerated": 3,
        "deleted": 2,
        "reasons": {"members changed": 2, "child report changed": 0, "context changed": 1},
    }
    assert (
        render_report_outcomes(reports)
        == "10 in all: 7 reused, 3 regenerated (2 new or changed communities, 1 whose entities or relationships changed); "
        "2 earlier reports deleted (their communities are gone)"
    )
    warm = {
        "update": "stable",
        "drift_threshold": 0.02,
        "recluster_every": 0,
        "last_run": {"clustering": "warm", "clustering_reason": "warm start", "drift": 0.0041, "warm_starts": 2},
    }
    assert render_clustering(warm) == (
        "communities: stable updates; last run warm start (2 since a fresh clustering), drift 0.41% (re-cluster above 2.00%)"
    )
    warm["last_run"]["drift_age"] = 2
    assert render_clustering(warm).endswith(
        "drift 0.41% (re-cluster above 2.00%), against the fresh clustering of 2 updates before"
    )
    fresh = {
        "update": "exact",
        "drift_threshold": 0.02,
        "recluster_every": 0,
        "last_run": {"clustering": "fresh", "clustering_reason": "exact mode", "drift": 0.0, "warm_starts": 0},
    }
    assert render_clustering(fresh) == "communities: exact updates; last run clustered from scratch (exact mode)"
    assert render_clustering({**fresh, "last_run": {}}) == "communities: exact updates; not clustered yet"
