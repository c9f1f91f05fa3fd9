"""``graphrag-assets doctor``: probe the configured model endpoints before paying for an index.

Exit status 0 when the endpoints can do what indexing and querying need, 1 with one sentence on
standard error when something cannot work (a refused key, an unknown model, an unreachable server).
"""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, fail, guard, print_json, project_settings
from graphrag_assets.project.doctor import render_doctor, run_doctor


@click.command(short_help="Check the model endpoints: what they accept, latency, prices, the next index's cost.")
@ROOT_OPTION
@JSON_OPTION
@guard
def doctor(root: Path | None, as_json: bool) -> None:
    """Check the chat and embedding endpoints: what they accept, how fast they answer, what indexing will cost."""
    settings = project_settings(root)
    report = run_doctor(settings)
    if as_json:
        print_json(report.as_dict())
    else:
        click.echo(render_doctor(report, settings))
    if report.problem is not None:
        fail(report.problem)
