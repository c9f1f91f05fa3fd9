"""Everything that imports Dagster, by role.

- Definitions — what Dagster runs: :mod:`.definitions` (one ``Definitions`` per project root, the
  module ``dagster dev`` loads), :mod:`.assets` (one module per step), :mod:`.partitions`,
  :mod:`.io_manager`, :mod:`.resources`, :mod:`.automation` (the sensor and schedule) and
  :mod:`.query_job`.
- The ``index`` command's driver: :mod:`.idle_check` (nothing to do, answered without Dagster) and
  :mod:`.indexing` (the update itself).
- :mod:`.runtime` — how Dagster is run: the instance, in-process execution, storage and compute
  logs, and the private Dagster APIs these need.
"""
