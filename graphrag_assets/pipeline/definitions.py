"""Dagster definitions for one project root.

``dagster dev`` (see workspace.yaml) loads ``defs`` from this module with the project root taken
from ``$GRAPHRAG_ROOT`` or the current directory; the CLI calls :func:`build_definitions` itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dagster import (
    AssetSelection,
    Definitions,
    ExecutorDefinition,
    InMemoryIOManager,
    define_asset_job,
    in_process_executor,
)

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.assets.communities import communities
from graphrag_assets.pipeline.assets.embeddings import (
    community_report_embeddings,
    entity_embeddings,
    text_unit_embeddings,
)
from graphrag_assets.pipeline.assets.extraction import extract
from graphrag_assets.pipeline.assets.graph import graph
from graphrag_assets.pipeline.assets.ingest import ingest
from graphrag_assets.pipeline.assets.publish import corpus_manifest
from graphrag_assets.pipeline.assets.reports import community_reports
from graphrag_assets.pipeline.automation import build_automation
from graphrag_assets.pipeline.eval_job import eval_job
from graphrag_assets.pipeline.io_manager import DuckDBPolarsIOManager
from graphrag_assets.pipeline.partitions import CORPUS_JOB, DOCUMENT_PARTITIONS, DOCUMENTS_JOB
from graphrag_assets.pipeline.query_job import query_job
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.pipeline.shared_publish import shared_assets
from graphrag_assets.pipeline.workers import SHARD_REF_IO_MANAGER, SHARD_REFS, build_workers_job

DOCUMENT_ASSETS = AssetSelection.assets(ingest, extract, text_unit_embeddings)
CORPUS_ASSETS = AssetSelection.assets(
    graph, communities, community_reports, entity_embeddings, community_report_embeddings, corpus_manifest
)


def build_definitions(
    root: str | Path, overrides: dict[str, Any] | None = None, corpus_executor: ExecutorDefinition | None = None
) -> Definitions:
    """Definitions for the project at ``root``; ``overrides`` (e.g. CLI flags) apply on top of graphrag.yaml.

    ``corpus_executor``: runs the corpus job's steps (default: in the process that runs the job;
    ``index`` gives big corpora a process per step, :mod:`graphrag_assets.pipeline.corpus_processes`).
    """
    settings = load_settings(root, overrides=overrides)
    document_job = define_asset_job(
        DOCUMENTS_JOB,
        selection=DOCUMENT_ASSETS,
        partitions_def=DOCUMENT_PARTITIONS,
        description="Per-document assets (ingest, extraction, text-unit embeddings) for the selected document partitions.",
    )
    publishing = shared_assets(settings)  # storage.shared_url: the corpus job ends by publishing the build
    corpus_job = define_asset_job(
        CORPUS_JOB,
        selection=CORPUS_ASSETS | AssetSelection.assets(*publishing),
        executor_def=corpus_executor,
        description="Corpus-wide assets: entity graph, communities, reports and their embeddings, rebuilt from all documents "
        "and published together by corpus_manifest (and to storage.shared_url by shared_build).",
    )
    sensors, schedules = build_automation(
        settings.incremental.sensor_interval_seconds, settings.incremental.schedule_cron, [document_job, corpus_job]
    )
    return Definitions(
        sensors=sensors,
        schedules=schedules,
        assets=[
            ingest,
            extract,
            text_unit_embeddings,
            graph,
            communities,
            community_reports,
            entity_embeddings,
            community_report_embeddings,
            corpus_manifest,
            *publishing,
        ],
        jobs=[document_job, corpus_job, query_job, eval_job, build_workers_job(settings)],
        resources={
            "project": GraphRAGProject(root=str(settings.root), overrides_json=json.dumps(overrides or {})),
            "io_manager": DuckDBPolarsIOManager(database=str(settings.database_path)),
            "query_io_manager": InMemoryIOManager(),
            SHARD_REFS: SHARD_REF_IO_MANAGER,
        },
        executor=in_process_executor,
    )


defs = build_definitions(os.environ.get("GRAPHRAG_ROOT") or os.getcwd())
