"""The ``graphrag-assets`` command line.

Parsing, progress display and output formatting only: the work is done by the layers below.
Dagster is imported only by the commands that run the pipeline (``index``), so ``--help``,
``status``, ``sql`` and ``query`` start without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, project_settings
from graphrag_assets.cli.doctor import doctor
from graphrag_assets.cli.output import render_frame, render_index_report, render_query_result, render_status
from graphrag_assets.cli.progress import live_progress
from graphrag_assets.cli.show import show
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.processes import seconds_since_start
from graphrag_assets.interop.commands import EXPORT_FORMATS, export_index, import_index
from graphrag_assets.project.dry_run import estimate_next_run
from graphrag_assets.project.init_files import write_project_files
from graphrag_assets.project.querying import answer_question
from graphrag_assets.project.status import project_status
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.storage.readonly_sql import run_readonly_query

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="graphrag-assets")
def main() -> None:
    """GraphRAG indexing and querying as a Dagster asset pipeline."""


@main.command(short_help="Write graphrag.yaml, dagster.yaml, workspace.yaml and data/input/.")
@ROOT_OPTION
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("--instance", type=click.Choice(["sqlite", "postgres"]), default="sqlite", show_default=True, help="Where Dagster keeps runs, events and partitions (docs/SCALING.md).")
@click.option("--postgres-url", default=None, help="postgresql://user:password@host:5432/database, for --instance postgres.")
@guard
def init(root: Path | None, force: bool, instance: str, postgres_url: str | None) -> None:
    """Create graphrag.yaml, dagster.yaml, workspace.yaml and data/input/ in the project folder."""
    target = (root or Path.cwd()).resolve()
    if (instance == "postgres") != (postgres_url is not None):
        raise UserError("--instance postgres needs --postgres-url (and --postgres-url needs --instance postgres).")
    written, kept = write_project_files(target, force=force, postgres_url=postgres_url)
    for path in written:
        click.echo(f"wrote {path}")
    for path in kept:
        click.echo(f"kept existing {path} (use --force to overwrite)")
    click.echo(f"Put documents in {target / 'data' / 'input'} and run: graphrag-assets index --root {target}")


@main.command(short_help="Index what changed in the input folder and update the graph.")
@ROOT_OPTION
@click.option("--method", type=click.Choice(["standard", "fast", "nlp"]), default=None, help="Indexing method (default: settings, or nlp when no model endpoint is configured).")
@click.option("--dry-run", is_flag=True, help="Print how many model calls and tokens the next run would need, without calling the model.")
@click.option("--full", is_flag=True, help="Also rebuild the corpus-wide assets when no document changed.")
@click.option("--allow-empty-input", is_flag=True, help="Accept a missing or empty input folder and remove every document from the index.")
@click.option("--recluster", is_flag=True, help="Cluster communities from scratch (communities.update: stable keeps them otherwise); implies a corpus run.")
@click.option("--verbose", "-v", is_flag=True, help="Show Dagster's own log lines.")
@JSON_OPTION
@guard
def index(root: Path | None, method: str | None, dry_run: bool, full: bool, allow_empty_input: bool, recluster: bool, verbose: bool, as_json: bool) -> None:
    """Index what changed in data/input (new, changed and deleted documents) and update the graph."""
    overrides = {"method": method} if method else None
    settings = project_settings(root, overrides)
    if not as_json:
        why = {"nlp": "(no model endpoint configured: offline noun-phrase graph and local embeddings)", "standard": "(model endpoint configured)"}
        click.echo(f"method: {settings.resolved_method} {why.get(settings.resolved_method, '') if settings.method == 'auto' else '(from the settings)'}".rstrip())
    if dry_run:
        estimate = estimate_next_run(settings)
        print_json(estimate.as_dict()) if as_json else click.echo(estimate.render())
        return
    from graphrag_assets.pipeline.indexing import IndexOptions, index_project  # imports Dagster (~1 s): only when indexing

    options = IndexOptions(overrides=overrides, force_corpus=full, allow_empty_input=allow_empty_input, recluster=recluster)
    with live_progress(enabled=not as_json and not verbose) as announce:
        report = index_project(settings, options, announce)
    report.seconds = seconds_since_start()
    if as_json:
        print_json(report.as_dict())
    else:
        click.echo(render_index_report(report))
    if not report.success:
        sys.exit(1)


@main.command(short_help="What changed since the last index, what is stale, row counts.")
@ROOT_OPTION
@JSON_OPTION
@guard
def status(root: Path | None, as_json: bool) -> None:
    """What changed in the input folder since the last index, what is stale or unfinished, and row counts."""
    settings = project_settings(root)
    report = project_status(settings)
    if as_json:
        print_json(report)
    else:
        click.echo(render_status(report))


@main.command()
@click.argument("query")
@ROOT_OPTION
@JSON_OPTION
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.option("--limit", type=int, default=200, show_default=True, help="Rows to print in table output.")
@click.option("--allow-file-access", is_flag=True, help="Let the query read files (read_csv, read_text, ...); off by default.")
@guard
def sql(query: str, root: Path | None, as_json: bool, as_csv: bool, limit: int, allow_file_access: bool) -> None:
    """Run a read-only SQL query against the index database."""
    settings = project_settings(root)
    frame = run_readonly_query(settings.database_path, query, allow_file_access=allow_file_access)
    if as_json:
        print_json(frame.to_dicts())
    elif as_csv:
        click.echo(frame.write_csv(), nl=False)
    else:
        click.echo(render_frame(frame, limit=limit))


@main.command()
@click.argument("question")
@ROOT_OPTION
@click.option("--method", "-m", type=click.Choice(["local", "global", "drift", "basic"]), default="global", show_default=True)
@click.option("--community-level", type=int, default=None, help="Community level for global search (default 2); the deepest level local/DRIFT use.")
@click.option("--dynamic-selection/--no-dynamic-selection", default=None, help="Global search: let the model pick relevant communities from the root down.")
@click.option("--response-type", default=None, help='Shape of the answer, e.g. "Single Paragraph" (default from settings: "Multiple Paragraphs").')
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
    stream: bool,
    show_context: bool,
    as_json: bool,
) -> None:
    """Answer a question about the indexed documents."""
    settings = project_settings(root)
    options = QueryOptions(method, community_level, dynamic_selection, response_type)
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


@main.command(name="export")
@click.argument("out_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(list(EXPORT_FORMATS)), default="msgraphrag", show_default=True,
              help="msgraphrag: Microsoft GraphRAG v3 parquet (+ LanceDB) that its query API reads; graphml: one graph file; neo4j: CSV files for neo4j-admin import and a Cypher script; cypher: Cypher statements for FalkorDB and Neo4j, with retrieval queries; html: one self-contained page to look at the communities and their entity graphs.")
@click.option("--load", "load", metavar="URL", default=None,
              help="With --format cypher: also load the graph into falkordb://HOST:PORT[/GRAPH] or bolt://HOST:PORT[/DATABASE] (--force replaces a graph already there).")
@click.option("--force", is_flag=True, help="Write into a folder that is not empty (replacing this format's files).")
@ROOT_OPTION
@JSON_OPTION
@guard
def export_command(out_dir: Path, fmt: str, load: str | None, force: bool, root: Path | None, as_json: bool) -> None:
    """Export the index for other tools."""
    result = export_index(project_settings(root), fmt, out_dir.resolve(), force=force, load=load)
    if as_json:
        print_json(result.as_dict())
        return
    click.echo(f"exported {fmt} to {result.out_dir}:")
    for name in result.files:
        click.echo(f"  {name}")
    if result.loaded:
        loaded = result.loaded
        click.echo(f"loaded into {loaded['target']}: {loaded['nodes']:,} nodes, {loaded['relationships']:,} relationships")
    for warning in result.warnings:
        click.echo(f"warning: {warning}")


@main.command(name="import")
@click.argument("source_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["msgraphrag"]), default="msgraphrag", show_default=True,
              help="msgraphrag: a Microsoft GraphRAG v3 output folder (parquet files, optional lancedb/).")
@click.option("--force", is_flag=True, help="Replace the index the project already holds.")
@ROOT_OPTION
@JSON_OPTION
@guard
def import_command(source_dir: Path, fmt: str, force: bool, root: Path | None, as_json: bool) -> None:
    """Load an index made by another tool, to query it with our engines."""
    result = import_index(project_settings(root), fmt, source_dir.resolve(), force=force)
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


DEFINITIONS_MODULE = "graphrag_assets.pipeline.definitions"
DEV_SUPERSEDED_WARNING = "ignore:Function `dev_command` is superseded"


@main.command()
@ROOT_OPTION
@click.option("--port", type=int, default=3000, show_default=True)
@guard
def dev(root: Path | None, port: int) -> None:
    """Start the Dagster UI (dagster dev) for the project."""
    settings = project_settings(root)
    # `dagster dev` warns on every start that it is superseded by `dg dev` (a separate package).
    quiet = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), DEV_SUPERSEDED_WARNING]))
    env = {**os.environ, "DAGSTER_HOME": str(settings.root), "GRAPHRAG_ROOT": str(settings.root), "PYTHONWARNINGS": quiet}
    if not (settings.root / "dagster.yaml").exists():
        raise UserError(f"{settings.root} has no dagster.yaml; run 'graphrag-assets init --root {settings.root}' first.")
    # workspace.yaml names the code location as the CLI's runs are tagged, so they are listed under
    # their jobs (a project without one loads the module, whose location is named after it).
    location = ["-w", "workspace.yaml"] if (settings.root / "workspace.yaml").exists() else ["-m", DEFINITIONS_MODULE]
    cmd = [sys.executable, "-m", "dagster", "dev", *location, "-p", str(port)]
    sys.exit(subprocess.call(cmd, cwd=settings.root, env=env))


main.add_command(show)
main.add_command(doctor)


if __name__ == "__main__":
    main()
