"""graphrag-assets: GraphRAG as a Dagster asset pipeline.

Polars allocates through its own jemalloc, which by default keeps freed pages for reuse, so
a pipeline step that builds and drops a large frame leaves the process holding that memory
into the next step, and the steps' peaks stack up (measured on a 30 MB corpus: 1,055 MB still
resident after freeing the noun-phrase graph, 600 MB with immediate purging). Asking it to
return freed pages at once must happen before polars is first imported, hence here;
``setdefault`` leaves a user's own ``_RJEM_MALLOC_CONF`` alone.

DuckDB has a jemalloc of its own too, read from ``DUCKDB_JE_MALLOC_CONF``, which keeps freed
pages for a while: a write of 573 embedding vectors (3.5 MB) left the process 15 MB larger until
the file was closed, 6 MB with immediate purging (and peaked 12 MB above its start instead of 18).
"""

import os

os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
os.environ.setdefault("DUCKDB_JE_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
