"""A run's stdout and stderr go to Dagster's compute-log files and to the terminal, copied by a
thread (pipeline/runtime/compute_logs.py) instead of Dagster's ``tail -F`` and watcher processes.

The run happens in a child process whose stdout and stderr are pipes, as a terminal would be:
what a step prints (from Python or straight to the file descriptor) must reach both the pipes
and the files, and no process may be started for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.runtime.compute_logs import MirroredComputeLogManager
from graphrag_assets.pipeline.runtime.instance import open_instance

RUN = """
import json, os, subprocess, sys
started = []
original = subprocess.Popen.__init__
def record(self, args, *a, **k):
    started.append(args if isinstance(args, str) else " ".join(map(str, args)))
    original(self, args, *a, **k)
subprocess.Popen.__init__ = record

from dagster import asset, instance_for_test, materialize

@asset
def shout() -> None:
    print("python to stdout", flush=True)
    print("python to stderr", file=sys.stderr, flush=True)
    os.write(1, b"native to stdout\\n")

overrides = {"compute_logs": {"module": "graphrag_assets.pipeline.runtime.compute_logs", "class": "MirroredComputeLogManager",
                              "config": {"base_dir": sys.argv[1]}}}
with instance_for_test(overrides=overrides) as instance:
    assert materialize([shout], instance=instance).success
print(json.dumps([command for command in started if "tail" in command or "watch_orphans" in command]), file=sys.stderr)
"""


def test_a_runs_output_reaches_the_files_and_the_terminal_without_processes(tmp_path: Path) -> None:
    logs = tmp_path / "compute_logs"
    done = subprocess.run([sys.executable, "-c", RUN, str(logs)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "python to stdout" in done.stdout and "native to stdout" in done.stdout
    assert "python to stderr" in done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []  # no tail, no watcher
    captured_out = "".join(path.read_text() for path in logs.rglob("*.out"))
    captured_err = "".join(path.read_text() for path in logs.rglob("*.err"))
    assert "python to stdout" in captured_out and "native to stdout" in captured_out
    assert "python to stderr" in captured_err
    assert list(logs.rglob("*.complete"))


def test_the_project_instance_uses_it(nlp_index: Path) -> None:
    with open_instance(load_settings(nlp_index)) as instance:
        assert isinstance(instance.compute_log_manager, MirroredComputeLogManager)
