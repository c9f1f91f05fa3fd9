"""Stable clustering for updates: warm-started Leiden, drift, and when to re-cluster from scratch.

In ``exact`` mode (the default) an update clusters from scratch, so the index equals a rebuild.
In ``stable`` mode (``communities.update: stable``) an update starts from the previous run's
communities and lets only the *affected region* move:

- a node is affected when it is new (no previous community) or when moving it to a neighbouring
  community would raise modularity under the kept partition (the edit changed its situation);
  every other node keeps its community. Letting the neighbours of affected nodes move too was
  measured on the Christmas Carol update (``bench_incremental.py --scenario carol``): 22 changed
  communities instead of 21, 6 changed without holding a touched entity instead of 4, and the
  same modularity, so they stay fixed;
- the affected nodes are optimised with leidenalg (whatever ``backend`` says: only leidenalg can
  hold the other nodes fixed), seeded from the hash of the clustered members, on the graph with
  each community's held nodes merged into one held vertex (see ``_optimise_movable``); a sub-level is
  warm-started from the previous sub-communities of its members the same way, and clustered
  from scratch when none of them had one;
- a kept community that an edit disconnected is split into its connected pieces, so every
  community is connected as with fresh Leiden.

An untouched community therefore keeps its members exactly, and its report prompt stays
byte-identical unless its own rows changed. The price is that the kept partition can fall
behind what a fresh clustering would find. **Drift** measures that on the current graph:

    drift = (Q_fresh - Q_kept) / Q_fresh

with Q the weighted modularity (at ``resolution``) of the level-0 partition over the clustered
nodes, Q_fresh that of a from-scratch clustering (the one an exact rebuild would produce) and
Q_kept that of the warm-started one. Negative drift means the kept partition is better. When drift
exceeds ``drift_threshold`` (default 2%), when the user asks (``index --recluster``) or after
``recluster_every`` warm starts, the update uses the fresh clustering instead, and the index again
equals a rebuild.

Q_fresh costs a from-scratch Leiden run of level 0: 30 s of a one-document update at 100,000
documents. It is measured every ``drift_every`` warm starts (default 10); in between, drift is
taken against the last measured Q_fresh, and an estimate above the threshold has Q_fresh measured
at once. One update moves a graph's best modularity little (the estimate misses only structure a
handful of updates added that the kept partition lacks, and for at most ``drift_every - 1``
updates); a fall of Q_kept is caught by the estimate on the update that causes it.

Everything here is pure: the previous assignments come in as a frame, new ones go out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import igraph
import polars as pl

from graphrag_assets.core.schemas import empty_frame
from graphrag_assets.index.coded_graph import (
    CodedEdges,
    CodedRelationships,
    coded_frame,
    edges_of_frame,
    normalized_edges,
)
from graphrag_assets.index.communities import (
    ASSIGNMENTS,
    N_ITERATIONS,
    _keep_largest_component,
    _leiden_per_component,
    _run_seed,
    assemble_hierarchy,
    communities_from_assignments,
    graph_from_codes,
    hierarchical_leiden,
    leiden_options,
    partition_modularity,
    resolve_backend,
)

if TYPE_CHECKING:
    import numpy as np

    from graphrag_assets.core.settings import CommunitySettings

Strategy = Literal["fresh", "warm"]

NEVER_SPLIT = 1 << 62  # a max_cluster_size no cluster reaches: a hierarchy of its top level only
# A move must gain more than this (in leidenalg's quality units) to make a node affected; below
# it, floating-point noise would mark nodes of an unchanged graph.
_GAIN_EPSILON = 1e-9
# The top level's edges as arrays (source, target, weight), vertex numbers as in its graph.
EdgeArrays = tuple["np.ndarray", "np.ndarray", "np.ndarray"]


@dataclass(frozen=True)
class ClusteringRequest:
    """What an update's clustering needs besides the graph.

    ``previous`` holds the last run's ``ASSIGNMENTS`` (node titles; see
    :func:`previous_assignments`), None when there was no previous run; ``warm_starts`` counts the
    warm-started runs since the last fresh clustering; ``recluster`` is the user's request;
    ``last_fresh`` is the last run's fresh modularity and when it was measured (None: measure now).
    """

    settings: CommunitySettings
    previous: pl.DataFrame | None = None
    warm_starts: int = 0
    recluster: bool = False
    last_fresh: FreshModularity | None = None


@dataclass(frozen=True)
class FreshModularity:
    """Q_fresh as a run recorded it: ``drift_age`` warm starts ago it was measured (0: that run)."""

    value: float
    drift_age: int


@dataclass(frozen=True)
class ClusteringOutcome:
    """The assignments an update uses and why; ``drift`` is 0.0 for a fresh clustering."""

    assignments: pl.DataFrame
    strategy: Strategy
    reason: str  # why this strategy, one phrase
    modularity: float  # level 0 of ``assignments``
    fresh_modularity: float  # level 0 of a from-scratch clustering of the same graph
    drift: float
    warm_starts: int  # warm-started runs since the last fresh clustering, this one included
    drift_age: int = 0  # warm starts since fresh_modularity was measured (0: by this run)


def previous_assignments(communities: pl.DataFrame | None, entities: pl.DataFrame) -> pl.DataFrame | None:
    """``ASSIGNMENTS`` rows of a stored ``communities`` table, with entity ids turned into titles.

    Entities that no longer exist drop out (they are not in the new graph either). None when
    there is no previous table or it is empty.
    """
    if communities is None or communities.is_empty():
        return None
    titles = entities.select(pl.col("id").alias("entity_id"), pl.col("title").alias("node"))
    return (
        communities.select("community", "level", "parent", pl.col("entity_ids").alias("entity_id"))
        .explode("entity_id")
        .join(titles, on="entity_id")
        .select(list(ASSIGNMENTS))
        .cast(ASSIGNMENTS)
        .sort("level", "community", "node")
    )


def last_fresh_modularity(recorded: Mapping[str, object]) -> FreshModularity | None:
    """Q_fresh as the last run recorded it (its ``community_clustering`` row); None when that run
    did not record when it was measured (a build of older code, or none)."""
    value, age = recorded.get("fresh_modularity"), recorded.get("drift_age")
    if not isinstance(value, float) or not isinstance(age, int):
        return None
    return FreshModularity(value, age)


def modularity_drift(fresh_modularity: float, kept_modularity: float) -> float:
    """(Q_fresh - Q_kept) / Q_fresh; 0.0 when there is no structure to lose (Q_fresh <= 0 or NaN)."""
    if not fresh_modularity > 0 or kept_modularity != kept_modularity:
        return 0.0
    return (fresh_modularity - kept_modularity) / fresh_modularity


def cluster_for_update(edges: pl.DataFrame | CodedEdges, request: ClusteringRequest) -> ClusteringOutcome:
    """The hierarchy an update should store: fresh, or warm-started from ``request.previous``."""
    settings = request.settings
    edges = edges if isinstance(edges, CodedEdges) else edges_of_frame(edges)

    def use_fresh(reason: str) -> ClusteringOutcome:
        fresh = hierarchical_leiden(edges, leiden_options(settings))
        fresh_q = partition_modularity(edges, fresh, resolution=settings.resolution)
        return ClusteringOutcome(fresh, "fresh", reason, fresh_q, fresh_q, 0.0, 0)

    if settings.update == "exact":
        return use_fresh("exact mode")
    if request.previous is None or request.previous.is_empty():
        return use_fresh("no previous communities")
    if request.recluster:
        return use_fresh("re-cluster requested")
    if settings.recluster_every and request.warm_starts >= settings.recluster_every:
        return use_fresh(f"scheduled after {request.warm_starts} warm-started update(s)")
    warm = warm_start_hierarchy(edges, request.previous, settings)
    kept_q = partition_modularity(edges, warm, resolution=settings.resolution)
    warm_starts = request.warm_starts + 1
    last = request.last_fresh
    if last is not None and last.drift_age + 1 < settings.drift_every:
        drift = modularity_drift(last.value, kept_q)
        if drift <= settings.drift_threshold:
            reason = f"warm start (drift against the fresh clustering of {last.drift_age + 1} update(s) ago)"
            return ClusteringOutcome(warm, "warm", reason, kept_q, last.value, drift, warm_starts, last.drift_age + 1)
    # the drift needs only the fresh level 0; its sub-levels are made when the fresh one is used
    fresh_q = partition_modularity(edges, fresh_top_level(edges, settings), resolution=settings.resolution)
    drift = modularity_drift(fresh_q, kept_q)
    if drift > settings.drift_threshold:
        return use_fresh(f"drift {drift:.2%} above the {settings.drift_threshold:.2%} threshold")
    return ClusteringOutcome(warm, "warm", "warm start", kept_q, fresh_q, drift, warm_starts)


def fresh_top_level(edges: CodedEdges, settings: CommunitySettings) -> pl.DataFrame:
    """Level 0 of :func:`hierarchical_leiden`'s fresh hierarchy, without the levels under it.

    The hierarchy is made level by level, and a level only splits the clusters of the one above
    that reach ``max_cluster_size``: with a size no cluster reaches, the first level is made
    exactly as in the full run (same runs, seeds and numbering) and nothing is split. Below it
    lay a third of a stable update's fresh clustering at 20,000 documents (4.8 of 14.1 s).
    """
    return hierarchical_leiden(edges, replace(leiden_options(settings), max_cluster_size=NEVER_SPLIT))


def communities_for_update(
    entities: pl.DataFrame,
    relationships: pl.DataFrame | CodedRelationships,
    request: ClusteringRequest,
    period: str,
) -> tuple[pl.DataFrame, ClusteringOutcome]:
    """The ``communities`` table an update stores, and how it was clustered.

    Relationships are clustered by entity title (see
    :func:`~graphrag_assets.index.communities.build_communities`, which this equals in exact mode);
    the step passes them coded against :func:`entity_titles` (:mod:`.coded_graph`).
    """
    titles = entities.select("id", "title").unique().sort("title", "id")
    coded = relationships
    if not isinstance(coded, CodedRelationships):
        coded = coded_frame(entity_titles(entities), relationships)
    outcome = cluster_for_update(normalized_edges(coded.titles, coded.edges), request)
    return communities_from_assignments(titles, coded, outcome.assignments, period), outcome


def entity_titles(entities: pl.DataFrame) -> pl.Series:
    """The sorted distinct titles relationships are coded against (a code is a position in it)."""
    return entities["title"].drop_nulls().unique().sort()


def warm_start_hierarchy(
    edges: pl.DataFrame | CodedEdges, previous: pl.DataFrame, settings: CommunitySettings
) -> pl.DataFrame:
    """The hierarchy of ``edges`` warm-started from ``previous`` (``ASSIGNMENTS``; see the module docstring).

    Same graph (largest component with ``use_lcc``), same size rule and numbering as
    :func:`~graphrag_assets.index.communities.hierarchical_leiden`.
    """
    coded = edges if isinstance(edges, CodedEdges) else edges_of_frame(edges)
    if coded.is_empty:
        return empty_frame(ASSIGNMENTS)
    backend = resolve_backend(settings.backend, coded.names.len())  # decided on the whole graph, as a rebuild does
    top: EdgeArrays | None = None
    if backend == "graspologic":  # a graph this big is clustered on arrays (numpy) anyway
        if settings.use_lcc:
            coded = _largest_component(coded)
        top = coded.arrays()
    graph = graph_from_codes(coded)
    if settings.use_lcc and top is None:
        graph = _keep_largest_component(graph)
    labels: dict[int, dict[str, int]] = {}
    for node, community, level in previous.select("node", "community", "level").iter_rows():
        labels.setdefault(level, {})[node] = community

    def split(level: int, parent: int, subgraph: igraph.Graph) -> list[list[int]]:
        names = subgraph.vs["name"]
        known = labels.get(level, {})
        initial = [known.get(name) for name in names]
        if all(label is None for label in initial):
            return _leiden_per_component(
                subgraph, backend, settings.seed, settings.resolution, N_ITERATIONS[backend], polish=True
            )
        edges = top if subgraph is graph else None
        return warm_leiden(
            subgraph, initial, seed=_run_seed(settings.seed, names), resolution=settings.resolution, edges=edges
        )

    return assemble_hierarchy(graph, split, settings.max_cluster_size)


def warm_leiden(
    graph: igraph.Graph,
    initial: list[int | None],
    *,
    seed: int,
    resolution: float = 1.0,
    edges: EdgeArrays | None = None,
) -> list[list[int]]:
    """One flat clustering of ``graph`` that starts from ``initial`` (None: a node without a community).

    Only affected nodes (see the module docstring) may move; returns lists of vertex indices,
    each ascending, every cluster connected. ``edges``: the graph's edges as arrays, when the
    caller has them (the top level of a big graph), to find the affected nodes in arrays.
    """
    membership = _connected_labels(graph, initial)
    unlabelled = {v for v, label in enumerate(initial) if label is None}
    movable = unlabelled | _improvable(graph, membership, resolution, edges)
    if movable:
        moved = _optimise_movable(graph, membership, sorted(movable), seed=seed, resolution=resolution)
        membership = _connected_labels(graph, moved)
    clusters: dict[int, list[int]] = {}
    for vertex, label in enumerate(membership):
        clusters.setdefault(label, []).append(vertex)
    return list(clusters.values())


def _optimise_movable(
    graph: igraph.Graph, membership: list[int], movable: list[int], *, seed: int, resolution: float
) -> list[int]:
    """``membership`` (consecutive labels) after leidenalg has moved the ``movable`` vertices until
    no move gains, every other vertex held in its community.

    leidenalg runs on ``graph`` with each community's held vertices merged into one held vertex
    (their edges summed, those inside it a self-loop). A move's gain depends only on the vertex's
    weight to each community and the communities' total strengths, which the merged graph keeps,
    so every move is valued as on the whole graph (tested); but each of leidenalg's passes, which
    visit every vertex and edge, now costs the communities and the movable vertices. On the whole
    graph they took 35 s of a one-document update at 100,000 documents (50,000 vertices, 7.5 M
    edges).
    """
    import leidenalg

    merged, initial = merged_graph(graph, membership, movable)
    partition = leidenalg.RBConfigurationVertexPartition(
        merged, initial_membership=initial, weights="weight", resolution_parameter=resolution
    )
    optimiser = leidenalg.Optimiser()
    optimiser.set_rng_seed(seed)
    communities = merged.vcount() - len(movable)
    held = [True] * communities + [False] * len(movable)
    optimiser.optimise_partition(partition, n_iterations=-1, is_membership_fixed=held)  # few move: until stable
    moved = partition.membership
    position = {vertex: communities + i for i, vertex in enumerate(movable)}
    return [moved[position[v]] if v in position else moved[label] for v, label in enumerate(membership)]


def merged_graph(graph: igraph.Graph, membership: list[int], movable: list[int]) -> tuple[igraph.Graph, list[int]]:
    """``graph`` with the vertices of community ``c`` that are not ``movable`` merged into vertex
    ``c`` (a community of movable vertices only: an isolated vertex), the ``movable`` ones after
    them in order; and the merged graph's initial membership (``c``, then each movable vertex's)."""
    communities = max(membership) + 1
    position = {vertex: communities + i for i, vertex in enumerate(movable)}
    merged = graph.copy()
    merged.contract_vertices([position.get(v, label) for v, label in enumerate(membership)], combine_attrs=None)
    merged.simplify(multiple=True, loops=False, combine_edges={"weight": "sum"})
    return merged, list(range(communities)) + [membership[v] for v in movable]


def _improvable(
    graph: igraph.Graph, membership: list[int], resolution: float, edges: EdgeArrays | None = None
) -> set[int]:
    """Vertices that a move to a neighbouring community would improve the quality of
    ``membership`` (consecutive labels): in arrays when ``edges`` holds the graph's edges, else
    by leidenalg's ``diff_move`` (a small graph's warm start loads no numpy)."""
    if edges is not None:
        from graphrag_assets.index.local_moving import LevelGraph, improvable

        level = LevelGraph.of_edges(graph.vcount(), edges)
        return set(improvable(level, membership, resolution, _GAIN_EPSILON / 2).tolist())  # ours: half leidenalg's
    import leidenalg

    partition = leidenalg.RBConfigurationVertexPartition(
        graph, initial_membership=membership, weights="weight", resolution_parameter=resolution
    )
    found: set[int] = set()
    for v in range(graph.vcount()):
        own = membership[v]
        for community in {membership[u] for u in graph.neighbors(v)} - {own}:
            if partition.diff_move(v, community) > _GAIN_EPSILON:
                found.add(v)
                break
    return found


def _largest_component(coded: CodedEdges) -> CodedEdges:
    """``coded`` cut to its largest connected component, as :func:`_keep_largest_component` cuts
    its graph (the same vertices and edges, in the same order), on arrays: deleting the other
    vertices from the igraph graph of 100,000 documents took 3.4 s."""
    import numpy as np

    from graphrag_assets.index.native_leiden import largest_component

    n = coded.names.len()
    src, dst, _ = coded.arrays()
    keep = largest_component(n, src, dst)
    if keep.size == n:
        return coded
    code = np.full(n, -1, dtype=np.int64)
    code[keep] = np.arange(keep.size)
    inside = code[src] >= 0  # an edge's ends share a component
    edges = coded.edges.filter(pl.Series(inside)).with_columns(
        source=pl.Series(code[src[inside]]), target=pl.Series(code[dst[inside]])
    )
    return CodedEdges(coded.names.gather(pl.Series(keep)), edges)


def _connected_labels(graph: igraph.Graph, labels: list[int | None]) -> list[int]:
    """Consecutive labels, one per connected piece of each labelled group; each None its own label.

    A community an edit cut in two (a deleted entity or relationship) becomes two communities
    here, as fresh Leiden would never return a disconnected one.
    """
    groups: dict[int, list[int]] = {}
    for v, label in enumerate(labels):
        if label is not None:
            groups.setdefault(label, []).append(v)
    out = [0] * graph.vcount()
    next_label = 0
    for label in sorted(groups):
        members = groups[label]
        pieces = graph.induced_subgraph(members, implementation="create_from_scratch").connected_components()
        for piece in pieces:
            for index in piece:
                out[members[index]] = next_label
            next_label += 1
    for v, label in enumerate(labels):
        if label is None:
            out[v] = next_label
            next_label += 1
    return out
