"""Bucketed partitions (a large corpus maps its documents onto hash buckets): the same tables as one
partition per document, exact updates inside a bucket, and a failed document retried on its own.

A threshold of 3 documents and 4 buckets stands in for the 10,000 and 256 of a real corpus; the
model is the scripted server, so the assertions count real requests.
"""

from pathlib import Path

import pytest
from dagster import AssetKey

from graphrag_assets.core.buckets import all_bucket_keys, bucket_of
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.partitions import PARTITIONS_NAME
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets.project.status import project_status
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.conftest import make_llm_project

BUCKETS = "partitions:\n  bucket_threshold: 3\n  buckets: 4\n"
EXTRACT = "You are helping to build a knowledge graph"
DOCUMENTS = {
    "coop.txt": "Marta Quell chairs the Vellmouth Fishing Cooperative. Rafael Duarte fishes for it.",
    "light.txt": "Søren Holm keeps the Kestrel Point Lighthouse. Mira Santos visits Søren Holm.",
    "port.txt": "Lucien Marchetti runs Auberon Freight Lines. Helga Brandt meets Lucien Marchetti.",
    "council.txt": "Mayor Ilse Moreau leads the Vellmouth Harbour Council with Marta Quell.",
    "storm.txt": "During Storm Odile, Søren Holm and Rafael Duarte rescued the crew of the Northern Star.",
    "bank.txt": "Helga Brandt audits the Auberon Savings Bank for the Vellmouth Harbour Council.",
}
# Tables whose rows must not depend on how documents map onto partitions (columns that record
# when something happened are left out).
COMPARED = {
    "documents": "document_key, id, title, text",
    "text_units": "document_key, id, text, n_tokens",
    "graph_extractions": "*",
    "extraction_status": "document_key, status, text_units, records, error",
    "entities": "id, title, type, description",
    "relationships": "id, source, target, description, weight",
    "communities": "id, level, title, entity_ids",
    "community_reports": "id, community, title, summary, rank",
}


def extraction_calls(server, since: int) -> list[str]:
    """The conversations of the extraction requests made since call number ``since``."""
    return [
        "\n".join(str(message["content"]) for message in call["body"]["messages"])
        for call in server.calls("chat")[since:]
        if str(call["body"]["messages"][0]["content"]).startswith(EXTRACT)
    ]


def write_corpus(root: Path) -> Path:
    inputs = root / "data" / "input"
    for name, text in DOCUMENTS.items():
        (inputs / name).write_text(text, encoding="utf-8")
    return inputs


def rows(root: Path, table: str) -> list[tuple]:
    return query_db(root, f"select {COMPARED[table]} from {table} order by all")


@pytest.fixture
def server():
    from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer

    started = ScriptedOpenAIServer.start(responder="graphrag_assets_testkit.graphrag_responder:respond")
    yield started
    started.stop()


def registered_partitions(root: Path) -> list[str]:
    settings = load_settings(root)
    with open_instance(settings) as instance:
        return sorted(instance.get_dynamic_partitions(PARTITIONS_NAME))


def bucket_metadata(root: Path, asset: str, bucket: str) -> dict:
    """The metadata of the latest materialization of ``bucket`` of ``asset``, as the UI shows it."""
    with open_instance(load_settings(root)) as instance:
        records = instance.fetch_materializations(AssetKey(asset), limit=50).records
    latest = next(record for record in records if record.partition_key == bucket)
    return dict(latest.asset_materialization.metadata)


def test_bucketed_and_per_document_partitions_give_identical_tables(server, tmp_path: Path) -> None:
    per_document = make_llm_project(tmp_path / "per_document", server.base_url, with_sample=False)
    bucketed = make_llm_project(tmp_path / "bucketed", server.base_url, with_sample=False, extra=BUCKETS)
    write_corpus(per_document)
    write_corpus(bucketed)
    assert index_project(load_settings(per_document)).success
    report = index_project(load_settings(bucketed))
    assert report.success
    assert registered_partitions(per_document) == sorted(DOCUMENTS)
    assert registered_partitions(bucketed) == all_bucket_keys(4)
    for table in COMPARED:
        assert rows(bucketed, table) == rows(per_document, table), table
        assert rows(bucketed, table), table


