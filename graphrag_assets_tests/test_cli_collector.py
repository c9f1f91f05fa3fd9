"""The command line's garbage-collector (cli/collector.py) and C allocator (cli/allocator.py)
settings are in force where they pay.

Every command starts with the raised young threshold; an `index` with work to do freezes what its
imports made before the runs start, and fixes glibc malloc's mapping threshold (a reading command
leaves malloc as it is). All are read inside a real console-script process, at its exit, after the
command ran: the allocator by what it does, whether a 30 MB block allocated after a 31 MB one was
freed is mapped on its own (glibc's default raises the threshold to the freed block's size; fixed
at 256 KB it stays there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from graphrag_assets.cli.allocator import M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
from graphrag_assets.cli.collector import OLDER_THRESHOLD, YOUNG_THRESHOLD

# Reported from atexit: `index` ends its process through cli/process_exit.exit_now.
PROBE = """
import atexit, ctypes, gc, json, sys
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
def block_mapped_after_larger_free():
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
    libc.free(libc.malloc(31 << 20))
    before = libc.mallinfo2().hblks
    block = libc.malloc(30 << 20)  # larger than any free space the run left in the heap
    mapped = libc.mallinfo2().hblks - before == 1
    libc.free(block)
    return mapped
def report():
    seen = {"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count(), "mapped": block_mapped_after_larger_free()}
    print(json.dumps(seen), file=sys.stderr)
atexit.register(report)
sys.argv = ["graphrag-assets", *json.loads(sys.argv[1])]
from graphrag_assets.cli.main import main
try:
    main()
except SystemExit:
    pass
"""


def collector_after(args: list[str]) -> dict:
    unset = (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GRAPHRAG_ROOT",
        "MALLOC_ARENA_MAX",
        "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_TRIM_THRESHOLD_",
    )
    env = {k: v for k, v in os.environ.items() if k not in unset}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, timeout=300, env=env
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_a_reading_command_collects_less_often_and_freezes_nothing(nlp_index: Path) -> None:
    seen = collector_after(["status", "--root", str(nlp_index)])
    assert seen == {"threshold": [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD], "frozen": 0, "mapped": False}


def test_an_index_with_work_freezes_its_imports_before_running(nlp_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    (root / "data" / "input" / "added.txt").write_text(
        "Maren Falk repaired the lighthouse at Skagen in May.\n", encoding="utf-8"
    )
    seen = collector_after(["index", "--root", str(root), "--json"])
    assert seen["threshold"] == [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD]
    assert seen["frozen"] > 100_000  # Dagster, polars and the definitions, at least
    assert seen["mapped"]  # malloc's mapping threshold fixed (cli/allocator.py)


def test_the_allocator_leaves_a_setting_the_environment_gave() -> None:
    code = "import json; from graphrag_assets.cli.allocator import tune_allocator; print(json.dumps(tune_allocator()))"
    env = {**os.environ, "MALLOC_ARENA_MAX": "4"}
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert json.loads(done.stdout) == [M_MMAP_THRESHOLD, M_TRIM_THRESHOLD]


def test_the_processes_index_starts_get_the_same_allocator_settings() -> None:
    code = (
        "import json, os; from graphrag_assets.cli.allocator import tune_allocator; tune_allocator(); "
        "print(json.dumps({k: v for k, v in os.environ.items() if k.startswith('MALLOC_')}))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert json.loads(done.stdout) == {
        "MALLOC_ARENA_MAX": "2",
        "MALLOC_MMAP_THRESHOLD_": str(256 << 10),
        "MALLOC_TRIM_THRESHOLD_": str(256 << 10),
    }


def test_importing_the_package_asks_both_jemallocs_to_purge_at_once_unless_the_user_chose() -> None:
    """polars and DuckDB each read their jemalloc's settings once, when first loaded: importing the
    package (which every entry point does first) sets them, and keeps what the user set."""
    code = "import json, os, graphrag_assets; print(json.dumps([os.environ.get(v) for v in ('_RJEM_MALLOC_CONF', 'DUCKDB_JE_MALLOC_CONF')]))"
    env = {k: v for k, v in os.environ.items() if k not in ("_RJEM_MALLOC_CONF", "DUCKDB_JE_MALLOC_CONF")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert json.loads(done.stdout) == ["dirty_decay_ms:0,muzzy_decay_ms:0"] * 2
    env["DUCKDB_JE_MALLOC_CONF"] = "narenas:2"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert json.loads(done.stdout) == ["dirty_decay_ms:0,muzzy_decay_ms:0", "narenas:2"]
