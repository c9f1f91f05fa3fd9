"""``graphrag-assets show …``: what the index holds, without writing SQL."""

from __future__ import annotations

from pathlib import Path

import click
import polars as pl

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, reader_settings
from graphrag_assets.cli.output import render_entity, render_report, render_table
from graphrag_assets.project.inspect import (
    Listing,
    entity_detail,
    list_communities,
    list_entities,
    list_reports,
    report_detail,
)

LEVEL_OPTION = click.option("--level", type=int, default=None, help="Only this community level (0 is the coarsest).")
SEARCH_OPTION = click.option(
    "--search", default=None, help="Only rows whose name or title contains this text (any case)."
)
LIMIT_OPTION = click.option(
    "--limit", type=click.IntRange(min=0), default=50, show_default=True, help="At most this many rows."
)
ALL_OPTION = click.option("--all", "show_all", is_flag=True, help="Every row (no --limit).")


@click.group(short_help="List or show entities, communities and reports.")
def show() -> None:
    """List or show what the index holds: entities, communities and their reports."""


def _listing(as_json: bool, rows: pl.DataFrame) -> None:
    """The rows as JSON or as a table that says how many of the matching rows it shows."""
    total = int(rows.get_column("total_rows")[0]) if rows.height else 0
    rows = rows.drop("total_rows")
    if as_json:
        print_json(rows.to_dicts())
    else:
        click.echo(render_table(rows, total=total))


@show.command(name="entities")
@ROOT_OPTION
@SEARCH_OPTION
@LIMIT_OPTION
@ALL_OPTION
@JSON_OPTION
@guard
def show_entities(root: Path | None, search: str | None, limit: int, show_all: bool, as_json: bool) -> None:
    """Entities, most connected first."""
    _listing(as_json, list_entities(reader_settings(root), Listing(search=search, limit=None if show_all else limit)))


@show.command(name="communities")
@ROOT_OPTION
@LEVEL_OPTION
@SEARCH_OPTION
@LIMIT_OPTION
@ALL_OPTION
@JSON_OPTION
@guard
def show_communities(
    root: Path | None, level: int | None, search: str | None, limit: int, show_all: bool, as_json: bool
) -> None:
    """Communities, largest first, with their report titles."""
    _listing(as_json, list_communities(reader_settings(root), Listing(level, search, None if show_all else limit)))


@show.command(name="reports")
@ROOT_OPTION
@LEVEL_OPTION
@SEARCH_OPTION
@LIMIT_OPTION
@ALL_OPTION
@JSON_OPTION
@guard
def show_reports(
    root: Path | None, level: int | None, search: str | None, limit: int, show_all: bool, as_json: bool
) -> None:
    """Community reports, most important (rank) first."""
    _listing(as_json, list_reports(reader_settings(root), Listing(level, search, None if show_all else limit)))


@show.command(name="entity")
@click.argument("name")
@ROOT_OPTION
@JSON_OPTION
@guard
def show_entity(name: str, root: Path | None, as_json: bool) -> None:
    """One entity: description, aliases, relationships, communities and the files it comes from."""
    detail = entity_detail(reader_settings(root), name)
    print_json(detail) if as_json else click.echo(render_entity(detail))


@show.command(name="report")
@click.argument("community", type=int)
@ROOT_OPTION
@JSON_OPTION
@guard
def show_report(community: int, root: Path | None, as_json: bool) -> None:
    """The report of one community (its number, as in 'show communities')."""
    detail = report_detail(reader_settings(root), community)
    print_json(detail) if as_json else click.echo(render_report(detail))
