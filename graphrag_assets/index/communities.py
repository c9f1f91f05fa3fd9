"""Hierarchical Leiden communities of the entity graph (the ``communities`` table).

The hierarchy follows Microsoft GraphRAG's semantics (reference §5): level 0 is a modularity
Leiden clustering of the whole graph (or of its largest connected component); every cluster with
at least ``max_cluster_size`` members is clustered again on its induced subgraph, and its
sub-clusters form the next level. A cluster that Leiden cannot split (it returns a single
cluster) stays a leaf, however large. Levels are therefore not full partitions: a node appears at
level L+1 only when its level-L cluster was split.

Where we differ from Microsoft, on purpose:

- Duplicate undirected pairs (A,B)/(B,A) are merged by *summing* their weights. Microsoft keeps
  the last row's weight, which depends on row order and throws away evidence: two extracted
  relationships between the same entities are stronger than one.
- Communities without an internal relationship (e.g. a singleton child of a split) are kept, so
  a community's children always partition it (Microsoft drops them, quirk Q11).
- Relationships with an endpoint that is not an entity are left out of the graph (a community is
  a set of entities). Microsoft clusters them anyway: its Christmas Carol index has 84 such
  relationships (31 titles), which is why its level 0 covers 504 entities and ours 483.
- Every id is deterministic: the ``community`` numbers depend only on the graph and the seed,
  and the ``id`` is a hash of the level and the member entity ids, so a community that did not
  change keeps its id across runs.

Randomness: each Leiden run gets its own seed derived from ``seed`` and the sorted member titles
of the graph being clustered, so the sub-clustering of a cluster whose members did not change
does not depend on the random draws made elsewhere in the hierarchy.

Locality: every connected component is clustered on its own (its own Leiden run and seed), so
a component that an edit did not touch gets exactly the communities it had (with ``use_lcc``
only the largest component is clustered, and this changes nothing). What each of these steps
buys in reports regenerated per edit is measured by ``bench/bench_incremental.py``; warm-started
("stable") clustering is in :mod:`graphrag_assets.index.stable_communities`.

Engine: the default backend (``auto``) is graspologic-native's Rust Leiden (the engine Microsoft
GraphRAG uses) from NATIVE_FROM_NODES nodes and igraph's until-stable Leiden below. graspologic
runs one Leiden cycle per run, every run then *polished* by node-level moving until no single
node gains by moving (:mod:`graphrag_assets.index.local_moving`, vectorized over all the graphs of a
level), and the hierarchy is built level by level on integer arrays
(:mod:`graphrag_assets.index.native_leiden`). igraph's Leiden run until
stable, the previous default, did not scale: on a 200,000-node / 1M-edge planted partition each
iteration took 3-6 s and modularity stopped improving after about 11 iterations (0.91479), but
nodes tied between communities kept moving, so "until stable" ran for tens of iterations (not
finished after 12 minutes); the level-0 run was 34 s of the 52 s hierarchy at 100,000 nodes. The
numbers below are for the igraph and leidenalg backends, which remain selectable.

``n_iterations`` (Leiden iterations per run) is -1 (until stable) for igraph and 2 for leidenalg.
A partition found until stable is locally optimal (no single node gains by moving), which is what
a warm start (stable mode) needs: from a two-iteration partition its first warm start also moves
the nodes two iterations left misplaced. Deleting one document's relationships from the
500-document corpus of ``bench_incremental.py`` (30 documents in turn), a warm start kept 99.9% of
the untouched communities from an until-stable partition and 85.1% from a two-iteration one. For
fresh clusterings (exact mode) it is neither better nor worse for locality: the share of untouched
communities kept went from 77.0% to 84.8% on Microsoft's Christmas Carol graph (each of its 42
text units deleted in turn) but from 91.7% to 87.4% on that corpus. For leidenalg it costs 10-20x
the time (below), so it keeps 2. Measured with ``bench/bench_clustering.py --iterations`` on
planted-partition graphs (modularity and time of the level-0 clustering; whole hierarchy in brackets):

- igraph, 10k nodes: 2 → 0.9019 in 0.07 s (0.17 s); 1 → 0.9017, 0.06 s (0.13 s);
  -1 → 0.9020, 0.15 s (0.24 s).
- igraph, 100k nodes: 2 → 0.9119, 1.1 s (2.4 s); 1 → 0.9116, 1.0 s (1.9 s);
  -1 → 0.9120, 4.9 s (6.7 s).
- leidenalg, 10k nodes: 2 → 0.9018, 0.53 s (1.1 s); 1 → 0.9016, 0.37 s (0.72 s);
  -1 → 0.9021, 5.5 s (6.0 s).
- leidenalg, 100k nodes: 2 → 0.9117, 8.7 s (16 s); 1 → 0.9116, 6.1 s (11 s);
  -1 → 0.9119, 168 s (212 s).

Running until stable gains at most 0.0003 modularity (about the spread between seeds) for 2-4x
the time with igraph and 10-20x with leidenalg; one iteration loses a little modularity and
gains little time over two. With igraph the 2-4x is a few seconds at 100k nodes, far less than
one report call that a reshuffled community costs.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

import igraph
import polars as pl

from graphrag_assets.core.ids import stable_hash, stable_uuid
from graphrag_assets.core.schemas import COMMUNITIES, conform, empty_frame
from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index.coded_graph import (
    CodedEdges,
    CodedRelationships,
    coded_frame,
    edges_of_frame,
    internal_relationship_chunks,
    level_modularity,
    normalized_edges,
    refuse_bad_weights,
)

Backend = Literal["auto", "graspologic", "igraph", "leidenalg"]
BACKENDS: tuple[str, ...] = ("auto", "graspologic", "igraph", "leidenalg")
# ``auto``: graspologic-native from this many nodes, igraph below. igraph's until-stable runs settle
# quickly on small graphs, and the native path's numpy and scipy would add ~50 MB to a small index.
NATIVE_FROM_NODES = 20_000
LEIDEN_ITERATIONS = 1  # graspologic: full Leiden cycles per run, as Microsoft GraphRAG runs it

DEFAULT_SEED = 0xDEADBEEF
N_ITERATIONS = {
    "graspologic": LEIDEN_ITERATIONS,
    "igraph": -1,
    "leidenalg": 2,
}  # Leiden iterations per run by backend; see the module docstring

# One row per (node, level) membership: the output of ``hierarchical_leiden``.
ASSIGNMENTS = {
    "node": pl.String,
    "community": pl.Int64,
    "level": pl.Int64,
    "parent": pl.Int64,
}

# Normalized undirected edge list: source < target, one row per pair, weights summed.
EDGES = {"source": pl.String, "target": pl.String, "weight": pl.Float64}

# igraph's random number generator is process-global. We swap in a seeded private generator
# for each call and put igraph's default (the ``random`` module) back afterwards; the lock
# keeps two of our own threads from interleaving their swaps.
_IGRAPH_RNG_LOCK = threading.Lock()


def normalize_edges(edges: pl.DataFrame) -> pl.DataFrame:
    """Undirected, de-duplicated edge list sorted by (source, target).

    Direction is normalized (the smaller title becomes ``source``), self-loops are dropped and
    duplicate pairs are merged by summing their weights. A missing ``weight`` column or a null
    weight counts as 1.0. Negative or non-finite weights are rejected: modularity is undefined
    for them.
    """
    if edges.is_empty():
        return empty_frame(EDGES)
    weight = pl.col("weight").cast(pl.Float64).fill_null(1.0) if "weight" in edges.columns else pl.lit(1.0)
    frame = edges.select(
        pl.col("source").cast(pl.String),
        pl.col("target").cast(pl.String),
        weight.alias("weight"),
    ).drop_nulls(["source", "target"])
    refuse_bad_weights(frame, str)
    return (
        frame.select(
            pl.min_horizontal("source", "target").alias("source"),
            pl.max_horizontal("source", "target").alias("target"),
            "weight",
        )
        .filter(pl.col("source") != pl.col("target"))
        .group_by("source", "target")
        .agg(pl.col("weight").sum())
        .sort("source", "target")
    )


class _Graph(igraph.Graph):
    """igraph's Graph without the numpy import in its constructor.

    ``igraph.Graph.__init__`` imports numpy (when it is installed) on every call, only to check
    whether the edge list is a numpy array, and every graph igraph or leidenalg derives from this
    one (subgraphs, components) is built through it. An index with a model needs numpy nowhere
    else, and loading it costs 12 MB resident of the 300 MB issue 14 allows, so these graphs are
    built by igraph's C base class directly: from a vertex count and an iterable of edges, or from the
    handle igraph passes when it makes a graph of this class.
    """

    def __init__(
        self, n: int = 0, edges: Iterable[tuple[int, int]] = (), directed: bool = False, **handle: Any
    ) -> None:
        if handle:
            igraph.GraphBase.__init__(self, **handle)  # {"__ptr": ...}: a graph igraph derived from this one
        else:
            igraph.GraphBase.__init__(self, n, edges, directed)  # any iterable of pairs, read once


def _graph_from_edges(edges: pl.DataFrame) -> igraph.Graph:
    """An undirected igraph Graph whose vertices are in sorted title order.

    Leiden visits vertices in index order (shuffled with the seeded generator), so a vertex
    order that depends on input row order would make the result depend on it too.
    """
    names = pl.concat([edges["source"], edges["target"]]).unique().sort()
    index = pl.DataFrame({"name": names, "i": pl.int_range(names.len(), eager=True)})
    pairs = (
        edges.join(index, left_on="source", right_on="name")
        .join(index, left_on="target", right_on="name", suffix="_t")
        .sort("i", "i_t")
    )
    graph = _Graph(names.len(), list(zip(pairs["i"].to_list(), pairs["i_t"].to_list())))
    graph.vs["name"] = names.to_list()
    graph.es["weight"] = pairs["weight"].to_list()
    return graph


def graph_from_codes(coded: CodedEdges) -> igraph.Graph:
    """:func:`_graph_from_edges` of an edge list in codes: the same vertices, edges and weights.

    igraph gets every edge in one call, from an iterator that makes Python pairs a batch at a
    time: a list of all pairs costs about 100 MB per million edges, and igraph re-indexes the
    whole graph on every ``add_edges`` call, so adding 15 M edges in batches of 500,000 took 20 s
    where one call takes 4.5 s.
    """
    source, target = coded.edges["source"], coded.edges["target"]
    pairs = chain.from_iterable(
        zip(source.slice(start, EDGE_BATCH).to_list(), target.slice(start, EDGE_BATCH).to_list(), strict=True)
        for start in range(0, coded.edges.height, EDGE_BATCH)
    )
    graph = _Graph(coded.names.len(), pairs)
    graph.vs["name"] = coded.names.to_list()
    graph.es["weight"] = coded.edges["weight"].to_list()
    return graph


EDGE_BATCH = 500_000


def _keep_largest_component(graph: igraph.Graph) -> igraph.Graph:
    """``graph`` cut in place to its largest connected component; among equal sizes, the one
    holding the smallest title.

    Deleting the other vertices keeps the edges in their order and takes 2.3 s on the 15 M
    edges of 100,000 documents, where copying the component out took 5.5 s and a second graph.
    """
    components = graph.connected_components()
    if len(components) <= 1:
        return graph
    # Components are numbered in order of their smallest vertex index, i.e. smallest title.
    best = max(range(len(components)), key=lambda c: (len(components[c]), -c))
    graph.delete_vertices([v for v, component in enumerate(components.membership) if component != best])
    return graph


def _run_seed(seed: int, names: Sequence[str]) -> int:
    """A 31-bit seed for one Leiden run, derived from the user seed and the members clustered."""
    return int(stable_hash(seed, *names)[:8], 16) & 0x7FFFFFFF


class _SeedOfMembers:
    """:func:`_run_seed` of members given as indices into sorted titles, with each title encoded once.

    The hierarchy hashes every clustered title once per level (a million strings at a million
    nodes): one digest update per run over the joined bytes instead of one per title. The digest
    equals :func:`~graphrag_assets.core.ids.stable_hash`'s, which joins the same bytes.
    """

    def __init__(self, seed: int, titles: pl.Series) -> None:
        import numpy as np

        self.prefix = str(seed).encode("utf-8", "surrogatepass") + b"\x1f"
        self.encoded = np.array([t.encode("utf-8", "surrogatepass") for t in titles.to_list()], dtype=object)

    def __call__(self, members) -> int:
        joined = b"\x1f".join(self.encoded[members].tolist())
        return int(hashlib.sha256(self.prefix + joined).hexdigest()[:8], 16) & 0x7FFFFFFF


def _leiden(
    graph: igraph.Graph, backend: str, seed: int, resolution: float, n_iterations: int, *, polish: bool = False
) -> list[list[int]]:
    """One flat modularity Leiden clustering: lists of vertex indices, each list ascending.

    ``polish`` (graspologic only; igraph's until-stable runs are node-optimal already) makes the
    result node-optimal, see :func:`_node_optimal`.
    """
    if backend == "igraph":
        with _IGRAPH_RNG_LOCK:
            igraph.set_random_number_generator(random.Random(seed))
            try:
                membership = graph.community_leiden(
                    objective_function="modularity",
                    weights="weight",
                    resolution=resolution,
                    n_iterations=n_iterations,
                ).membership
            finally:
                igraph.set_random_number_generator(random)
    elif backend == "graspologic":
        membership = _graspologic_membership(graph, seed, resolution, n_iterations)
        if polish:
            membership = _node_optimal(graph, membership, resolution)
    elif backend == "leidenalg":
        import leidenalg

        if resolution == 1.0:
            partition_type, extra = leidenalg.ModularityVertexPartition, {}
        else:  # Reichardt-Bornholdt with the configuration null model = modularity with resolution
            partition_type = leidenalg.RBConfigurationVertexPartition
            extra = {"resolution_parameter": resolution}
        membership = leidenalg.find_partition(
            graph, partition_type, weights="weight", n_iterations=n_iterations, seed=seed, **extra
        ).membership
    else:
        raise ValueError(f"unknown clustering backend {backend!r}; use one of {', '.join(BACKENDS)}")
    clusters: dict[int, list[int]] = {}
    for vertex, label in enumerate(membership):
        clusters.setdefault(label, []).append(vertex)
    return list(clusters.values())


def _graspologic_membership(graph: igraph.Graph, seed: int, resolution: float, n_iterations: int) -> list[int]:
    """graspologic-native's Leiden on one igraph graph (its CSR form, rows in vertex order)."""
    import graspologic_native
    import numpy as np

    n = graph.vcount()
    if graph.ecount() == 0:
        return list(range(n))
    ends = np.array(graph.get_edgelist(), dtype=np.int64)
    weight = np.array(graph.es["weight"], dtype=np.float64)
    rows = np.concatenate([ends[:, 0], ends[:, 1]])
    cols = np.concatenate([ends[:, 1], ends[:, 0]])
    by_row = np.lexsort((cols, rows))
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))].astype(np.int64)
    _, labels = graspologic_native.leiden_csr(
        indptr,
        cols[by_row].astype(np.int32),
        np.concatenate([weight, weight])[by_row],
        n,
        resolution=resolution,
        iterations=max(1, n_iterations),
        seed=seed,
    )
    return [labels[v] for v in range(n)]


