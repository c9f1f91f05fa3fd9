"""Export the entity graph as GraphML (Gephi, yEd, Cytoscape, networkx, igraph).

Nodes are entities (GraphML node id = entity id) with ``title``, ``type``, ``description``,
``degree``, ``frequency``, ``human_readable_id``, ``community`` (the deepest community holding
the entity), ``community_level`` (its level) and ``level0_community`` (-1 when the entity is in
no community, e.g. outside the largest connected component). Edges are the relationships,
undirected (GraphML edge id = relationship id), with ``human_readable_id``, ``weight``,
``description`` and ``combined_degree``. (igraph 1.0's reader reports wrong edge ids; the
attributes and endpoints it reads are right.)

Written with ElementTree rather than igraph's writer so every attribute gets a declared GraphML
type and a stable order. XML 1.0 forbids most control characters even when escaped, so they are
removed from text values; a relationship whose end is not an entity is skipped and counted.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import polars as pl

from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.common import ExportResult, entity_communities, prepare_output_dir, read_index_tables

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
FILE_NAME = "graph.graphml"

# (attribute, GraphML type) per element kind, in file order.
NODE_KEYS = (
    ("title", "string"),
    ("type", "string"),
    ("description", "string"),
    ("human_readable_id", "long"),
    ("degree", "long"),
    ("frequency", "long"),
    ("community", "long"),
    ("community_level", "long"),
    ("level0_community", "long"),
)
EDGE_KEYS = (
    ("human_readable_id", "long"),
    ("weight", "double"),
    ("description", "string"),
    ("combined_degree", "long"),
)
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(value: object) -> str:
    """``value`` as text that is legal in XML 1.0 (nulls become empty text)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return _INVALID_XML.sub("", str(value))


def graph_tables(
    entities: pl.DataFrame, relationships: pl.DataFrame, communities: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Node rows, edge rows (with node ids as ``source_id``/``target_id``) and the skipped-edge count."""

    nodes = (
        entities.join(entity_communities(entities, communities), on="id", how="left")
        .sort("human_readable_id", "id")
        .select("id", *[name for name, _ in NODE_KEYS])
    )
    ids = entities.select(pl.col("title"), pl.col("id")).unique("title", keep="first")
    edges = (
        relationships.join(ids.rename({"id": "source_id"}), left_on="source", right_on="title", how="left")
        .join(ids.rename({"id": "target_id"}), left_on="target", right_on="title", how="left")
        .sort("human_readable_id", "id")
    )
    linked = edges.filter(pl.col("source_id").is_not_null() & pl.col("target_id").is_not_null())
    return nodes, linked, edges.height - linked.height


def graphml_tree(nodes: pl.DataFrame, edges: pl.DataFrame) -> ET.ElementTree:
    """The GraphML document for the node and edge rows of :func:`graph_tables`."""
    ET.register_namespace("", GRAPHML_NS)
    root = ET.Element(f"{{{GRAPHML_NS}}}graphml")
    key_ids: dict[tuple[str, str], str] = {}
    for kind, keys, prefix in (("node", NODE_KEYS, "dn"), ("edge", EDGE_KEYS, "de")):
        for index, (name, gtype) in enumerate(keys):
            key_id = f"{prefix}{index}"
            key_ids[(kind, name)] = key_id
            ET.SubElement(
                root, f"{{{GRAPHML_NS}}}key", {"id": key_id, "for": kind, "attr.name": name, "attr.type": gtype}
            )
    graph = ET.SubElement(root, f"{{{GRAPHML_NS}}}graph", {"id": "G", "edgedefault": "undirected"})
    for row in nodes.iter_rows(named=True):
        node = ET.SubElement(graph, f"{{{GRAPHML_NS}}}node", {"id": xml_text(row["id"])})
        _data(node, row, NODE_KEYS, "node", key_ids)
    for row in edges.iter_rows(named=True):
        edge = ET.SubElement(
            graph,
            f"{{{GRAPHML_NS}}}edge",
            {"id": xml_text(row["id"]), "source": xml_text(row["source_id"]), "target": xml_text(row["target_id"])},
        )
        _data(edge, row, EDGE_KEYS, "edge", key_ids)
    ET.indent(root)
    return ET.ElementTree(root)


def _data(element: ET.Element, row: dict, keys, kind: str, key_ids: dict[tuple[str, str], str]) -> None:
    for name, _ in keys:
        value = row.get(name)
        if value is None:
            continue  # GraphML: a missing data element means "no value"
        ET.SubElement(element, f"{{{GRAPHML_NS}}}data", {"key": key_ids[(kind, name)]}).text = xml_text(value)


def export_graphml(settings: Settings, out_dir: Path, *, force: bool = False):
    """Write ``out_dir/graph.graphml``."""

    tables = read_index_tables(settings, ("entities", "relationships", "communities"))
    nodes, edges, skipped = graph_tables(tables["entities"], tables["relationships"], tables["communities"])
    prepare_output_dir(out_dir, [FILE_NAME], force=force)
    graphml_tree(nodes, edges).write(out_dir / FILE_NAME, encoding="utf-8", xml_declaration=True)
    rows = {"nodes": nodes.height, "edges": edges.height}
    result = ExportResult(format="graphml", out_dir=out_dir, files=[FILE_NAME], rows=rows)
    if skipped:
        result.warnings.append(f"{skipped} relationship(s) name an entity that does not exist and were left out.")
    return result
