"""``index``: bring the index up to date (and ``--dry-run``: what that would cost)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from graphrag_assets.cli.allocator import tune_allocator
from graphrag_assets.cli.collector import freeze_imported
from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, project_settings
from graphrag_assets.cli.output import render_index_report
from graphrag_assets.cli.process_exit import exit_now
from graphrag_assets.cli.progress import live_progress
from graphrag_assets.cli.shared_storage import SharedIndex
from graphrag_assets.core.processes import seconds_since_start
from graphrag_assets.llm.static_model_files import offline_embedder_label
from graphrag_assets.pipeline.idle_check import plan_index
from graphrag_assets.project.index_run import IndexOptions


@click.command(short_help="Index what changed in the input folder and update the graph.")
@ROOT_OPTION
@click.option(
    "--method",
    type=click.Choice(["standard", "fast", "nlp"]),
    default=None,
    help="Indexing method (default: settings, or nlp when no model endpoint is configured).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print how many model calls and tokens the next run would need, without calling the model.",
)
@click.option("--full", is_flag=True, help="Also rebuild the corpus-wide assets when no document changed.")
@click.option(
    "--allow-empty-input",
    is_flag=True,
    help="Accept a missing or empty input folder and remove every document from the index.",
)
@click.option(
    "--recluster",
    is_flag=True,
    help="Cluster communities from scratch (communities.update: stable keeps them otherwise); implies a corpus run.",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    metavar="N",
    help="Run the document steps on N worker processes (default: settings workers.count, 1: in this process).",
)
@click.option(
    "--verbose", "-v", is_flag=True, help="Show Dagster's own log lines (and progress as plain lines instead of bars)."
)
@JSON_OPTION
@guard
def index(
    root: Path | None,
    method: str | None,
    dry_run: bool,
    full: bool,
    allow_empty_input: bool,
    recluster: bool,
    workers: int | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """Index what changed in data/input (new, changed and deleted documents) and update the graph."""
    overrides = {
        **({"method": method} if method else {}),
        **({"workers": {"count": workers}} if workers is not None else {}),
    } or None
    settings = project_settings(root, overrides)
    if not as_json:
        why = {
            "nlp": "(no model endpoint configured: offline noun-phrase graph and local embeddings)",
            "standard": "(model endpoint configured)",
        }
        click.echo(
            f"method: {settings.resolved_method} {why.get(settings.resolved_method, '') if settings.method == 'auto' else '(from the settings)'}".rstrip()
        )
        if settings.llm.use_local_embedder:
            click.echo(f"embeddings: {offline_embedder_label(settings.embeddings)}")
    # a fresh pod, or another machine published since: continue from the shared build (also what --dry-run prices)
    shared = SharedIndex.before_index(settings, announce=click.echo if not as_json else lambda message: None)
    if dry_run:
        from graphrag_assets.project.dry_run import (
            estimate_next_run,  # the extraction steps and model client: only for --dry-run
        )

        estimate = estimate_next_run(settings)
        print_json(estimate.as_dict()) if as_json else click.echo(estimate.render())
        return
    options = IndexOptions(
        overrides=overrides, force_corpus=full, allow_empty_input=allow_empty_input, recluster=recluster
    )
    plan, report = plan_index(settings, options)
    if report is None:
        from graphrag_assets.pipeline.indexing import index_project  # imports Dagster (~1 s): only when there is work

        freeze_imported()
        tune_allocator()
        from graphrag_assets.pipeline.runtime.runner import dagster_console_logs

        dagster_lines = dagster_console_logs() if verbose else contextlib.nullcontext()
        with dagster_lines, live_progress(bars=not as_json and not verbose) as announce:
            report = index_project(settings, options, announce, plan)
    if report.success:
        shared.after_index(settings)
    report.seconds = seconds_since_start()
    if as_json:
        print_json(report.as_dict())
    else:
        click.echo(render_index_report(report))
    exit_now(0 if report.success else 1)
