"""Where projects' ``dagster.yaml`` written before the move to :mod:`graphrag_assets.pipeline.runtime`
find the compute-log manager (``compute_logs: module: graphrag_assets.pipeline.compute_logs``);
new projects name :mod:`graphrag_assets.pipeline.runtime.compute_logs`."""

from graphrag_assets.pipeline.runtime.compute_logs import MirroredComputeLogManager

__all__ = ["MirroredComputeLogManager"]
