"""``graphrag-assets mcp``: the index as a Model Context Protocol server on stdin/stdout.

What desktop and coding assistants launch (their configuration names this command and its
``--root``). ``graphrag-assets serve`` offers the same tools over HTTP at ``/mcp``.
"""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_assets.cli.common import guard, project_roots_options, until_stopped


@click.command(short_help="Serve the index to AI assistants as an MCP server on stdio.")
@project_roots_options("offered")
@guard
@until_stopped
def mcp(roots: tuple[Path, ...], projects_dir: Path | None) -> None:
    """Answer MCP requests on stdin/stdout until the client closes them.

    Tools: search (each query method), search_context (ranked records, no model call),
    find_entities, show_entity, show_community, show_source, show_relationship, show_claim,
    sql (read-only) and list_projects. Messages go to stderr; stdout carries only the protocol.
    """
    # The MCP SDK and the server's modules are loaded by this command only.
    from graphrag_assets.serve.config import build_config
    from graphrag_assets.serve.mcp_server import run_stdio

    config = build_config(roots, projects_dir, "127.0.0.1", 0, None)
    run_stdio(config)
