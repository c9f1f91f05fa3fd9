"""An index on shared storage (``storage.shared_url``): published by ``index``, read from any machine.

The object store is moto's S3 server, started by the tests on loopback and stopped by its PID
(:mod:`graphrag_assets_testkit.s3_server`); a shared local folder takes the same path. A "machine"
is a project folder: the writer has the input documents, a reader only graphrag.yaml.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.locks import RUN_ONCE_FILE
from graphrag_assets.storage.object_store import shared_location
from graphrag_assets.storage.shared_build import (
    INDEX_FOLDER,
    Pointer,
    fetch_build,
    new_build_id,
    publish_build,
    read_pointer,
    read_versioned_pointer,
    swap_pointer,
)
from graphrag_assets_testkit.builds import NEW_DOCUMENT, env_without_endpoint, published_tables
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.s3_server import S3Server, s3_server, start_s3_server  # noqa: F401 - the fixture
from graphrag_assets_tests.conftest import make_llm_project

QUESTION = "Who is Søren Holm, and what did he do during Storm Odile?"
pytestmark = pytest.mark.slow


OFFLINE = "method: nlp\nllm:\n  embeddings: local\n"


def shared_yaml(url: str, server: S3Server | None, method: str = OFFLINE) -> str:
    """graphrag.yaml for a project on ``url``; the endpoint and keys of an s3:// URL are in the file."""
    store = ""
    if server is not None:
        env = server.env()
        store = (
            "  object_store:\n"
            f"    endpoint_url: {env['AWS_ENDPOINT_URL']}\n"
            f"    access_key_id: {env['AWS_ACCESS_KEY_ID']}\n"
            f"    secret_access_key: {env['AWS_SECRET_ACCESS_KEY']}\n"
        )
    return f"{method}storage:\n  shared_url: {url}\n{store}"