def _node_optimal(graph: igraph.Graph, membership: list[int], resolution: float) -> list[int]:
    """``membership`` moved node by node until no node gains by moving, every community connected.

    One Leiden cycle (graspologic's) ends on the aggregated graph, so single nodes may still gain
    by moving; stable mode's warm start moves exactly those nodes, so from an unpolished
    partition its first update would reshuffle communities no edit touched. The moving is
    :func:`.local_moving.node_optimal`, the same as the level-wise array path runs.
    """
    import numpy as np

    from graphrag_assets.index.local_moving import LevelGraph, node_optimal

    n = graph.vcount()
    ends = np.array(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    weight = np.array(graph.es["weight"], dtype=np.float64)
    rows, cols = np.r_[ends[:, 0], ends[:, 1]], np.r_[ends[:, 1], ends[:, 0]]
    by_row = np.lexsort((cols, rows))
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))].astype(np.int64)
    level = LevelGraph(indptr, cols[by_row], np.r_[weight, weight][by_row], np.zeros(n, dtype=np.int64))
    return node_optimal(level, np.asarray(membership), resolution).tolist()


def _leiden_per_component(
    graph: igraph.Graph, backend: str, seed: int, resolution: float, n_iterations: int, *, polish: bool = False
) -> list[list[int]]:
    """:func:`_leiden` on each connected component separately, each seeded from its own members.

    Leiden never puts two components in one cluster, but one run over all of them shares a
    random stream, so an edit in one component reshuffles the others; separate runs do not.
    """
    components = graph.connected_components()
    if len(components) <= 1:
        return _leiden(graph, backend, _run_seed(seed, graph.vs["name"]), resolution, n_iterations, polish=polish)
    clusters: list[list[int]] = []
    for vertices in components:
        sub = graph.induced_subgraph(vertices, implementation="create_from_scratch")
        for members in _leiden(sub, backend, _run_seed(seed, sub.vs["name"]), resolution, n_iterations, polish=polish):
            clusters.append(sorted(vertices[v] for v in members))
    return clusters


