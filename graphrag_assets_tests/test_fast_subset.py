"""`make test-fast` runs everything but the end-to-end tests, which are marked `slow` at collection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def collected(marker: str) -> set[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            marker,
            "-p",
            "no:cacheprovider",
            "graphrag_assets_tests",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}


def test_the_fast_subset_leaves_out_end_to_end_runs_and_keeps_unit_tests() -> None:
    fast, slow = collected("not slow"), collected("slow")
    assert "graphrag_assets_tests/test_graph_ranking.py" in fast and "graphrag_assets_tests/test_chunking.py" in fast
    assert {
        "graphrag_assets_tests/test_crash_consistency.py",
        "graphrag_assets_tests/test_serve_page.py",
    } <= slow - fast
    assert "graphrag_assets_tests/test_index_behaviour.py" in slow  # its tests copy the indexed sample (nlp_index)


def test_make_test_fast_runs_the_contracts_and_the_fast_subset() -> None:
    done = subprocess.run(["make", "-n", "test-fast"], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "lint-imports" in done.stdout and '-m "not slow"' in done.stdout
