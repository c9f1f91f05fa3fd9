"""Location of the optional reference material in ../shared (absent on a fresh clone).

Tests and benchmarks that use it skip cleanly when it is missing. ``GRAPHRAG_SHARED_DATA``
overrides the default location.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(os.environ.get("GRAPHRAG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
MS_VERBS_DATA = SHARED_DATA / "graphrag" / "tests" / "verbs" / "data"
CHRISTMAS_CAROL = SHARED_DATA / "nano-graphrag" / "tests" / "mock_data.txt"
NANO_MOCK_CACHE = SHARED_DATA / "nano-graphrag" / "tests" / "fixtures" / "mock_cache.json"


def require(path: Path) -> Path:
    """Skip the calling test when ``path`` (part of ../shared) is not available."""
    if not path.exists():
        pytest.skip(f"reference data not available: {path}")
    return path
