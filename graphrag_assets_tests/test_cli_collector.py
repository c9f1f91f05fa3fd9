"""The command line's garbage-collector settings (cli/collector.py) are in force where they pay.

Every command starts with the raised young threshold; an `index` with work to do freezes what its
imports made before the runs start. Both are read inside a real console-script process, at its
exit, after the command ran.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from graphrag_assets.cli.collector import OLDER_THRESHOLD, YOUNG_THRESHOLD

# Reported from atexit: `index` ends its process through cli/process_exit.exit_now.
PROBE = """
import atexit, gc, json, sys
def report():
    print(json.dumps({"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}), file=sys.stderr)
atexit.register(report)
sys.argv = ["graphrag-assets", *json.loads(sys.argv[1])]
from graphrag_assets.cli.main import main
try:
    main()
except SystemExit:
    pass
"""


def collector_after(args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT")}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, timeout=300, env=env)
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_a_reading_command_collects_less_often_and_freezes_nothing(nlp_index: Path) -> None:
    seen = collector_after(["status", "--root", str(nlp_index)])
    assert seen == {"threshold": [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD], "frozen": 0}


def test_an_index_with_work_freezes_its_imports_before_running(nlp_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    (root / "data" / "input" / "added.txt").write_text("Maren Falk repaired the lighthouse at Skagen in May.\n", encoding="utf-8")
    seen = collector_after(["index", "--root", str(root), "--json"])
    assert seen["threshold"] == [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD]
    assert seen["frozen"] > 100_000  # Dagster, polars and the definitions, at least
