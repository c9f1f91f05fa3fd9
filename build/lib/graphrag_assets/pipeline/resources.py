"""The project resource: where the project lives and its validated settings."""

from __future__ import annotations

import json

from dagster import ConfigurableResource

from graphrag_assets.core.settings import Settings, load_settings


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
