"""``export`` and ``import``: move an index to and from other tools."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, project_settings, reader_settings
from graphrag_assets.interop.commands import EXPORT_FORMATS, export_index, import_index


@click.command(name="export")
@click.argument("out_dir", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(EXPORT_FORMATS)),
    default="msgraphrag",
    show_default=True,
    help="msgraphrag: Microsoft GraphRAG v3 parquet (+ LanceDB) that its query API reads; graphml: one graph file; neo4j: CSV files for neo4j-admin import and a Cypher script; cypher: Cypher statements for FalkorDB and Neo4j, with retrieval queries; html: one self-contained page to look at the communities and their entity graphs.",
)
@click.option(
    "--load",
    "load",
    metavar="URL",
    default=None,
    help="With --format cypher: also load the graph into falkordb://HOST:PORT[/GRAPH] or bolt://HOST:PORT[/DATABASE] (--force replaces a graph already there).",
)
@click.option("--force", is_flag=True, help="Write into a folder that is not empty (replacing this format's files).")
@ROOT_OPTION
@JSON_OPTION
@guard
def export_command(out_dir: Path, fmt: str, load: str | None, force: bool, root: Path | None, as_json: bool) -> None:
    """Export the index for other tools."""
    result = export_index(reader_settings(root), fmt, out_dir.resolve(), force=force, load=load)
    if as_json:
        print_json(result.as_dict())
        return
    click.echo(f"exported {fmt} to {result.out_dir}:")
    for name in result.files:
        click.echo(f"  {name}")
    if result.loaded:
        loaded = result.loaded
        click.echo(
            f"loaded into {loaded['target']}: {loaded['nodes']:,} nodes, {loaded['relationships']:,} relationships"
        )
    for warning in result.warnings:
        click.echo(f"warning: {warning}")


@click.command(name="import")
@click.argument("source_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["msgraphrag"]),
    default="msgraphrag",
    show_default=True,
    help="msgraphrag: a Microsoft GraphRAG v3 output folder (parquet files, optional lancedb/).",
)
@click.option("--force", is_flag=True, help="Replace the index the project already holds.")
@ROOT_OPTION
@JSON_OPTION
@guard
def import_command(source_dir: Path, fmt: str, force: bool, root: Path | None, as_json: bool) -> None:
    """Load an index made by another tool, to query it with our engines."""
    result = import_index(project_settings(root), fmt, source_dir, force=force)
    if as_json:
        print_json(result.as_dict())
        return
    click.echo(f"imported {fmt} from {result.source_dir}:")
    for table, rows in result.rows.items():
        click.echo(f"  {table:<28} {rows:>8,} rows")
    for table, origin in result.embeddings.items():
        click.echo(f"  embeddings {table}: {origin}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}")
