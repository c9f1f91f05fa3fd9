"""``init`` and ``dev``: make a folder a project, and serve its Dagster UI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from graphrag_assets.cli.child_processes import sigterm_as_interrupt, stop_group
from graphrag_assets.cli.common import ROOT_OPTION, guard, project_settings, until_stopped
from graphrag_assets.core.errors import UserError
from graphrag_assets.project.init_files import write_project_files

DEFINITIONS_MODULE = "graphrag_assets.pipeline.definitions"
DEV_SUPERSEDED_WARNING = "ignore:Function `dev_command` is superseded"


@click.command(short_help="Write graphrag.yaml, dagster.yaml, workspace.yaml and data/input/.")
@ROOT_OPTION
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option(
    "--instance",
    type=click.Choice(["sqlite", "postgres"]),
    default="sqlite",
    show_default=True,
    help="Where Dagster keeps runs, events and partitions (docs/SCALING.md).",
)
@click.option(
    "--postgres-url", default=None, help="postgresql://user:password@host:5432/database, for --instance postgres."
)
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


@click.command()
@ROOT_OPTION
@click.option("--port", type=int, default=3000, show_default=True)
@guard
@until_stopped
def dev(root: Path | None, port: int) -> None:
    """Start the Dagster UI (dagster dev) for the project."""
    settings = project_settings(root)
    # `dagster dev` warns on every start that it is superseded by `dg dev` (a separate package).
    quiet = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), DEV_SUPERSEDED_WARNING]))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(settings.root),
        "GRAPHRAG_ROOT": str(settings.root),
        "PYTHONWARNINGS": quiet,
    }
    if not (settings.root / "dagster.yaml").exists():
        raise UserError(
            f"{settings.root} has no dagster.yaml; run 'graphrag-assets init --root {settings.root}' first."
        )
    # workspace.yaml names the code location as the CLI's runs are tagged, so they are listed under
    # their jobs (a project without one loads the module, whose location is named after it).
    location = ["-w", "workspace.yaml"] if (settings.root / "workspace.yaml").exists() else ["-m", DEFINITIONS_MODULE]
    cmd = [sys.executable, "-m", "dagster", "dev", *location, "-p", str(port)]
    # Its own process group: Ctrl-C and SIGTERM reach this process only, which stops the whole
    # group (webserver, daemon, code servers) and waits until the port is free.
    with sigterm_as_interrupt():
        process = subprocess.Popen(cmd, cwd=settings.root, env=env, start_new_session=True)
        try:
            code = process.wait()
        except KeyboardInterrupt:
            stop_group(process)
            raise
    sys.exit(code)
