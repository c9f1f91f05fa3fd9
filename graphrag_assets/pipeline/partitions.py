"""The document partitions shared by every per-document asset, the names of the indexing jobs, and how
a change set maps onto the partitions Dagster knows: one partition per document, or — from
``partitions.bucket_threshold`` documents on — a fixed number of hash buckets
(:mod:`graphrag_assets.core.buckets`).

Which documents need work is decided from our own tables (:mod:`graphrag_assets.project.state`);
Dagster's dynamic partitions follow that decision (planned in :mod:`graphrag_assets.index.partition_plan`).
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import BackfillPolicy, DynamicPartitionsDefinition

from graphrag_assets.index.partition_plan import PARTITIONS_NAME

DOCUMENT_PARTITIONS = DynamicPartitionsDefinition(name=PARTITIONS_NAME)
DOCUMENTS_JOB = "document_job"
CORPUS_JOB = "corpus_job"
WORKERS_JOB = "document_workers_job"  # the document steps on workers (pipeline/workers.py)
# The jobs that write the index: on a shared-storage project each run first continues from the
# newest shared build (pipeline/resources.py).
INDEX_JOBS = frozenset({DOCUMENTS_JOB, CORPUS_JOB, WORKERS_JOB})

# A range of new documents runs as one step, so LLM calls for all of them share one concurrency pool.
SINGLE_RUN = BackfillPolicy.single_run()

PARTITION_METADATA = {"partition_column": "document_key"}
# Documents one run of the document job processes at most (bucket mode splits larger updates), so
# the frames a run holds stay small whatever the corpus size.
DOCUMENTS_PER_RUN = 5_000
# Corpus-wide tables are staged by the IO manager and published together at the end of a corpus
# run (see graphrag_assets.storage.corpus).
STAGED_METADATA = {"staged": True}


def run_groups(
    keys: Sequence[str], order: Sequence[str], work: dict[str, int], limit: int = DOCUMENTS_PER_RUN
) -> list[list[str]]:
    """``keys`` in runs that are contiguous in the partition ``order`` and process at most ``limit``
    documents each (a partition with more is a run of its own), so a run's memory stays bounded."""
    runs: list[list[str]] = []
    for group in contiguous_groups(keys, order):
        current: list[str] = []
        load = 0
        for key in group:
            if current and load + work.get(key, 1) > limit:
                runs.append(current)
                current, load = [], 0
            current.append(key)
            load += work.get(key, 1)
        runs.append(current)
    return runs


def contiguous_groups(keys: Sequence[str], order: Sequence[str]) -> list[list[str]]:
    """``keys`` split into runs that are contiguous in the partition ``order`` (one range run each).

    After a settings change every document is changed; they then run as one range, so their model
    calls share one concurrency pool instead of running document after document.
    """
    wanted = set(keys)
    groups: list[list[str]] = []
    current: list[str] = []
    for key in order:
        if key in wanted:
            current.append(key)
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups
