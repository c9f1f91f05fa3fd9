"""``query``: answer a question about the index."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, reader_settings
from graphrag_assets.cli.output import render_query_result
from graphrag_assets.project.querying import answer_question
from graphrag_assets.query.registry import METHODS, method_names
from graphrag_assets.query.request import QueryOptions


class RegisteredMethods(click.Choice):
    """``--method``'s choices: the query methods registered when the command line is read
    (query/registry.py), not a list copied when this module was imported."""

    def __init__(self) -> None:  # click's Choice would store a copy of the choices
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        return method_names()


@click.command()
@click.argument("question")
@ROOT_OPTION
@click.option(
    "--method",
    "-m",
    type=RegisteredMethods(),
    default="global",
    show_default=True,
    help="How to search: " + "; ".join(f"{m.name}: {m.help}" for m in METHODS) + ".",
)
@click.option(
    "--community-level",
    type=int,
    default=None,
    help="Community level for global search (default 2); the deepest level local/DRIFT use.",
)
@click.option(
    "--dynamic-selection/--no-dynamic-selection",
    default=None,
    help="Global search: let the model pick relevant communities from the root down.",
)
@click.option(
    "--response-type",
    default=None,
    help='Shape of the answer, e.g. "Single Paragraph" (default from settings: "Multiple Paragraphs").',
)
@click.option(
    "--budget",
    type=int,
    default=None,
    help="Lazy search: how many chunks the model may test for relevance (default query.methods.lazy.budget, 100).",
)
@click.option("--stream", is_flag=True, help="Print the answer as it is generated.")
@click.option("--show-context", is_flag=True, help="Also print the context tables the answer was built from.")
@JSON_OPTION
@guard
def query(
    question: str,
    root: Path | None,
    method: str,
    community_level: int | None,
    dynamic_selection: bool | None,
    response_type: str | None,
    budget: int | None,
    stream: bool,
    show_context: bool,
    as_json: bool,
) -> None:
    """Answer a question about the indexed documents."""
    settings = reader_settings(root)
    options = QueryOptions(method, community_level, dynamic_selection, response_type, budget=budget)
    streamed: list[str] = []

    def on_token(text: str) -> None:
        streamed.append(text)
        click.echo(text, nl=False)

    result = answer_question(settings, question, options, on_token=on_token if stream and not as_json else None)
    if as_json:
        print_json(result.to_dict())
        return
    if streamed:
        click.echo()
    click.echo(render_query_result(result, show_answer=not streamed, show_context=show_context))