def cli(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A command of the CLI in its own process, as a user (or another machine) runs it."""
    return subprocess.run(
        [sys.executable, "-m", "graphrag_assets.cli.main", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env_without_endpoint(), **(env or {})},
    )


def context_of(root: Path) -> dict:
    """The records a local query answers from (the offline method answers without a model)."""
    done = cli(root, "query", QUESTION, "--method", "local", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["context_records"]


@pytest.fixture(scope="module", params=["s3", "folder"])
def shared_project(request, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, S3Server | None]:
    """The sample indexed offline by a writer whose index is shared on moto's S3 or a shared folder."""
    base = tmp_path_factory.mktemp(f"shared-{request.param}")
    server = request.getfixturevalue("s3_server") if request.param == "s3" else None
    url = server.create_bucket(f"index-{base.name.lower()}") + "/team/graph" if server else str(base / "nfs")
    writer = make_project(base / "writer")
    # on S3 the build also has LanceDB tables, so the folder copy to and from the object store is exercised
    lancedb = "  lancedb_tables: always\n" if server else ""
    (writer / "graphrag.yaml").write_text(shared_yaml(url, server) + lancedb, encoding="utf-8")
    done = cli(writer, "index")
    assert done.returncode == 0, done.stderr
    assert "published build" in done.stdout
    return writer, url, server


def reader_of(writer: Path, folder: Path) -> Path:
    """Another machine with the writer's settings and nothing else."""
    folder.mkdir(parents=True)
    shutil.copy(writer / "graphrag.yaml", folder / "graphrag.yaml")
    return folder


def reader_project(folder: Path, url: str, server: S3Server | None) -> Path:
    """Another machine: a project folder holding graphrag.yaml only."""
    folder.mkdir(parents=True)
    (folder / "graphrag.yaml").write_text(shared_yaml(url, server), encoding="utf-8")
    return folder


def test_a_reader_answers_from_the_shared_build_with_the_writers_context(shared_project, tmp_path: Path) -> None:
    writer, url, server = shared_project
    reader = reader_of(writer, tmp_path / "reader")
    expected = context_of(writer)
    assert expected["entities"], "the query found no context: the comparison would prove nothing"
    assert context_of(reader) == expected
    assert not (reader / "data" / "graphrag.duckdb").exists()  # read from the cache, not made a local index
    builds = list((reader / "data" / "shared-builds").iterdir())
    assert len(builds) == 1
    assert (builds[0] / "lancedb").is_dir() == (server is not None)
    stamp = (builds[0] / "graphrag.duckdb").stat().st_mtime_ns
    assert context_of(reader) == expected  # a second command reads the same copy: nothing fetched again
    assert (builds[0] / "graphrag.duckdb").stat().st_mtime_ns == stamp


def test_status_sql_and_show_work_from_a_reader(shared_project, tmp_path: Path) -> None:
    writer, url, server = shared_project
    reader = reader_of(writer, tmp_path / "reader")
    count = "select count(*) as n from entities"
    sql = cli(reader, "sql", count, "--json")
    assert sql.returncode == 0, sql.stderr
    assert json.loads(sql.stdout) == json.loads(cli(writer, "sql", count, "--json").stdout)
    shown = cli(reader, "show", "entities", "--json", "--limit", "5")
    assert shown.returncode == 0, shown.stderr
    assert len(json.loads(shown.stdout)) == 5
    status = cli(reader, "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["tables"]["entities"] == json.loads(sql.stdout)[0]["n"]
    assert report["shared_build"]["build_id"] in report["database"]
    assert report["documents"]["deleted"] == []  # the reader has no input folder: nothing to compare, not "all gone"


def test_a_newer_build_reaches_a_reader_once(shared_project, tmp_path: Path) -> None:
    writer, url, server = shared_project
    reader = reader_of(writer, tmp_path / "reader")
    assert context_of(reader)["entities"]
    work = tmp_path / "writer-copy"
    shutil.copytree(writer, work)  # the same writer on another disk: continues from its own published build
    (work / "data" / "input" / "marrow.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    done = cli(work, "index")
    assert done.returncode == 0, done.stderr
    assert "continuing from" not in done.stdout and "published build" in done.stdout
    sql = cli(reader, "sql", "select count(*) as n from documents where title = 'marrow.txt'", "--json")
    assert json.loads(sql.stdout) == [{"n": 1}]
    assert len(list((reader / "data" / "shared-builds").iterdir())) == 2  # the build before it is kept


def test_serve_follows_the_shared_build(shared_project, tmp_path: Path) -> None:
    """A server on a reader answers from the shared build and picks up the next one, as it does a
    newer local build."""
    from starlette.testclient import TestClient

    from graphrag_assets.serve.app import create_app
    from graphrag_assets.serve.config import build_config

    writer, url, server = shared_project
    reader = reader_of(writer, tmp_path / "reader")
    with (reader / "graphrag.yaml").open("a", encoding="utf-8") as settings:
        settings.write("serve:\n  reload_interval_seconds: 0.2\n")
    config = build_config([reader], None, "127.0.0.1", 0, None)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        first = client.get("/api/status").json()["projects"][0]
        assert first["state"] == "ready", first
        work = tmp_path / "writer-copy"
        shutil.copytree(writer, work)  # continues from the newest shared build (an earlier test may have made it)
        (work / "data" / "input" / "served.txt").write_text(NEW_DOCUMENT.replace("Wren", "Tern"), encoding="utf-8")
        assert cli(work, "index").returncode == 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = client.get("/api/status").json()["projects"][0]
            if now["build"] != first["build"]:
                break
            time.sleep(0.2)
        assert now["build"] != first["build"], now
        assert now["counts"]["documents"] == published_tables(work)["documents"].height
    assert not (reader / "data" / "graphrag.duckdb").exists()


def test_index_on_a_fresh_root_continues_from_the_shared_build(
    s3_server: S3Server, graphrag_server, tmp_path: Path
) -> None:
    """Standard method: the second run (another pod, no data/) calls the model for the new document
    only; the documents the shared build holds are not extracted again."""
    url = s3_server.create_bucket("continue") + "/graph"
    method = llm_method(graphrag_server.base_url)
    first = make_llm_project(tmp_path / "pod-1", graphrag_server.base_url)
    (first / "graphrag.yaml").write_text(shared_yaml(url, s3_server, method), encoding="utf-8")
    assert cli(first, "index").returncode == 0
    second = make_project(tmp_path / "pod-2")
    shutil.rmtree(second / "data" / "dagster", ignore_errors=True)
    (second / "graphrag.yaml").write_text(shared_yaml(url, s3_server, method), encoding="utf-8")
    (second / "data" / "input" / "marrow.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    before = len(graphrag_server.calls())
    done = cli(second, "index")
    assert done.returncode == 0, done.stderr
    assert "continuing from build" in done.stdout
    assert not (second / "data" / RUN_ONCE_FILE).exists()  # its runs did not look again (project/shared_index.py)
    extraction = [
        call
        for call in graphrag_server.calls()[before:]
        if "Write down the entities the passage mentions" in json.dumps(call["body"])
    ]
    assert extraction, "the new document was not extracted"
    assert all("Ilse Marrow" in json.dumps(call["body"]) for call in extraction)
    third = make_llm_project(tmp_path / "pod-3", graphrag_server.base_url, with_sample=False)
    (third / "graphrag.yaml").write_text(shared_yaml(url, s3_server, method), encoding="utf-8")
    reader = cli(third, "sql", "select count(*) as n from documents", "--json")
    assert json.loads(reader.stdout) == [{"n": published_tables(second)["documents"].height}]


def llm_method(base_url: str) -> str:
    return (
        "method: standard\nllm:\n"
        f"  base_url: {base_url}\n  api_key: sk-test-not-secret\n  embeddings: openai\n"
        "  max_retries: 2\n  retry_base_delay: 0.01\n  retry_max_delay: 0.05\n"
    )


def test_a_reader_during_publishes_sees_one_whole_build(s3_server: S3Server, tmp_path: Path) -> None:
    """Two builds differ in both files; readers fetching while they are published in turn always
    get the database and the LanceDB file of one build."""
    url = s3_server.create_bucket("atomic") + "/p"
    settings = load_settings(reader_project(tmp_path / "project", url, s3_server))
    location = shared_location(settings)
    builds = {}
    for label in ("old", "new"):
        folder = tmp_path / label
        (folder / "lancedb").mkdir(parents=True)
        (folder / "lancedb" / "label.txt").write_text(label * 50_000)
        with duckdb.connect(str(folder / "graphrag.duckdb")) as conn:
            conn.execute(f"create table label as select '{label}' as v from range({10_000 if label == 'old' else 1})")
        builds[label] = folder
    pointer = publish_build(location, builds["old"] / "graphrag.duckdb", builds["old"] / "lancedb", None)
    stop = threading.Event()
    errors: list[BaseException] = []

    def publish() -> None:
        nonlocal pointer
        try:
            for turn in range(6):
                folder = builds["new" if turn % 2 == 0 else "old"]
                pointer = publish_build(location, folder / "graphrag.duckdb", folder / "lancedb", pointer.build_id)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            stop.set()

    seen: list[str] = []
    thread = threading.Thread(target=publish)
    thread.start()
    while not stop.is_set():
        current = read_pointer(location)
        try:
            fetched = fetch_build(location, current, tmp_path / "cache" / str(len(seen)))
        except UserError as exc:  # the build was deleted under the read (two publishes in between): said so
            assert "deleted while being read" in str(exc)
            continue
        with duckdb.connect(str(fetched / "graphrag.duckdb"), read_only=True) as conn:
            labels = {row[0] for row in conn.execute("select distinct v from label").fetchall()}
        assert labels == {(fetched / "lancedb" / "label.txt").read_text()[:3]}
        seen.append(labels.pop())
    thread.join()
    assert not errors, errors
    assert seen, "no read finished while the builds were published"
    kept = location.filesystem().get_file_info(
        __import__("pyarrow.fs").fs.FileSelector(location.path(INDEX_FOLDER), recursive=False)
    )
    assert len([info for info in kept if info.type.name == "Directory"]) == 2  # older copies deleted


def test_the_aws_environment_reaches_the_object_store(s3_server: S3Server, tmp_path: Path) -> None:
    """With nothing in graphrag.yaml but the URL, the standard AWS_* variables are used."""
    url = s3_server.create_bucket("from-env") + "/p"
    reader = reader_project(tmp_path / "reader", url, None)
    done = cli(reader, "status", env=s3_server.env())
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: no index has been published to {url} yet; run 'graphrag-assets index' "
        "on a machine that has the input documents."
    )


@pytest.mark.parametrize("problem", ["unreachable", "no bucket", "bad credentials"])
def test_object_store_problems_are_one_sentence(problem: str, s3_server: S3Server, tmp_path: Path) -> None:
    strict = start_s3_server(strict_auth=True) if problem == "bad credentials" else None
    try:
        server = strict or s3_server
        env = server.env()
        if problem == "unreachable":
            env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"  # the discard port: nothing listens
        # (a server checking credentials refuses every key before it looks for the bucket)
        url = "s3://problems/p" if strict else "s3://no-such-bucket/p"
        done = cli(reader_project(tmp_path / "reader", url, None), "status", env=env)
    finally:
        if strict is not None:
            strict.stop()
    assert done.returncode == 1
    message = done.stderr.strip()
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    expected = {
        "unreachable": "could not be reached",
        "no bucket": "the bucket no-such-bucket does not exist",
        "bad credentials": "refused the credentials",
    }[problem]
    assert expected in message, message


@pytest.mark.timeout(1200)
def test_workers_exchange_their_shards_through_the_object_store(s3_server, nlp_index: Path, tmp_path: Path) -> None:
    """With storage.shared_url on S3 the workers' exchange is on the bucket too (what workers on
    other machines or pods reach), and the tables still equal the one-process build."""
    from graphrag_assets_tests.test_workers import assert_same_tables

    url = s3_server.create_bucket("workers-exchange") + "/graph"
    root = make_project(tmp_path / "workers")
    (root / "graphrag.yaml").write_text(shared_yaml(url, s3_server) + "workers:\n  count: 2\n", encoding="utf-8")
    done = cli(root, "index")
    assert done.returncode == 0, done.stderr
    assert "document_workers_job" in done.stdout and "published build" in done.stdout
    assert not (root / "data" / "exchange").exists()  # nothing went through a local folder
    assert not (root / "data" / RUN_ONCE_FILE).exists()  # the step processes left the shared build to the CLI
    assert_same_tables(root, nlp_index)


def test_a_corpus_run_launched_like_the_ui_ends_with_a_published_build(s3_server: S3Server, tmp_path: Path) -> None:
    """The corpus job executed in-process on the project's Definitions, as the UI or the sensor
    launch it (no CLI around it), publishes the build; the CLI's `index` afterwards publishes once per change."""
    from dagster import DagsterEventType

    from graphrag_assets.pipeline.definitions import build_definitions
    from graphrag_assets.pipeline.partitions import CORPUS_JOB
    from graphrag_assets.pipeline.runtime.instance import open_instance

    writer = make_project(tmp_path / "writer")
    (writer / "graphrag.yaml").write_text(OFFLINE, encoding="utf-8")
    assert cli(writer, "index").returncode == 0  # a local index, never shared
    url = s3_server.create_bucket("ui-runs") + "/graph"
    (writer / "graphrag.yaml").write_text(shared_yaml(url, s3_server), encoding="utf-8")
    settings = load_settings(writer, environ={})
    location = shared_location(settings)
    assert location is not None and read_pointer(location) is None

    instance = open_instance(settings)
    try:
        result = build_definitions(writer).resolve_job_def(CORPUS_JOB).execute_in_process(instance=instance)
        assert result.success
        materialized = [
            event.event_specific_data.materialization
            for event in result.all_events
            if event.event_type == DagsterEventType.ASSET_MATERIALIZATION
        ]
    finally:
        instance.dispose()
    pointer = read_pointer(location)
    assert pointer is not None and pointer.previous is None
    (shared,) = [m for m in materialized if m.asset_key.to_user_string() == "shared_build"]
    assert shared.metadata["build_id"].value == pointer.build_id
    fetched = fetch_build(location, pointer, tmp_path / "fetched")
    reader = tmp_path / "reader" / "data"
    reader.mkdir(parents=True)
    shutil.copy(fetched / "graphrag.duckdb", reader / "graphrag.duckdb")
    ours, theirs = published_tables(writer), published_tables(reader.parent)
    assert sorted(theirs) == sorted(ours)
    for table, frame in ours.items():
        assert theirs[table].equals(frame), table

    nothing = cli(writer, "index")  # nothing changed: nothing to publish
    assert nothing.returncode == 0, nothing.stderr
    assert "published build" not in nothing.stdout
    assert read_pointer(location) == pointer

    (writer / "data" / "input" / "marrow.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    done = cli(writer, "index")  # its corpus step publishes; the CLI finds nothing left to publish
    assert done.returncode == 0, done.stderr
    after = read_pointer(location)
    assert after is not None and after.previous == pointer.build_id, (after, pointer)  # one build, not two
    assert done.stdout.count("published build") == 1 and f"published build {after.build_id}" in done.stdout


@pytest.mark.parametrize("store", ["s3", "folder"])
def test_of_two_racing_publishers_the_later_never_replaces_the_newer_build(
    store: str, s3_server: S3Server, tmp_path: Path
) -> None:
    """Both read the pointer, one swaps it: the other's swap is refused, on S3 by the store itself
    (a conditional PUT on the ETag it read), in a folder under the pointer's lock."""
    url = s3_server.create_bucket(f"race-{store}") + "/p" if store == "s3" else str(tmp_path / "nfs")
    location = shared_location(load_settings(reader_project(tmp_path / "project", url, s3_server)))
    folder = tmp_path / "build"
    (folder / "lancedb").mkdir(parents=True)
    with duckdb.connect(str(folder / "graphrag.duckdb")) as conn:
        conn.execute("create table label as select 'build' as v")

    def late(previous: Pointer | None) -> Pointer:
        return Pointer(new_build_id(), "2026-12-02T00:00:00+00:00", {}, previous and previous.build_id)

    # the first build: both saw no pointer
    _, nothing = read_versioned_pointer(location)
    first = publish_build(location, folder / "graphrag.duckdb", folder / "lancedb", None)
    with pytest.raises(UserError, match="another index run published"):
        swap_pointer(location, late(None), nothing)
    assert read_pointer(location) == first

    # a later build: both saw `first`; the other published meanwhile
    seen_first, tag = read_versioned_pointer(location)
    assert seen_first == first and tag
    newer = publish_build(location, folder / "graphrag.duckdb", folder / "lancedb", first.build_id)
    with pytest.raises(UserError, match="another index run published"):
        swap_pointer(location, late(first), tag)
    assert read_pointer(location) == newer and newer.previous == first.build_id

    # with the version it read, a publisher swaps
    _, tag = read_versioned_pointer(location)
    mine = late(newer)
    swap_pointer(location, mine, tag)
    assert read_pointer(location) == mine
