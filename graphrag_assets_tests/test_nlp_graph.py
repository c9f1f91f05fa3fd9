"""The noun-phrase co-occurrence graph (PMI weights) and Microsoft-style pruning."""

from __future__ import annotations

import itertools
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.ids import entity_id, relationship_id
from graphrag_assets.core.schemas import ENTITIES, RELATIONSHIPS
from graphrag_assets.core.settings import PruneSettings
from graphrag_assets.index.nlp_graph import build_noun_graph, prune_graph
from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL, require

# Prune settings that change nothing, so each test can switch on one rule.
NO_PRUNING = PruneSettings(
    min_node_freq=1, min_node_degree=0, min_edge_weight_pct=0, remove_ego_nodes=False, lcc_only=False
)


def records(pairs: list[tuple[str, str]]) -> pl.DataFrame:
    """noun_phrase extraction rows from (text_unit_id, title) pairs."""
    return pl.DataFrame(
        {
            "text_unit_id": [u for u, _ in pairs],
            "record_index": list(range(len(pairs))),
            "record_type": ["noun_phrase"] * len(pairs),
            "title": [t for _, t in pairs],
        }
    )


# u1: A B C, u2: A B, u3: B C  -> freq A2 B3 C2; edges AB 2, AC 1, BC 2
TINY = records([("u1", "A"), ("u1", "B"), ("u1", "C"), ("u2", "A"), ("u2", "B"), ("u3", "B"), ("u3", "C")])


def test_raw_weights_frequencies_and_schema() -> None:
    entities, relationships = build_noun_graph(TINY, normalize_edge_weights=False)
    assert entities.schema == pl.Schema(ENTITIES)
    assert relationships.schema == pl.Schema(RELATIONSHIPS)
    assert entities.select("title", "frequency", "degree", "human_readable_id").rows() == [
        ("A", 2, 2, 0),
        ("B", 3, 2, 1),
        ("C", 2, 2, 2),
    ]
    assert entities["text_unit_ids"].to_list() == [["u1", "u2"], ["u1", "u2", "u3"], ["u1", "u3"]]
    assert set(entities["type"]) == {"NOUN PHRASE"}
    assert entities["id"].to_list() == [entity_id("A"), entity_id("B"), entity_id("C")]
    assert relationships.select("source", "target", "weight", "combined_degree", "human_readable_id").rows() == [
        ("A", "B", 2.0, 4, 0),
        ("A", "C", 1.0, 4, 1),
        ("B", "C", 2.0, 4, 2),
    ]
    assert relationships["id"].to_list() == [relationship_id(s, t) for s, t in [("A", "B"), ("A", "C"), ("B", "C")]]
    assert relationships["text_unit_ids"].to_list() == [["u1", "u2"], ["u1"], ["u1", "u3"]]
    assert relationships["description"].to_list() == [
        "A and B appear together in 2 text units.",
        "A and C appear together in 1 text unit.",
        "B and C appear together in 2 text units.",
    ]


def test_pmi_weights_hand_computed() -> None:
    # Σ weights = 5, Σ frequencies = 7.
    # AB: p=2/5, p(A)=2/7, p(B)=3/7 -> 0.4·log2(0.4·49/6) = 0.4·log2(49/15)
    # AC: p=1/5, p(A)=p(C)=2/7     -> 0.2·log2(0.2·49/4) = 0.2·log2(49/20)
    _, relationships = build_noun_graph(TINY)
    weights = dict(zip(zip(relationships["source"], relationships["target"]), relationships["weight"]))
    assert weights[("A", "B")] == pytest.approx(0.4 * math.log2(49 / 15), rel=1e-12)
    assert weights[("A", "C")] == pytest.approx(0.2 * math.log2(49 / 20), rel=1e-12)
    assert weights[("B", "C")] == pytest.approx(0.4 * math.log2(49 / 15), rel=1e-12)
    assert weights[("A", "B")] == pytest.approx(0.683127699, abs=1e-9)


