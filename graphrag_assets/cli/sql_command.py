"""``sql``: read-only SQL on the index database."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, reader_settings
from graphrag_assets.cli.output import render_table
from graphrag_assets.storage.readonly_sql import run_readonly_query


@click.command()
@click.argument("query")
@ROOT_OPTION
@JSON_OPTION
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.option(
    "--limit", type=click.IntRange(min=0), default=200, show_default=True, help="Rows to print in table output."
)
@click.option("--all", "show_all", is_flag=True, help="Print every row in table output (no --limit).")
@click.option(
    "--allow-file-access",
    is_flag=True,
    help="Let the query read files (read_csv, read_text, ...); off by default. Writing stays refused.",
)
@guard
def sql(
    query: str, root: Path | None, as_json: bool, as_csv: bool, limit: int, show_all: bool, allow_file_access: bool
) -> None:
    """Run a read-only SQL query against the index database."""
    settings = reader_settings(root)
    frame = run_readonly_query(
        settings.database_path, query, allow_file_access=allow_file_access, nested_as_text=as_csv
    )
    if as_json:
        print_json(frame.to_dicts())
    elif as_csv:
        click.echo(frame.write_csv(), nl=False)
    else:
        click.echo(render_table(frame if show_all else frame.head(limit), total=frame.height))
