"""C allocator (glibc malloc) settings for an indexing process.

Most of an index's memory that is not Python objects or DuckDB's and polars' own allocators is
glibc malloc's, and two of its defaults keep memory the process no longer uses:

- every thread that allocates may get its own arena (up to 8 per core), and memory freed in one
  arena serves only that arena; an index runs a writer thread for the response cache, timer
  threads that gather its writes, and the libraries' thread pools;
- a block of 128 KB or more is mapped on its own and unmapped when freed, but each such free
  raises that threshold to the block's size (up to 32 MB), so later large buffers come from the
  heap, whose free space is returned only from its top.

With two arenas and the mapping and trim thresholds fixed at 256 KB, the cold index of
*A Christmas Carol* peaked ~12 MB lower (337 vs 349 MB, medians of 4 runs) and an offline index
of 10,000 generated documents ~200 MB lower (2,041 vs 2,233–2,252 MB, two runs each; two arenas
alone: 2,223–2,228 MB), their wall times within 2%.
Linux with glibc only: elsewhere the C library's own settings stay. A setting the user gave in
the environment (``MALLOC_ARENA_MAX=4``, say) is left as the user set it.
"""

from __future__ import annotations

import ctypes
import os

# mallopt parameter numbers, from glibc's malloc.h
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

SETTINGS = {  # parameter: (value, the environment variable that sets it at start-up)
    M_ARENA_MAX: (2, "MALLOC_ARENA_MAX"),
    M_MMAP_THRESHOLD: (256 << 10, "MALLOC_MMAP_THRESHOLD_"),
    M_TRIM_THRESHOLD: (256 << 10, "MALLOC_TRIM_THRESHOLD_"),
}


def tune_allocator() -> list[int]:
    """Apply ``SETTINGS`` where the C library has ``mallopt`` and the user set nothing; returns the
    parameters applied. Each is also put in the environment, where glibc reads it when a process
    starts: the processes ``index`` starts (the corpus steps' own, the workers') get the same."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):  # no mallopt (macOS): nothing to tune
        return []
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    applied = []
    for parameter, (value, variable) in SETTINGS.items():
        if variable not in os.environ and mallopt(parameter, value) == 1:
            applied.append(parameter)
            os.environ[variable] = str(value)
    return applied
