"""Per-document extraction: ``graph_extractions`` and ``extraction_status``.

``standard``: the LLM reads every chunk (with gleanings, and claims when enabled).
``nlp`` / ``fast``: noun phrases are extracted offline; the co-occurrence graph is built corpus-wide.

A document whose chunks cannot be extracted (the model failed after its retries) gets no rows
and an ``extraction_status`` of ``failed``; the other documents of the run are stored normally.
In a single-document run the step then fails, so the partition shows as failed in Dagster; in a
range run the caller re-runs failed documents one by one (see :mod:`graphrag_assets.pipeline.indexing`).
"""

from dataclasses import dataclass, field

import polars as pl
from dagster import AssetExecutionContext, AssetKey, AssetOut, Failure, MetadataValue, Output, multi_asset

from graphrag_assets.core import schemas
from graphrag_assets.core.progress import Counter, warn
from graphrag_assets.index.graph_extraction import extract_graph_records, extraction_plan
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.noun_phrases import noun_phrase_records
from graphrag_assets.pipeline.assets.metadata import describe_partitions, document_table, preview
from graphrag_assets.pipeline.assets.model_session import ModelSession, StepScope, step_scope
from graphrag_assets.pipeline.io_manager import DocumentRows
from graphrag_assets.pipeline.partitions import DOCUMENT_PARTITIONS, PARTITION_METADATA, SINGLE_RUN
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.project.document_work import step_work
from graphrag_assets.storage.tables import read_table


@multi_asset(
    outs={
        "graph_extractions": AssetOut(
            description="One row per record extracted from a text unit: entities, relationships and claims (standard method) or noun phrases (nlp/fast).",
            metadata=PARTITION_METADATA,
        ),
        "extraction_status": AssetOut(
            description="Per document: whether extraction succeeded, units and records, and the error when it failed.",
            metadata=PARTITION_METADATA,
        ),
    },
    deps=[AssetKey("text_units")],
    partitions_def=DOCUMENT_PARTITIONS,
    backfill_policy=SINGLE_RUN,
    group_name="extract",
    can_subset=False,
)
def extract(context: AssetExecutionContext, project: GraphRAGProject):
    settings = project.settings
    keys = step_work(settings, list(context.partition_keys), "graph_extractions")
    units = read_table(settings.database_path, "text_units", partition_column="document_key", partition_keys=keys)
    units = units if units is not None else schemas.empty_frame(schemas.TEXT_UNITS)
    result = extract_documents(step_scope(context, settings, _partition_label(context)), keys, units)
    method = settings.resolved_method

    def describe_records(rows: pl.DataFrame, bucketed: bool) -> dict:
        by_type = dict(rows.group_by("record_type").agg(pl.len()).iter_rows()) if rows.height else {}
        return {
            "method": method,
            "records": rows.height,
            **{f"records/{kind}": count for kind, count in sorted(by_type.items())},
            "preview": preview(rows.select("record_type", "title", "type", "source", "target", "description")),
        }

    describe_partitions(context, "graph_extractions", result.records, describe_records, run_wide=result.metadata)
    yield Output(DocumentRows(result.records, keys), output_name="graph_extractions")
    describe_partitions(context, "extraction_status", result.status, _describe_status)
    yield Output(DocumentRows(result.status, keys), output_name="extraction_status")
    # A failure in a single-partition run (a document, or a bucket: the retry of a failed
    # document) fails the step, so Dagster shows the partition as failed; the rows of the other
    # documents were written above. In a range run the caller retries failed documents.
    failed = result.failed
    if failed and len(context.partition_keys) == 1:
        key = sorted(failed)[0]
        raise Failure(description=f"extraction of {key} failed: {failed[key]}", metadata={"document_key": key})


@dataclass(frozen=True)
class ExtractionResult:
    """The records and status rows of the documents a step extracted, what failed, and run-wide metadata."""

    records: pl.DataFrame
    status: pl.DataFrame
    failed: dict[str, str]  # document key -> error message
    metadata: dict


