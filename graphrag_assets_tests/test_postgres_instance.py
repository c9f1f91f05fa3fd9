"""The Postgres-backed Dagster instance (``init --instance postgres``) against a real PostgreSQL
server the tests start themselves (:mod:`graphrag_assets_testkit.postgres_server`)."""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.buckets import all_bucket_keys
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.partitions import DOCUMENTS_JOB, PARTITIONS_NAME
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets_testkit.postgres_server import start_postgres
from graphrag_assets_testkit.projects import query_db

DOCUMENTS = {
    "coop.txt": "Marta Quell chairs the Vellmouth Fishing Cooperative. Rafael Duarte fishes for the cooperative.",
    "light.txt": "Søren Holm keeps the Kestrel Point Lighthouse. Mira Santos visits the lighthouse keeper.",
    "port.txt": "Lucien Marchetti runs Auberon Freight Lines. Helga Brandt inspects the freight ships.",
}


@pytest.fixture(scope="session")
def postgres():
    server = start_postgres()
    yield server
    server.stop()


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def postgres_project(root: Path, url: str, extra: str = "") -> Path:
    code, out = cli("init", "--root", str(root), "--instance", "postgres", "--postgres-url", url)
    assert code == 0, out
    (root / "graphrag.yaml").write_text("method: nlp\n" + extra, encoding="utf-8")
    for name, text in DOCUMENTS.items():
        (root / "data" / "input" / name).write_text(text, encoding="utf-8")
    return root


def dagster_state(server, database: str) -> tuple[list[str], int]:
    """Document partitions and runs as PostgreSQL holds them (read with SQL, not through Dagster)."""
    partitions = [row[0] for row in server.query(database, "select partition from dynamic_partitions order by 1")]
    runs = server.query(database, "select count(*) from runs")[0][0]
    return partitions, runs


def test_init_writes_a_postgres_dagster_yaml(tmp_path: Path) -> None:
    url = "postgresql://dagster:s3cret@db.internal:5432/graphrag"
    code, out = cli("init", "--root", str(tmp_path / "p"), "--instance", "postgres", "--postgres-url", url)
    assert code == 0 and f"wrote {tmp_path / 'p' / 'dagster.yaml'}" in out
    config = yaml.safe_load((tmp_path / "p" / "dagster.yaml").read_text(encoding="utf-8"))
    # written with the driver dagster-postgres installs (a bare URL would need psycopg 3)
    assert config["storage"] == {
        "postgres": {"postgres_url": "postgresql+psycopg2://dagster:s3cret@db.internal:5432/graphrag"}
    }
    assert config["run_queue"] == {"max_concurrent_runs": 1}  # the rest of the template is kept

    code, out = cli("init", "--root", str(tmp_path / "q"), "--instance", "postgres")
    assert (
        code == 1
        and out.strip()
        == "error: --instance postgres needs --postgres-url (and --postgres-url needs --instance postgres)."
    )
    code, out = cli(
        "init", "--root", str(tmp_path / "q"), "--instance", "postgres", "--postgres-url", "db.internal:5432"
    )
    assert code == 1 and "--postgres-url must be a URL such as postgresql://" in out
    assert not (tmp_path / "q" / "dagster.yaml").exists()


def test_incremental_updates_with_dagster_state_in_postgres(postgres, tmp_path: Path, offline_env) -> None:
    url = postgres.create_database("incremental")
    root = postgres_project(tmp_path / "project", url)
    inputs = root / "data" / "input"
    first = index_project(load_settings(root))
    assert first.success and first.changes.new == sorted(DOCUMENTS)
    partitions, runs = dagster_state(postgres, "incremental")
    assert partitions == sorted(DOCUMENTS) and runs == 2  # the document range and the corpus run
    assert not (root / "data" / "dagster" / "storage").exists()  # nothing went to SQLite

    (inputs / "light.txt").write_text("Piet Oduya now keeps the Kestrel Point Lighthouse.", encoding="utf-8")
    (inputs / "ferry.txt").write_text("The ferry Northern Star sails from Port Auberon to Vellmouth.", encoding="utf-8")
    changed = index_project(load_settings(root))
    assert changed.success and changed.changes.new == ["ferry.txt"] and changed.changes.changed == ["light.txt"]
    assert [run["partitions"] for run in changed.runs if run["job"] == DOCUMENTS_JOB] == [["ferry.txt"], ["light.txt"]]
    assert "PIET ODUYA" in {row[0] for row in query_db(root, "select title from entities")}

    (inputs / "port.txt").unlink()
    deleted = index_project(load_settings(root))
    assert deleted.success and deleted.changes.deleted == ["port.txt"]
    partitions, runs = dagster_state(postgres, "incremental")
    assert partitions == ["coop.txt", "ferry.txt", "light.txt"] and runs == 2 + 3 + 1
    assert query_db(root, "select count(*) from text_units where document_key = 'port.txt'") == [(0,)]
    assert index_project(load_settings(root)).runs == []

    with open_instance(load_settings(root)) as instance:  # what the UI and the sensor read
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert sorted(instance.get_dynamic_partitions(PARTITIONS_NAME)) == partitions


def test_bucketed_partitions_with_dagster_state_in_postgres(postgres, tmp_path: Path, offline_env) -> None:
    url = postgres.create_database("bucketed")
    root = postgres_project(tmp_path / "project", url, extra="partitions:\n  bucket_threshold: 2\n  buckets: 4\n")
    assert index_project(load_settings(root)).success
    assert dagster_state(postgres, "bucketed")[0] == all_bucket_keys(4)
    (root / "data" / "input" / "coop.txt").write_text(
        "Piet Oduya chairs the Vellmouth Fishing Cooperative.", encoding="utf-8"
    )
    report = index_project(load_settings(root))
    assert report.success and report.changes.changed == ["coop.txt"]
    assert query_db(root, "select document_key, status from extraction_status order by 1") == [
        ("coop.txt", "ok"),
        ("light.txt", "ok"),
        ("port.txt", "ok"),
    ]
    assert "PIET ODUYA" in {row[0] for row in query_db(root, "select title from entities")}
