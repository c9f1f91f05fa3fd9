"""Dagster definitions for one project root.

``dagster dev`` (see workspace.yaml) loads ``defs`` from this module with the project root taken
from ``$GRAPHRAG_ROOT`` or the current directory; the CLI calls :func:`build_definitions` itself.
"""

from __future__ import annotations

import json
import os
from typing import Any
from pathlib import Path

from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from graphrag_assets.assets.ingest import ingest
from graphrag_assets.assets.partitions import DOCUMENT_PARTITIONS
from graphrag_assets.resources import GraphRAGProject
from graphrag_assets.settings import load_settings
from graphrag_assets.storage.duckdb_io import DuckDBPolarsIOManager

DOCUMENT_ASSETS = AssetSelection.groups("ingest")
DOCUMENTS_JOB = "document_job"
CORPUS_JOB = "corpus_job"


def build_definitions(root: str | Path, overrides: dict[str, Any] | None = None) -> Definitions:
    """Definitions for the project at ``root``; ``overrides`` (e.g. CLI flags) apply on top of graphrag.yaml."""
    settings = load_settings(root, overrides=overrides)
    document_job = define_asset_job(
        DOCUMENTS_JOB,
        selection=DOCUMENT_ASSETS,
        partitions_def=DOCUMENT_PARTITIONS,
        description="Per-document assets for the selected document partitions.",
    )
    return Definitions(
        assets=[ingest],
        jobs=[document_job],
        resources={
            "project": GraphRAGProject(root=str(settings.root), overrides_json=json.dumps(overrides or {})),
            "io_manager": DuckDBPolarsIOManager(database=str(settings.database_path)),
        },
        executor=in_process_executor,
    )


defs = build_definitions(os.environ.get("GRAPHRAG_ROOT") or os.getcwd())
