"""The ``graphrag-assets`` command line.

Parsing, progress display and output formatting only: the work is done by the layers below.
Dagster is imported only by the commands that run the pipeline (``index``), so ``--help``,
``status``, ``sql`` and ``query`` start without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from graphrag_assets.cli.doctor import doctor
from graphrag_assets.cli.output import render_frame, render_index_report, render_query_result, render_status
from graphrag_assets.cli.progress import live_progress
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.interop.commands import export_index, import_index
from graphrag_assets.project.dry_run import estimate_next_run
from graphrag_assets.project.init_files import write_project_files
from graphrag_assets.project.querying import answer_question
from graphrag_assets.project.status import project_status
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.storage.readonly_sql import run_readonly_query

ROOT_OPTION = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project folder (default: $GRAPHRAG_ROOT or the current directory).",
)
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def _fail(message: str) -> None:
    click.secho(f"error: {message}", fg="red", err=True)
    sys.exit(1)


def _guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn user errors into one clear line and unexpected ones into a short report."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted; completed model calls are cached, so re-running continues where it stopped.")
        except Exception as exc:  # a bug, not a user mistake: keep the detail available
            if kwargs.get("verbose") or _verbose_env():
                traceback.print_exc()
            _fail(f"{type(exc).__name__}: {exc} (re-run with GRAPHRAG_DEBUG=1 for the traceback)")

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _verbose_env() -> bool:
    return bool(os.environ.get("GRAPHRAG_DEBUG"))


def _settings(root: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    return load_settings(root, overrides=overrides)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="graphrag-assets")
def main() -> None:
    """GraphRAG indexing and querying as a Dagster asset pipeline."""


@main.command()
@ROOT_OPTION
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@_guard
def init(root: Path | None, force: bool) -> None:
    """Create graphrag.yaml, dagster.yaml, workspace.yaml and data/input/ in the project folder."""
    target = (root or Path.cwd()).resolve()
    written, kept = write_project_files(target, force=force)
    for path in written:
        click.echo(f"wrote {path}")
    for path in kept:
        click.echo(f"kept existing {path} (use --force to overwrite)")
    click.echo(f"Put documents in {target / 'data' / 'input'} and run: graphrag-assets index --root {target}")


@main.command()
@ROOT_OPTION
@click.option("--method", type=click.Choice(["standard", "fast", "nlp"]), default=None, help="Indexing method (default: settings, or nlp when no model endpoint is configured).")
@click.option("--dry-run", is_flag=True, help="Print how many model calls and tokens the next run would need, without calling the model.")
@click.option("--full", is_flag=True, help="Also rebuild the corpus-wide assets when no document changed.")
@click.option("--verbose", "-v", is_flag=True, help="Show Dagster's own log lines.")
@JSON_OPTION
@_guard
def index(root: Path | None, method: str | None, dry_run: bool, full: bool, verbose: bool, as_json: bool) -> None:
    """Index what changed in data/input (new, changed and deleted documents) and update the graph."""
    overrides = {"method": method} if method else None
    settings = _settings(root, overrides)
    if settings.method == "auto" and not as_json:
        click.echo(
            f"method: {settings.resolved_method} "
            + ("(no model endpoint configured: offline noun-phrase graph and local embeddings)" if settings.resolved_method == "nlp" else "(model endpoint configured)")
        )
    if dry_run:
        estimate = estimate_next_run(settings)
        _print_json(estimate.as_dict()) if as_json else click.echo(estimate.render())
        return
    from graphrag_assets.pipeline.indexing import index_project  # imports Dagster (~1 s): only when indexing

    with live_progress(enabled=not as_json and not verbose) as announce:
        report = index_project(settings, overrides=overrides, announce=announce, force_corpus=full)
    if as_json:
        _print_json(report.as_dict())
    else:
        click.echo(render_index_report(report))
    if not report.success:
        sys.exit(1)


@main.command()
@ROOT_OPTION
@JSON_OPTION
@_guard
def status(root: Path | None, as_json: bool) -> None:
    """Documents, partitions, row counts and what is stale."""
    settings = _settings(root)
    report = project_status(settings)
    if as_json:
        _print_json(report)
    else:
        click.echo(render_status(report))


@main.command()
@click.argument("query")
@ROOT_OPTION
@JSON_OPTION
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.option("--limit", type=int, default=200, show_default=True, help="Rows to print in table output.")
@_guard
def sql(query: str, root: Path | None, as_json: bool, as_csv: bool, limit: int) -> None:
    """Run a read-only SQL query against the index database."""
    settings = _settings(root)
    frame = run_readonly_query(settings.database_path, query)
    if as_json:
        _print_json(frame.to_dicts())
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
@_guard
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
    settings = _settings(root)
    options = QueryOptions(method, community_level, dynamic_selection, response_type)
    streamed: list[str] = []

    def on_token(text: str) -> None:
        streamed.append(text)
        click.echo(text, nl=False)

    result = answer_question(settings, question, options, on_token=on_token if stream and not as_json else None)
    if as_json:
        _print_json(result.to_dict())
        return
    if streamed:
        click.echo()
    click.echo(render_query_result(result, show_answer=not streamed, show_context=show_context))


@main.command(name="export")
@click.argument("out_dir", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["msgraphrag", "graphml", "neo4j"]), default="msgraphrag", show_default=True,
              help="msgraphrag: Microsoft GraphRAG v3 parquet (+ LanceDB) that its query API reads; graphml: one graph file; neo4j: CSV files for neo4j-admin import and a Cypher script.")
@click.option("--force", is_flag=True, help="Write into a folder that is not empty (replacing this format's files).")
@ROOT_OPTION
@JSON_OPTION
@_guard
def export_command(out_dir: Path, fmt: str, force: bool, root: Path | None, as_json: bool) -> None:
    """Export the index for other tools."""
    result = export_index(_settings(root), fmt, out_dir.resolve(), force=force)
    if as_json:
        _print_json(result.as_dict())
        return
    click.echo(f"exported {fmt} to {result.out_dir}:")
    for name in result.files:
        click.echo(f"  {name}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}")


@main.command(name="import")
@click.argument("source_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["msgraphrag"]), default="msgraphrag", show_default=True,
              help="msgraphrag: a Microsoft GraphRAG v3 output folder (parquet files, optional lancedb/).")
@click.option("--force", is_flag=True, help="Replace the index the project already holds.")
@ROOT_OPTION
@JSON_OPTION
@_guard
def import_command(source_dir: Path, fmt: str, force: bool, root: Path | None, as_json: bool) -> None:
    """Load an index made by another tool, to query it with our engines."""
    result = import_index(_settings(root), fmt, source_dir.resolve(), force=force)
    if as_json:
        _print_json(result.as_dict())
        return
    click.echo(f"imported {fmt} from {result.source_dir}:")
    for table, rows in result.rows.items():
        click.echo(f"  {table:<28} {rows:>8,} rows")
    for table, origin in result.embeddings.items():
        click.echo(f"  embeddings {table}: {origin}")
    for warning in result.warnings:
        click.echo(f"warning: {warning}")


@main.command()
@ROOT_OPTION
@click.option("--port", type=int, default=3000, show_default=True)
@_guard
def dev(root: Path | None, port: int) -> None:
    """Start the Dagster UI (dagster dev) for the project."""
    settings = _settings(root)
    env = {**os.environ, "DAGSTER_HOME": str(settings.root), "GRAPHRAG_ROOT": str(settings.root)}
    if not (settings.root / "dagster.yaml").exists():
        raise UserError(f"{settings.root} has no dagster.yaml; run 'graphrag-assets init --root {settings.root}' first.")
    cmd = [sys.executable, "-m", "dagster", "dev", "-m", "graphrag_assets.pipeline.definitions", "-p", str(port)]
    sys.exit(subprocess.call(cmd, cwd=settings.root, env=env))


main.add_command(doctor)

if __name__ == "__main__":
    main()
