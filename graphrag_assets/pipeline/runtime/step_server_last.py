"""Imported last by the step server (:mod:`.step_server`), after the modules it preloads, and by nothing else.

A step is a fork of the server and shares the server's memory until either writes to a page. A
full garbage collection in the step writes to every object the collector tracks (it keeps its
counts in each object's header), so the step's first full collection copied the pages of the
server's imported objects (the modules, classes and Dagster definitions: ~75 MB of Python objects)
into the step. Frozen here, the collector leaves them alone in every step forked after this, as
the CLI does for its own imports (:mod:`graphrag_assets.cli.collector`); they are modules, never
garbage.
"""

import gc

gc.collect()
gc.freeze()