def test_repeated_mentions_and_other_record_types_are_ignored() -> None:
    noisy = pl.concat(
        [
            TINY,
            records([("u1", "A"), ("u1", "A")]),
            records([("u9", "Z")]).with_columns(record_type=pl.lit("entity")),
        ]
    )
    assert build_noun_graph(noisy, normalize_edge_weights=False)[1].equals(
        build_noun_graph(TINY, normalize_edge_weights=False)[1]
    )


def test_matches_brute_force_on_a_random_corpus() -> None:
    rng = random.Random(7)
    units = {f"u{i:03d}": rng.sample([f"P{j:02d}" for j in range(40)], rng.randint(0, 12)) for i in range(120)}
    pairs = [(u, t) for u, titles in units.items() for t in titles]
    entities, relationships = build_noun_graph(records(pairs), normalize_edge_weights=False)
    expected: dict[tuple[str, str], list[str]] = {}
    for unit, titles in units.items():
        for a, b in itertools.combinations(sorted(titles), 2):
            expected.setdefault((a, b), []).append(unit)
    rows = relationships.select("source", "target", "weight", "text_unit_ids").rows()
    got = {(s, t): (w, ids) for s, t, w, ids in rows}
    assert got == {pair: (float(len(us)), sorted(us)) for pair, us in expected.items()}
    assert relationships["id"].to_list() == [relationship_id(s, t) for s, t, _, _ in rows]
    assert entities["id"].to_list() == [entity_id(t) for t in entities["title"]]
    degree = {t: 0 for t in entities["title"]}
    for a, b in expected:
        degree[a] += 1
        degree[b] += 1
    assert dict(zip(entities["title"], entities["degree"])) == degree


def test_pairs_sort_the_same_packed_in_one_integer_or_by_a_stable_argsort() -> None:
    """Pairs are sorted by key with their units ascending within a key: packed (key and unit in one
    int64) where both fit, else by a stable argsort; the two give the same arrays."""
    import numpy as np

    from graphrag_assets.index.nlp_graph import _by_key_then_unit

    rng = np.random.default_rng(5)
    keys = rng.integers(0, 500, 20_000).astype(np.int64)
    units = np.sort(rng.integers(0, 3_000, 20_000)).astype(np.int32)  # rows come in unit order
    packed = _by_key_then_unit(keys, units, 500)
    argsorted = _by_key_then_unit(keys, units, 1 << 62)  # too large to pack
    expected = np.lexsort((units, keys))
    for got in (packed, argsorted):
        assert np.array_equal(got[0], keys[expected]) and np.array_equal(got[1], units[expected])
        assert got[1].dtype == np.int32


def test_descriptions_are_the_most_representative_sentence() -> None:
    text_units = pl.DataFrame(
        {
            "id": ["u1", "u2"],
            "text": [
                "Scrooge was alone. Then Scrooge and Marley shared the counting house.",
                "Later Marley walked home.",
            ],
        }
    )
    rows = records([("u1", "SCROOGE"), ("u1", "MARLEY"), ("u1", "COUNTING HOUSE"), ("u2", "MARLEY"), ("u2", "FRED")])
    entities, relationships = build_noun_graph(rows, text_units=text_units)
    description = dict(zip(entities["title"], entities["description"]))
    # the sentence mentioning three phrases wins over the one mentioning one
    assert description["SCROOGE"] == "Then Scrooge and Marley shared the counting house."
    assert description["MARLEY"] == "Then Scrooge and Marley shared the counting house."
    assert description["COUNTING HOUSE"] == "Then Scrooge and Marley shared the counting house."
    # FRED is never mentioned in its unit's text: a generic description
    assert description["FRED"] == "Noun phrase found in 1 text unit."


