"""Export the index as CSV files for Neo4j, with an import script and a LOAD CSV alternative.

Nodes (each file has its own ID space, so ids only need to be unique per kind):

- ``entities.csv``: ``:LABEL`` = ``Entity`` plus the entity type made label-safe (``Entity;PERSON``);
- ``communities.csv``: one node per community, its report's title, summary, full content and
  rank as properties (a report belongs to exactly one community);
- ``text_units.csv``, ``documents.csv``: the sources (document text is left out: it is the
  concatenation of its text units);
- ``claims.csv`` when the index has claims.

Relationships: ``RELATED`` (entity-entity, with weight and description), ``IN_COMMUNITY``
(entity-community, every level), ``PARENT_OF`` (community hierarchy), ``MENTIONED_IN``
(entity-text unit), ``PART_OF`` (text unit-document), ``HAS_CLAIM`` (subject entity-claim).

CSV follows RFC 4180 as ``neo4j-admin`` reads it: fields holding a comma, quote or line break are
quoted, quotes doubled; nulls are empty unquoted fields (no property), empty strings ``""``.
Line breaks inside fields need ``--multiline-fields=true``, which ``import.sh`` passes.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from graphrag_assets.core.schemas import CLAIM_FIELDS
from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.common import ExportResult, entity_communities, prepare_output_dir, read_index_tables
from graphrag_assets.interop.graph_edges import claim_edges, parent_edges, part_of_edges, related_edges

NODE_FILES = ("entities.csv", "communities.csv", "text_units.csv", "documents.csv", "claims.csv")
RELATIONSHIP_FILES = (
    "related.csv",
    "in_community.csv",
    "parent_of.csv",
    "mentioned_in.csv",
    "part_of.csv",
    "has_claim.csv",
)
SCRIPT_FILES = ("import.sh", "load.cypher", "README.txt")

_LABEL = re.compile(r"[^A-Z0-9_]+")


def label_for_type(entity_type: str | None) -> str:
    """``Entity`` plus the type as a label of letters, digits and underscores (``NOUN PHRASE`` → ``NOUN_PHRASE``)."""
    cleaned = _LABEL.sub("_", (entity_type or "").upper()).strip("_")
    if not cleaned:
        return "Entity"
    if cleaned[0].isdigit():
        cleaned = f"T_{cleaned}"
    return f"Entity;{cleaned}"


def node_frames(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The node files as frames whose column names are the neo4j-admin headers."""

    entities = tables["entities"].sort("human_readable_id", "id")
    labels = {t: label_for_type(t) for t in entities.get_column("type").drop_nulls().unique().to_list()}
    memberships = entity_communities(entities, tables["communities"])
    reports = (
        tables["community_reports"]
        .select(
            "community",
            pl.col("id").alias("report_id"),
            pl.col("title").alias("report_title"),
            "summary",
            "full_content",
            "rank",
            "rating_explanation",
        )
        .unique("community", keep="first", maintain_order=True)
    )
    frames = {
        "entities.csv": entities.join(memberships, on="id", how="left", maintain_order="left").select(
            pl.col("id").alias("id:ID(Entity)"),
            pl.col("human_readable_id").alias("human_readable_id:long"),
            "title",
            "type",
            "description",
            pl.col("degree").alias("degree:long"),
            pl.col("frequency").alias("frequency:long"),
            pl.col("community").alias("community:long"),
            pl.col("level0_community").alias("level0_community:long"),
            pl.col("type").replace_strict(labels, default="Entity", return_dtype=pl.String).alias(":LABEL"),
        ),
        "communities.csv": tables["communities"]
        .sort("level", "community")
        .join(reports, on="community", how="left", maintain_order="left")
        .select(
            pl.col("id").alias("id:ID(Community)"),
            pl.col("community").alias("community:long"),
            pl.col("level").alias("level:long"),
            pl.col("parent").alias("parent:long"),
            "title",
            pl.col("size").alias("size:long"),
            "period",
            "report_id",
            "report_title",
            "summary",
            "full_content",
            pl.col("rank").alias("rank:double"),
            "rating_explanation",
            pl.lit("Community").alias(":LABEL"),
        ),
        "text_units.csv": tables["text_units"]
        .sort("document_id", "chunk_index", "id")
        .select(
            pl.col("id").alias("id:ID(TextUnit)"),
            pl.col("chunk_index").alias("chunk_index:long"),
            "text",
            pl.col("n_tokens").alias("n_tokens:long"),
            "document_id",
            pl.lit("TextUnit").alias(":LABEL"),
        ),
        "documents.csv": tables["documents"]
        .sort("path", "human_readable_id", "id", nulls_last=True)
        .select(
            pl.col("id").alias("id:ID(Document)"),
            "title",
            "path",
            "creation_date",
            pl.lit("Document").alias(":LABEL"),
        ),
    }
    if tables["covariates"].height:
        frames["claims.csv"] = (
            tables["covariates"]
            .sort("human_readable_id", "id")
            .select(
                pl.col("id").alias("id:ID(Claim)"),
                pl.col("human_readable_id").alias("human_readable_id:long"),
                *CLAIM_FIELDS,
                "text_unit_id",
                pl.lit("Claim").alias(":LABEL"),
            )
        )
    return frames


