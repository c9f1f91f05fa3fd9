"""``graphrag-assets doctor``: probe the configured model endpoints before paying for an index.

Exit status 0 when the endpoints can do what indexing and querying need, 1 with one sentence on
standard error when something cannot work (a refused key, an unknown model, an unreachable server).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.project.doctor import render_doctor, run_doctor


@click.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Project folder (default: $GRAPHRAG_ROOT or the current directory).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def doctor(root: Path | None, as_json: bool) -> None:
    """Check the chat and embedding endpoints: what they accept, how fast they answer, what indexing will cost."""
    try:
        settings = load_settings(root)
        report = run_doctor(settings)
    except UserError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_doctor(report, settings))
    if report.problem is not None:
        click.secho(f"error: {report.problem}", fg="red", err=True)
        sys.exit(1)
