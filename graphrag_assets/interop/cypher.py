"""Export the index as portable Cypher statements, loadable into FalkorDB and Neo4j alike.

The graph it builds (every node has a unique ``id``; ids are the index's ids):

- ``(:Entity:<TYPE>)`` with ``human_readable_id``, ``title``, ``type``, ``description``,
  ``degree``, ``frequency`` (the type label is :func:`~graphrag_assets.interop.neo4j.label_for_type`'s);
- ``(:Community)`` with ``community``, ``level``, ``parent``, ``title``, ``size``, ``period``;
- ``(:Report)`` with ``community``, ``level``, ``title``, ``summary``, ``full_content``, ``rank``,
  ``rating_explanation`` and ``findings`` (JSON text: neither engine stores maps as properties);
- ``(:TextUnit)`` with ``text``, ``n_tokens``, ``document_id``, ``chunk_index``;
- ``(:Document)`` with ``title``, ``path``, ``creation_date``; ``(:Claim)`` when there are claims.

Relationships: ``RELATED`` (entity → entity as stored, source → target; the meaning is
undirected) with ``human_readable_id``, ``description``, ``weight``, ``combined_degree`` and
``text_unit_ids``; ``IN_COMMUNITY {level}`` (entity → community, one per level); ``PARENT_OF``
(community → child community); ``HAS_REPORT`` (community → report); ``MENTIONED_IN {position}``
(entity → text unit; ``position`` is the unit's first place in the entity's ``text_unit_ids``,
which local search ranks by); ``PART_OF`` (text unit → document); ``HAS_CLAIM`` (entity → claim).

Every statement is ``UNWIND [literal rows] AS row CREATE ...``: values are written as Cypher
literals rather than parameters, so the files run as they are in ``cypher-shell`` and the loader
(:mod:`graphrag_assets.interop.cypher_load`) sends exactly the statements the files hold. Only
syntax both engines accept is used: FalkorDB has no ``IF NOT EXISTS`` for indexes, no dynamic
labels and no ``\\uXXXX`` string escapes, so labels are written per entity type and other control
characters are written as they are.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.common import ExportResult, prepare_output_dir, read_index_tables
from graphrag_assets.interop.graph_edges import claim_edges, parent_edges, part_of_edges, related_edges
from graphrag_assets.interop.neo4j import label_for_type

SCHEMA_FILE = "schema.cypher"
GRAPH_FILE = "graph.cypher"
QUERIES_DIR = "queries"
README_FILE = "README.txt"
OUTPUTS = (SCHEMA_FILE, GRAPH_FILE, QUERIES_DIR, README_FILE)

NODE_LABELS = ("Entity", "Community", "Report", "TextUnit", "Document", "Claim")
RELATIONSHIP_TYPES = ("RELATED", "IN_COMMUNITY", "PARENT_OF", "HAS_REPORT", "MENTIONED_IN", "PART_OF", "HAS_CLAIM")
BATCH_ROWS = 500  # rows per UNWIND statement
BATCH_CHARS = 1_000_000  # and at most about this many characters of row literals

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f", "\x00": ""}
_NEEDS_ESCAPE = re.compile("[\\\\'\n\r\t\b\f\x00]")


# --- literals ------------------------------------------------------------------------------------


def cypher_string(text: str) -> str:
    """``text`` as a single-quoted Cypher string literal (NUL characters are dropped)."""
    return "'" + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], text) + "'"


def cypher_key(name: str) -> str:
    """A map key or property name, back-quoted unless it is a plain identifier."""
    return name if _IDENTIFIER.match(name) else "`" + name.replace("`", "``") + "`"


def cypher_literal(value: Any) -> str:
    """A Python value (None, bool, int, float, str, list, dict) as a Cypher literal.

    NaN and infinities have no literal in either engine and become ``null`` (no property).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return cypher_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{cypher_key(k)}: {cypher_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no Cypher literal for {type(value).__name__}")


# --- statements ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatementGroup:
    """Rows written by one statement template (``row`` is each row's name in the template)."""

    kind: str  # a node label or a relationship type, for the row counts
    template: str
    rows: list[dict[str, Any]]


def node_group(labels: str, frame: pl.DataFrame) -> StatementGroup:
    """Nodes with ``labels`` (``Entity:PERSON``), one per row, the row's columns as properties."""
    return StatementGroup(labels.split(":")[0], f"CREATE (n:{labels}) SET n = row", frame.to_dicts())


def edge_group(start: str, rel_type: str, end: str, frame: pl.DataFrame) -> StatementGroup:
    """Relationships from the ``start`` node whose id is column ``_start`` to the ``end`` node with
    id ``_end``; the other columns become the relationship's properties."""
    properties = [c for c in frame.columns if c not in ("_start", "_end")]
    props = ", ".join(f"{cypher_key(c)}: row.{cypher_key(c)}" for c in properties)
    template = (
        f"MATCH (a:{start} {{id: row._start}})\n"
        f"MATCH (b:{end} {{id: row._end}})\n"
        f"CREATE (a)-[:{rel_type}{' {' + props + '}' if props else ''}]->(b)"
    )
    return StatementGroup(rel_type, template, frame.to_dicts())


def schema_statements() -> list[str]:
    """One index on ``id`` per node label (a syntax both Neo4j 5 and FalkorDB accept)."""
    return [f"CREATE INDEX FOR (n:{label}) ON (n.id)" for label in NODE_LABELS]


def render_statements(
    groups: Sequence[StatementGroup], max_rows: int = BATCH_ROWS, max_chars: int = BATCH_CHARS
) -> list[str]:
    """The groups' rows as ``UNWIND [...] AS row <template>`` statements of bounded size."""
    statements: list[str] = []
    for group in groups:
        batch: list[str] = []
        size = 0
        for row in group.rows:
            literal = cypher_literal(row)
            if batch and (len(batch) >= max_rows or size + len(literal) > max_chars):
                statements.append(_unwind(batch, group.template))
                batch, size = [], 0
            batch.append(literal)
            size += len(literal) + 2
        if batch:
            statements.append(_unwind(batch, group.template))
    return statements


def _unwind(literals: list[str], template: str) -> str:
    return "UNWIND [\n" + ",\n".join(literals) + "\n] AS row\n" + template


# --- the graph from the index tables -------------------------------------------------------------


def node_groups(tables: dict[str, pl.DataFrame]) -> list[StatementGroup]:
    """The node statements: entities (one group per type label), communities, reports, text units,
    documents and claims."""
    entities = tables["entities"].sort("human_readable_id", "id")
    labels = {
        t: label_for_type(t).replace(";", ":") for t in entities.get_column("type").drop_nulls().unique().to_list()
    }
    entities = entities.with_columns(
        pl.col("type").replace_strict(labels, default="Entity", return_dtype=pl.String).alias("_labels")
    )
    groups = [
        node_group(
            labels, part.select("id", "human_readable_id", "title", "type", "description", "degree", "frequency")
        )
        for (labels,), part in entities.group_by("_labels", maintain_order=True)
    ]
    groups.sort(key=lambda g: g.template)
    groups.append(
        node_group(
            "Community",
            tables["communities"]
            .sort("level", "community")
            .select(
                "id",
                "human_readable_id",
                "community",
                "level",
                "parent",
                "title",
                "size",
                "period",
            ),
        )
    )
    reports = tables["community_reports"].sort("level", "community", "id")
    findings = [json.dumps(f or [], ensure_ascii=False) for f in reports["findings"].to_list()]
    groups.append(
        node_group(
            "Report",
            reports.select(
                "id",
                "human_readable_id",
                "community",
                "level",
                "title",
                "summary",
                "full_content",
                "rank",
                "rating_explanation",
            ).with_columns(pl.Series("findings", findings, dtype=pl.String)),
        )
    )
    groups.append(
        node_group(
            "TextUnit",
            tables["text_units"]
            .sort("document_id", "chunk_index", "id")
            .select(
                "id",
                "human_readable_id",
                "text",
                "n_tokens",
                "document_id",
                "chunk_index",
            ),
        )
    )
    groups.append(
        node_group(
            "Document",
            tables["documents"]
            .sort("path", "human_readable_id", "id", nulls_last=True)
            .select(
                "id",
                "human_readable_id",
                "title",
                "path",
                "creation_date",
            ),
        )
    )
    if tables["covariates"].height:
        groups.append(node_group("Claim", tables["covariates"].sort("human_readable_id", "id")))
    return groups


def edge_groups(tables: dict[str, pl.DataFrame]) -> tuple[list[StatementGroup], int]:
    """The relationship statements, and how many ``RELATED`` rows were left out because one end is
    not an entity (the index's asset checks normally rule that out)."""
    entities, communities, units = tables["entities"], tables["communities"], tables["text_units"]
    related = related_edges(tables)
    linked = related.drop_nulls(["_start", "_end"])
    membership = (
        communities.sort("level", "community")
        .select(pl.col("entity_ids").alias("_start"), pl.col("id").alias("_end"), "level")
        .explode("_start")
        .drop_nulls("_start")
        .unique(["_start", "_end"], maintain_order=True)
        .join(entities.select("id"), left_on="_start", right_on="id", how="semi", maintain_order="left")
    )
    has_report = (
        tables["community_reports"]
        .sort("level", "community", "id")
        .join(
            communities.select("community", pl.col("id").alias("_start")),
            on="community",
            how="inner",
            maintain_order="left",
        )
        .select("_start", pl.col("id").alias("_end"))
    )
    mentions = (
        entities.sort("human_readable_id", "id")
        .select(pl.col("id").alias("_start"), pl.col("text_unit_ids").alias("_end"))
        .with_columns(pl.int_ranges(0, pl.col("_end").list.len()).alias("position"))
        .explode("_end", "position")
        .drop_nulls("_end")
        .unique(["_start", "_end"], keep="first", maintain_order=True)
        .join(units.select("id"), left_on="_end", right_on="id", how="semi", maintain_order="left")
    )
    groups = [
        edge_group(
            "Entity",
            "RELATED",
            "Entity",
            linked.select(
                "_start",
                "_end",
                "id",
                "human_readable_id",
                "description",
                "weight",
                "combined_degree",
                "text_unit_ids",
            ),
        ),
        edge_group("Entity", "IN_COMMUNITY", "Community", membership),
        edge_group("Community", "PARENT_OF", "Community", parent_edges(communities)),
        edge_group("Community", "HAS_REPORT", "Report", has_report),
        edge_group("Entity", "MENTIONED_IN", "TextUnit", mentions),
        edge_group("TextUnit", "PART_OF", "Document", part_of_edges(tables)),
    ]
    if tables["covariates"].height:
        groups.append(edge_group("Entity", "HAS_CLAIM", "Claim", claim_edges(tables)))
    return groups, related.height - linked.height


@dataclass(frozen=True)
class CypherGraph:
    """The statements that build the graph, and what they create."""

    schema: list[str]
    statements: list[str]
    counts: dict[str, int]  # node label / relationship type -> how many
    dropped_relationships: int


def cypher_graph(tables: dict[str, pl.DataFrame]) -> CypherGraph:
    """The Cypher statements for the index tables (see the module docstring for the model)."""
    nodes = node_groups(tables)
    edges, dropped = edge_groups(tables)
    counts: dict[str, int] = {}
    for group in [*nodes, *edges]:
        counts[group.kind] = counts.get(group.kind, 0) + len(group.rows)
    return CypherGraph(schema_statements(), render_statements([*nodes, *edges]), counts, dropped)


# --- files ---------------------------------------------------------------------------------------


def query_names() -> list[str]:
    """The retrieval queries shipped with the package (``*.cypher`` in ``cypher_queries/``)."""
    folder = resources.files("graphrag_assets.interop").joinpath("cypher_queries")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".cypher"))


