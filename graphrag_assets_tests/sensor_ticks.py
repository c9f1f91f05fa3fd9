"""One evaluation of the input-folder sensor, as the Dagster daemon makes it (shared by the tests)."""

from pathlib import Path

from dagster import build_sensor_context

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.pipeline.runtime.instance import open_instance


def tick(root: Path):
    """(the sensor's result, the project's instance, its definitions) for one tick on ``root``."""
    settings = load_settings(root)
    defs = build_definitions(root)
    instance = open_instance(settings)
    sensor = defs.resolve_sensor_def("input_files_sensor")
    with build_sensor_context(
        instance=instance, resources={"project": GraphRAGProject(root=str(root))}, definitions=defs
    ) as context:
        return sensor(context), instance, defs
