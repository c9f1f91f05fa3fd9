"""``eval``: ask a question set with each query method and report retrieval, answers and cost."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, reader_settings
from graphrag_assets.cli.query_command import RegisteredMethods
from graphrag_assets.core.errors import UserError
from graphrag_assets.project.evaluation import EvalPlan, evaluate, read_questions, to_html, to_markdown


@click.command(name="eval")
@click.argument("questions", type=click.Path(path_type=Path))
@ROOT_OPTION
@click.option(
    "--method",
    "-m",
    "methods",
    type=RegisteredMethods(),
    multiple=True,
    help="A query method to evaluate (repeat for several; default: basic and local).",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="Documents counted for hit@k and recall@k.",
)
@click.option("--no-judge", is_flag=True, help="Do not ask the chat model to grade answers (contains-match only).")
@click.option(
    "--judge-prompt",
    type=click.Path(path_type=Path),
    default=None,
    help="Your grading prompt instead of the built-in one ({question}, {expected}, {answer}).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write the report to a .md or .html file.",
)
@JSON_OPTION
@guard
def eval_command(
    questions: Path,
    root: Path | None,
    methods: tuple[str, ...],
    k: int,
    no_judge: bool,
    judge_prompt: Path | None,
    report_path: Path | None,
    as_json: bool,
) -> None:
    """Ask a question set (JSONL or CSV) with each method; print hit@k, recall@k, answer accuracy, latency and cost."""
    if report_path is not None and report_path.suffix.lower() not in (".md", ".html"):
        raise UserError(f"--report {report_path}: give a .md or .html file name.")
    settings = reader_settings(root)
    plan = EvalPlan(read_questions(questions), methods or ("basic", "local"), k, not no_judge, judge_prompt)

    live = not as_json and sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if live:
            click.echo(f"\r{done}/{total} questions asked", nl=False, err=True)

    report = evaluate(settings, plan, progress)
    if live:
        click.echo("", err=True)
    if report_path is not None:
        text = to_html(report) if report_path.suffix.lower() == ".html" else to_markdown(report) + "\n"
        report_path.write_text(text, encoding="utf-8")
    if as_json:
        print_json(report.to_dict())
        return
    click.echo(to_markdown(report))
    if report_path is not None:
        click.echo(f"report written to {report_path}")
