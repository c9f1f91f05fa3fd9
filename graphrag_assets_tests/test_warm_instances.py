"""The warm DuckDB instance: cheap connections while a file is in use, and the file let go of after.

In-process tests check the configuration rules (read-only beside a read-write anchor, settings,
conflicts within one thread) and that a long hold rests only for a process that signalled it waits;
the others start real processes: one that keeps writing while this one reads (and signals), one
that finds the file free once the anchor's idle window has passed, and one that exits with its
anchor open.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage import warm
from graphrag_assets.storage.database import connect, let_go, reading
from graphrag_assets.storage.readonly_sql import run_readonly_query

QUICK = 0.5  # seconds: "at once" (a cold open is ~0.015 s; waiting for a lock would be 30 s)


@pytest.fixture
def database(tmp_path: Path):
    path = tmp_path / "index.duckdb"
    with connect(path) as conn:
        conn.execute("create table t (n bigint)")
    let_go(path)
    yield path
    let_go(path)


@pytest.fixture
def long_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The anchor stays open for the whole test unless let go of (no timing luck in the asserts)."""
    monkeypatch.setattr(warm, "IDLE_SECONDS", 60.0)
    monkeypatch.setattr(warm, "HOLD_SECONDS", 60.0)


def _direct_read_only_open(path: Path) -> bool:
    """Whether DuckDB itself opens the file read-only in this process (not while a read-write instance is open)."""
    try:
        duckdb.connect(str(path), read_only=True).close()
        return True
    except duckdb.ConnectionException:
        return False


def test_connections_in_a_burst_share_one_instance_which_closes_when_idle(database: Path) -> None:
    opens = warm.warm_instances().stats.anchor_opens
    for n in range(30):
        with connect(database) as conn:
            conn.execute("insert into t values (?)", [n])
    assert warm.warm_instances().stats.anchor_opens - opens == 1
    assert not _direct_read_only_open(database)  # the read-write instance is still open
    deadline = time.monotonic() + 5
    while not _direct_read_only_open(database):
        assert time.monotonic() < deadline, "the idle anchor was never closed"
        time.sleep(warm.IDLE_SECONDS)
    with connect(database, read_only=True) as conn:
        assert conn.execute("select count(*) from t").fetchone() == (30,)


def test_a_read_only_connect_while_a_read_write_anchor_is_open_succeeds_at_once(
    database: Path, long_idle: None
) -> None:
    with connect(database) as conn:
        conn.execute("insert into t values (1)")
    started = time.monotonic()
    with connect(database, read_only=True) as conn:
        assert conn.execute("select count(*) from t").fetchone() == (1,)
    assert time.monotonic() - started < QUICK
    assert not _direct_read_only_open(database)  # it was served by the read-write instance
    let_go(database)
    assert _direct_read_only_open(database)


def test_a_write_after_reads_closes_the_idle_read_only_anchor_at_once(database: Path, long_idle: None) -> None:
    with connect(database, read_only=True) as conn:
        conn.execute("select count(*) from t").fetchall()
    started = time.monotonic()
    with connect(database) as conn:
        conn.execute("insert into t values (2)")
    assert time.monotonic() - started < QUICK


def test_a_connection_with_settings_while_anchored_does_not_wait_and_keeps_its_settings(
    database: Path, long_idle: None
) -> None:
    with connect(database) as conn:
        conn.execute("insert into t values (1)")
    started = time.monotonic()
    assert run_readonly_query(database, "select count(*) as n from t").to_dicts() == [{"n": 1}]
    assert time.monotonic() - started < QUICK
    secret = database.with_name("secret.txt")
    secret.write_text("not for sql", encoding="utf-8")
    with pytest.raises(UserError, match="--allow-file-access"):
        run_readonly_query(database, f"select * from read_text('{secret}')")
    with connect(database) as conn:  # and the plain connections that follow still work
        conn.execute("insert into t values (2)")


