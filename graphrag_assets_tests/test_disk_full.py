"""A full disk is reported in one sentence naming the folder, and nothing is published.

The index database is put on a small tmpfs (mounting one needs root: skipped otherwise). The run
fails when DuckDB cannot write; the user must read which disk is full and what to do, not a
DuckDB error, a traceback, or "cannot rollback - no transaction is active" (the rollback after a
failed commit used to hide the cause). With space again, `index` builds the index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from graphrag_assets.storage.database import transaction
from graphrag_assets_testkit.builds import run_index
from graphrag_assets_testkit.projects import make_project

DISK_BYTES = 768 * 1024  # far less than the sample's index needs


@pytest.fixture
def small_disk(tmp_path: Path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(disk)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_is_named_in_one_sentence_and_the_next_index_succeeds(small_disk: Path, tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    database = small_disk / "graphrag.duckdb"
    (root / "graphrag.yaml").write_text(
        f"method: nlp\nllm:\n  embeddings: local\nstorage:\n  database: {database}\n", encoding="utf-8"
    )

    full = run_index(root)
    shown = full.stdout + full.stderr
    assert full.returncode != 0
    assert f"the disk holding {small_disk} is full; free space and run index again (nothing was published)" in shown, (
        shown[-3000:]
    )
    assert "cannot rollback" not in shown and "Traceback" not in shown

    (root / "graphrag.yaml").write_text("method: nlp\nllm:\n  embeddings: local\n", encoding="utf-8")
    again = run_index(root)
    assert again.returncode == 0, again.stderr


class CommitFails:
    """A DuckDB connection whose commit fails as on a full disk, after which DuckDB has no transaction."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def execute(self, sql: str, *args):
        if sql == "commit":
            self._conn.execute("rollback")
            raise duckdb.IOException('Could not write file "x.duckdb.wal": No space left on device')
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


def test_a_failed_commit_keeps_its_own_error_not_the_rollbacks(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "x.duckdb")) as conn:
        with pytest.raises(duckdb.IOException, match="No space left on device"):
            with transaction(CommitFails(conn)):
                conn.execute("create table t as select 1 as id")
        assert conn.execute("select count(*) from information_schema.tables where table_name = 't'").fetchone() == (0,)