@dataclass(frozen=True)
class LeidenOptions:
    """How hierarchical Leiden runs: the clustering fields of the ``communities`` settings.

    ``n_iterations`` is exposed for benchmarks (None: the backend's ``N_ITERATIONS``; -1 runs each
    Leiden until stable). ``node_optimal`` polishes every graspologic run with node-level local
    moving, because stable mode's warm start assumes no node gains by moving (see
    :func:`_node_optimal`); None polishes unless ``n_iterations`` asks for raw Leiden runs.
    """

    max_cluster_size: int = 10
    seed: int = DEFAULT_SEED
    use_lcc: bool = True
    backend: Backend = "auto"
    resolution: float = 1.0
    n_iterations: int | None = None
    node_optimal: bool | None = None

    @property
    def polished(self) -> bool:
        """Whether graspologic runs are polished: by default only at the default iteration count."""
        return self.n_iterations is None if self.node_optimal is None else self.node_optimal


def leiden_options(settings: CommunitySettings) -> LeidenOptions:
    return LeidenOptions(
        settings.max_cluster_size,
        settings.seed,
        settings.use_lcc,
        settings.backend,
        settings.resolution,
    )


def hierarchical_leiden(edges: pl.DataFrame | CodedEdges, options: LeidenOptions = LeidenOptions()) -> pl.DataFrame:
    """Cluster a weighted graph hierarchically; one row per (node, level) membership.

    ``edges`` has columns source, target and (optionally) weight; see :func:`normalize_edges`
    for how it is cleaned (or is such a list in codes already, :class:`CodedEdges`). Returns
    columns node, community, level, parent (-1 at level 0),
    sorted by (level, community, node). Community numbers are unique across levels and assigned
    level by level; within a level, clusters are ordered by parent, then size (largest first),
    then smallest member title. Nodes outside the largest connected component (``use_lcc``) get
    no row at all, as in Microsoft GraphRAG.
    """
    max_cluster_size, backend = options.max_cluster_size, options.backend
    if max_cluster_size < 1:
        raise ValueError(f"max_cluster_size must be at least 1, got {max_cluster_size}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown clustering backend {backend!r}; use one of {', '.join(BACKENDS)}")
    coded = edges if isinstance(edges, CodedEdges) else edges_of_frame(edges)
    if coded.is_empty:
        return empty_frame(ASSIGNMENTS)
    backend = resolve_backend(backend, coded.names.len())
    iterations = N_ITERATIONS[backend] if options.n_iterations is None else options.n_iterations
    if backend == "graspologic":
        return _native_hierarchical_leiden(coded, options, iterations)
    graph = graph_from_codes(coded)
    if options.use_lcc:
        graph = _keep_largest_component(graph)

    def split(level: int, parent: int, subgraph: igraph.Graph) -> list[list[int]]:
        return _leiden_per_component(
            subgraph, backend, options.seed, options.resolution, iterations, polish=options.polished
        )

    return assemble_hierarchy(graph, split, max_cluster_size)