_PIPELINE_SCRIPT = """
import hashlib, polars as pl
from graphrag_assets.index.noun_phrases import noun_phrase_records
from graphrag_assets.index.nlp_graph import build_noun_graph
units = pl.DataFrame({"id": ["u2", "u1", "u3"], "document_key": "d", "text": [
    "Then Scrooge met Bob Cratchit in the counting-house.",
    "Marley and Scrooge shared the counting-house. The old man sat with Bob Cratchit.",
    "Later Tiny Tim met Bob Cratchit and Scrooge at the old man's door.",
]})
entities, relationships = build_noun_graph(noun_phrase_records(units), text_units=units)
print(hashlib.sha256((entities.write_json() + relationships.write_json()).encode()).hexdigest())
"""


def test_same_graph_in_a_new_process() -> None:
    root = Path(__file__).resolve().parents[1]
    run = lambda seed: subprocess.run(  # noqa: E731
        [sys.executable, "-c", _PIPELINE_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=root,
        env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
    ).stdout.strip()
    first = run("1")
    assert len(first) == 64 and first == run("2")


def test_empty_input_gives_empty_tables() -> None:
    entities, relationships = build_noun_graph(records([]))
    assert entities.is_empty() and relationships.is_empty()
    assert entities.schema == pl.Schema(ENTITIES)
    assert relationships.schema == pl.Schema(RELATIONSHIPS)


# ---------------------------------------------------------------------------------------------
# pruning


def graph(
    edges: list[tuple[str, str, float]], frequency: dict[str, int] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Entities and relationships for a hand-made graph (edge weights given directly)."""
    titles = sorted({t for s, t2, _ in edges for t in (s, t2)} | set(frequency or {}))
    freq = frequency or {}
    entities = pl.DataFrame(
        {
            "title": titles,
            "type": ["NOUN PHRASE"] * len(titles),
            "description": [""] * len(titles),
            "text_unit_ids": [["u1"]] * len(titles),
            "frequency": [freq.get(t, 5) for t in titles],
        }
    )
    relationships = pl.DataFrame(
        {
            "source": [min(s, t) for s, t, _ in edges],
            "target": [max(s, t) for s, t, _ in edges],
            "weight": [w for _, _, w in edges],
            "description": [""] * len(edges),
            "text_unit_ids": [["u1"]] * len(edges),
        },
        schema={
            "source": pl.String,
            "target": pl.String,
            "weight": pl.Float64,
            "description": pl.String,
            "text_unit_ids": pl.List(pl.String),
        },
    )
    from graphrag_assets.index.nlp_graph import finalize_graph

    return finalize_graph(entities, relationships)


def titles(entities: pl.DataFrame) -> list[str]:
    return entities["title"].to_list()


def pairs(relationships: pl.DataFrame) -> list[tuple[str, str]]:
    return list(zip(relationships["source"], relationships["target"]))


# H is a hub linked to A, B, C, D; A-B and C-D are linked too.
HUB = [("H", "A", 1.0), ("H", "B", 2.0), ("H", "C", 3.0), ("H", "D", 4.0), ("A", "B", 5.0), ("C", "D", 6.0)]


def test_no_pruning_keeps_everything_and_recomputes() -> None:
    entities, relationships = graph(HUB)
    pruned_entities, pruned_relationships = prune_graph(entities, relationships, NO_PRUNING)
    assert pruned_entities.equals(entities)
    assert pruned_relationships.equals(relationships)


def test_ego_node_is_removed_and_degrees_recomputed() -> None:
    entities, relationships = graph(HUB)
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"remove_ego_nodes": True}))
    assert titles(e) == ["A", "B", "C", "D"]
    assert pairs(r) == [("A", "B"), ("C", "D")]
    assert e["degree"].to_list() == [1, 1, 1, 1]
    assert r["combined_degree"].to_list() == [2, 2]
    assert e["human_readable_id"].to_list() == [0, 1, 2, 3]
    assert r["human_readable_id"].to_list() == [0, 1]


def test_ego_tie_removes_the_alphabetically_first() -> None:
    entities, relationships = graph([("X", "A", 1), ("X", "B", 1), ("Y", "C", 1), ("Y", "D", 1), ("X", "Y", 1)])
    e, _ = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"remove_ego_nodes": True}))
    assert "X" not in titles(e) and "Y" in titles(e)


def test_min_node_degree() -> None:
    entities, relationships = graph(HUB + [("E", "F", 1.0)], frequency={"LONELY": 5})
    e, _ = prune_graph(entities, relationships, NO_PRUNING)
    assert "LONELY" in titles(e)
    e, _ = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"min_node_degree": 1}))
    assert titles(e) == ["A", "B", "C", "D", "E", "F", "H"]
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"min_node_degree": 2}))
    assert titles(e) == ["A", "B", "C", "D", "H"]
    assert ("E", "F") not in pairs(r)


def test_max_node_degree_std() -> None:
    # degrees H4 A2 B2 C2 D2: mean 2.4, std 0.8 -> bound with k=1 is 3.2, so H goes
    entities, relationships = graph(HUB)
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"max_node_degree_std": 1.0}))
    assert titles(e) == ["A", "B", "C", "D"]
    assert pairs(r) == [("A", "B"), ("C", "D")]
    e, _ = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"max_node_degree_std": 2.1}))
    assert "H" in titles(e)


def test_min_node_freq() -> None:
    entities, relationships = graph(HUB, frequency={"A": 1, "B": 2, "C": 3})
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"min_node_freq": 2}))
    assert titles(e) == ["B", "C", "D", "H"]
    assert all("A" not in pair for pair in pairs(r))


def test_max_node_freq_std() -> None:
    # frequencies A1 B1 C1 D1 H6: mean 2, std 2 -> bound with k=1 is 4, so H goes
    entities, relationships = graph(HUB, frequency={"A": 1, "B": 1, "C": 1, "D": 1, "H": 6})
    e, _ = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"max_node_freq_std": 1.0}))
    assert titles(e) == ["A", "B", "C", "D"]


def test_min_edge_weight_percentile_keeps_nodes() -> None:
    # weights 1..6: the 50th percentile is 3.5, so edges of weight 4, 5, 6 stay
    entities, relationships = graph(HUB)
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"min_edge_weight_pct": 50}))
    assert pairs(r) == [("A", "B"), ("C", "D"), ("D", "H")]
    assert titles(e) == ["A", "B", "C", "D", "H"]
    assert dict(zip(e["title"], e["degree"])) == {"A": 1, "B": 1, "C": 1, "D": 2, "H": 1}


def test_max_mean_degree_keeps_the_strongest_edges_of_a_dense_graph() -> None:
    # 5 nodes, 6 edges (mean degree 2.4): a bound of 1.2 keeps 3 edges, as the 50th percentile rule does
    entities, relationships = graph(HUB)
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"max_mean_degree": 1.2}))
    assert pairs(r) == [("A", "B"), ("C", "D"), ("D", "H")]
    assert titles(e) == ["A", "B", "C", "D", "H"]
    _, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"max_mean_degree": 2.4}))
    assert r.height == 6  # at the bound: nothing goes


def test_max_mean_degree_is_a_bound_and_a_tie_across_it_goes_whole() -> None:
    tied = [("H", "A", 1.0), ("H", "B", 2.0), ("H", "C", 2.0), ("H", "D", 2.0), ("A", "B", 3.0)]
    entities, relationships = graph(tied)
    bound = NO_PRUNING.model_copy(update={"max_mean_degree": 1.6})  # 5 nodes: at most 4 edges
    _, r = prune_graph(entities, relationships, bound)
    assert pairs(r) == [("A", "B"), ("B", "H"), ("C", "H"), ("D", "H")]
    _, r = prune_graph(entities, relationships, bound.model_copy(update={"max_mean_degree": 1.2}))  # at most 3
    assert pairs(r) == [("A", "B")]  # the three of weight 2 would make 4
    _, r = prune_graph(entities, relationships, bound.model_copy(update={"max_mean_degree": 0.4}))  # at most 1
    assert pairs(r) == [("A", "B")]
    hub = [("H", "A", 2.0), ("H", "B", 2.0), ("H", "C", 2.0), ("A", "B", 1.0)]  # the heaviest tie stays
    _, r = prune_graph(*graph(hub), NO_PRUNING.model_copy(update={"max_mean_degree": 0.5}))
    assert pairs(r) == [("A", "H"), ("B", "H"), ("C", "H")]


def test_max_mean_degree_counts_the_bound_exactly() -> None:
    # 100 nodes in 50 pairs of weights 1..50, then 66 more edges: a bound of 2.3 keeps 115, not 114
    chain = [(f"N{i:03d}", f"N{i + 1:03d}", float(i)) for i in range(0, 99, 2)]
    more = [(f"N{i:03d}", f"N{i + 3:03d}", 100.0 + i) for i in range(0, 66)]
    entities, relationships = graph(chain + more)
    assert entities.height == 100
    _, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"max_mean_degree": 2.3}))
    assert r.height == 115


def test_lcc_only() -> None:
    entities, relationships = graph([("A", "B", 1.0), ("B", "C", 1.0), ("X", "Y", 1.0)])
    e, r = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"lcc_only": True}))
    assert titles(e) == ["A", "B", "C"]
    assert pairs(r) == [("A", "B"), ("B", "C")]
    # equal sizes: the component holding the alphabetically first title
    entities, relationships = graph([("M", "N", 1.0), ("B", "Z", 1.0)])
    e, _ = prune_graph(entities, relationships, NO_PRUNING.model_copy(update={"lcc_only": True}))
    assert titles(e) == ["B", "Z"]


def test_nothing_left_names_the_setting_to_relax() -> None:
    entities, relationships = graph(HUB, frequency={t: 1 for t in "ABCDH"})
    expected = r"every node .*before the minimum node frequency\); lower nlp\.prune\.min_node_freq \(now 2\)"
    with pytest.raises(UserError, match=expected):
        prune_graph(entities, relationships, PruneSettings(min_node_freq=2))
    star = graph([("H", "A", 1.0), ("H", "B", 1.0)])
    with pytest.raises(UserError, match=r"every relationship .*set nlp\.prune\.remove_ego_nodes to false"):
        prune_graph(*star, NO_PRUNING.model_copy(update={"remove_ego_nodes": True}))


def test_empty_graph_is_a_user_error() -> None:
    entities, relationships = build_noun_graph(records([]))
    with pytest.raises(UserError, match="no noun phrases"):
        prune_graph(entities, relationships, PruneSettings())


def test_christmas_carol_graph() -> None:
    """Counts on the real book (printed with -s); Microsoft's extractor gives 1147 nodes / 29442 edges."""
    from graphrag_assets.index.chunking import chunk_text
    from graphrag_assets.index.noun_phrases import noun_phrase_records

    text = require(CHRISTMAS_CAROL).read_text(encoding="utf-8-sig")
    chunks = list(chunk_text(text, 1200, 100))
    units = pl.DataFrame(
        {"id": [f"unit-{c.index:03d}" for c in chunks], "text": [c.text for c in chunks], "document_key": "carol"}
    )
    start = time.perf_counter()
    extracted = noun_phrase_records(units, max_word_length=15)
    extraction_seconds = time.perf_counter() - start
    start = time.perf_counter()
    entities, relationships = build_noun_graph(extracted, text_units=units)
    graph_seconds = time.perf_counter() - start
    pruned_entities, pruned_relationships = prune_graph(entities, relationships, PruneSettings())
    print(
        f"\nA Christmas Carol: {units.height} units, extraction {extraction_seconds:.2f} s, "
        f"graph {graph_seconds:.2f} s; "
        f"{entities.height} nodes / {relationships.height} edges before pruning, "
        f"{pruned_entities.height} / {pruned_relationships.height} after"
    )
    for name in ("SCROOGE", "BOB CRATCHIT", "TINY TIM", "MARLEY", "FEZZIWIG", "GHOST OF CHRISTMAS PAST"):
        assert name in set(entities["title"]), name
    assert 0 < pruned_entities.height < entities.height
    assert 0 < pruned_relationships.height < relationships.height


# ---------------------------------------------------------------------------------------------
# the index path: build and prune in integer codes, strings only for what survives


def _reference_prune(
    frequency: dict[str, int], weights: dict[tuple[str, str], float], settings: PruneSettings
) -> tuple[set[str], set[tuple[str, str]]]:
    """Microsoft's prune rules written out over Python dicts (no polars, no numpy)."""
    nodes = set(frequency)
    edges = dict(weights)

    def degrees() -> dict[str, int]:
        degree = {n: 0 for n in nodes}
        for a, b in edges:
            degree[a] += 1
            degree[b] += 1
        return degree

    def keep(alive: set[str]) -> None:
        nonlocal nodes, edges
        nodes = nodes & alive
        edges = {pair: w for pair, w in edges.items() if pair[0] in nodes and pair[1] in nodes}

    def bound(values: list[float], k: float) -> float:
        mean = sum(values) / len(values)
        return mean + k * math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))

    if settings.remove_ego_nodes:
        degree = degrees()
        keep(nodes - {min(nodes, key=lambda n: (-degree[n], n))})
    degree = degrees()
    keep({n for n in nodes if degree[n] >= settings.min_node_degree})
    if settings.max_node_degree_std is not None:
        limit = bound([float(d) for d in degree.values()], settings.max_node_degree_std)
        keep({n for n in nodes if degree[n] <= limit})
    keep({n for n in nodes if frequency[n] >= settings.min_node_freq})
    if settings.max_node_freq_std is not None and nodes:
        limit = bound([float(frequency[n]) for n in nodes], settings.max_node_freq_std)
        keep({n for n in nodes if frequency[n] <= limit})

    def percentile(values: list[float], share: float) -> float:  # numpy's linear interpolation
        ordered = sorted(values)
        position = (len(ordered) - 1) * share
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    if settings.min_edge_weight_pct > 0 and edges:
        threshold = percentile(list(edges.values()), settings.min_edge_weight_pct / 100)
        edges = {pair: w for pair, w in edges.items() if w >= threshold}
    bound = settings.max_mean_degree
    budget = int(round(bound * len(nodes) / 2, 6)) if bound is not None else len(edges)
    if len(edges) > budget:  # the heaviest edges, a weight's edges all or none, at most budget
        by_weight = sorted(edges.items(), key=lambda item: -item[1])
        heaviest = by_weight[0][1]
        edges = {pair: w for pair, w in by_weight if w == heaviest or (w > by_weight[budget][1] and budget)}
    if settings.lcc_only:
        component: dict[str, set[str]] = {n: {n} for n in nodes}
        for a, b in edges:
            if component[a] is not component[b]:
                merged = component[a] | component[b]
                for n in merged:
                    component[n] = merged
        groups = {id(g): g for g in component.values()}.values()
        keep(min(groups, key=lambda g: (-len(g), min(g))))
    return nodes, set(edges)


