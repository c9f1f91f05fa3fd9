"""Models for one step: built lazily, closed and accounted for at the end.

Closing flushes the response cache (so everything paid for is kept even if the step fails
afterwards); usage is persisted to ``llm_usage`` and returned as materialization metadata.

A step is described by a :class:`StepScope` rather than a Dagster context, so the same step
functions run inside an asset and inside a worker's shard (:mod:`graphrag_assets.pipeline.workers_shard`),
where there is no asset context.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from dagster import AssetExecutionContext, MetadataValue

from graphrag_assets.core.ownership import CORPUS, cache_owner
from graphrag_assets.core.settings import Settings
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import UsageMeter

T = TypeVar("T")


class _InterruptTracebacks(logging.Filter):
    """Drops asyncio's report of an interrupt raised inside a transport's write.

    Dagster raises its interrupt (Ctrl-C) wherever the step is; when that is a socket write to the
    model server, asyncio logs it as a fatal write error with a traceback, beside the one sentence
    the interrupted run prints. Errors (``Exception``) are still logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or isinstance(error, Exception)


logging.getLogger("asyncio").addFilter(_InterruptTracebacks())


@dataclass(frozen=True)
class StepScope:
    """What a step needs to know about where it runs: settings, log, run and the name its usage is recorded under."""

    settings: Settings
    log: logging.Logger | Any  # a logger, or Dagster's log manager
    run_id: str
    step: str  # the asset (or op) name of the usage rows
    partition_key: str | None = None  # the partition label of the usage rows
    corpus: bool = False  # a corpus step: its model answers belong to the run (see storage/cache_owners.py)


def step_scope(context: AssetExecutionContext, settings: Settings, partition_key: str | None = None) -> StepScope:
    """The scope of an asset's step."""
    step = "/".join(context.assets_def.key.path) if len(context.assets_def.keys) == 1 else context.op_def.name
    return StepScope(
        settings=settings,
        log=context.log,
        run_id=context.run.run_id if context.run else "unknown",
        step=step,
        partition_key=partition_key,
        corpus=context.assets_def.partitions_def is None,
    )


class ModelSession(ModelSet):
    """A :class:`ModelSet` whose usage is persisted to ``llm_usage`` and shown as step metadata.

    Built from a :class:`StepScope`, or from an asset's context and settings (corpus steps).
    """

    def __init__(
        self,
        scope: StepScope | AssetExecutionContext,
        settings: Settings | None = None,
        *,
        partition_key: str | None = None,
    ) -> None:
        if not isinstance(scope, StepScope):
            scope = step_scope(scope, settings or scope.resources.project.settings, partition_key)
        super().__init__(scope.settings, UsageMeter())
        self.scope = scope

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run model work to completion on a fresh event loop (steps are synchronous).

        A corpus step's answers belong to its run (see :mod:`graphrag_assets.storage.cache_owners`);
        per-document steps name each call's document themselves.
        """
        if not self.scope.corpus:
            return asyncio.run(coroutine)
        with cache_owner(CORPUS, self.scope.run_id):
            return asyncio.run(coroutine)

    def metadata(self) -> dict[str, Any]:
        """Calls, cache hits, tokens and cost of this step, flat for the Dagster UI."""
        totals = self.meter.totals()
        data: dict[str, Any] = dict(self.meter.as_metadata())
        data["llm/usage"] = (
            MetadataValue.md(_usage_table(self.meter)) if totals.requests or totals.cache_hits else "no model calls"
        )
        return data

    def persist(self) -> None:
        self.meter.persist(self.settings.database_path, self.scope.run_id, self.scope.step, self.scope.partition_key)

    def __enter__(self) -> ModelSession:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self.persist()


def _usage_table(meter: UsageMeter) -> str:
    frame = meter.to_frame()
    lines = [
        "| purpose | model | requests | cache hits | prompt tokens | completion tokens | cost (USD) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in frame.iter_rows(named=True):
        lines.append(
            f"| {row['purpose']} | {row['model']} | {row['requests']} | {row['cache_hits']} | "
            f"{row['prompt_tokens'] + row['embedding_tokens']} | {row['completion_tokens']} | {row['cost_usd']:.4f} |"
        )
    return "\n".join(lines)
