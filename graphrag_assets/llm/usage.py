"""Usage accounting: what a step asked of the models, what the cache saved, and what it cost.

A :class:`UsageMeter` is shared by the chat and embedding models of one step. It counts per
``(purpose, model)``:

- ``requests``: logical calls sent to a server (one per chat call, one per embedding batch), whether
  they succeeded or failed; retries of the same call are counted in ``retries``, not here;
- ``cache_hits``: chat calls answered from the cache (or by an identical call already in flight),
  and texts whose embedding came from the cache;
- ``failures``: calls that ended in an error after their retries;
- tokens as reported by the server (estimated with the tokenizer only when the server reports
  none, or in a dry run); ``cost_usd`` from ``llm.prices`` when the model has a price.

Besides the counters, :meth:`UsageMeter.note` counts what the client adapted to or observed on a
server (a refused ``temperature``, ``<think>`` blocks stripped, prompts shortened to fit the context
window, reasoning tokens): they show in the metadata as ``llm/notes/<what>``.

Figures go to Dagster materialization metadata (:meth:`UsageMeter.as_metadata`) and to the
``llm_usage`` table (:meth:`UsageMeter.persist`). No credential is ever part of a meter.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from graphrag_assets.storage import usage as usage_table
from graphrag_assets.storage.usage import OUTCOME_COLUMNS
from graphrag_assets.storage.usage import create_model_tables as create_model_tables

# The corpus-wide assets that call the chat model (status and the dry run show their last run).
CORPUS_MODEL_ASSETS = ("graph", "community_reports")

if TYPE_CHECKING:
    from graphrag_assets.core.settings import Price


@dataclass
class UsageCounts:
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    cost_usd: float = 0.0
    truncated: int = 0  # answers cut off at the token limit (not cached)

    def add(self, other: UsageCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


COUNT_FIELDS = [f.name for f in fields(UsageCounts)]


def estimate_cost(prices: Mapping[str, Price], model: str, prompt_tokens: int, completion_tokens: int = 0) -> float:
    """US dollars for the tokens at the model's configured price (0 when it has none)."""
    price = prices.get(model)
    if price is None:
        return 0.0
    return (prompt_tokens * price.input_per_million + completion_tokens * price.output_per_million) / 1_000_000