def resolve_backend(backend: str, nodes: int) -> str:
    """The engine ``backend`` names for a graph of ``nodes`` nodes (``auto``: see NATIVE_FROM_NODES)."""
    if backend != "auto":
        return backend
    return "graspologic" if nodes >= NATIVE_FROM_NODES else "igraph"


def _native_hierarchical_leiden(coded: CodedEdges, options: LeidenOptions, iterations: int) -> pl.DataFrame:
    """:func:`hierarchical_leiden` with graspologic-native, on integer arrays (see :mod:`.native_leiden`)."""
    from graphrag_assets.index.native_leiden import largest_component, native_hierarchy

    names = coded.names
    src, dst, weight = coded.arrays()
    nodes = largest_component(names.len(), src, dst) if options.use_lcc else None
    return native_hierarchy(
        names,
        (src, dst, weight),
        nodes,
        max_cluster_size=options.max_cluster_size,
        resolution=options.resolution,
        iterations=iterations,
        seed_of=_SeedOfMembers(options.seed, names),
        polish=options.polished,
    )


# Clusters one graph of the hierarchy: (level being built, parent community or -1 at level 0, the
# graph) -> lists of vertex indices. Fewer than two clusters for a parent leave that parent a leaf.
SplitFunction = Callable[[int, int, igraph.Graph], list[list[int]]]


