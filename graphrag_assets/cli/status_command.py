"""``status``: what changed, what is stale, what the index holds."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, reader_settings
from graphrag_assets.cli.output import render_status
from graphrag_assets.project.status import project_status


@click.command(short_help="What changed since the last index, what is stale, row counts.")
@ROOT_OPTION
@JSON_OPTION
@guard
def status(root: Path | None, as_json: bool) -> None:
    """What changed in the input folder since the last index, what is stale or unfinished, and row counts."""
    settings = reader_settings(root)
    report = project_status(settings)
    if as_json:
        print_json(report)
    else:
        click.echo(render_status(report))
