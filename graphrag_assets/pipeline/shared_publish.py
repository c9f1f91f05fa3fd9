"""``shared_build``: on a shared-storage project, the corpus job's last step publishes the index.

Why a step of the job rather than the CLI alone: a run launched from the Dagster UI, the sensor or
the schedule is the same corpus job without the CLI around it, and in a deployment whose runs are
pods the local index goes with the pod. So whoever launched the run, it ends with the build
published (project/shared_index.py: copy-on-write, then one PUT of the pointer); the CLI's own
publish after ``index`` then finds nothing left to do, and still publishes when no corpus run was
needed. A refused publish (another machine's newer build) fails the step in one sentence.

The asset exists only when ``storage.shared_url`` is set: the embedded default's asset graph is
unchanged.
"""

from dagster import AssetExecutionContext, AssetsDefinition, MaterializeResult, asset

from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.assets.publish import corpus_manifest
from graphrag_assets.pipeline.resources import GraphRAGProject


@asset(
    deps=[corpus_manifest],
    group_name="graph",
    description="The index published to storage.shared_url as a new build (the pointer replaced in one PUT), "
    "so a run launched from the UI or the sensor ends with a build other machines read.",
)
def shared_build(context: AssetExecutionContext, project: GraphRAGProject) -> MaterializeResult:
    from graphrag_assets.project.shared_index import publish_after_run  # pyarrow: only on a shared project

    settings = project.settings
    build_id = publish_after_run(settings, context.log.info)
    return MaterializeResult(metadata={"build_id": build_id or "", "shared_url": settings.storage.shared_url or ""})


def shared_assets(settings: Settings) -> list[AssetsDefinition]:
    """The publishing step when the project has shared storage, else nothing."""
    return [shared_build] if settings.storage.shared_url else []
