"""Moving an index in and out: Microsoft GraphRAG v3 parquet, GraphML, Neo4j import files, Cypher
(optionally loaded into FalkorDB or Neo4j) and a self-contained HTML picture of the graph.

Two entry points for the CLI:

- :func:`export_index` writes the project's index to a folder in one of :data:`EXPORT_FORMATS`;
- :func:`import_index` loads a Microsoft GraphRAG v3 output folder into the project's database.

What the formats share lives in :mod:`graphrag_assets.interop.common`; LanceDB and pyarrow's
parquet writer are imported by the formats that need them, when they run.
"""

from __future__ import annotations

from pathlib import Path

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.common import ExportResult, ImportResult
from graphrag_assets.interop.cypher import export_cypher
from graphrag_assets.interop.cypher_load import load_graph, parse_target
from graphrag_assets.interop.graphml import export_graphml
from graphrag_assets.interop.html_export import export_html
from graphrag_assets.interop.msgraphrag import export_msgraphrag
from graphrag_assets.interop.msgraphrag_import import import_msgraphrag
from graphrag_assets.interop.neo4j import export_neo4j

EXPORT_FORMATS = ("msgraphrag", "graphml", "neo4j", "cypher", "html")
IMPORT_FORMATS = ("msgraphrag",)


def export_index(
    settings: Settings, fmt: str, out_dir: str | Path, *, force: bool = False, load: str | None = None
) -> ExportResult:
    """Write the project's index to ``out_dir`` in format ``fmt`` (one of :data:`EXPORT_FORMATS`).

    ``out_dir`` must be missing or empty unless ``force`` is set; with ``force`` only the files
    this format writes are replaced, anything else in the folder is left alone. ``load`` (cypher
    only) is a ``falkordb://`` or ``bolt://`` URL to run the written statements against; ``force``
    then also replaces the graph already there.
    """
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of: {', '.join(EXPORT_FORMATS)}.")
    if load is not None and fmt != "cypher":
        raise UserError("--load works with --format cypher only.")
    target = Path(out_dir).expanduser().resolve()
    if fmt == "cypher":
        graph_target = parse_target(load) if load is not None else None
        result, graph = export_cypher(settings, target, force=force)
        if graph_target is not None:
            result.loaded = load_graph(graph_target, graph.schema, graph.statements, force=force).as_dict()
        return result
    if fmt == "html":
        return export_html(settings, target, force=force)
    if fmt == "msgraphrag":
        return export_msgraphrag(settings, target, force=force)
    if fmt == "graphml":
        return export_graphml(settings, target, force=force)
    return export_neo4j(settings, target, force=force)


def import_index(settings: Settings, fmt: str, source_dir: str | Path, *, force: bool = False) -> ImportResult:
    """Load an index in format ``fmt`` from ``source_dir`` into the project's database.

    Refuses when the project already holds an index unless ``force`` is set (then the index
    tables are replaced).
    """
    if fmt not in IMPORT_FORMATS:
        raise UserError(f"unknown import format {fmt!r}; choose one of: {', '.join(IMPORT_FORMATS)}.")
    return import_msgraphrag(settings, Path(source_dir).expanduser().resolve(), force=force)
