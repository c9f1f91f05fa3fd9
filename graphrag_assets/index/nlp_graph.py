"""The co-occurrence graph of noun phrases (``nlp`` method) and its pruning.

Semantics follow Microsoft GraphRAG's fast method (reference §1.2): a node per phrase, an edge
for every pair of phrases that share a text unit, the raw edge weight is the number of shared
units and, when ``normalize_edge_weights`` is on, it becomes the PMI variant
``p(x,y) · log2(p(x,y) / (p(x) · p(y)))`` with ``p(x,y) = weight / Σ weights`` and
``p(x) = frequency / Σ frequencies``. Pruning (:func:`prune_graph`) applies Microsoft's rules in
Microsoft's order.

Where we differ, on purpose:

- ``frequency`` is the number of *distinct* text units containing the phrase and
  ``text_unit_ids`` is sorted and de-duplicated (Microsoft counts mention records, quirk Q3).
- Ids are deterministic (:func:`graphrag_assets.core.ids.entity_id` / ``relationship_id``) and rows
  are sorted (entities by title, relationships by source then target), so a rebuild is identical.
- Entities get a description instead of an empty string: the most representative sentence that
  mentions the phrase (see :mod:`.phrase_descriptions`); relationships say how many units
  the two phrases share. Descriptions feed the entity embeddings and the query context, where
  an empty string carries nothing.
- Pairs are generated with numpy index arithmetic on integer codes, never a Python loop over
  pairs: a unit with ``k`` phrases yields ``k·(k-1)/2`` rows, so that is the whole cost.
- The index builds and prunes in integer codes (:func:`code_noun_graph`, :func:`prune_codes`)
  and makes strings only for what survives (:func:`materialize`): at 30 MB of text the
  unpruned graph has 2.8M edges, of which pruning keeps 1.7M, and string columns for all of
  them were the peak memory of the step. :func:`build_noun_graph` and :func:`prune_graph` are
  the same operations on finished tables.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace

import igraph
import numpy as np
import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.ids import entity_id, relationship_ids
from graphrag_assets.core.schemas import ENTITIES, RELATIONSHIPS, conform, empty_frame
from graphrag_assets.core.settings import PruneSettings
from graphrag_assets.core.stable_order import sorted_integers, stable_order
from graphrag_assets.index.edge_ids import NodeDigests
from graphrag_assets.index.noun_phrases import NOUN_PHRASE_TYPE, PROPER_NAME_TYPE
from graphrag_assets.index.phrase_descriptions import phrase_descriptions


@dataclass(frozen=True)
class CodedGraph:
    """The unpruned co-occurrence graph with phrases, units and pairs as integer codes.

    Millions of co-occurring pairs fit in a few flat numpy arrays this way; strings (titles,
    descriptions, ids, unit-id lists) are made by :func:`materialize` only for the edges that
    survive pruning, which is where the memory of a large corpus used to go.
    Node code = row of ``nodes`` (sorted by title), unit code = position in ``unit_ids``
    (sorted); edges are sorted by (source, target) code, which is (source, target) title order.
    """

    nodes: pl.DataFrame  # title, text_unit_ids, frequency, proper_name
    unit_ids: pl.Series
    source: np.ndarray  # node code of each edge's smaller end
    target: np.ndarray
    raw_weight: np.ndarray  # shared units per edge
    weight: np.ndarray  # PMI or raw weight (float64)
    pair_units: np.ndarray  # unit codes of every edge, edge after edge (raw_weight of them each)
    mentions: pl.DataFrame  # distinct (text_unit_id, title), for the descriptions

    @property
    def node_count(self) -> int:
        return self.nodes.height

    @property
    def edge_count(self) -> int:
        return len(self.source)


@dataclass(frozen=True)
class Kept:
    """Which nodes and edges of a graph survive pruning (boolean masks in code order)."""

    nodes: np.ndarray
    edges: np.ndarray


def build_noun_graph(
    records: pl.DataFrame,
    *,
    normalize_edge_weights: bool = True,
    text_units: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Entities and relationships of the unpruned noun-phrase co-occurrence graph.

    ``records`` are ``graph_extractions`` rows; only ``record_type == "noun_phrase"`` rows are
    used. ``text_units`` (``id``, ``text``; row order = reading order) is optional and only
    used for the entity descriptions.
    """
    return materialize(code_noun_graph(records, normalize_edge_weights=normalize_edge_weights), None, text_units)


