"""Runs launched without the CLI (the sensor, the UI) continue from the newest shared build first.

A "machine" is a project folder whose graphrag.yaml names the same ``storage.shared_url`` (moto's
S3 server, started and stopped by PID; a shared folder for the tests of the lock alone). The runs are executed in this process on the project's
Definitions, the way the daemon executes the sensor's requests; nothing of the CLI is around them.
The model is the scripted server: a document whose extraction it is asked for was extracted.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import duckdb
import pytest
from dagster import SensorResult

from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.project.locks import RUN_ONCE_FILE, index_lock
from graphrag_assets.project.shared_index import continue_run, local_build, publish_after_run
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.object_store import shared_location
from graphrag_assets.storage.shared_build import Pointer, fetch_build, publish_build, read_pointer
from graphrag_assets_testkit.builds import NEW_DOCUMENT, published_tables
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.s3_server import S3Server, s3_server  # noqa: F401 - the fixture
from graphrag_assets_tests.conftest import make_llm_project
from graphrag_assets_tests.sensor_ticks import tick
from graphrag_assets_tests.test_shared_storage import OFFLINE, cli, llm_method, shared_yaml

pytestmark = pytest.mark.slow

EXTRACTION_PROMPT = "Write down the entities the passage mentions"
OTHER_DOCUMENT = NEW_DOCUMENT.replace("Ilse Marrow", "Anouk Ferrand").replace("Wren", "Tern")


def machine(folder: Path, url: str, server: S3Server, method: str) -> Path:
    """A machine that has never indexed: the project files, the input documents, no data/ index."""
    root = make_project(folder)
    shutil.rmtree(root / "data" / "dagster", ignore_errors=True)
    (root / "graphrag.yaml").write_text(shared_yaml(url, server, method), encoding="utf-8")
    return root


def run_like_the_sensor(root: Path) -> list[str]:
    """One sensor tick on ``root``, then what the daemon does with it: the partitions registered and
    each requested run executed in-process on the project's Definitions. The jobs run, in order."""
    result, instance, defs = tick(root)
    try:
        assert isinstance(result, SensorResult), result
        for request in result.dynamic_partitions_requests:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        for request in result.run_requests:
            job = defs.resolve_job_def(request.job_name)
            done = job.execute_in_process(instance=instance, partition_key=request.partition_key, tags=request.tags)
            assert done.success, request.job_name
        return [request.job_name for request in result.run_requests]
    finally:
        instance.dispose()


def extracted_since(server, before: int) -> list[str]:
    """The request bodies of the extraction calls the model server got after call ``before``."""
    bodies = [json.dumps(call["body"], ensure_ascii=False) for call in server.calls()[before:]]
    return [body for body in bodies if EXTRACTION_PROMPT in body]


def expected_build(publisher: Path, folder: Path, url: str, server: S3Server, method: str, new: dict[str, str]) -> Path:
    """What ``index`` gives on a copy of ``publisher`` (its local index is the newest shared build)
    with the documents ``new`` added; it publishes to its own location, not the one under test."""
    shutil.copytree(publisher, folder)
    (folder / "graphrag.yaml").write_text(shared_yaml(url + "-expected", server, method), encoding="utf-8")
    for name, text in new.items():
        (folder / "data" / "input" / name).write_text(text, encoding="utf-8")
    done = cli(folder, "index")
    assert done.returncode == 0, done.stderr
    return folder


def assert_same_tables(root: Path, expected: Path) -> None:
    ours, theirs = published_tables(root), published_tables(expected)
    assert sorted(ours) == sorted(theirs)
    for table, frame in theirs.items():
        assert ours[table].equals(frame), table


def assert_published(root: Path, previous: Pointer, tmp_path: Path) -> None:
    """The shared build is now ``root``'s index, published as the successor of ``previous``."""
    settings = load_settings(root, environ={})
    location = shared_location(settings)
    assert location is not None
    pointer = read_pointer(location)
    assert pointer is not None and pointer.previous == previous.build_id, (pointer, previous)
    assert local_build(settings) == pointer.build_id
    fetched = fetch_build(location, pointer, tmp_path / "fetched")
    copy = tmp_path / "published" / "data"
    copy.mkdir(parents=True)
    shutil.copy(fetched / "graphrag.duckdb", copy / "graphrag.duckdb")
    assert_same_tables(copy.parent, root)


def first_build(root: Path) -> Pointer:
    """``index`` on ``root`` (through the CLI) and the build it published."""
    done = cli(root, "index")
    assert done.returncode == 0, done.stderr
    pointer = read_pointer(shared_location(load_settings(root, environ={})))
    assert pointer is not None
    return pointer