def test_an_edit_in_a_bucket_reextracts_only_that_document(server, tmp_path: Path) -> None:
    root = make_llm_project(tmp_path / "project", server.base_url, with_sample=False, extra=BUCKETS)
    inputs = write_corpus(root)
    assert index_project(load_settings(root)).success
    edited = "coop.txt"
    neighbours = [name for name in DOCUMENTS if name != edited and bucket_of(name, 4) == bucket_of(edited, 4)]
    assert neighbours, "the corpus must put another document in the edited document's bucket"
    others_before = query_db(
        root, f"select document_key, id from text_units where document_key <> '{edited}' order by all"
    )

    mark = len(server.calls("chat"))
    (inputs / edited).write_text(
        "Piet Oduya now chairs the Vellmouth Fishing Cooperative. Rafael Duarte fishes for it.", encoding="utf-8"
    )
    report = index_project(load_settings(root))
    assert report.success and report.changes.changed == [edited]
    document_runs = [run for run in report.runs if run["partitions"] != []][:1]
    assert document_runs[0]["partitions"] == [bucket_of(edited, 4)]
    passages = extraction_calls(server, mark)
    assert len(passages) == 2 and all("Piet Oduya" in passage for passage in passages)  # one chunk: call + gleaning
    assert (
        query_db(root, f"select document_key, id from text_units where document_key <> '{edited}' order by all")
        == others_before
    )
    titles = {row[0] for row in query_db(root, "select title from entities")}
    assert "PIET ODUYA" in titles and "MARTA QUELL" in titles  # Marta Quell is still on the council

    # deleting a document is done by its bucket's run as well
    mark = len(server.calls("chat"))
    (inputs / neighbours[0]).unlink()
    deleted = index_project(load_settings(root))
    assert deleted.success and deleted.changes.deleted == [neighbours[0]] and extraction_calls(server, mark) == []
    assert query_db(root, f"select count(*) from text_units where document_key = '{neighbours[0]}'") == [(0,)]
    assert index_project(load_settings(root)).runs == []


def test_a_failed_document_in_a_bucket_is_retried_alone_and_shown_per_document(server, tmp_path: Path) -> None:
    root = make_llm_project(tmp_path / "project", server.base_url, with_sample=False, extra=BUCKETS)
    inputs = write_corpus(root)
    (inputs / "poison.txt").write_text("POISONED Lucien Marchetti runs Auberon Freight Lines.", encoding="utf-8")
    server.add_fault("status", status=500, message="boom", times=1000, match="POISONED", endpoint="chat")
    report = index_project(load_settings(root))
    assert report.failed_documents == ["poison.txt"]
    conversations = extraction_calls(server, 0)
    for text in DOCUMENTS.values():  # the retry of poison.txt's bucket did not extract bank.txt again
        assert sum(text in conversation for conversation in conversations) == 2, text
    bucket = bucket_of("poison.txt", 4)
    retries = [run for run in report.runs if run["partitions"] == [bucket]]
    assert [run["success"] for run in retries] == [False]  # the retry failed again: Dagster shows the bucket failed
    statuses = dict(query_db(root, "select document_key, status from extraction_status"))
    assert statuses == {**{name: "ok" for name in DOCUMENTS}, "poison.txt": "failed"}
    status = project_status(load_settings(root))
    assert [row["document_key"] for row in status["documents"]["failed"]] == ["poison.txt"]
    assert status["documents"]["unchanged"] == len(DOCUMENTS)
    table = bucket_metadata(root, "extraction_status", bucket)["documents"].value
    assert "poison.txt" in table and "failed" in table and "boom" in table

    # the retry asked the model about the failed document only
    server.reset()
    mark = len(server.calls("chat"))
    (inputs / "poison.txt").write_text("Lucien Marchetti runs Auberon Freight Lines.", encoding="utf-8")
    fixed = index_project(load_settings(root))
    assert fixed.success and not fixed.failed_documents
    passages = extraction_calls(server, mark)
    assert passages and all("Lucien Marchetti runs Auberon" in passage for passage in passages)
    assert dict(query_db(root, "select document_key, status from extraction_status"))["poison.txt"] == "ok"