def _random_corpus(seed: int) -> tuple[dict[str, list[str]], pl.DataFrame]:
    rng = random.Random(seed)
    phrases = [f"P{j:02d}" for j in range(60)]
    units = {f"u{i:03d}": rng.sample(phrases, rng.randint(0, 9)) for i in range(150)}
    return units, records([(u, t) for u, titles in units.items() for t in titles])


PRUNE_CASES = [
    PruneSettings(),
    PruneSettings(min_node_freq=3, min_edge_weight_pct=25, remove_ego_nodes=False),
    PruneSettings(min_node_degree=4, max_node_degree_std=1.0, max_node_freq_std=1.5, min_edge_weight_pct=0),
    PruneSettings(min_node_freq=1, min_edge_weight_pct=95, lcc_only=True),  # 59 -> 37 nodes
    PruneSettings(max_mean_degree=6.0),  # mean degree 21.8 after the percentile: 644 -> 177 edges
    PruneSettings(min_node_freq=1, min_edge_weight_pct=0, max_mean_degree=3.0, lcc_only=True),
    PruneSettings(max_mean_degree=21.8),  # just under the mean degree (21.83): a tie of 9 at the cut, 644 -> 635
]


@pytest.mark.parametrize("settings", PRUNE_CASES)
def test_coded_pruning_matches_a_python_reference(settings: PruneSettings) -> None:
    from graphrag_assets.index.nlp_graph import code_noun_graph, materialize, prune_codes

    units, rows = _random_corpus(11)
    frequency: dict[str, int] = {}
    shared: dict[tuple[str, str], int] = {}
    for phrases in units.values():
        for phrase in phrases:
            frequency[phrase] = frequency.get(phrase, 0) + 1
        for pair in itertools.combinations(sorted(phrases), 2):
            shared[pair] = shared.get(pair, 0) + 1
    total_weight, total_frequency = sum(shared.values()), sum(frequency.values())
    weights = {}
    for (a, b), count in shared.items():
        p_xy = count / total_weight
        weights[(a, b)] = p_xy * math.log2(p_xy / (frequency[a] / total_frequency * frequency[b] / total_frequency))

    graph = code_noun_graph(rows)
    entities, relationships = materialize(graph, prune_codes(graph, settings), None)

    nodes, edges = _reference_prune(frequency, weights, settings)
    assert titles(entities) == sorted(nodes)
    assert pairs(relationships) == sorted(edges)
    degree = {n: sum(n in pair for pair in edges) for n in nodes}
    assert dict(zip(entities["title"], entities["degree"])) == degree
    assert relationships["combined_degree"].to_list() == [degree[a] + degree[b] for a, b in sorted(edges)]
    assert relationships["text_unit_ids"].to_list() == [
        sorted(u for u, ts in units.items() if a in ts and b in ts) for a, b in sorted(edges)
    ]
    assert relationships["weight"].to_list() == pytest.approx([weights[pair] for pair in sorted(edges)], rel=1e-12)
    assert entities["human_readable_id"].to_list() == list(range(entities.height))
    assert relationships["human_readable_id"].to_list() == list(range(relationships.height))
    # the same rules on finished tables give the same tables
    built = build_noun_graph(rows)
    pruned_entities, pruned_relationships = prune_graph(*built, settings)
    assert pruned_entities.equals(entities)
    assert pruned_relationships.equals(relationships)


