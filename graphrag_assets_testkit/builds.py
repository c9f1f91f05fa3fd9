"""Run `index` in a new process and read back the tables a build publishes, to compare builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from graphrag_assets.storage.database import connect, frame_of

# every table a build writes, with the columns that sort it into one order
TABLE_ORDER = {
    "entities": ["title"],
    "relationships": ["source", "target"],
    "communities": ["level", "community"],
    "community_reports": ["level", "community"],
    "text_units": ["id"],
    "documents": ["id"],
    "covariates": ["id"],
    "graph_extractions": ["text_unit_id", "record_index"],
    "text_unit_embeddings": ["id"],
    "entity_embeddings": ["id"],
    "community_report_embeddings": ["id"],
    "corpus_manifest": ["document_key"],
    "entity_aliases": ["alias"],
}
# the tables the corpus run publishes (a failed or killed corpus run must leave them as they were)
CORPUS_TABLES = (
    "entities",
    "relationships",
    "communities",
    "community_reports",
    "entity_embeddings",
    "corpus_manifest",
)
IGNORED_COLUMNS = {"period", "creation_date"}  # the run date and file modification times
NEW_DOCUMENT = (
    "Captain Ilse Marrow sailed the schooner Wren to Port Auberon. "
    "Ilse Marrow met Helga Brandt at the Port Auberon harbour office.\n"
)


def published_tables(root: Path) -> dict[str, pl.DataFrame]:
    """Every table the tests of rebuilds compare that this index has, sorted, run dates left out."""
    out = {}
    with connect(root / "data" / "graphrag.duckdb", read_only=True) as conn:
        present = {row[0] for row in conn.execute("select table_name from information_schema.tables").fetchall()}
        for table, order in TABLE_ORDER.items():
            if table in present:
                frame = frame_of(conn.sql(f"select * from {table}"))
                out[table] = frame.drop([c for c in frame.columns if c in IGNORED_COLUMNS]).sort(order)
    return out


def env_without_endpoint() -> dict[str, str]:
    """This process's environment without a model endpoint or project root from the developer's shell."""
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT")}


def run_index(root: Path, *args: str, fault: tuple[object, ...] = ()) -> subprocess.CompletedProcess:
    """`index` (with CLI ``args``) in a new process; with ``fault`` (kind, statement, occurrence: see
    publish_fault) it fails there."""
    command = (
        ["-m", "graphrag_assets_testkit.publish_fault", *map(str, fault)]
        if fault
        else ["-m", "graphrag_assets.cli.main"]
    )
    return subprocess.run(
        [sys.executable, *command, "index", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env_without_endpoint(),
    )