def code_noun_graph(records: pl.DataFrame, *, normalize_edge_weights: bool = True) -> CodedGraph:
    """The co-occurrence graph of the ``noun_phrase`` rows of ``records``, in integer codes.

    Titles and unit ids are coded once (sorted, so codes order as the strings do) and the
    distinct mentions, the nodes and their unit lists are made from the codes. Grouped and made
    unique as strings, the 3.9 M noun-phrase records of 100,000 documents took 14.8-16.6 s to make
    their graph, as codes 13.4-14.5 s (three runs each, alternating; the pairs are most of it).
    """
    phrases = records.filter(
        (pl.col("record_type") == "noun_phrase")
        & pl.col("title").is_not_null()
        & (pl.col("title") != "")
        & pl.col("text_unit_id").is_not_null()
    )
    titles = phrases.get_column("title").unique().sort()
    unit_ids = phrases.get_column("text_unit_id").unique().sort()
    # a phrase is a proper name when any unit spells it as one (records of rules version < 3 never do)
    kind = pl.col("type") if "type" in phrases.columns else pl.lit(None, dtype=pl.String)
    coded = phrases.select(
        unit=pl.col("text_unit_id").cast(pl.Enum(unit_ids)).to_physical().cast(pl.Int32),
        node=pl.col("title").cast(pl.Enum(titles)).to_physical().cast(pl.Int32),
        named=kind.eq(PROPER_NAME_TYPE).fill_null(False),
    )
    del phrases
    named = np.zeros(titles.len(), dtype=bool)
    named[coded.filter(pl.col("named")).get_column("node").to_numpy()] = True
    mentioned = coded.select("unit", "node").unique().sort("unit", "node")
    del coded
    units, nodes = mentioned.get_column("unit").to_numpy(), mentioned.get_column("node").to_numpy()
    mentions = pl.DataFrame({"text_unit_id": unit_ids.gather(units), "title": titles.gather(nodes)})
    node_table = _node_table(titles, unit_ids, units, nodes, named)
    edges = _coded_edges(units, nodes, titles.len())
    del mentioned, units, nodes
    weight = _edge_weights(
        node_table["frequency"].to_numpy(), edges.source, edges.target, edges.raw_weight, normalize_edge_weights
    )
    return CodedGraph(
        node_table, unit_ids, edges.source, edges.target, edges.raw_weight, weight, edges.pair_units, mentions
    )


def _node_table(
    titles: pl.Series, unit_ids: pl.Series, units: np.ndarray, nodes: np.ndarray, named: np.ndarray
) -> pl.DataFrame:
    """``CodedGraph.nodes`` from the distinct mentions (``units``, ``nodes``: codes sorted by unit
    then node): per title its sorted unit ids, their number and whether it is a proper name."""
    import pyarrow as pa  # as in _relationships: list columns from offsets

    by_node = stable_order(nodes)  # units stay ascending within a node
    frequency = np.bincount(nodes, minlength=titles.len()).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(frequency)))
    values = unit_ids.gather(pl.Series(units[by_node])).to_arrow(compat_level=pl.CompatLevel.newest())
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), values)
    return pl.DataFrame(
        {
            "title": titles,
            "text_unit_ids": pl.Series(lists, dtype=pl.List(pl.String)),
            "frequency": frequency,
            "proper_name": named,
        }
    )


PAIR_BATCH_ROWS = 2_000_000  # pairs generated and sorted at once: bounds the step's temporary arrays


@dataclass(frozen=True)
class _Edges:
    """Distinct co-occurring pairs in (source, target) code order, with the units of each."""

    source: np.ndarray  # int32 node codes, source < target
    target: np.ndarray
    raw_weight: np.ndarray  # int32: shared units per edge
    pair_units: np.ndarray  # int32 unit codes, edge after edge, ascending within an edge