def assemble_hierarchy(graph: igraph.Graph, split: SplitFunction, max_cluster_size: int) -> pl.DataFrame:
    """The ``ASSIGNMENTS`` frame of a hierarchy grown level by level with ``split``.

    Shared by fresh and warm-started clustering so both number communities the same way: level
    by level, ordered by parent, then size (largest first), then smallest member title.
    ``graph`` must have sorted vertex names (see :func:`_graph_from_edges`).
    """
    nodes: list[str] = []
    communities: list[int] = []
    levels: list[int] = []
    parents: list[int] = []

    pending: list[tuple[int, igraph.Graph]] = [(-1, graph)]  # (parent community, graph to cluster)
    level = 0
    next_id = 0
    while pending:
        # (parent, graph clustered, its vertex names, member vertex indices)
        found: list[tuple[int, igraph.Graph, list[str], list[int]]] = []
        for parent, subgraph in pending:
            names = subgraph.vs["name"]
            clusters = split(level, parent, subgraph)
            if parent != -1 and len(clusters) < 2:
                continue  # Leiden cannot split it: the parent stays a leaf
            found.extend((parent, subgraph, names, members) for members in clusters)
        # Vertex names within a graph are sorted, so members[0] is the smallest title.
        found.sort(key=lambda f: (f[0], -len(f[3]), f[2][f[3][0]]))
        pending = []
        for parent, subgraph, names, members in found:
            community = next_id
            next_id += 1
            nodes.extend(names[v] for v in members)
            communities.extend([community] * len(members))
            levels.extend([level] * len(members))
            parents.extend([parent] * len(members))
            if len(members) >= max_cluster_size:
                pending.append((community, subgraph.induced_subgraph(members, implementation="create_from_scratch")))
        level += 1

    return pl.DataFrame(
        {"node": nodes, "community": communities, "level": levels, "parent": parents},
        schema=ASSIGNMENTS,
    ).sort("level", "community", "node")


