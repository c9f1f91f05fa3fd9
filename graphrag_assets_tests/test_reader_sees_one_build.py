"""A reader sees the previous build whole or the new one whole, wherever an update is killed.

An incremental `index` (one document edited, one added, one deleted) is killed with SIGKILL at
each boundary between its steps: after each per-document write and before it is recorded, when
the corpus run starts, while it stages its tables, and inside the publish. After each kill a
reader — the tables and vector indexes a query loads — must find every text unit the graph cites,
with a vector in the LanceDB version the build recorded, and the published tables must equal the
previous build; the next `index` must end equal to a clean build of the new input.
"""

from __future__ import annotations

import random
import shutil
import signal
import time
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from graphrag_assets_testkit.builds import published_tables, run_index
from graphrag_assets_testkit.crash_fuzz import BUILD_TABLES, SETTINGS, assert_one_whole_build, edit, kill_at_random
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.publish_fault import IN_THE_PUBLISH

# (statement, occurrence) just before which the process is killed; document_steps is written once a
# step's rows are: ingest (documents, text units), extraction (records, status), text-unit vectors.
KILL_POINTS = {
    "documents-written": ('insert into "document_steps"', 1),
    "text-units-written": ('insert into "document_steps"', 2),
    "extraction-written": ('insert into "document_steps"', 4),
    "text-unit-vectors-written": ('insert into "document_steps"', 5),
    "corpus-run-starting": ("drop schema if exists staging", 1),
    "graph-staged": ('create or replace table "_staged_entities"', 1),
    "inside-the-publish": IN_THE_PUBLISH,
}
RANDOM_KILLS = 2  # bench/bench_crash_fuzz.py runs many


@pytest.fixture(scope="module")
def previous_build(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline sample index with LanceDB tables, built (the state every trial starts from)."""
    root = tmp_path_factory.mktemp("previous") / "project"
    shutil.copytree(nlp_index, root)
    (root / "graphrag.yaml").write_text(SETTINGS, encoding="utf-8")
    built = run_index(root)
    assert built.returncode == 0, built.stderr
    return root


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The edited input indexed from scratch."""
    root = make_project(tmp_path_factory.mktemp("clean") / "project")
    (root / "graphrag.yaml").write_text(SETTINGS, encoding="utf-8")
    edit(root)
    built = run_index(root)
    assert built.returncode == 0, built.stderr
    return root


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_killed_update_leaves_the_previous_build_whole_and_the_next_index_finishes_it(
    previous_build: Path, clean_build: Path, tmp_path: Path, point: str
) -> None:
    root = tmp_path / "project"
    shutil.copytree(previous_build, root)
    before = published_tables(root)
    edit(root)

    killed = run_index(root, fault=("kill", *KILL_POINTS[point]))
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    assert_one_whole_build(root)
    after = published_tables(root)
    for table in BUILD_TABLES:
        assert_frame_equal(after[table], before[table])

    finished = run_index(root)
    assert finished.returncode == 0, finished.stderr
    assert_one_whole_build(root)
    expected, ours = published_tables(clean_build), published_tables(root)
    assert sorted(ours) == sorted(expected)
    for table, frame in expected.items():
        assert_frame_equal(ours[table], frame)


def test_an_update_killed_at_a_random_moment_leaves_one_build_and_the_next_index_finishes_it(
    previous_build: Path, clean_build: Path, tmp_path: Path
) -> None:
    rng = random.Random(33)
    root = tmp_path / "timed"
    shutil.copytree(previous_build, root)
    edit(root)
    started = time.monotonic()
    assert run_index(root).returncode == 0
    longest = time.monotonic() - started
    for trial in range(RANDOM_KILLS):
        kill_at_random(previous_build, clean_build, tmp_path / f"trial{trial}", rng, longest)
