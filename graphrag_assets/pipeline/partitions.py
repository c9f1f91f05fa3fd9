"""The document partitions shared by every per-document asset, the names of the two jobs, and how
a change set maps onto the partitions Dagster knows: one partition per document, or — from
``partitions.bucket_threshold`` documents on — a fixed number of hash buckets
(:mod:`graphrag_assets.core.buckets`).

Which documents need work is decided from our own tables (:mod:`graphrag_assets.project.state`);
Dagster's dynamic partitions follow that decision here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dagster import BackfillPolicy, DynamicPartitionsDefinition

from graphrag_assets.core.buckets import all_bucket_keys, bucket_of, is_bucket_key
from graphrag_assets.core.settings import PartitionSettings
from graphrag_assets.index.changes import ChangeSet

PARTITIONS_NAME = "documents"
DOCUMENT_PARTITIONS = DynamicPartitionsDefinition(name=PARTITIONS_NAME)
DOCUMENTS_JOB = "document_job"
CORPUS_JOB = "corpus_job"

# A range of new documents runs as one step, so LLM calls for all of them share one concurrency pool.
SINGLE_RUN = BackfillPolicy.single_run()

PARTITION_METADATA = {"partition_column": "document_key"}
# Documents one run of the document job processes at most (bucket mode splits larger updates), so
# the frames a run holds stay small whatever the corpus size.
DOCUMENTS_PER_RUN = 5_000
# Corpus-wide tables are staged by the IO manager and published together at the end of a corpus
# run (see graphrag_assets.storage.corpus).
STAGED_METADATA = {"staged": True}


@dataclass(frozen=True)
class PartitionPlan:
    """What to do with Dagster's document partitions for one change set.

    ``add`` are keys Dagster does not know yet: added at the end of the partition order, so they
    form one contiguous range run. ``rerun`` are known keys to run again (changed, incomplete, or
    registered once but never ingested; in bucket mode the buckets holding such documents or
    deleted ones). ``forget`` are registered keys to drop: documents whose file is gone, or every
    key of the other scheme when the corpus crossed the bucket threshold. ``work`` counts the
    documents each key to run will process, to size the runs.
    """

    add: list[str]
    rerun: list[str]
    forget: list[str]
    bucketed: bool = False
    work: dict[str, int] = field(default_factory=dict)


def use_buckets(documents: int, registered: Sequence[str], settings: PartitionSettings) -> bool:
    """Bucket partitions from ``bucket_threshold`` documents on; a bucketed project stays bucketed
    until it falls below half the threshold, so a corpus near it does not switch back and forth."""
    if documents >= settings.bucket_threshold:
        return True
    return any(is_bucket_key(key) for key in registered) and documents >= settings.bucket_threshold // 2


def plan_partitions(changes: ChangeSet, registered: Sequence[str], settings: PartitionSettings | None = None) -> PartitionPlan:
    settings = settings or PartitionSettings()
    if use_buckets(len(changes.paths), registered, settings):
        return _plan_buckets(changes, registered, settings.buckets)
    known = set(registered)
    add = [key for key in changes.new if key not in known]
    rerun = sorted(set(changes.changed) | {key for key in changes.new if key in known})
    forget = [key for key in registered if key not in changes.paths]
    return PartitionPlan(add, rerun, forget, work={key: 1 for key in add + rerun})


def _plan_buckets(changes: ChangeSet, registered: Sequence[str], buckets: int) -> PartitionPlan:
    """Every bucket is registered; the buckets to run are new ones and those holding a new,
    changed (or incomplete) or deleted document."""
    wanted = all_bucket_keys(buckets)
    known = set(registered)
    work: dict[str, int] = {}
    for key in [*changes.new, *changes.changed]:
        bucket = bucket_of(key, buckets)
        work[bucket] = work.get(bucket, 0) + 1
    touched = set(work) | {bucket_of(key, buckets) for key in changes.deleted}
    add = [key for key in wanted if key not in known]
    rerun = [key for key in wanted if key in known and key in touched]
    forget = [key for key in registered if key not in set(wanted)]
    return PartitionPlan(add, rerun, forget, bucketed=True, work={key: work.get(key, 0) for key in add + rerun})


def run_groups(keys: Sequence[str], order: Sequence[str], work: dict[str, int], limit: int = DOCUMENTS_PER_RUN) -> list[list[str]]:
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