def partition_modularity(
    edges: pl.DataFrame | CodedEdges, assignments: pl.DataFrame, *, level: int = 0, resolution: float = 1.0
) -> float:
    """Weighted modularity of one level's clustering, over the nodes clustered at that level.

    Useful as run metadata: level 0 covers the whole clustered graph, so its modularity says how
    much community structure Leiden found. Computed on codes (:func:`.coded_graph.level_modularity`),
    not on a second igraph graph of the whole edge list.
    """
    coded = edges if isinstance(edges, CodedEdges) else edges_of_frame(edges)
    return level_modularity(coded, assignments, level, resolution)


def build_communities(
    entities: pl.DataFrame,
    relationships: pl.DataFrame,
    *,
    period: str,
    options: LeidenOptions = LeidenOptions(),
) -> pl.DataFrame:
    """The ``communities`` table (schema ``COMMUNITIES``) from entities and relationships.

    Relationships are clustered by entity title; a relationship whose endpoint is not an entity
    is ignored. ``relationship_ids`` of a community are the relationships with both endpoints
    inside it (both directions of a pair count), ``text_unit_ids`` the sorted distinct union of
    their text units. Entities without any relationship (or outside the largest component when
    ``use_lcc``) belong to no community. ``period`` is stored as given (the caller's run date).
    Rows are sorted by (level, community).
    """
    titles = entities.select("id", "title").unique().sort("title", "id")
    coded = coded_frame(titles["title"].unique(maintain_order=True), relationships)
    assignments = hierarchical_leiden(normalized_edges(coded.titles, coded.edges), options)
    return communities_from_assignments(titles, coded, assignments, period)


