"""``vacuum``: give back the disk space deleted documents and old versions still use."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, project_settings
from graphrag_assets.project.vacuum import vacuum_index


@click.command(
    short_help="Compact the index files: old LanceDB versions, DuckDB free space, optionally the response cache."
)
@ROOT_OPTION
@click.option(
    "--drop-cache", is_flag=True, help="Also empty the model response cache (the next index pays for every call again)."
)
@JSON_OPTION
@guard
def vacuum(root: Path | None, drop_cache: bool, as_json: bool) -> None:
    """Compact LanceDB (deleting older table versions) and rewrite the DuckDB file without free space."""
    report = vacuum_index(project_settings(root), drop_cache=drop_cache)
    if as_json:
        print_json(report.as_dict())
        return
    freed = report.bytes_before - report.bytes_after
    click.echo(
        f"index files: {report.bytes_before / 1e6:,.1f} MB -> {report.bytes_after / 1e6:,.1f} MB ({freed / 1e6:,.1f} MB freed)"
    )
    click.echo(f"LanceDB tables compacted, older versions deleted: {len(report.lancedb_tables)}")
    if drop_cache:
        click.echo(f"response cache emptied: {report.cache_rows_deleted:,} rows")
