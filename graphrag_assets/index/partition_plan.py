"""How a change set maps onto the partitions Dagster knows: one per document, or — from
``partitions.bucket_threshold`` documents on — a fixed number of hash buckets
(:mod:`graphrag_assets.core.buckets`).

Pure (no Dagster), so ``index`` can tell that a run would have nothing to do before it imports
Dagster (:mod:`graphrag_assets.pipeline.idle_check`); :mod:`graphrag_assets.pipeline.partitions`
applies the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from graphrag_assets.core.buckets import all_bucket_keys, bucket_of, is_bucket_key
from graphrag_assets.core.settings import PartitionSettings
from graphrag_assets.index.changes import ChangeSet

PARTITIONS_NAME = "documents"  # Dagster's dynamic partitions definition of the document files


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


def plan_partitions(
    changes: ChangeSet, registered: Sequence[str], settings: PartitionSettings | None = None
) -> PartitionPlan:
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
