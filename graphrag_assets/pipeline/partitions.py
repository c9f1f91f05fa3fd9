"""The document partitions shared by every per-document asset, the names of the two jobs, and how
a change set maps onto the partitions Dagster knows.

Which documents need work is decided from our own tables (:mod:`graphrag_assets.project.state`);
Dagster's dynamic partitions follow that decision here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dagster import BackfillPolicy, DynamicPartitionsDefinition

from graphrag_assets.index.changes import ChangeSet

PARTITIONS_NAME = "documents"
DOCUMENT_PARTITIONS = DynamicPartitionsDefinition(name=PARTITIONS_NAME)
DOCUMENTS_JOB = "document_job"
CORPUS_JOB = "corpus_job"

# A range of new documents runs as one step, so LLM calls for all of them share one concurrency pool.
SINGLE_RUN = BackfillPolicy.single_run()

PARTITION_METADATA = {"partition_column": "document_key"}
# Corpus-wide tables are staged by the IO manager and published together at the end of a corpus
# run (see graphrag_assets.storage.corpus).
STAGED_METADATA = {"staged": True}


@dataclass(frozen=True)
class PartitionPlan:
    """What to do with Dagster's document partitions for one change set.

    ``add`` are keys Dagster does not know yet: added at the end of the partition order, so they
    form one contiguous range run. ``rerun`` are known keys to run again (changed, incomplete, or
    registered once but never ingested). ``forget`` are registered keys whose file is gone.
    """

    add: list[str]
    rerun: list[str]
    forget: list[str]


def plan_partitions(changes: ChangeSet, registered: Sequence[str]) -> PartitionPlan:
    known = set(registered)
    add = [key for key in changes.new if key not in known]
    rerun = sorted(set(changes.changed) | {key for key in changes.new if key in known})
    forget = [key for key in registered if key not in changes.paths]
    return PartitionPlan(add, rerun, forget)


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