def test_a_connection_with_settings_waits_only_for_another_threads_connection(database: Path, long_idle: None) -> None:
    holding = threading.Event()

    def hold_for_a_moment() -> None:
        with connect(database) as conn:
            conn.execute("insert into t values (1)")
            holding.set()
            time.sleep(0.4)

    worker = threading.Thread(target=hold_for_a_moment)
    worker.start()
    holding.wait(5)
    started = time.monotonic()
    with connect(database, read_only=True, config={"enable_external_access": False}) as conn:
        assert conn.execute("select count(*) from t").fetchone() == (1,)
    waited = time.monotonic() - started
    worker.join()
    assert 0.2 < waited < 3


def test_a_conflict_with_a_connection_the_same_thread_holds_raises_at_once(database: Path) -> None:
    started = time.monotonic()
    with connect(database) as conn:
        conn.execute("insert into t values (1)")
        with pytest.raises(warm.ConnectionConflict, match="close it before"):
            with connect(database, read_only=True, config={"enable_external_access": False}):
                pass
    let_go(database)  # else reading() shares the warm read-write instance, and writing inside it works
    with reading(database):
        with connect(database, read_only=True) as conn:
            conn.execute("select 1").fetchall()
        with pytest.raises(warm.ConnectionConflict):
            with connect(database):
                pass
    assert time.monotonic() - started < 2 * QUICK


