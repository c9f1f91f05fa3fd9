"""What every command shares: the --root and --json options, one-line errors, settings, JSON output."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings, load_settings

ROOT_OPTION = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Project folder (default: $GRAPHRAG_ROOT or the current directory).",
)
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


INTERRUPTED = "interrupted; completed model calls are cached, so re-running continues where it stopped."
INTERRUPTED_EXIT = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


def fail(message: str) -> None:
    click.secho(f"error: {message}", fg="red", err=True)
    sys.exit(1)


def interrupted(message: str) -> None:
    """Ctrl-C is the user's choice, not an error: one plain line, and the conventional exit code."""
    click.echo(message, err=True)
    sys.exit(INTERRUPTED_EXIT)


def guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn user errors into one clear line and unexpected ones into a short report."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            fail(str(exc))
        except KeyboardInterrupt as exc:
            interrupted(str(exc) or INTERRUPTED)
        except Exception as exc:  # a bug, not a user mistake: keep the detail available
            if kwargs.get("verbose") or verbose_env():
                traceback.print_exc()
            fail(f"{type(exc).__name__}: {exc} (re-run with GRAPHRAG_DEBUG=1 for the traceback)")

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def until_stopped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """For commands that run until Ctrl-C (``serve``, ``dev``): that is how they are stopped, so it
    ends them quietly with exit 0 instead of the interrupted-work message."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
            return None

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def verbose_env() -> bool:
    return bool(os.environ.get("GRAPHRAG_DEBUG"))


def project_settings(root: Path | None, overrides: dict[str, Any] | None = None) -> Settings:
    return load_settings(root, overrides=overrides)


def reader_settings(root: Path | None) -> Settings:
    """The settings of a command that reads the index (query, status, sql, show, export): in a
    project with ``storage.shared_url`` and no local index, they point at the current shared
    build, fetched into a local cache once per build (project/shared_index.py)."""
    settings = load_settings(root)
    if not settings.storage.shared_url:
        return settings
    from graphrag_assets.project.shared_index import readable_settings  # pyarrow: only for shared indexes

    return readable_settings(settings)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def project_roots_options(verb: str):
    """``--root`` (repeatable) and ``--projects`` of the commands that serve several projects
    (``serve``, ``mcp``); ``verb`` says what happens to each project found."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = click.option(
            "--projects",
            "projects_dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help=f"A folder of project folders: each one that holds graphrag.yaml or an index is {verb}.",
        )(fn)
        return click.option(
            "--root",
            "roots",
            multiple=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="A project folder; give it once per project (default: $GRAPHRAG_ROOT or the current directory).",
        )(fn)

    return decorate
