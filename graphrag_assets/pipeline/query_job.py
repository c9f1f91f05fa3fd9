"""The Dagster ``query_job``: ask a question from the launchpad; the answer and the context it
was built from are recorded as run metadata. (The CLI calls the query functions directly: a
Dagster run per query would bloat the event log.)

The config's ``method`` is an enum of the registered query methods (query/registry.py), so the
launchpad offers them and refuses others before a run starts; :func:`build_query_job` reads the
registry when it is called.
"""

from typing import Literal

from dagster import Config, JobDefinition, MetadataValue, OpExecutionContext, Out, Output, job, op

from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.query.registry import method_names
from graphrag_assets.query.request import QueryOptions


def query_config(methods: tuple[str, ...]) -> type[Config]:
    """The op's config class, its ``method`` limited to ``methods``."""

    class QueryConfig(Config):
        question: str
        method: Literal[methods] = "global"  # type: ignore[valid-type]  # the registry's names, known at call time
        community_level: int | None = None
        dynamic_selection: bool | None = None
        response_type: str | None = None

    return QueryConfig


def answer_query_op(config_class: type[Config]):
    """The op that answers the configured question (built per job, as its config class is; the
    annotation is evaluated when the op is defined: this module has no postponed annotations)."""

    @op(
        out=Out(
            dict,
            io_manager_key="query_io_manager",
            description="The answer, its context records and usage (QueryResult.to_dict()); kept in memory, recorded as metadata.",
        ),
    )
    def answer_query(context: OpExecutionContext, config: config_class, project: GraphRAGProject):  # type: ignore[valid-type]
        # Imported here: the query engines and BM25 cost ~0.1 s, paid by every process that loads the
        # definitions (each index run) although only this op uses them.
        from graphrag_assets.project.querying import answer_question

        options = QueryOptions(config.method, config.community_level, config.dynamic_selection, config.response_type)
        result = answer_question(project.settings, config.question, options)
        data = result.to_dict()
        context.log.info(result.answer)
        records = data["context_records"]
        yield Output(
            data,
            metadata={
                "question": MetadataValue.text(config.question),
                "method": config.method,
                "answer": MetadataValue.md(result.answer),
                "llm_used": result.llm_used,
                "context_records": MetadataValue.json(records),
                "context": MetadataValue.md(f"```\n{result.context_text[:20000]}\n```"),
                "usage": MetadataValue.json(data["usage"]),
                "warnings": MetadataValue.json(result.warnings),
            },
        )

    return answer_query


# The launchpad opens with this config to edit, instead of "Missing required config entry 'question'".
DEFAULT_CONFIG = {
    "ops": {"answer_query": {"config": {"question": "What are the main themes of the documents?", "method": "global"}}}
}


def build_query_job() -> JobDefinition:
    """The query job for the methods registered now."""
    answer_query = answer_query_op(query_config(method_names()))

    @job(
        config=DEFAULT_CONFIG,
        description="Answer one question about the index (edit the question and method in the launchpad).",
    )
    def query_job():
        answer_query()

    return query_job


query_job = build_query_job()
