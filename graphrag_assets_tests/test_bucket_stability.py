"""A document's bucket never moves: not between runs, not between processes.

The sensor (in the Dagster daemon) and the run it requests are different processes, and an index
is updated over months; a bucket computed with anything salted per process (Python's ``hash()``)
would send a document to another partition each time. Comparing ``bucket_of`` with itself in one
process cannot notice that, so the values are pinned and recomputed under other hash seeds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from graphrag_assets.core.buckets import bucket_of

PINNED = {
    ("a.txt", 16): "bucket-02-of-16",
    ("a.txt", 256): "bucket-162-of-256",
    ("notes/plain-file_1.txt", 16): "bucket-07-of-16",
    ("notes/plain-file_1.txt", 256): "bucket-055-of-256",
    ("café.md", 256): "bucket-152-of-256",
    ("archive/kestrel_accord_summary.md", 256): "bucket-233-of-256",
    ("interviews.jsonl", 256): "bucket-157-of-256",
}

COMPUTE = (
    "import json, sys\n"
    "from graphrag_assets.core.buckets import bucket_of\n"
    "print(json.dumps([bucket_of(key, count) for key, count in json.loads(sys.argv[1])]))\n"
)


def test_bucket_values_are_pinned() -> None:
    assert {(key, count): bucket_of(key, count) for key, count in PINNED} == PINNED


@pytest.mark.timeout(120)
def test_other_processes_with_other_hash_seeds_agree() -> None:
    here = [bucket_of(key, count) for key, count in PINNED]
    keys = json.dumps(list(PINNED))
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", COMPUTE, keys], env=env, capture_output=True, text=True, timeout=60, check=True
        )
        assert json.loads(done.stdout) == here, f"PYTHONHASHSEED={seed}"