def test_pair_batches_do_not_change_the_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphrag_assets.index import nlp_graph

    _, rows = _random_corpus(5)
    whole = build_noun_graph(rows)
    monkeypatch.setattr(nlp_graph, "PAIR_BATCH_ROWS", 7)  # many batches, boundaries inside units
    batched = build_noun_graph(rows)
    assert batched[0].equals(whole[0]) and batched[1].equals(whole[1])
    assert whole[1].height > 100


def test_pruning_everything_away_names_the_setting_on_the_coded_path() -> None:
    from graphrag_assets.index.nlp_graph import code_noun_graph, prune_codes

    graph = code_noun_graph(TINY)
    with pytest.raises(UserError, match=r"every node .*lower nlp\.prune\.min_node_freq \(now 9\)"):
        prune_codes(graph, PruneSettings(min_node_freq=9, remove_ego_nodes=False))
    with pytest.raises(UserError, match="no noun phrases"):
        prune_codes(code_noun_graph(records([])), PruneSettings())


def test_descriptions_report_progress_per_text_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphrag_assets.index import nlp_graph, phrase_descriptions

    monkeypatch.setattr(phrase_descriptions, "PROGRESS_UNITS", 2)
    text_units = pl.DataFrame({"id": ["u1", "u2", "u3", "u4", "u5"], "text": ["A and B met."] * 5})
    rows = records([(u, t) for u in text_units["id"] for t in ("A", "B")])
    calls: list[int] = []
    graph = nlp_graph.code_noun_graph(rows)
    nlp_graph.materialize(graph, None, text_units, calls.append)
    assert calls == [2, 2, 1]