class UsageMeter:
    """Thread-safe counters per (purpose, model)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], UsageCounts] = {}
        self._notes: dict[tuple[str, str], int] = {}  # (model, what) -> count

    def _bucket(self, purpose: str, model: str) -> UsageCounts:
        key = (purpose, model)
        bucket = self._counts.get(key)
        if bucket is None:
            bucket = self._counts[key] = UsageCounts()
        return bucket

    def record_request(
        self,
        purpose: str,
        model: str,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        embedding_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        with self._lock:
            bucket = self._bucket(purpose, model)
            bucket.requests += 1
            bucket.prompt_tokens += prompt_tokens
            bucket.completion_tokens += completion_tokens
            bucket.embedding_tokens += embedding_tokens
            bucket.cost_usd += cost_usd

    def record_cache_hits(self, purpose: str, model: str, count: int = 1) -> None:
        with self._lock:
            self._bucket(purpose, model).cache_hits += count

    def record_retry(self, purpose: str, model: str) -> None:
        with self._lock:
            self._bucket(purpose, model).retries += 1

    def record_truncated(self, purpose: str, model: str) -> None:
        with self._lock:
            self._bucket(purpose, model).truncated += 1

    def record_failure(self, purpose: str, model: str) -> None:
        """A call that failed for good: it was sent, so it counts as a request too."""
        with self._lock:
            bucket = self._bucket(purpose, model)
            bucket.requests += 1
            bucket.failures += 1

    def note(self, model: str, what: str, count: int = 1) -> None:
        """Count an adaptation or observation (``what``, e.g. ``temperature_dropped``) for ``model``."""
        with self._lock:
            self._notes[(model, what)] = self._notes.get((model, what), 0) + count

    def notes(self) -> dict[tuple[str, str], int]:
        """The noted adaptations and observations, keyed by (model, what)."""
        with self._lock:
            return dict(self._notes)

    def snapshot(self) -> dict[tuple[str, str], UsageCounts]:
        """A copy of the counters, keyed by (purpose, model)."""
        with self._lock:
            return {key: UsageCounts(**asdict(value)) for key, value in self._counts.items()}

    def totals(self) -> UsageCounts:
        total = UsageCounts()
        for counts in self.snapshot().values():
            total.add(counts)
        return total

    def as_metadata(self) -> dict[str, Any]:
        """Flat JSON-serializable figures: ``llm/total/<field>`` and ``llm/<purpose>/<field>``."""
        per_purpose: dict[str, UsageCounts] = {}
        models: set[str] = set()
        for (purpose, model), counts in sorted(self.snapshot().items()):
            per_purpose.setdefault(purpose, UsageCounts()).add(counts)
            models.add(model)
        total = UsageCounts()
        for counts in per_purpose.values():
            total.add(counts)
        metadata: dict[str, Any] = {}
        for scope, counts in [("total", total), *sorted(per_purpose.items())]:
            for name, value in asdict(counts).items():
                metadata[f"llm/{scope}/{name}"] = round(value, 6) if isinstance(value, float) else value
        for (model, what), count in sorted(self.notes().items()):
            models.add(model)
            metadata[f"llm/notes/{what}"] = metadata.get(f"llm/notes/{what}", 0) + count
        metadata["llm/models"] = ", ".join(sorted(models))
        return metadata

    def to_frame(self) -> pl.DataFrame:
        """One row per (purpose, model), sorted."""
        rows = [
            {"purpose": purpose, "model": model, **asdict(counts)}
            for (purpose, model), counts in sorted(self.snapshot().items())
        ]
        schema = {
            "purpose": pl.String,
            "model": pl.String,
            **{name: (pl.Float64 if name == "cost_usd" else pl.Int64) for name in COUNT_FIELDS},
        }
        return pl.DataFrame(rows, schema=schema)

    def persist(self, db_path: str | Path, run_id: str, asset_key: str, partition_key: str | None) -> int:
        """Append one ``llm_usage`` row per (purpose, model); returns the number of rows written."""
        frame = self.to_frame()
        if frame.is_empty():
            return 0
        frame = frame.with_columns(
            pl.lit(run_id, pl.String).alias("run_id"),
            pl.lit(asset_key, pl.String).alias("asset_key"),
            pl.lit(partition_key, pl.String).alias("partition_key"),
        )
        usage_table.append_usage(db_path, frame)
        return frame.height


def usage_by_purpose(db_path: Path, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Model calls made and answered from the cache, tokens and cost, per purpose, over these runs."""
    rows = usage_table.purpose_totals(db_path, run_ids)
    return {
        purpose: {
            "calls": calls,
            "cached": cached,
            "failed": failed,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost_usd": round(cost or 0.0, 6),
            "truncated": truncated,
        }
        for purpose, calls, cached, failed, prompt, completion, cost, truncated in rows
    }


def last_corpus_run_usage(db_path: Path, corpus_assets: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """Calls made and cached per purpose by the latest run that wrote one of ``corpus_assets``."""
    rows = usage_table.last_run_totals(db_path, corpus_assets)
    return {
        purpose: {"calls": calls, "cached": cached, "truncated": truncated}
        for purpose, calls, cached, truncated in rows
    }


def record_outcomes(
    db_path: str | Path, run_id: str, asset_key: str, purpose: str, outcomes: Mapping[str, Any]
) -> None:
    """Store ``outcomes`` (keys of ``OUTCOME_COLUMNS``) on the step's ``llm_usage`` row for ``purpose``.

    The row written by :meth:`UsageMeter.persist` is updated (the first one, if the purpose used
    several models); a step that made no call and hit no cache gets a row of zero counts, so the
    outcome is recorded either way.
    """
    unknown = set(outcomes) - set(OUTCOME_COLUMNS)
    if unknown:
        raise ValueError(f"unknown outcome column(s): {', '.join(sorted(unknown))}")
    values = {k: json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v for k, v in outcomes.items()}
    usage_table.set_outcomes(db_path, run_id, asset_key, purpose, values)


def report_outcomes(db_path: Path, run_ids: list[str]) -> dict[str, Any]:
    """Reports reused, regenerated (with reasons) and deleted by these runs' corpus step ({} if none)."""
    row = usage_table.latest_outcomes(db_path, run_ids)
    if row is None:
        return {}
    reused, regenerated, deleted, reasons = row
    return {
        "total": reused + regenerated,
        "reused": reused,
        "regenerated": regenerated,
        "deleted": deleted,
        "reasons": json.loads(reasons or "{}"),
    }
