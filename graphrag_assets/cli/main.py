"""The ``graphrag-assets`` command line.

Parsing, progress display and output formatting only: the work is done by the layers below.
Each command lives in its own module and is imported only when it runs (``LazyGroup``), so
``--help``, ``status``, ``sql`` and ``query`` do not pay for what other commands import (Dagster,
LanceDB, the model client): a command's start-up is most of what a user waits for.
"""

from __future__ import annotations

import importlib
import sys

import click

from graphrag_assets.cli.collector import tune_for_command

tune_for_command()

# name -> (module under graphrag_assets.cli, function, the one-line help shown by --help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("project_commands", "init", "Write graphrag.yaml, dagster.yaml, workspace.yaml and data/input/."),
    "index": ("index_command", "index", "Index what changed in the input folder and update the graph."),
    "status": ("status_command", "status", "What changed since the last index, what is stale, row counts."),
    "sql": ("sql_command", "sql", "Run a read-only SQL query against the index database."),
    "query": ("query_command", "query", "Answer a question about the indexed documents."),
    "prompt-tune": (
        "prompt_tune_command",
        "prompt_tune",
        "Adapt the extraction, summary and report prompts to your documents.",
    ),
    "eval": (
        "eval_command",
        "eval_command",
        "Ask a question set with each query method: retrieval, accuracy, latency, cost.",
    ),
    "show": ("show", "show", "List or show entities, communities and reports."),
    "export": ("interop_commands", "export_command", "Export the index for other tools."),
    "import": (
        "interop_commands",
        "import_command",
        "Load an index made by another tool, to query it with our engines.",
    ),
    "doctor": ("doctor", "doctor", "Check the model endpoints: what works, latency, the next index's cost."),
    "dev": ("project_commands", "dev", "Start the Dagster UI (dagster dev) for the project."),
    "vacuum": (
        "vacuum_command",
        "vacuum",
        "Compact the index files: old LanceDB versions, DuckDB free space, optionally the response cache.",
    ),
    "serve": ("serve", "serve", "Serve the index over HTTP: OpenAI-compatible chat, a native API and a web page."),
    "mcp": ("mcp_command", "mcp", "Serve the index to AI assistants as an MCP server on stdio."),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when used; ``--help`` lists them from ``COMMANDS``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, function, _ = COMMANDS[name]
        return getattr(importlib.import_module(f"graphrag_assets.cli.{module}"), function)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in sorted(COMMANDS)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="graphrag-assets")
def main() -> None:
    """GraphRAG indexing and querying as a Dagster asset pipeline."""
    click.get_current_context().call_on_close(_let_go_of_databases)


def _let_go_of_databases() -> None:
    """Close the warm DuckDB instances when a command ends, as a process exit would (for in-process callers)."""
    warm = sys.modules.get("graphrag_assets.storage.warm")  # loaded only by commands that opened DuckDB
    if warm is not None:
        warm.release()


if __name__ == "__main__":
    main()
