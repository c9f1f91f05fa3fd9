"""Garbage-collector settings for a command-line process.

A command imports Dagster, polars, DuckDB and the model client (an `index` holds ~220,000
objects the collector tracks once Dagster and the definitions are loaded) and then works for
seconds to minutes. With CPython's default thresholds a young collection runs
every 700 net allocations and a full one every hundred young ones, and each full collection walks
every object the imports made. Measured on a cold index of *A Christmas Carol* (8.6 s): 1,000
young and 6 full collections, 0.58 s, 0.41 s of it full ones. With the young threshold at 10,000
and the imported objects frozen (moved out of the collector's reach: a one-shot process never
frees its modules), the same index made 64 young and no full collections, 0.21 s.

Reference counting still frees everything that is not in a cycle at once; only cyclic garbage
waits longer, up to 10,000 allocations instead of 700.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
OLDER_THRESHOLD = 10  # collections of the generation below before this one is collected


def tune_for_command() -> None:
    """Collect less often than CPython's defaults; called once when the command line starts."""
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)


def freeze_imported() -> None:
    """Put every object alive now (modules, classes, definitions) out of the collector's reach."""
    gc.freeze()