def query_text(name: str) -> str:
    """The text of a shipped retrieval query, e.g. ``query_text("local_reports.cypher")``."""
    return resources.files("graphrag_assets.interop").joinpath("cypher_queries", name).read_text(encoding="utf-8")


def statements_file(header: str, statements: Sequence[str]) -> str:
    """Statements separated by ``;`` and a blank line, after ``//`` comment lines."""
    lines = [f"// {line}" if line else "//" for line in header.splitlines()]
    return "\n".join(lines) + "\n\n" + "".join(f"{s};\n\n" for s in statements)


SCHEMA_HEADER = """Indexes on the node ids, for Neo4j 5 and FalkorDB. Run before graph.cypher:
  cypher-shell -u neo4j -p <password> -f schema.cypher"""
GRAPH_HEADER = """The index as a graph: nodes first, then relationships. Load into an empty database:
  cypher-shell -u neo4j -p <password> -f graph.cypher
or into FalkorDB (or Neo4j) with:  graphrag-assets export DIR --format cypher --load falkordb://HOST:PORT/GRAPH"""

README = """Cypher export by graphrag-assets.

schema.cypher   indexes on the node ids (run first)
graph.cypher    the graph: Entity, Community, Report, TextUnit, Document (and Claim) nodes;
                RELATED, IN_COMMUNITY (entity -> community, one per level, with `level`),
                PARENT_OF, HAS_REPORT, MENTIONED_IN (with `position`), PART_OF (and HAS_CLAIM)
queries/        retrieval queries: local search's neighbourhood of mapped entities (reports,
                relationships inside and outside the set, text units, ranked as graphrag-assets
                ranks them) and global search's map input; each file documents its parameters.

Neo4j:     cypher-shell -u neo4j -p <password> -f schema.cypher && cypher-shell ... -f graph.cypher
FalkorDB:  graphrag-assets export DIR --format cypher --load falkordb://HOST:PORT/GRAPH
"""