LIST_COLUMNS = ("relationship_ids", "text_unit_ids")  # made and written a chunk at a time by the step
COMMUNITY_ROWS = {name: dtype for name, dtype in COMMUNITIES.items() if name not in LIST_COLUMNS}


def communities_from_assignments(
    titles: pl.DataFrame, rels: CodedRelationships, assignments: pl.DataFrame, period: str
) -> pl.DataFrame:
    """The ``communities`` table of a clustering (``ASSIGNMENTS`` rows, nodes are entity titles).

    ``titles`` holds the entities' id and title, ``rels`` the relationships between known
    entities (in codes); used for fresh and warm-started clusterings alike, so both give the same
    columns. The whole table at once: the communities step writes the same slices one by one
    (:func:`community_table_chunks`).
    """
    rows = community_rows(titles, assignments, period)
    return pl.concat(community_table_chunks(rows, internal_relationship_chunks(rels, assignments)))


def community_table_chunks(rows: pl.DataFrame, lists: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """The ``communities`` table in consecutive slices: ``rows`` (:func:`community_rows`) with the
    lists of each chunk of :func:`~.coded_graph.internal_relationship_chunks` (chunks in table
    order), communities without an internal relationship getting empty lists. At least one slice,
    so an empty table is written too.
    """
    positions = rows.select("community").with_row_index("position")
    done = 0
    for chunk in lists:
        last = int(positions.join(chunk.select("community"), on="community")["position"].max()) + 1
        yield _with_lists(rows.slice(done, last - done), chunk)
        done = last
    if done < rows.height or rows.height == 0:
        yield _with_lists(rows.slice(done), None)


def _with_lists(rows: pl.DataFrame, lists: pl.DataFrame | None) -> pl.DataFrame:
    empty_strings = pl.lit([], dtype=pl.List(pl.String))
    if lists is None:
        table = rows.with_columns(relationship_ids=empty_strings, text_unit_ids=empty_strings)
    else:
        table = rows.join(lists, on="community", how="left", maintain_order="left").with_columns(
            pl.col("relationship_ids").fill_null(empty_strings), pl.col("text_unit_ids").fill_null(empty_strings)
        )
    return conform(table, COMMUNITIES)


def community_rows(titles: pl.DataFrame, assignments: pl.DataFrame, period: str) -> pl.DataFrame:
    """The ``communities`` table of a clustering without its two list columns (``COMMUNITY_ROWS``),
    sorted by (level, community): one row per community, its member ids, children and stable id.

    ``titles`` holds the entities' id and title; the rows are small (the member ids of each level
    are the entities once), the lists they leave out are each relationship once per level.
    """
    if assignments.is_empty():
        return empty_frame(COMMUNITY_ROWS)
    members = (
        assignments.join(titles, left_on="node", right_on="title")
        .group_by("community", "level", "parent")
        .agg(pl.col("id").sort().alias("entity_ids"))
    )
    children = (
        assignments.filter(pl.col("parent") >= 0)
        .select("parent", "community")
        .unique()
        .group_by("parent")
        .agg(pl.col("community").sort().alias("children"))
    )
    table = (
        members.join(children, left_on="community", right_on="parent", how="left")
        .sort("level", "community")
        .with_columns(
            pl.col("children").fill_null(pl.lit([], dtype=pl.List(pl.Int64))),
            pl.col("community").alias("human_readable_id"),
            pl.format("Community {}", pl.col("community")).alias("title"),
            pl.col("entity_ids").list.len().cast(pl.Int64).alias("size"),
            pl.lit(period, dtype=pl.String).alias("period"),
        )
    )
    ids = [
        stable_uuid("community", level, *entity_ids)
        for level, entity_ids in zip(table["level"].to_list(), table["entity_ids"].to_list())
    ]
    return conform(table.with_columns(pl.Series("id", ids, dtype=pl.String)), COMMUNITY_ROWS)
