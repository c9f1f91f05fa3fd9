"""Writing the local-search walk's graph with each build (see :mod:`graphrag_assets.index.walk_graph`).

Called by the corpus run's last step once the build is published, so every build an ``index``
run makes — a full one or the re-run of the corpus step after one added document — stores the
graph its queries walk, stamped with that build.
"""

from __future__ import annotations

from pathlib import Path

from graphrag_assets.storage.corpus import graph_sizes

# Below this many relationships a query reads their ends as strings in well under a second and the
# build skips the walk graph, so a small index (and its cold CLI) never loads numpy for it.
MIN_RELATIONSHIPS = 100_000


def store_walk_graph(database_path: str | Path, min_relationships: int = MIN_RELATIONSHIPS) -> int:
    """Compute the published build's walk graph and store it; returns its directed edges (0: no
    build, or fewer than ``min_relationships`` relationships, when queries walk the tables)."""
    if graph_sizes(database_path)["relationships"] < min_relationships:
        return 0
    from graphrag_assets.index.walk_graph import walk_matrix
    from graphrag_assets.storage.walk_tables import ARRAYS, walk_inputs, write_walk

    inputs = walk_inputs(database_path)
    if inputs is None or inputs["stamp"] is None:
        return 0
    walk = walk_matrix(
        inputs["entity_count"],
        inputs["unit_count"],
        inputs.pop("link_ends"),
        inputs.pop("link_weight"),
        inputs.pop("mention_entity"),
        inputs.pop("mention_unit"),
    )
    arrays = {name: getattr(walk, name) for name in ARRAYS}
    write_walk(database_path, inputs["stamp"], (walk.entity_count, walk.unit_count), arrays)
    return len(walk.sources)