def write_cypher_files(out_dir: Path, graph: CypherGraph, *, force: bool) -> list[str]:
    """Write the schema, the graph statements, the shipped queries and a README; the file names."""
    prepare_output_dir(out_dir, OUTPUTS, force=force)
    (out_dir / SCHEMA_FILE).write_text(statements_file(SCHEMA_HEADER, graph.schema), encoding="utf-8")
    (out_dir / GRAPH_FILE).write_text(statements_file(GRAPH_HEADER, graph.statements), encoding="utf-8")
    (out_dir / QUERIES_DIR).mkdir()
    names = query_names()
    for name in names:
        (out_dir / QUERIES_DIR / name).write_text(query_text(name), encoding="utf-8")
    (out_dir / README_FILE).write_text(README, encoding="utf-8")
    return [SCHEMA_FILE, GRAPH_FILE, *(f"{QUERIES_DIR}/{n}" for n in names), README_FILE]


def export_cypher(settings: Settings, out_dir: Path, *, force: bool = False) -> tuple[ExportResult, CypherGraph]:
    """Write the Cypher files into ``out_dir``; the result and the statements (for ``--load``)."""
    graph = cypher_graph(read_index_tables(settings))
    files = write_cypher_files(out_dir, graph, force=force)
    result = ExportResult(format="cypher", out_dir=out_dir, files=files, rows=dict(graph.counts))
    if graph.dropped_relationships:
        result.warnings.append(
            f"{graph.dropped_relationships} relationship(s) name an entity that does not exist and were left out."
        )
    return result, graph