def relationship_frames(tables: dict[str, pl.DataFrame]) -> tuple[dict[str, pl.DataFrame], int]:
    """The relationship files as frames (headers as column names), and how many edges were dropped
    because one end does not exist (an edge to a missing node would make neo4j-admin fail)."""
    entities, communities = tables["entities"], tables["communities"]
    related = related_edges(tables)
    entity_ids = entities.select("id")
    unit_ids = tables["text_units"].select("id")
    membership = (
        communities.sort("level", "community")
        .select(pl.col("entity_ids").alias("_start"), pl.col("id").alias("_end"), "level")
        .explode("_start")
        .drop_nulls("_start")
        .join(entity_ids, left_on="_start", right_on="id", how="semi", maintain_order="left")
    )
    mentions = (
        entities.sort("human_readable_id", "id")
        .select(pl.col("id").alias("_start"), pl.col("text_unit_ids").alias("_end"))
        .explode("_end")
        .drop_nulls("_end")
        .unique(maintain_order=True)
        .join(unit_ids, left_on="_end", right_on="id", how="semi", maintain_order="left")
    )
    dropped = related.filter(pl.col("_start").is_null() | pl.col("_end").is_null()).height
    frames = {
        "related.csv": _edges(
            related.drop_nulls(["_start", "_end"]),
            "Entity",
            "Entity",
            "RELATED",
            [
                pl.col("id"),
                pl.col("human_readable_id").alias("human_readable_id:long"),
                pl.col("description"),
                pl.col("weight").alias("weight:double"),
                pl.col("combined_degree").alias("combined_degree:long"),
            ],
        ),
        "in_community.csv": _edges(
            membership, "Entity", "Community", "IN_COMMUNITY", [pl.col("level").alias("level:long")]
        ),
        "parent_of.csv": _edges(parent_edges(communities), "Community", "Community", "PARENT_OF", []),
        "mentioned_in.csv": _edges(mentions, "Entity", "TextUnit", "MENTIONED_IN", []),
        "part_of.csv": _edges(part_of_edges(tables), "TextUnit", "Document", "PART_OF", []),
    }
    if tables["covariates"].height:
        frames["has_claim.csv"] = _edges(claim_edges(tables), "Entity", "Claim", "HAS_CLAIM", [])
    return frames, dropped


def _edges(frame: pl.DataFrame, start: str, end: str, rel_type: str, properties: list[pl.Expr]) -> pl.DataFrame:
    return frame.select(
        pl.col("_start").alias(f":START_ID({start})"),
        pl.col("_end").alias(f":END_ID({end})"),
        *properties,
        pl.lit(rel_type).alias(":TYPE"),
    )


def import_script(node_files: list[str], relationship_files: list[str]) -> str:
    """``import.sh``: the ``neo4j-admin database import full`` command for these files."""
    lines = [
        "#!/bin/sh",
        "# Import this folder into a new (or stopped) Neo4j 5 database:  sh import.sh [database]",
        "# The database must not be running; --overwrite-destination replaces its contents.",
        "set -e",
        'cd "$(dirname "$0")"',
        'DATABASE="${1:-neo4j}"',
        'neo4j-admin database import full "$DATABASE" \\',
        "  --overwrite-destination=true \\",
        "  --multiline-fields=true \\",
    ]
    lines += [f"  --nodes={name} \\" for name in node_files]
    lines += [f"  --relationships={name} \\" for name in relationship_files]
    lines[-1] = lines[-1].removesuffix(" \\")
    return "\n".join(lines) + "\n"


def _cypher_value(header: str) -> str:
    """The Cypher expression converting ``row.`header``` to the header's declared type."""
    field = f"row.`{header}`"
    if header.endswith(":long"):
        return f"toInteger({field})"
    if header.endswith(":double"):
        return f"toFloat({field})"
    return field


def _property_name(header: str) -> str:
    return header.split(":", 1)[0]


