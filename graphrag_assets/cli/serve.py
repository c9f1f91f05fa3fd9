"""``graphrag-assets serve``: the index over HTTP (OpenAI-compatible chat, native API, web page)."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import guard, project_roots_options, until_stopped


@click.command(short_help="Serve the index over HTTP: OpenAI-compatible chat, a native API and a web page.")
@project_roots_options("served")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on; any but loopback needs an API key."
)
@click.option("--port", type=int, default=8000, show_default=True, help="Port to listen on (0: any free port).")
@click.option(
    "--api-key",
    envvar="GRAPHRAG_SERVE_API_KEY",
    default=None,
    help="Key every request must send (Authorization: Bearer KEY); default: $GRAPHRAG_SERVE_API_KEY, else serve.api_key.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A host name clients may use besides localhost, 127.0.0.1, [::1] and --host (repeatable; '*': any); "
    "also serve.allowed_hosts. Other Host headers get 421 (a guard against DNS rebinding).",
)
@guard
@until_stopped
def serve(
    roots: tuple[Path, ...],
    projects_dir: Path | None,
    host: str,
    port: int,
    api_key: str | None,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve one or more projects' indexes over HTTP until interrupted (Ctrl-C).

    /v1/chat/completions and /v1/models speak OpenAI's API (models graphrag-local, -global, -drift,
    -basic); /api/... is the native API (docs at /docs); / is a page to ask and explore.
    """
    # FastAPI and uvicorn (~0.5 s to import) are loaded by this command only.
    from graphrag_assets.serve.app import serve as run_server
    from graphrag_assets.serve.config import build_config

    config = build_config(roots, projects_dir, host, port, api_key, allowed_hosts)
    run_server(config, announce=click.echo)
    # uvicorn handles Ctrl-C itself and raises it again once shut down, but asyncio can finish its
    # task first and return instead (seen under load): a return is a stop too, said the same way
    click.echo("stopped", err=True)
