"""``prompt-tune``: adapt the extraction, summary and report prompts to the project's documents."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import JSON_OPTION, ROOT_OPTION, guard, print_json, project_settings
from graphrag_assets.project.prompt_tune import TuneRequest, tune_prompts


@click.command(name="prompt-tune")
@ROOT_OPTION
@click.option(
    "--domain", default=None, help="The collection's subject, if you would rather say it than have the model guess."
)
@click.option("--language", default=None, help="Language the descriptions and reports should be written in.")
@click.option("--sample", type=click.IntRange(2, 100), default=8, show_default=True, help="Passages to learn from.")
@click.option(
    "--dry-run", is_flag=True, help="Say how many model calls it would make and what they cost; write nothing."
)
@click.option("--no-diff", is_flag=True, help="Do not print the difference from the built-in prompts.")
@JSON_OPTION
@guard
def prompt_tune(
    root: Path | None,
    domain: str | None,
    language: str | None,
    sample: int,
    dry_run: bool,
    no_diff: bool,
    as_json: bool,
) -> None:
    """Write prompts adapted to your documents into prompts/ and point graphrag.yaml at them."""
    settings = project_settings(root)
    result = tune_prompts(settings, TuneRequest(domain, language, sample), dry_run=dry_run)
    if as_json:
        print_json(result.as_dict())
        return
    cost = f", ~${result.cost_usd:.4f}" if result.cost_usd else ""
    if dry_run:
        click.echo(
            f"prompt-tune would make {result.calls} model call(s), ~{result.prompt_tokens:,} prompt tokens{cost}; nothing written."
        )
        return
    if not no_diff:
        for diff in result.diffs.values():
            click.echo(diff)
    click.echo(f"domain: {result.domain}; read as: {result.persona}")
    click.echo(f"entity types: {', '.join(result.entity_types)}")
    for name, path in result.files.items():
        click.echo(f"wrote {path} ({name})")
    click.echo(f"{result.calls} model call(s){cost}; graphrag.yaml now points at these prompts.")
    click.echo("Run 'graphrag-assets index --dry-run' to see what the next index re-asks.")
