"""Query an exported index with Microsoft GraphRAG's own query API (run with MS GraphRAG's Python).

Used by ``test_export.py`` as a subprocess of the interpreter named by ``GRAPHRAG_MS_PYTHON``
(a venv with ``graphrag==3.3.0``); it imports nothing from graphrag_assets, since that venv does
not have our dependencies::

    python msgraphrag_runner.py --data EXPORT_DIR --base-url http://127.0.0.1:PORT/v1 \\
        --vector-size 64 --method local --method global --query "Who is Marta Quell?"

It loads the tables the way MS's ``graphrag query`` command does (its ``DataReader`` over a parquet
table provider), builds a ``GraphRagConfig`` whose completion and embedding models point at the
given OpenAI-compatible server and whose LanceDB vector store is ``EXPORT_DIR/lancedb``, calls
``graphrag.api.<method>_search`` and prints one JSON object: ``{"graphrag_version", "answers":
{method: {"answer", "context": {name: rows}}}}``. Tokenizers: litellm ships the encodings it
needs (cl100k_base, o200k_base) and points tiktoken at them, so nothing is downloaded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import


def build_config(
    data_dir: Path, base_url: str, api_key: str, chat_model: str, embedding_model: str, vector_size: int, work_dir: Path
):
    from graphrag.config.models.graph_rag_config import GraphRagConfig

    def model(name: str) -> dict[str, Any]:
        return {"model_provider": "openai", "model": name, "api_base": base_url, "api_key": api_key}

    return GraphRagConfig.model_validate(
        {
            "completion_models": {"default_completion_model": model(chat_model)},
            "embedding_models": {"default_embedding_model": model(embedding_model)},
            "input_storage": {"type": "file", "base_dir": str(work_dir / "input")},
            "output_storage": {"type": "file", "base_dir": str(data_dir)},
            "update_output_storage": {"type": "file", "base_dir": str(work_dir / "update_output")},
            "reporting": {"type": "file", "base_dir": str(work_dir / "logs")},
            "cache": {"type": "none"},
            "vector_store": {"type": "lancedb", "db_uri": str(data_dir / "lancedb"), "vector_size": vector_size},
        }
    )


async def load_tables(config) -> dict[str, Any]:
    from graphrag.data_model.data_reader import DataReader
    from graphrag_storage import create_storage
    from graphrag_storage.tables.table_provider_factory import create_table_provider

    provider = create_table_provider(config.table_provider, storage=create_storage(config.output_storage))
    reader = DataReader(provider)
    tables = {}
    for name in ("entities", "communities", "community_reports", "text_units", "relationships"):
        tables[name] = await getattr(reader, name)()
    tables["covariates"] = await reader.covariates() if await provider.has("covariates") else None
    return tables


def summarize_context(context: Any) -> dict[str, int]:
    """Rows per context table (MS returns a dict of DataFrames, a list or a string)."""
    if isinstance(context, dict):
        return {str(k): int(len(v)) for k, v in context.items() if hasattr(v, "__len__")}
    if isinstance(context, list):
        return {"items": len(context)}
    return {"text": len(str(context))}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import graphrag
    import graphrag.api as api

    data_dir = Path(args.data).resolve()
    with tempfile.TemporaryDirectory(prefix="msgraphrag-runner-") as tmp:
        config = build_config(
            data_dir, args.base_url, args.api_key, args.chat_model, args.embedding_model, args.vector_size, Path(tmp)
        )
        tables = await load_tables(config)
        answers: dict[str, Any] = {}
        for method in args.method:
            if method == "local":
                answer, context = await api.local_search(
                    config=config,
                    entities=tables["entities"],
                    communities=tables["communities"],
                    community_reports=tables["community_reports"],
                    text_units=tables["text_units"],
                    relationships=tables["relationships"],
                    covariates=tables["covariates"],
                    community_level=args.community_level,
                    response_type="Multiple Paragraphs",
                    query=args.query,
                )
            elif method == "global":
                answer, context = await api.global_search(
                    config=config,
                    entities=tables["entities"],
                    communities=tables["communities"],
                    community_reports=tables["community_reports"],
                    community_level=args.community_level,
                    dynamic_community_selection=False,
                    response_type="Multiple Paragraphs",
                    query=args.query,
                )
            elif method == "basic":
                answer, context = await api.basic_search(
                    config=config,
                    text_units=tables["text_units"],
                    response_type="Multiple Paragraphs",
                    query=args.query,
                )
            else:
                raise SystemExit(f"unsupported method {method!r}")
            answers[method] = {
                "answer": answer if isinstance(answer, str) else json.dumps(answer),
                "context": summarize_context(context),
            }
    version = getattr(graphrag, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("graphrag")
    return {
        "graphrag_version": version,
        "rows": {k: (0 if v is None else len(v)) for k, v in tables.items()},
        "answers": answers,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with the exported parquet files and lancedb/")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--chat-model", default="gpt-4o-mini")
    parser.add_argument("--embedding-model", default="text-embedding-3-small")
    parser.add_argument("--vector-size", type=int, required=True)
    parser.add_argument("--community-level", type=int, default=2)
    parser.add_argument("--method", action="append", choices=["local", "global", "basic"], required=True)
    parser.add_argument("--query", required=True)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