def test_buckets_are_stable_and_the_scheme_switches_with_some_slack() -> None:
    from graphrag_assets.core.buckets import documents_in_buckets, parse_bucket_key
    from graphrag_assets.core.settings import PartitionSettings
    from graphrag_assets.index.changes import ChangeSet
    from graphrag_assets.index.partition_plan import plan_partitions

    assert (
        bucket_of("a/b.txt", 256) == bucket_of("a/b.txt", 256) and parse_bucket_key(bucket_of("a/b.txt", 256))[1] == 256
    )
    assert parse_bucket_key("bucket-1-of-4.txt") is None and parse_bucket_key("bucket-4-of-4") is None
    documents = [f"note_{n}.txt" for n in range(200)]
    spread = {bucket_of(key, 4) for key in documents}
    assert spread == set(all_bucket_keys(4))
    assert sorted(key for bucket in all_bucket_keys(4) for key in documents_in_buckets(documents, [bucket])) == sorted(
        documents
    )

    settings = PartitionSettings(bucket_threshold=4, buckets=4)
    three = ChangeSet(new=["a.txt", "b.txt", "c.txt"], paths={name: name for name in ("a.txt", "b.txt", "c.txt")})
    assert not plan_partitions(three, [], settings).bucketed
    four = ChangeSet(
        new=["d.txt"], unchanged=["a.txt", "b.txt", "c.txt"], paths={n: n for n in ("a.txt", "b.txt", "c.txt", "d.txt")}
    )
    plan = plan_partitions(four, ["a.txt", "b.txt", "c.txt"], settings)
    assert plan.bucketed and plan.add == all_bucket_keys(4) and plan.forget == ["a.txt", "b.txt", "c.txt"]
    assert sum(plan.work.values()) == 1  # only the new document needs work; the others were indexed already
    # a bucketed project stays bucketed until it shrinks below half the threshold
    two = ChangeSet(
        deleted=["c.txt", "d.txt"], unchanged=["a.txt", "b.txt"], paths={"a.txt": "a.txt", "b.txt": "b.txt"}
    )
    assert plan_partitions(two, all_bucket_keys(4), settings).bucketed
    one = ChangeSet(deleted=["b.txt"], unchanged=["a.txt"], paths={"a.txt": "a.txt"})
    back = plan_partitions(one, all_bucket_keys(4), settings)
    assert not back.bucketed and back.forget == all_bucket_keys(4) and back.add == []


def test_a_corpus_that_grows_past_the_threshold_moves_to_buckets_without_reindexing(
    tmp_path: Path, offline_env
) -> None:
    root = tmp_path / "project"
    make_llm_project(root, "http://127.0.0.1:9/v1", with_sample=False)
    (root / "graphrag.yaml").write_text("method: nlp\n" + BUCKETS, encoding="utf-8")
    inputs = root / "data" / "input"
    names = list(DOCUMENTS)
    for name in names[:2]:
        (inputs / name).write_text(DOCUMENTS[name], encoding="utf-8")
    assert index_project(load_settings(root)).success
    assert registered_partitions(root) == sorted(names[:2])
    before = query_db(root, "select document_key, id from text_units order by all")

    for name in names[2:]:
        (inputs / name).write_text(DOCUMENTS[name], encoding="utf-8")
    grown = index_project(load_settings(root))
    assert grown.success and grown.changes.new == sorted(names[2:])
    assert registered_partitions(root) == all_bucket_keys(4)
    # the two documents indexed before kept their rows, and the bucket runs extracted the new ones only
    assert set(before) <= set(query_db(root, "select document_key, id from text_units order by all"))
    extracted = [
        bucket_metadata(root, "extraction_status", bucket)["documents_extracted"].value for bucket in all_bucket_keys(4)
    ]
    assert sum(extracted) == len(DOCUMENTS) - 2
    assert query_db(root, "select count(distinct document_key) from graph_extractions") == [(len(DOCUMENTS),)]
    assert index_project(load_settings(root)).runs == []


def test_the_sensor_updates_a_bucketed_corpus_exactly(server, tmp_path: Path) -> None:
    """The daemon's path: a sensor tick after an edit asks for the edited document's bucket and a
    corpus run; executing them re-extracts only that document, and the next tick asks for nothing."""
    from dagster import SensorResult, SkipReason

    from graphrag_assets.pipeline.runtime.runner import run_job
    from graphrag_assets_tests.sensor_ticks import tick

    root = make_llm_project(tmp_path / "project", server.base_url, with_sample=False, extra=BUCKETS)
    inputs = write_corpus(root)
    assert index_project(load_settings(root)).success
    edited = "light.txt"
    others_before = query_db(
        root, f"select document_key, id from text_units where document_key <> '{edited}' order by all"
    )
    (inputs / edited).write_text(
        "Piet Oduya keeps the Kestrel Point Lighthouse. Mira Santos visits Piet Oduya.", encoding="utf-8"
    )

    result, instance, defs = tick(root)
    assert isinstance(result, SensorResult) and not result.dynamic_partitions_requests
    requested = [(request.job_name, request.partition_key) for request in result.run_requests]
    assert requested == [("document_job", bucket_of(edited, 4)), ("corpus_job", None)]
    mark = len(server.calls("chat"))
    for request in result.run_requests:
        keys = [request.partition_key] if request.partition_key else None
        assert run_job(defs, instance, request.job_name, keys).success
    passages = extraction_calls(server, mark)
    assert len(passages) == 2 and all("Piet Oduya" in passage for passage in passages)
    assert (
        query_db(root, f"select document_key, id from text_units where document_key <> '{edited}' order by all")
        == others_before
    )
    titles = {row[0] for row in query_db(root, "select title from entities")}
    assert "PIET ODUYA" in titles and "SØREN HOLM" in titles  # Søren Holm is still in storm.txt
    assert isinstance(tick(root)[0], SkipReason)
