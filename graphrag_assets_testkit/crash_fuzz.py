"""Kill an incremental `index` at a random moment, then check what a reader sees and what the next
`index` makes of it (used by ``test_reader_sees_one_build`` with a few trials and by
``bench/bench_crash_fuzz.py`` with many).

A trial copies the previous build, edits its input (one document edited, one added, one
deleted), starts `index`, and sends SIGKILL after a random delay (up to the time an uninterrupted
update takes, so some trials are killed in every step and some not at all). Then a reader must see
one build whole (:func:`assert_one_whole_build`) equal to the previous build or to the new one,
and the next `index` must end equal to a clean build of the new input.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.storage.corpus import vector_versions
from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, lancedb_module
from graphrag_assets_testkit.builds import (
    NEW_DOCUMENT,
    TABLE_ORDER,
    env_without_endpoint,
    published_tables,
    run_index,
)
from graphrag_assets_testkit.projects import query_db

# LanceDB tables kept, and queries searching them (not DuckDB's vectors in memory)
SETTINGS = (
    "method: nlp\nllm:\n  embeddings: local\nstorage:\n  lancedb_tables: always\n"
    "query:\n  in_memory_search_max_tokens: 0\n"
)
EDITED, ADDED, DELETED = "letter_holm_to_varga.txt", "marrow_log.txt", "vellmouth_chronicle.md"
# What a build is: the graph and the documents, text units and vectors it cites (not the
# pipeline's own per-document state: source_files, graph_extractions, extraction_status).
BUILD_TABLES = [table for table in TABLE_ORDER if table != "graph_extractions"]


def edit(root: Path) -> None:
    inputs = root / "data" / "input"
    (inputs / EDITED).write_text("Søren Holm handed the Kestrel Point Lighthouse to Mira Santos.\n", encoding="utf-8")
    (inputs / ADDED).write_text(NEW_DOCUMENT, encoding="utf-8")
    (inputs / DELETED).unlink()


def assert_one_whole_build(root: Path) -> None:
    """What a query reads is one build: every text unit the graph cites exists and has a vector."""
    settings = load_settings(root, environ={})
    data = load_query_data(settings)
    units = set(data.text_units["id"].to_list())
    cited = {
        unit
        for frame in (data.entities, data.relationships)
        for units_of_row in frame["text_unit_ids"].to_list()
        for unit in units_of_row or []
    }
    assert cited and cited <= units, sorted(cited - units)[:5]
    assert set(data.text_units["document_id"].to_list()) <= set(data.documents["id"].to_list())
    table = lancedb_module().connect(str(settings.lancedb_path)).open_table(TEXT_UNIT_TABLE)
    table.checkout(vector_versions(settings.database_path)[TEXT_UNIT_TABLE])
    assert set(table.to_arrow().column("id").to_pylist()) == units
    assert {row[0] for row in query_db(root, "select id from text_unit_embeddings")} == units


def same_tables(ours: dict[str, pl.DataFrame], theirs: dict[str, pl.DataFrame], names) -> bool:
    return all(name in ours and name in theirs and ours[name].equals(theirs[name]) for name in names)


@dataclass
class Trial:
    delay: float  # seconds after the start when SIGKILL was sent
    killed: bool  # False: the update had finished before
    seen: str  # the build a reader saw after the kill: "previous" or "new"


def kill_at_random(previous: Path, clean: Path, root: Path, rng: random.Random, longest: float) -> Trial:
    """One trial (see the module docstring); raises AssertionError when anything is wrong."""
    shutil.copytree(previous, root)
    before = published_tables(root)
    edit(root)
    delay = rng.uniform(0.0, longest)
    process = subprocess.Popen(
        [sys.executable, "-m", "graphrag_assets.cli.main", "index", "--root", str(root)],
        env=env_without_endpoint(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(delay)
        killed = process.poll() is None
        if killed:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=600)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert_one_whole_build(root)
    after, expected = published_tables(root), published_tables(clean)
    seen = "previous" if same_tables(after, before, BUILD_TABLES) else "new"
    assert seen == "previous" or same_tables(after, expected, BUILD_TABLES), "a reader saw a mix of two builds"
    finished = run_index(root)
    assert finished.returncode == 0, finished.stderr
    assert_one_whole_build(root)
    ours = published_tables(root)
    assert sorted(ours) == sorted(expected) and same_tables(ours, expected, expected), "not equal to a clean build"
    return Trial(delay, killed, seen)