def test_the_graph_step_reads_every_column_the_noun_graph_uses(tmp_path: Path) -> None:
    """The graph step reads only ``NOUN_GRAPH_COLUMNS`` of the extraction rows (for its memory at
    100,000 documents); the graph, with entity resolution on, must be the one all columns give."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.index.corpus_graph import extraction_columns, noun_graph
    from graphrag_assets.index.noun_phrases import noun_phrase_records

    units = _scrooge_units()
    records = noun_phrase_records(units)
    settings = load_settings(
        tmp_path, overrides={"method": "nlp", "resolution": {"enabled": True}, "nlp": {"prune": {"min_node_freq": 1}}}
    )
    columns = extraction_columns(settings)
    assert columns is not None and len(columns) < records.width
    whole = noun_graph(settings, records, units, None, None)
    read = noun_graph(settings, records.select(columns), units, None, None)
    assert not whole.aliases.is_empty()  # resolution merged names, so its columns were used
    assert read.entities.equals(whole.entities) and read.aliases.equals(whole.aliases)
    assert pl.concat(list(read.relationships.batches())).equals(pl.concat(list(whole.relationships.batches())))


def test_the_graph_step_keeps_the_heaviest_relationships_within_the_mean_degree_bound(tmp_path: Path) -> None:
    """``nlp.prune.max_mean_degree`` from graphrag.yaml reaches the step's graph (250 by default)."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.index.corpus_graph import noun_graph
    from graphrag_assets.index.noun_phrases import noun_phrase_records

    units = _scrooge_units()
    records = noun_phrase_records(units)

    def relationships(bound: float | None) -> tuple[int, pl.DataFrame]:
        prune = {"min_node_freq": 1, "min_edge_weight_pct": 0, "max_mean_degree": bound}
        settings = load_settings(tmp_path, overrides={"method": "nlp", "nlp": {"prune": prune}})
        built = noun_graph(settings, records, units, None, None)
        return built.entities.height, pl.concat(list(built.relationships.batches()))

    assert load_settings(tmp_path, overrides={"method": "nlp"}).nlp.prune.max_mean_degree == 250
    entities, everything = relationships(None)
    assert relationships(250.0)[1].equals(everything)  # far sparser than the bound: untouched
    bounded_entities, bounded = relationships(2.0)
    assert bounded_entities == entities  # phrases stay, as with the percentile rule
    assert 0 < bounded.height <= entities < everything.height
    dropped = everything.join(bounded, on=["source", "target"], how="anti")
    assert bounded["weight"].min() > dropped["weight"].max()


def _scrooge_units() -> pl.DataFrame:
    texts = [
        "Mr. Scrooge met Bob Cratchit in the counting-house on Christmas Eve.",
        "Scrooge and Marley shared the counting-house. Bob Cratchit sat at the small desk.",
        "Later Tiny Tim met Bob Cratchit and Scrooge at the door of the counting-house.",
        "Ebenezer Scrooge heard the bells of the old church, and Scrooge counted them on Christmas Eve.",
        "Marley's ghost came to Scrooge at the old door on Christmas Eve.",
    ]
    units = pl.DataFrame(
        {
            "id": [f"u{i}" for i in range(len(texts))],
            "document_key": [f"d{i % 2}" for i in range(len(texts))],
            "text": texts,
        }
    )
    return units.with_columns(chunk_index=pl.int_range(pl.len()))