def test_a_fresh_machines_sensor_runs_continue_from_the_shared_build(
    s3_server: S3Server, graphrag_server, tmp_path: Path
) -> None:
    """Another machine published; this one has graphrag.yaml and the input only. Its sensor's runs
    extract the new document alone, and its corpus run's publish is accepted."""
    url = s3_server.create_bucket("sensor-fresh") + "/graph"
    method = llm_method(graphrag_server.base_url)
    other = make_llm_project(tmp_path / "other", graphrag_server.base_url)
    (other / "graphrag.yaml").write_text(shared_yaml(url, s3_server, method), encoding="utf-8")
    published = first_build(other)

    fresh = machine(tmp_path / "fresh", url, s3_server, method)
    (fresh / "data" / "input" / "marrow.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    before = len(graphrag_server.calls())
    assert run_like_the_sensor(fresh) == ["document_job", "corpus_job"]
    extracted = extracted_since(graphrag_server, before)
    assert extracted, "the new document was not extracted"
    assert all("Ilse Marrow" in body for body in extracted)  # the shared build's documents were not

    assert_published(fresh, published, tmp_path)
    expected = expected_build(other, tmp_path / "expected", url, s3_server, method, {"marrow.txt": NEW_DOCUMENT})
    assert_same_tables(fresh, expected)


def test_a_machine_behind_the_shared_build_continues_from_it(
    s3_server: S3Server, graphrag_server, tmp_path: Path
) -> None:
    """This machine published the first build; another published a newer one since (both see the
    same input folder). Its sensor's runs fetch the newer build and extract only what it lacks."""
    url = s3_server.create_bucket("sensor-behind") + "/graph"
    method = llm_method(graphrag_server.base_url)
    behind = make_llm_project(tmp_path / "behind", graphrag_server.base_url)
    (behind / "graphrag.yaml").write_text(shared_yaml(url, s3_server, method), encoding="utf-8")
    first_build(behind)
    ahead = tmp_path / "ahead"
    shutil.copytree(behind, ahead)
    for root in (behind, ahead):
        (root / "data" / "input" / "marrow.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    newer = first_build(ahead)

    (behind / "data" / "input" / "ferrand.txt").write_text(OTHER_DOCUMENT, encoding="utf-8")
    before = len(graphrag_server.calls())
    assert run_like_the_sensor(behind) == ["document_job", "corpus_job"]
    extracted = extracted_since(graphrag_server, before)
    assert extracted, "the new document was not extracted"
    assert all("Anouk Ferrand" in body for body in extracted)  # marrow.txt came with the newer build

    assert_published(behind, newer, tmp_path)
    expected = expected_build(ahead, tmp_path / "expected", url, s3_server, method, {"ferrand.txt": OTHER_DOCUMENT})
    assert_same_tables(behind, expected)


@pytest.mark.timeout(1200)
def test_the_workers_job_fetches_once_for_all_its_step_processes(s3_server: S3Server, tmp_path: Path) -> None:
    """The workers' job on the multiprocess executor, launched without the CLI on a fresh machine
    for the new document's partition (each step a process of its own): the first step process
    fetches the shared build, the others find it done; the corpus run that follows publishes a
    build that holds the shared build's documents and the new one."""
    from dagster import build_reconstructable_job, execute_job

    from graphrag_assets.index.input_files import discover_input_files
    from graphrag_assets.pipeline import workers_entry
    from graphrag_assets.pipeline.definitions import build_definitions
    from graphrag_assets.pipeline.partitions import CORPUS_JOB, PARTITIONS_NAME
    from graphrag_assets.pipeline.runtime.dagster_private import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )
    from graphrag_assets.pipeline.runtime.instance import open_instance
    from graphrag_assets.pipeline.runtime.step_server import start_step_server
    from graphrag_assets.pipeline.workers import STEP_MODULES

    url = s3_server.create_bucket("workers-fresh") + "/graph"
    other = machine(tmp_path / "other", url, s3_server, OFFLINE)
    published = first_build(other)
    fresh = machine(tmp_path / "fresh", url, s3_server, OFFLINE + "workers:\n  count: 2\n")
    (fresh / "data" / "input" / "marrow.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    settings = load_settings(fresh, environ={})
    keys = sorted(found.key for found in discover_input_files(settings.input_dir, settings.input.file_types))
    job = build_reconstructable_job(
        workers_entry.__name__, workers_entry.workers_job_of.__name__, reconstructable_args=(str(fresh), "{}")
    )
    instance = open_instance(settings)
    try:
        instance.add_dynamic_partitions(PARTITIONS_NAME, keys)  # as the sensor does
        start_step_server(STEP_MODULES)
        tags = {ASSET_PARTITION_RANGE_START_TAG: "marrow.txt", ASSET_PARTITION_RANGE_END_TAG: "marrow.txt"}
        with execute_job(job, instance=instance, tags=tags) as result:
            assert result.success
            messages = [entry.user_message for entry in instance.all_logs(result.run_id)]
        corpus = build_definitions(fresh).resolve_job_def(CORPUS_JOB).execute_in_process(instance=instance)
        assert corpus.success
    finally:
        instance.dispose()
    assert sum("continuing from build" in message for message in messages) == 1, messages
    assert "1 document(s) in 1 shard(s)" in messages, messages
    assert (fresh / "data" / RUN_ONCE_FILE).read_text(encoding="utf-8") == corpus.run_id
    assert_published(fresh, published, tmp_path)
    expected = expected_build(other, tmp_path / "expected", url, s3_server, OFFLINE, {"marrow.txt": NEW_DOCUMENT})
    assert_same_tables(fresh, expected)


def tiny_machine(tmp_path: Path) -> Settings:
    """A machine on a shared folder, with no index yet."""
    root = make_project(tmp_path / "machine", with_sample=False)
    (root / "graphrag.yaml").write_text(shared_yaml(str(tmp_path / "nfs"), None), encoding="utf-8")
    return load_settings(root, environ={})


def publish_label(settings: Settings, folder: Path, label: str, previous: Pointer | None) -> Pointer:
    """Another machine publishes a build holding one table, ``label``, with the value ``label``."""
    (folder / "lancedb").mkdir(parents=True)
    with duckdb.connect(str(folder / "graphrag.duckdb")) as conn:
        conn.execute(f"create table label as select '{label}' as v")
    location = shared_location(settings)
    return publish_build(location, folder / "graphrag.duckdb", folder / "lancedb", previous and previous.build_id)


def local_label(settings: Settings) -> str:
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        return conn.execute("select v from label").fetchone()[0]


def test_a_run_continues_once_however_many_processes_ask(tmp_path: Path) -> None:
    """The steps of one run ask together: one fetches, the others wait and find it done; a build
    published while the run goes on is not fetched into it (its publish is refused instead), the
    next run fetches it; the runs of `index` leave it to the CLI."""
    settings = tiny_machine(tmp_path)
    location = shared_location(settings)
    first = publish_label(settings, tmp_path / "first", "first", None)
    said: list[str] = []
    steps = [threading.Thread(target=continue_run, args=(settings, "run-1", said.append)) for _ in range(4)]
    for step in steps:
        step.start()
    for step in steps:
        step.join()
    assert said == [f"continuing from build {first.build_id} of {location.url}"]
    assert local_label(settings) == "first" and local_build(settings) == first.build_id

    newer = publish_label(settings, tmp_path / "newer", "newer", first)
    continue_run(settings, "run-1", said.append)  # a later step of the same run
    assert local_label(settings) == "first" and len(said) == 1
    continue_run(settings, "run-2", said.append)
    assert local_label(settings) == "newer" and local_build(settings) == newer.build_id and len(said) == 2

    publish_label(settings, tmp_path / "third", "third", newer)
    with index_lock(settings):  # `graphrag-assets index` runs its jobs inside it, having continued first
        continue_run(settings, "run-3", said.append)
    assert local_label(settings) == "newer" and len(said) == 2


def test_a_write_right_after_the_fetch_is_published(tmp_path: Path) -> None:
    """A run's steps write through a warm connection, so their rows may still be in DuckDB's
    write-ahead log when the corpus job's last step asks whether the index changed since the fetch."""
    settings = tiny_machine(tmp_path)
    fetched = publish_label(settings, tmp_path / "first", "first", None)
    continue_run(settings, "run-1")
    with connect(settings.database_path) as conn:
        conn.execute("update label set v = 'changed'")
    build = publish_after_run(settings)
    assert build is not None and build != fetched.build_id
    pointer = read_pointer(shared_location(settings))
    assert pointer is not None and pointer.build_id == build and pointer.previous == fetched.build_id


def test_the_uis_materialize_on_a_fresh_machine_continues_from_the_shared_build(
    s3_server: S3Server, tmp_path: Path
) -> None:
    """The UI's "Materialize" runs the implicit asset job: on a machine without an index, the corpus
    assets are rebuilt from the fetched build and published as its successor."""
    from dagster import AssetKey

    from graphrag_assets.pipeline.definitions import CORPUS_ASSETS, build_definitions
    from graphrag_assets.pipeline.runtime.instance import open_instance

    url = s3_server.create_bucket("materialize-fresh") + "/graph"
    published = first_build(machine(tmp_path / "other", url, s3_server, OFFLINE))
    fresh = machine(tmp_path / "fresh", url, s3_server, OFFLINE)
    defs = build_definitions(fresh)
    selection = [*CORPUS_ASSETS.resolve(defs.resolve_asset_graph()), AssetKey("shared_build")]
    instance = open_instance(load_settings(fresh, environ={}))
    try:
        job = defs.resolve_implicit_global_asset_job_def()
        assert job.execute_in_process(instance=instance, asset_selection=selection).success
    finally:
        instance.dispose()
    assert_published(fresh, published, tmp_path)