def load_cypher(nodes: dict[str, pl.DataFrame], relationships: dict[str, pl.DataFrame]) -> str:
    """``load.cypher``: the same graph with LOAD CSV, for a running database (Neo4j 5.26+ for the
    dynamic entity-type labels; on older versions drop that SET line, ``type`` stays a property)."""
    out = [
        "// Load with cypher-shell after copying the CSV files into Neo4j's import folder:",
        "//   cypher-shell -u neo4j -p <password> -f load.cypher",
        "// Needs Neo4j 5.26+ for the dynamic type labels (SET e:$(...)).",
        "",
    ]
    for frame in nodes.values():
        id_header = frame.columns[0]
        label = id_header[id_header.index("(") + 1 : -1]
        out.append(f"CREATE CONSTRAINT {label.lower()}_id IF NOT EXISTS FOR (n:{label}) REQUIRE n.id IS UNIQUE;")
    out.append("")
    for file_name, frame in nodes.items():
        id_header = frame.columns[0]
        label = id_header[id_header.index("(") + 1 : -1]
        props = [h for h in frame.columns[1:] if h != ":LABEL"]
        sets = ", ".join(f"n.{_property_name(h)} = {_cypher_value(h)}" for h in props)
        out += [
            f"LOAD CSV WITH HEADERS FROM 'file:///{file_name}' AS row",
            "CALL {",
            "  WITH row",
            f"  MERGE (n:{label} {{id: row.`{id_header}`}})",
        ]
        if sets:
            out.append(f"  SET {sets}")
        if label == "Entity":
            out.append("  SET n:$([l IN split(row.`:LABEL`, ';') WHERE l <> 'Entity'])")
        out += ["} IN TRANSACTIONS OF 1000 ROWS;", ""]
    for file_name, frame in relationships.items():
        start, end = frame.columns[0], frame.columns[1]
        start_label = start[start.index("(") + 1 : -1]
        end_label = end[end.index("(") + 1 : -1]
        rel_type = frame.get_column(":TYPE").first() if frame.height else file_name.removesuffix(".csv").upper()
        props = [h for h in frame.columns[2:] if h != ":TYPE"]
        sets = ", ".join(f"r.{_property_name(h)} = {_cypher_value(h)}" for h in props)
        out += [
            f"LOAD CSV WITH HEADERS FROM 'file:///{file_name}' AS row",
            "CALL {",
            "  WITH row",
            f"  MATCH (a:{start_label} {{id: row.`{start}`}})",
            f"  MATCH (b:{end_label} {{id: row.`{end}`}})",
            f"  CREATE (a)-[r:{rel_type}]->(b)",
        ]
        if sets:
            out.append(f"  SET {sets}")
        out += ["} IN TRANSACTIONS OF 1000 ROWS;", ""]
    return "\n".join(out)


README = """Neo4j import files exported by graphrag-assets.

Offline bulk import (fast; the database must be stopped or new):
    sh import.sh [database]        # runs neo4j-admin database import full ...

Into a running database:
    copy the *.csv files into Neo4j's import folder, then
    cypher-shell -u neo4j -p <password> -f load.cypher

Nodes: Entity (plus a label per entity type), Community (with its report), TextUnit, Document, Claim.
Relationships: RELATED, IN_COMMUNITY, PARENT_OF, MENTIONED_IN, PART_OF, HAS_CLAIM.
"""


def export_neo4j(settings: Settings, out_dir: Path, *, force: bool = False):
    """Write the CSV files, ``import.sh``, ``load.cypher`` and ``README.txt`` into ``out_dir``."""

    tables = read_index_tables(settings)
    nodes = node_frames(tables)
    relationships, dropped = relationship_frames(tables)
    prepare_output_dir(out_dir, [*NODE_FILES, *RELATIONSHIP_FILES, *SCRIPT_FILES], force=force)
    result = ExportResult(format="neo4j", out_dir=out_dir)
    for name, frame in {**nodes, **relationships}.items():
        frame.write_csv(out_dir / name)
        result.files.append(name)
        result.rows[name] = frame.height
    (out_dir / "import.sh").write_text(import_script(list(nodes), list(relationships)), encoding="utf-8")
    (out_dir / "load.cypher").write_text(load_cypher(nodes, relationships), encoding="utf-8")
    (out_dir / "README.txt").write_text(README, encoding="utf-8")
    result.files += list(SCRIPT_FILES)
    if dropped:
        result.warnings.append(f"{dropped} relationship(s) name an entity that does not exist and were left out.")
    return result