def source_ranges(nodes: np.ndarray, count: np.ndarray, n_nodes: int, budget: int) -> list[tuple[int, int]]:
    """Ranges ``[lo, hi)`` of source node codes, in order, each the source of at most ``budget``
    pairs (a node that is the source of more has a range of its own).

    ``count[i]`` is the number of pairs whose smaller end is mention row ``i`` (node ``nodes[i]``).
    Pairs are made and sorted one range at a time, so the step never holds every pair of the
    corpus as 8-byte keys and sort orders (at 100,000 documents 79 M pairs: about 2.5 GB at once).
    """
    per_node = np.bincount(nodes, weights=count, minlength=n_nodes).astype(np.int64)
    cumulative = np.cumsum(per_node)
    ranges: list[tuple[int, int]] = []
    lo = 0
    while lo < n_nodes:
        before = int(cumulative[lo - 1]) if lo else 0
        hi = int(np.searchsorted(cumulative, before + budget, side="right"))
        hi = min(max(hi, lo + 1), n_nodes)
        ranges.append((lo, hi))
        lo = hi
    return ranges


def _coded_edges(units: np.ndarray, nodes: np.ndarray, n_nodes: int) -> _Edges:
    """Every distinct co-occurring pair of ``nodes`` with its units; ``units``/``nodes`` sorted by
    (unit, node) and distinct.

    A row at position ``i`` of a unit with ``k`` phrases pairs with the ``k-1-i`` rows after it
    (index arithmetic, no self-join of each unit, whose ``k²`` rows were the largest allocation of
    an older polars version). Pairs are made per range of source nodes (:func:`source_ranges`):
    each range's pairs are sorted by target, folded into edges, and only its edges and unit codes
    (4 bytes each) are kept.
    """
    empty = np.zeros(0, dtype=np.int32)
    if len(units) == 0:
        return _Edges(empty, empty, empty, empty)
    rows = np.arange(len(units), dtype=np.int64)
    unit_end = np.append(np.flatnonzero(np.diff(units)) + 1, len(units))
    count = np.repeat(unit_end, np.diff(np.concatenate(([0], unit_end)))) - rows - 1
    del rows, unit_end
    pair_units = np.empty(int(count.sum()), dtype=np.int32)
    filled = 0
    sources, targets, weights = [], [], []
    for lo, hi in source_ranges(nodes, count, n_nodes, PAIR_BATCH_ROWS):
        left = np.flatnonzero((nodes >= lo) & (nodes < hi) & (count > 0))
        batch = count[left]
        left_rows = np.repeat(left, batch)
        offset = np.arange(len(left_rows), dtype=np.int64) - np.repeat(np.cumsum(batch) - batch, batch)
        keys = (nodes[left_rows] - lo).astype(np.int64) * n_nodes + nodes[left_rows + 1 + offset]
        batch_units = units[left_rows]
        del left, batch, left_rows, offset
        keys, sorted_units = _by_key_then_unit(keys, batch_units, (hi - lo) * n_nodes)
        pair_units[filled : filled + len(keys)] = sorted_units
        filled += len(keys)
        del batch_units, sorted_units
        if not len(keys):
            continue
        starts = np.concatenate(([0], np.flatnonzero(np.diff(keys)) + 1))
        edge_keys = keys[starts]
        weights.append(np.diff(np.append(starts, len(keys))).astype(np.int32))
        sources.append((edge_keys // n_nodes + lo).astype(np.int32))
        targets.append((edge_keys % n_nodes).astype(np.int32))
    if not sources:
        return _Edges(empty, empty, empty, pair_units)
    return _Edges(_joined(sources), _joined(targets), _joined(weights), pair_units)


def _by_key_then_unit(keys: np.ndarray, units: np.ndarray, key_bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``keys`` sorted and ``units`` in that order, ascending within a key (keys below ``key_bound``;
    ``units`` ascending as given).

    Both fit one int64 (key above, unit below) unless the corpus is very large, and sorting those
    values is much faster than argsorting the keys stably and gathering both through the order:
    the noun graph of the 100,000-document index's 3.9 M noun-phrase records (26 M edges) took 10.3–10.6 s
    against 13.5–14.1 s (2 M random pairs: 0.02 s against 0.22 s). polars sorts them
    (:func:`~graphrag_assets.core.stable_order.sorted_integers`): numpy's sort of that graph's 79 M
    pairs took 4.5 s of it.
    """
    unit_bits = max(int(units.max(initial=0)).bit_length(), 1)
    if key_bound >= 1 << (63 - unit_bits):
        order = stable_order(keys)  # stable: units stay ascending within a key
        return keys[order], units[order]
    packed = sorted_integers((keys << unit_bits) | units.astype(np.int64))
    return packed >> unit_bits, (packed & ((1 << unit_bits) - 1)).astype(units.dtype)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts as one array; the list is emptied, so only one column is ever held twice."""
    whole = np.concatenate(parts)
    parts.clear()
    return whole


EDGE_WEIGHT_CHUNK = 1_000_000  # edges whose PMI weights are computed at once


def _edge_weights(
    frequency: np.ndarray, source: np.ndarray, target: np.ndarray, raw_weight: np.ndarray, normalize: bool
) -> np.ndarray:
    """Raw shared-unit counts, or their PMI variant (module docstring) when ``normalize``; computed
    in chunks of edges so the temporary columns stay small."""
    weight = np.empty(len(raw_weight), dtype=np.float64)
    total_weight = float(raw_weight.sum(dtype=np.int64))
    total_frequency = float(frequency.sum())
    for start in range(0, len(raw_weight), EDGE_WEIGHT_CHUNK):
        part = slice(start, start + EDGE_WEIGHT_CHUNK)
        frame = pl.DataFrame({"raw_weight": raw_weight[part].astype(np.int64)})
        value = pl.col("raw_weight").cast(pl.Float64)
        if normalize:
            frame = frame.with_columns(f_x=frequency[source[part]], f_y=frequency[target[part]])
            p_xy = value / total_weight
            p_x = pl.col("f_x").cast(pl.Float64) / total_frequency
            p_y = pl.col("f_y").cast(pl.Float64) / total_frequency
            value = p_xy * (p_xy / (p_x * p_y)).log(2)
        weight[part] = frame.select(weight=value)["weight"].to_numpy()
    return weight


def materialize(
    graph: CodedGraph,
    kept: Kept | None,
    text_units: pl.DataFrame | None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``entities`` and ``relationships`` (MS GraphRAG columns) of the ``kept`` part of ``graph``.

    ``kept`` None keeps everything. Degrees, ``combined_degree`` and the dense
    ``human_readable_id`` describe the kept graph; rows are sorted by title / (source, target).
    ``on_progress(n)`` is called as the descriptions get through ``n`` more text units (the
    long part of this step on a large corpus).
    """
    described = phrase_descriptions(graph.mentions, text_units, None, on_progress)
    entities, relationships = materialize_batches(graph, kept, described.descriptions)
    return entities, pl.concat(list(relationships.batches()))


@dataclass(frozen=True)
class RelationshipBatches:
    """The ``relationships`` table of a kept graph, made ``batch_rows`` rows at a time.

    At 100,000 documents the table has 15 M rows, and its strings (titles, ids, descriptions,
    unit-id lists) were gigabytes held at once; the graph step writes one batch after another
    instead (:func:`batches` can be called again: each call starts from the first row).
    """

    graph: CodedGraph
    edges: np.ndarray  # codes of the kept edges, ascending (= rows in table order)
    degree: np.ndarray  # degree of every node in the kept graph
    batch_rows: int = 245_760  # two of DuckDB's row groups, the statements the writer cuts (storage.corpus._statements)

    @property
    def count(self) -> int:
        return len(self.edges)

    def batches(self) -> Iterator[pl.DataFrame]:
        if not self.count:
            yield empty_frame(RELATIONSHIPS)
            return
        offsets = np.concatenate(([0], np.cumsum(self.graph.raw_weight))).astype(np.int64)
        digests = NodeDigests.of(self.graph.nodes["title"].to_list())
        for start in range(0, self.count, self.batch_rows):
            edges = self.edges[start : start + self.batch_rows]
            yield _relationships(self.graph, edges, self.degree, offsets, start, digests)


def materialize_batches(
    graph: CodedGraph, kept: Kept | None, descriptions: pl.DataFrame | None
) -> tuple[pl.DataFrame, RelationshipBatches]:
    """:func:`materialize` with the relationships left to be made batch by batch, and the phrases'
    ``descriptions`` (``title``, ``description``: :mod:`.phrase_descriptions`) made already."""
    if graph.node_count == 0:
        return empty_frame(ENTITIES), RelationshipBatches(graph, np.zeros(0, dtype=np.int64), np.zeros(0, np.int64))
    node_mask = kept.nodes if kept is not None else np.ones(graph.node_count, dtype=bool)
    edge_mask = kept.edges if kept is not None else np.ones(graph.edge_count, dtype=bool)
    source, target = graph.source[edge_mask], graph.target[edge_mask]
    degree = np.bincount(source, minlength=graph.node_count) + np.bincount(target, minlength=graph.node_count)
    del source, target
    if descriptions is None:
        descriptions = pl.DataFrame(schema={"title": pl.String, "description": pl.String})
    entities = (
        graph.nodes.with_columns(degree=pl.Series(degree, dtype=pl.Int64))
        .filter(pl.Series(node_mask))
        .join(descriptions.select("title", "description"), on="title", how="left", maintain_order="left")
        .with_columns(
            type=pl.lit(NOUN_PHRASE_TYPE),
            description=pl.coalesce(
                "description",
                pl.format(
                    "Noun phrase found in {} text unit{}.",
                    "frequency",
                    pl.when(pl.col("frequency") == 1).then(pl.lit("")).otherwise(pl.lit("s")),
                ),
            ),
            human_readable_id=pl.int_range(pl.len(), dtype=pl.Int64),
        )
    )
    entities = entities.with_columns(id=_entity_ids(entities["title"]))
    # the batches need neither the mentions (descriptions are made) nor the pruned edges
    batches_graph = replace(graph, mentions=graph.mentions.clear())
    return conform(entities, ENTITIES), RelationshipBatches(batches_graph, np.flatnonzero(edge_mask), degree)


def kept_part(graph: CodedGraph, kept: Kept) -> tuple[CodedGraph, Kept]:
    """``graph`` with only its ``kept`` edges and their units (node codes unchanged), and what is
    kept of it (every edge, ``kept.nodes``).

    Pruning drops about half the edges of a large corpus (3.4 M of 5.3 M at 10,000 documents);
    without them the arrays the relationships are written from are half as large, and the
    unpruned ones can be freed before the descriptions and the relationships are made.
    """
    units_kept = np.repeat(kept.edges, graph.raw_weight)
    part = replace(
        graph,
        source=graph.source[kept.edges],
        target=graph.target[kept.edges],
        raw_weight=graph.raw_weight[kept.edges],
        weight=graph.weight[kept.edges],
        pair_units=graph.pair_units[units_kept],
    )
    return part, Kept(kept.nodes, np.ones(part.edge_count, dtype=bool))


def _relationships(
    graph: CodedGraph,
    edges: np.ndarray,
    degree: np.ndarray,
    offsets: np.ndarray,
    first_row: int,
    digests: NodeDigests,
) -> pl.DataFrame:
    """``RELATIONSHIPS`` rows of the ascending edge codes ``edges``, numbered from ``first_row``;
    unit lists are cut out of ``pair_units`` (``offsets``: where each edge's units start), ids
    made from the nodes' ``digests``."""
    source, target = graph.source[edges], graph.target[edges]
    raw_weight = graph.raw_weight[edges]
    list_offsets = np.concatenate(([0], np.cumsum(raw_weight))).astype(np.int64)
    # positions in pair_units of every unit of these edges, edge after edge
    starts = np.repeat(offsets[edges] - list_offsets[:-1], raw_weight)
    units = graph.unit_ids.gather(pl.Series(graph.pair_units[starts + np.arange(list_offsets[-1], dtype=np.int64)]))
    del starts
    # string views share the unit ids' bytes: the lists cost 16 bytes per entry, not a copy of each id.
    # Arrow list offsets over them copy nothing. polars alone cannot make a list column from offsets,
    # and its ways round that (a group_by on the edge, list.gather or list.slice over int ranges)
    # peaked 70-140 MB higher on a synthetic 1.7M edges of 6.8M entries. So pyarrow is imported here,
    # when an nlp index builds its relationships, not with the module.
    import pyarrow as pa

    unit_lists = pa.LargeListArray.from_arrays(
        pa.array(list_offsets), units.to_arrow(compat_level=pl.CompatLevel.newest())
    )
    del units
    titles = graph.nodes["title"]
    relationships = pl.DataFrame(
        {
            "source": titles.gather(source),
            "target": titles.gather(target),
            "raw_weight": raw_weight,
            "weight": graph.weight[edges],
            "combined_degree": degree[source] + degree[target],
            "text_unit_ids": pl.Series(unit_lists, dtype=pl.List(pl.String)),
        }
    )
    relationships = relationships.with_columns(
        human_readable_id=pl.int_range(first_row, first_row + pl.len(), dtype=pl.Int64),
        description=pl.format(
            "{} and {} appear together in {} text unit{}.",
            "source",
            "target",
            "raw_weight",
            pl.when(pl.col("raw_weight") == 1).then(pl.lit("")).otherwise(pl.lit("s")),
        ),
    )
    relationships = relationships.with_columns(id=digests.ids(source, target))
    return conform(relationships, RELATIONSHIPS)


def finalize_graph(entities: pl.DataFrame, relationships: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Sort, assign ids and dense ``human_readable_id``, and (re)compute the degrees.

    ``relationships`` must hold each unordered pair once (as :func:`build_noun_graph` makes them).
    """
    entities = entities.sort("title")
    entities = entities.with_columns(id=_entity_ids(entities["title"]))
    relationships = relationships.sort("source", "target")
    pairs = relationships.select("source", "target").iter_rows()
    relationships = relationships.with_columns(id=pl.Series(relationship_ids(pairs), dtype=pl.String))
    degree = _degrees(relationships)
    entities = (
        entities.drop("degree", strict=False)
        .join(degree, on="title", how="left", maintain_order="left")
        .sort("title")
        .with_columns(human_readable_id=pl.int_range(pl.len(), dtype=pl.Int64), degree=pl.col("degree").fill_null(0))
    )
    source_degree = degree.rename({"title": "source", "degree": "d_source"})
    target_degree = degree.rename({"title": "target", "degree": "d_target"})
    relationships = (
        relationships.join(source_degree, on="source", how="left", maintain_order="left")
        .join(target_degree, on="target", how="left", maintain_order="left")
        .sort("source", "target")
        .with_columns(
            human_readable_id=pl.int_range(pl.len(), dtype=pl.Int64),
            combined_degree=pl.col("d_source").fill_null(0) + pl.col("d_target").fill_null(0),
        )
    )
    return conform(entities, ENTITIES), conform(relationships, RELATIONSHIPS)


def _entity_ids(titles: pl.Series) -> pl.Series:
    return pl.Series([entity_id(title) for title in titles.to_list()], dtype=pl.String)


def _degrees(relationships: pl.DataFrame) -> pl.DataFrame:
    """``title``, ``degree``: undirected neighbour count (each pair is stored once, no self-loops)."""
    ends = pl.concat([relationships.select(title="source"), relationships.select(title="target")])
    return ends.group_by("title").agg(degree=pl.len().cast(pl.Int64))


# ---------------------------------------------------------------------------------------------
# Pruning


@dataclass(frozen=True)
class _Step:
    name: str  # what the user reads
    fix: str  # how to relax it in graphrag.yaml


@dataclass(frozen=True)
class _PruneInput:
    """What pruning reads: per node its frequency and name flag, per edge its two node codes and weight."""

    frequency: np.ndarray  # node code order = title order (ties of the ego rule go to the smaller code)
    proper_name: np.ndarray  # bool per node: never dropped for being frequent or central
    source: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    nodes_before: int  # for the error message
    edges_before: int


def prune_codes(graph: CodedGraph, settings: PruneSettings) -> Kept:
    """The nodes and edges of ``graph`` that :func:`prune_graph`'s rules keep, as masks."""
    frequency = graph.nodes["frequency"].to_numpy()
    names = graph.nodes["proper_name"].fill_null(False).to_numpy()
    data = _PruneInput(frequency, names, graph.source, graph.target, graph.weight, graph.node_count, graph.edge_count)
    return _prune(data, settings)


def prune_graph(
    entities: pl.DataFrame,
    relationships: pl.DataFrame,
    settings: PruneSettings,
    proper_names: Collection[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Microsoft's ``prune_graph`` rules, in its order (reference §1.2), on finished tables.

    1. ``remove_ego_nodes``: drop the single node of highest degree that is not one of
       ``proper_names`` (ties: smallest title).
    2. Drop nodes with degree < ``min_node_degree`` and, if ``max_node_degree_std`` is set,
       nodes with degree > mean + k·std, proper names excepted; both use the degrees after step 1
       (population std).
    3. Drop nodes with frequency < ``min_node_freq`` and, if ``max_node_freq_std`` is set,
       nodes other than proper names with frequency > mean + k·std of the frequencies left after that.
    4. Keep edges whose two ends survive, then drop edges whose weight is below the
       ``min_edge_weight_pct`` percentile (numpy's linear interpolation) of those edges' weights.
       Nodes left without an edge are kept (as Microsoft does), unless:
    5. ``max_mean_degree`` (ours; Microsoft has no such rule): when the edges left number more
       than ``max_mean_degree`` times the nodes left, halved (a mean degree above it), keep the
       heaviest that many at most (edges of one weight stay or go together; the heaviest weight's
       edges always stay). With ``normalize_edge_weights`` off the weights are counts, whose ties
       make it keep fewer. A noun-phrase graph's phrases level off as a corpus grows while its
       edges keep growing with it (a mean degree of 28 at 442 chat logs, 276 at 10,000 generated
       documents, 597 at 100,000), and every pass of an index's corpus steps is over the edges.
    6. ``lcc_only``: keep only the largest connected component (ties: the one holding the
       alphabetically first title).

    Where we differ from Microsoft: the upper bounds of steps 1-3 never drop a proper name. They
    are there to remove hubs that connect everything ("THING", "TIME"), but in a story or a
    company's documents the most connected phrase is usually the protagonist ("SCROOGE"), and an
    index that cannot answer questions about him is worse than one with a hub. The index knows
    which phrases are names from the extraction records (:data:`PROPER_NAME_TYPE`); finished
    tables do not, hence ``proper_names``.

    Degrees, ``combined_degree`` and the dense ``human_readable_id`` are recomputed afterwards.
    Raises :class:`UserError` naming the setting to relax when no node or no edge remains.
    The index itself prunes before making strings (:func:`prune_codes`); both use :func:`_prune`.
    """
    nodes = entities.sort("title")
    codes = pl.DataFrame({"title": nodes["title"], "code": np.arange(nodes.height, dtype=np.int64)})
    edges = (
        relationships.with_row_index("_row")
        .join(codes.rename({"title": "source", "code": "_s"}), on="source", how="inner")
        .join(codes.rename({"title": "target", "code": "_t"}), on="target", how="inner")
        .sort("_row")
    )
    data = _PruneInput(
        nodes["frequency"].to_numpy(),
        nodes["title"].is_in(list(proper_names)).to_numpy(),
        edges["_s"].to_numpy(),
        edges["_t"].to_numpy(),
        edges["weight"].to_numpy(),
        entities.height,
        relationships.height,
    )
    kept = _prune(data, settings)
    edges = edges.filter(pl.Series(kept.edges)).drop("_row", "_s", "_t")
    return finalize_graph(nodes.filter(pl.Series(kept.nodes)), edges)


def _prune(data: _PruneInput, settings: PruneSettings) -> Kept:
    """The pruning rules of :func:`prune_graph` on integer codes: boolean masks, no strings."""
    n_nodes = len(data.frequency)
    node_alive = np.ones(n_nodes, dtype=bool)
    edge_alive = np.ones(len(data.source), dtype=bool)
    if n_nodes == 0:
        raise UserError(
            "The noun-phrase graph is empty: no noun phrases were found in the input, so there is "
            "nothing to index; check that the input files contain English prose."
        )
    if not edge_alive.any():
        raise UserError(
            "The noun-phrase graph has no relationships: no two noun phrases share a text unit; "
            "use larger chunks (chunking.size) or index more text."
        )
    steps: list[tuple[_Step, int, int]] = []  # step, nodes left, edges left

    def record(step: _Step) -> None:
        steps.append((step, int(node_alive.sum()), int(edge_alive.sum())))

    def keep_nodes(condition: np.ndarray) -> None:
        node_alive[:] &= condition
        edge_alive[:] &= node_alive[data.source] & node_alive[data.target]

    def node_degrees() -> np.ndarray:
        source, target = data.source[edge_alive], data.target[edge_alive]
        return np.bincount(source, minlength=n_nodes) + np.bincount(target, minlength=n_nodes)

    if settings.remove_ego_nodes:
        degree = np.where(node_alive & ~data.proper_name, node_degrees(), -1)
        if degree.max() >= 0:  # argmax: first = smallest title
            keep_nodes(np.arange(n_nodes) != int(np.argmax(degree)))
        record(_Step("removing the highest-degree node", "set nlp.prune.remove_ego_nodes to false"))

    degree = node_degrees()
    alive_before = node_alive.copy()
    keep_nodes(degree >= settings.min_node_degree)
    record(_Step("the minimum node degree", f"lower nlp.prune.min_node_degree (now {settings.min_node_degree})"))
    if settings.max_node_degree_std is not None and alive_before.any():
        bound_k = settings.max_node_degree_std
        keep_nodes((degree <= _upper_bound(degree[alive_before], bound_k)) | data.proper_name)
        record(_Step("the node degree bound", f"raise nlp.prune.max_node_degree_std (now {bound_k})"))

    keep_nodes(data.frequency >= settings.min_node_freq)
    record(_Step("the minimum node frequency", f"lower nlp.prune.min_node_freq (now {settings.min_node_freq})"))
    if settings.max_node_freq_std is not None and node_alive.any():
        bound_k = settings.max_node_freq_std
        keep_nodes((data.frequency <= _upper_bound(data.frequency[node_alive], bound_k)) | data.proper_name)
        record(_Step("the node frequency bound", f"raise nlp.prune.max_node_freq_std (now {bound_k})"))

    if settings.min_edge_weight_pct > 0 and edge_alive.any():
        threshold = float(np.percentile(data.weight[edge_alive], settings.min_edge_weight_pct))
        edge_alive &= data.weight >= threshold
        percent = settings.min_edge_weight_pct
        record(_Step("the edge weight percentile", f"lower nlp.prune.min_edge_weight_pct (now {percent})"))

    if settings.max_mean_degree is not None and edge_alive.any():
        # the small term: 2.3 × 100 / 2 is 114.99999999999999 in floats
        budget = int(settings.max_mean_degree * int(node_alive.sum()) / 2 + 1e-9)
        edge_alive &= _strongest(data.weight, edge_alive, budget)
        bound = settings.max_mean_degree
        record(_Step("the mean degree bound", f"raise nlp.prune.max_mean_degree (now {bound}) or set it to null"))

    if settings.lcc_only and node_alive.any():
        keep_nodes(_largest_component(node_alive, data.source[edge_alive], data.target[edge_alive]))
        record(_Step("keeping the largest connected component", "set nlp.prune.lcc_only to false"))

    _raise_if_empty(steps, data.nodes_before, data.edges_before)
    return Kept(node_alive, edge_alive)


def _strongest(weight: np.ndarray, alive: np.ndarray, budget: int) -> np.ndarray:
    """Mask of the at most ``budget`` heaviest ``alive`` edges: edges of equal weight stay or go
    together (which of them to keep would be arbitrary), so a tie across the cut goes whole,
    unless it is the heaviest weight: then it stays, as a graph without edges is no index (the
    step would fall back to the unpruned graph)."""
    if int(alive.sum()) <= budget:
        return alive
    weights = weight[alive]
    rank = weights.size - max(budget, 1)  # of the budget-th heaviest (the heaviest when the budget is 0)
    cut = float(np.partition(weights, rank)[rank])
    above = alive & (weight > cut)
    if int((weights >= cut).sum()) <= budget or not above.any():
        return alive & (weight >= cut)
    return above


def _upper_bound(values: np.ndarray, k: float) -> float:
    data = values.astype(np.float64)
    return float(data.mean() + k * data.std())


def _largest_component(alive: np.ndarray, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Mask of the largest connected component among ``alive`` nodes; ties: the smallest code."""
    membership = np.asarray(
        igraph.Graph(n=len(alive), edges=np.column_stack((source, target)).tolist()).connected_components().membership
    )
    nodes = np.flatnonzero(alive)
    size = np.bincount(membership[nodes], minlength=membership.max() + 1)
    first = np.full(len(size), len(alive), dtype=np.int64)
    np.minimum.at(first, membership[nodes], nodes)
    best = min(range(len(size)), key=lambda c: (-size[c], first[c]))
    return membership == best


def _raise_if_empty(steps: list[tuple[_Step, int, int]], nodes_before: int, edges_before: int) -> None:
    """A :class:`UserError` naming the first pruning step that left no node or no edge."""
    for index, (step, nodes_left, edges_left) in enumerate(steps):
        previous_nodes = steps[index - 1][1] if index else nodes_before
        previous_edges = steps[index - 1][2] if index else edges_before
        if nodes_left == 0 or edges_left == 0:
            what, count = ("node", previous_nodes) if nodes_left == 0 else ("relationship", previous_edges)
            raise UserError(
                f"Pruning removed every {what} of the noun-phrase graph ({count} left before {step.name}); "
                f"{step.fix} in graphrag.yaml, or index more text."
            )
