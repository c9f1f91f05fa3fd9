"""The project resource: where the project lives and its validated settings."""

from __future__ import annotations

import json

from dagster import ConfigurableResource, InitResourceContext

from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.pipeline.partitions import INDEX_JOBS
from graphrag_assets.pipeline.runtime.dagster_private import is_reserved_asset_job_name


class GraphRAGProject(ConfigurableResource):
    """A project root; assets read settings and paths from here, never from globals.

    Settings are re-read on each access (a small YAML file) so a long-lived code server never
    runs with a stale ``graphrag.yaml``.
    """

    root: str
    overrides_json: str = "{}"  # settings given on the command line, applied on top of graphrag.yaml

    @property
    def settings(self) -> Settings:
        return load_settings(self.root, overrides=json.loads(self.overrides_json) or None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """On a shared-storage project, a run of the indexing jobs first continues from the newest
        shared build, as ``graphrag-assets index`` does, whoever launched it (UI, sensor, schedule).

        Here because every step of those jobs (and of the job the UI's "Materialize" runs, since
        every asset writes the index) requires this resource, and Dagster sets it up before the
        step's inputs are loaded: once per run in one process, once per step process otherwise
        (project/shared_index.py ``continue_run`` lets only the first of them fetch). A sensor's
        evaluation has no run; the query and evaluation jobs only read.
        """
        run = context.dagster_run
        if run is None or not (run.job_name in INDEX_JOBS or is_reserved_asset_job_name(run.job_name)):
            return
        settings = self.settings
        if not settings.storage.shared_url:
            return
        from graphrag_assets.project.shared_index import continue_run  # pyarrow: only on a shared project

        continue_run(settings, run.run_id, context.log.info if context.log else lambda message: None)