def test_threads_writing_at_once_share_the_instance_and_lose_nothing(database: Path) -> None:
    def write(first: int) -> None:
        for n in range(first, first + 40):
            with connect(database) as conn:
                conn.execute("insert into t values (?)", [n])

    threads = [threading.Thread(target=write, args=(k * 100,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with connect(database, read_only=True) as conn:
        assert conn.execute("select count(distinct n) from t").fetchone() == (160,)


def _wait_signal(database: Path) -> Path:
    return database.with_name(database.name + warm.WAIT_SIGNAL_SUFFIX)


def test_a_long_hold_is_kept_while_no_other_process_waits(database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like a cold index: the file in use for several holds, nobody waiting, so no close and no rest."""
    monkeypatch.setattr(warm, "IDLE_SECONDS", 60.0)
    monkeypatch.setattr(warm, "HOLD_SECONDS", 0.2)
    stats = warm.warm_instances().stats
    opens, rests = stats.anchor_opens, stats.rests
    ended = time.monotonic() + 1.0
    while time.monotonic() < ended:
        with connect(database) as conn:
            conn.execute("insert into t values (1)")
        time.sleep(0.01)
    assert (stats.anchor_opens - opens, stats.rests - rests) == (1, 0)
    assert not _wait_signal(database).exists()


def test_a_wait_signal_left_behind_makes_no_rest_until_it_changes(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiter killed while waiting leaves its signal; only a fresh touch means someone waits."""
    monkeypatch.setattr(warm, "IDLE_SECONDS", 60.0)
    monkeypatch.setattr(warm, "HOLD_SECONDS", 0.2)
    _wait_signal(database).touch()
    stats = warm.warm_instances().stats
    rests = stats.rests

    def write_for(seconds: float) -> None:
        ended = time.monotonic() + seconds
        while time.monotonic() < ended:
            with connect(database) as conn:
                conn.execute("insert into t values (1)")
            time.sleep(0.01)

    write_for(0.6)
    assert stats.rests == rests
    warm.signal_waiting(str(database.resolve()))
    write_for(0.6)
    assert stats.rests == rests + 1
    assert not _wait_signal(database).exists()  # the holder removed it when it rested


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_waiter_in_a_read_only_folder_cannot_signal_and_says_nothing(database: Path) -> None:
    database.parent.chmod(0o555)
    try:
        warm.signal_waiting(str(database.resolve()))
        assert not _wait_signal(database).exists()
    finally:
        database.parent.chmod(0o755)


_TRY_WRITE = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1]).close()
    print("opened")
except duckdb.IOException:
    print("locked")
"""


def _other_process_can_write(path: Path) -> bool:
    out = subprocess.run([sys.executable, "-c", _TRY_WRITE, str(path)], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() == "opened"


def test_another_process_can_write_once_the_idle_window_has_passed(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warm, "IDLE_SECONDS", 60.0)
    with connect(database) as conn:
        conn.execute("insert into t values (1)")
    assert not _other_process_can_write(database)  # the anchor holds the file meanwhile
    monkeypatch.setattr(warm, "IDLE_SECONDS", 0.075)
    with connect(database) as conn:  # the closer thread reads the new window when the file is next idle
        conn.execute("insert into t values (2)")
    time.sleep(0.3)
    assert _other_process_can_write(database)


_WRITER = """
import sys, time
from pathlib import Path
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.warm import warm_instances
path, stop = Path(sys.argv[1]), Path(sys.argv[2])
print("writing", flush=True)
while not stop.exists():
    with connect(path) as conn:
        conn.execute("insert into t values (1)")
    time.sleep(0.005)
print("rests", warm_instances().stats.rests, flush=True)
"""


def test_a_reader_in_another_process_gets_in_while_a_process_keeps_writing(database: Path, tmp_path: Path) -> None:
    """Like the CLI's ``status`` during an indexing run whose cache writer writes every few ms."""
    stop = tmp_path / "stop"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(database), str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "writing"
        time.sleep(0.5)
        waits, counts = [], []
        for _ in range(3):
            started = time.monotonic()
            with connect(database, read_only=True, wait_seconds=20) as conn:
                counts.append(conn.execute("select count(*) from t").fetchone()[0])
            let_go(database)  # this process's own read-only anchor would hold up the writer
            waits.append(time.monotonic() - started)
            time.sleep(0.3)
    finally:
        stop.touch()
        rests = writer.communicate(timeout=30)[0]
    assert writer.returncode == 0
    assert counts == sorted(counts) and counts[-1] > counts[0]  # the writer kept writing between reads
    # The writer never goes idle: each read got in during a rest the reader's wait signal asked for.
    assert int(rests.split()[1]) >= 3, rests
    assert not _wait_signal(database).exists()
    # A held file is let go of within HOLD_SECONDS and then left alone for REST_SECONDS, which the
    # reader's retries cannot miss; without the rest the median wait was 2-3 s here.
    bound = warm.HOLD_SECONDS + warm.REST_SECONDS
    assert sorted(waits)[1] < bound + 0.5 and max(waits) < bound + 3, waits


_EXIT_WARM = """
import sys
from graphrag_assets.storage.database import connect
with connect(sys.argv[1]) as conn:
    conn.execute("insert into t select range from range(1000)")
"""


def test_a_process_exiting_with_its_anchor_open_leaves_the_file_checkpointed(database: Path) -> None:
    subprocess.run([sys.executable, "-c", _EXIT_WARM, str(database)], check=True, timeout=60)
    assert not database.with_name(database.name + ".wal").exists()
    with connect(database, read_only=True) as conn:
        assert conn.execute("select count(*) from t").fetchone() == (1000,)


def test_a_cli_command_ends_with_the_file_let_go_of(tmp_path: Path, long_idle: None) -> None:
    from click.testing import CliRunner

    from graphrag_assets.cli.main import main
    from graphrag_assets_testkit.projects import make_project

    root = make_project(tmp_path / "project", with_sample=False)
    with connect(root / "data" / "graphrag.duckdb") as conn:  # a read-write instance, warm for a minute
        conn.execute("create table t (n bigint)")
    assert not _direct_read_only_open(root / "data" / "graphrag.duckdb")
    result = CliRunner().invoke(main, ["status", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert _direct_read_only_open(root / "data" / "graphrag.duckdb")


def test_an_in_process_dagster_run_ends_with_the_file_let_go_of(database: Path, long_idle: None) -> None:
    from dagster import DagsterInstance, Definitions, asset, define_asset_job  # ~1 s: only this test needs it

    from graphrag_assets.pipeline.runtime.uncaptured import execute_without_capture

    @asset
    def written() -> None:
        with connect(database) as conn:
            conn.execute("insert into t values (7)")

    job = Definitions(assets=[written], jobs=[define_asset_job("write_job")]).resolve_job_def("write_job")
    result = execute_without_capture(
        job, run_config={}, instance=DagsterInstance.ephemeral(), partition_key=None, tags={}
    )
    assert result.success
    assert _direct_read_only_open(database)
    with duckdb.connect(str(database), read_only=True) as conn:
        assert conn.execute("select n from t").fetchall() == [(7,)]