def extract_documents(scope: StepScope, keys: list[str], units: pl.DataFrame) -> ExtractionResult:
    """Extract the text ``units`` of the documents ``keys``: the body of the ``extract`` asset
    without Dagster, so a worker's shard runs the very same step."""
    settings = scope.settings
    outcomes = _Outcomes()
    metadata: dict = {}
    if method_steps(settings.resolved_method).extraction == "model":
        records, metadata_extra = _llm_extraction(scope, units, outcomes)
        metadata.update(metadata_extra)
    else:
        progress = Counter("noun phrases", units.height, scope.log).start()
        records = noun_phrase_records(units.select("id", "text", "document_key"), settings.nlp.max_word_length)
        progress.step(units.height)

    failed, cut_off = outcomes.failed, outcomes.cut_off
    unit_counts = dict(units.group_by("document_key").agg(pl.len()).iter_rows())
    record_counts = dict(records.group_by("document_key").agg(pl.len()).iter_rows()) if not records.is_empty() else {}
    status = pl.DataFrame(
        [
            {
                "document_key": key,
                "status": "failed" if key in failed else "incomplete" if key in cut_off else "ok",
                "text_units": unit_counts.get(key, 0),
                "failed_units": outcomes.failed_units.get(key, 0),
                "records": record_counts.get(key, 0),
                "parse_failures": outcomes.parse_failures.get(key, 0),
                "error": failed.get(key),
            }
            for key in keys
        ],
        schema=schemas.EXTRACTION_STATUS,
    )
    return ExtractionResult(records, status, failed, metadata)


def _describe_status(rows: pl.DataFrame, bucketed: bool) -> dict:
    if bucketed:
        return {
            "documents_extracted": rows.height,
            "failed": rows.filter(pl.col("status") == "failed").height,
            "documents": document_table(rows.select("document_key", "status", "text_units", "records", "error")),
        }
    if not rows.height:
        return {"status": "up to date"}
    row = rows.row(0, named=True)
    return {name: value for name, value in row.items() if name != "document_key" and value is not None}


@dataclass
class _Outcomes:
    """What went wrong per document (by document key), for the ``extraction_status`` rows."""

    failed: dict[str, str] = field(default_factory=dict)  # error message
    failed_units: dict[str, int] = field(default_factory=dict)
    parse_failures: dict[str, int] = field(default_factory=dict)
    cut_off: set[str] = field(default_factory=set)  # an answer cut off at the token limit: extracted again next time


def _llm_extraction(scope: StepScope, units: pl.DataFrame, outcomes: _Outcomes) -> tuple[pl.DataFrame, dict]:
    settings = scope.settings
    plan = extraction_plan(settings.extraction, settings.root)
    progress = Counter("extract graph", units.height, scope.log).start()
    with ModelSession(scope) as session:
        output = session.run(
            extract_graph_records(
                session.chat,
                units.select("id", "text", "document_key"),
                plan,
                on_unit_done=lambda done, total: progress.step(),
            )
        )
    usage = session.metadata()
    failed, failed_units, parse_failures = outcomes.failed, outcomes.failed_units, outcomes.parse_failures
    for unit in output.failed_units:
        failed.setdefault(unit.document_key, unit.message)
        failed_units[unit.document_key] = failed_units.get(unit.document_key, 0) + 1
    unit_docs = dict(units.select("id", "document_key").iter_rows())
    for unit_id, failures in output.parse_failures.items():
        doc = unit_docs.get(unit_id, "")
        parse_failures[doc] = parse_failures.get(doc, 0) + len(failures)
    outcomes.cut_off.update(unit_docs.get(unit_id, "") for unit_id in output.truncated_units)
    for key, message in sorted(failed.items()):
        warn(f"extraction of {key} failed ({failed_units[key]} text unit(s)): {message}", scope.log)
    if output.empty_units:
        warn(
            f"{len(output.empty_units)} of {units.height} text unit(s) gave no entity or relationship from chat model "
            f"'{output.model}' (first: {output.empty_units[0]}); check that the model follows the extraction format "
            "('graphrag-assets doctor' shows what the server does).",
            scope.log,
        )
    records = output.records.filter(~pl.col("document_key").is_in(list(failed)))
    metadata = {
        **usage,
        "parse_failures": output.parse_failure_count,
        "empty_units": len(output.empty_units),
        "ignored_segments": output.ignored_segments,
        "parse_failures_by_unit": MetadataValue.json(
            {unit: [f.reason for f in failures][:5] for unit, failures in list(output.parse_failures.items())[:20]}
        ),
    }
    return records, metadata


def _partition_label(context: AssetExecutionContext) -> str:
    keys = list(context.partition_keys)
    return keys[0] if len(keys) == 1 else f"{keys[0]}...{keys[-1]} ({len(keys)})"
