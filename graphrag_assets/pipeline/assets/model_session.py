"""Models for one Dagster step: built lazily, closed and accounted for at the end.

Closing flushes the response cache (so everything paid for is kept even if the step fails
afterwards); usage is persisted to ``llm_usage`` and returned as materialization metadata.
"""

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from dagster import AssetExecutionContext, MetadataValue

from graphrag_assets.core.ownership import CORPUS, cache_owner
from graphrag_assets.core.settings import Settings
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import UsageMeter

T = TypeVar("T")


class ModelSession(ModelSet):
    """A :class:`ModelSet` whose usage is persisted to ``llm_usage`` and shown as step metadata."""

    def __init__(self, context: AssetExecutionContext, settings: Settings, *, partition_key: str | None = None) -> None:
        super().__init__(settings, UsageMeter())
        self.context = context
        self.partition_key = partition_key

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run model work to completion on a fresh event loop (Dagster steps are synchronous).

        A corpus step's answers belong to its run (see :mod:`graphrag_assets.storage.cache_owners`);
        per-document steps name each call's document themselves.
        """
        if self.context.assets_def.partitions_def is not None:
            return asyncio.run(coroutine)
        with cache_owner(CORPUS, self.context.run.run_id if self.context.run else ""):
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
        run_id = self.context.run.run_id if self.context.run else "unknown"
        asset = (
            "/".join(self.context.assets_def.key.path)
            if len(self.context.assets_def.keys) == 1
            else self.context.op_def.name
        )
        self.meter.persist(self.settings.database_path, run_id, asset, self.partition_key)

    def __enter__(self) -> "ModelSession":
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
