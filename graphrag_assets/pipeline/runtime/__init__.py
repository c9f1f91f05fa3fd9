"""How the project runs Dagster, as opposed to what it asks Dagster to run (the definitions in
:mod:`graphrag_assets.pipeline`).

- :mod:`.instance`: the project's Dagster instance under ``data/dagster`` and its pending runs;
- :mod:`.runner` and :mod:`.uncaptured`: executing a job in this process (the CLI's ``index``);
- :mod:`.event_log`: Dagster's SQLite storage with batched event writes and kept connections;
- :mod:`.compute_logs`: a run's stdout and stderr captured to files and mirrored to the terminal;
- :mod:`.dagster_files`: what can be read from Dagster's SQLite files without importing Dagster;
- :mod:`.dagster_private`: every private Dagster API we use, in one place.

Nothing here imports the definitions (an import-linter contract in pyproject.toml).
"""
