"""The Dagster ``eval_job``: run ``graphrag-assets eval`` from the launchpad; each method's figures
(hit@k, recall@k, answer accuracy, latency, cost) are recorded as run metadata, so the runs of this
job show how answers changed from one index, prompt or model to the next."""

from dagster import Config, MetadataValue, OpExecutionContext, Out, Output, job, op

from graphrag_assets.pipeline.resources import GraphRAGProject


class EvalConfig(Config):
    questions: str  # a .jsonl or .csv file (relative to the project root or absolute)
    methods: list[str] = ["basic", "local"]
    k: int = 5
    judge: bool = True


@op(out=Out(dict, io_manager_key="query_io_manager", description="The evaluation (EvalReport.to_dict())."))
def evaluate_questions(context: OpExecutionContext, config: EvalConfig, project: GraphRAGProject):
    # Imported here, as the query job does: only this op needs the query engines.
    from graphrag_assets.project.evaluation import EvalPlan, evaluate, read_questions, to_markdown

    settings = project.settings
    path = settings.path(config.questions)
    plan = EvalPlan(read_questions(path), tuple(config.methods), config.k, config.judge)
    report = evaluate(settings, plan)
    figures = {
        f"{m.method}/{name}": float(value)
        for m in report.methods
        for name, value in (
            ("hit_at_k", m.hit_at_k),
            ("recall_at_k", m.recall_at_k),
            ("contains", m.contains),
            ("judged", m.judged),
            ("p50_seconds", m.p50_seconds),
            ("p95_seconds", m.p95_seconds),
            ("cost_per_question", m.cost_per_question),
        )
        if value is not None
    }
    yield Output(
        report.to_dict(),
        metadata={
            "questions": MetadataValue.path(str(path)),
            "summary": MetadataValue.md(to_markdown(report)),
            **figures,
        },
    )


@job(
    config={"ops": {"evaluate_questions": {"config": {"questions": "data/eval/sample_questions.jsonl"}}}},
    description="Ask a question set with each query method; figures per method as run metadata (see `graphrag-assets eval`).",
)
def eval_job():
    evaluate_questions()
