"""Time hierarchical Leiden clustering on reproducible graphs with planted community structure.

Graphs are planted partitions: community sizes drawn from a power law (Pareto, clipped), 80% of
the edges inside a community, 20% between uniformly random nodes, integer weights 1-10 (higher
inside communities), exactly the requested number of distinct node pairs. Node titles are
shuffled so that sorted title order does not follow the communities.

For each graph and backend it times ``hierarchical_leiden`` and, separately, ``build_communities``
end to end (clustering + the communities table), and reports levels, community count and the
modularity of level 0. ``--iterations`` also compares Leiden's ``n_iterations`` settings (2, 1,
-1 = until stable) on the flat level-0 clustering and on the whole hierarchy.

    python bench/bench_clustering.py                     # 10k and 100k graphs, both backends
    python bench/bench_clustering.py --iterations --slow     # + n_iterations comparison (~20 min)
    python bench/bench_clustering.py --skip-leidenalg-large

Figures are printed and written to bench/results/clustering.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrag_assets.core.ids import entity_id, relationship_id  # noqa: E402
from graphrag_assets.index import communities as clustering  # noqa: E402
from graphrag_assets.index.communities import (  # noqa: E402
    LeidenOptions,
    build_communities,
    hierarchical_leiden,
    partition_modularity,
)

RESULTS = Path(__file__).resolve().parent / "results" / "clustering.json"
GRAPHS = {"10k": (10_000, 50_000), "100k": (100_000, 500_000)}


def planted_partition(
    n_nodes: int, n_edges: int, *, seed: int = 7, mixing: float = 0.2
) -> tuple[pl.DataFrame, np.ndarray]:
    """A weighted edge list with planted communities, and the planted label of every node."""
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    total = 0  # a running total: summing the list each time is quadratic (minutes at 1M nodes)
    while total < n_nodes:
        sizes.append(int(min(3 * (1 + rng.pareto(1.5)), n_nodes // 20)))
        total += sizes[-1]
    sizes[-1] -= sum(sizes) - n_nodes
    if sizes[-1] < 1:
        sizes.pop()
        sizes[-1] += n_nodes - sum(sizes)
    size_arr = np.array(sizes)
    starts = np.concatenate([[0], np.cumsum(size_arr)[:-1]])
    label = np.repeat(np.arange(len(sizes)), size_arr)

    names = np.array([f"E{i:07d}" for i in rng.permutation(n_nodes)])
    # Draw in batches until there are n_edges distinct pairs: small communities saturate
    # quickly, so a single draw would leave far fewer distinct edges than asked for.
    batches: list[pl.DataFrame] = []
    distinct = 0
    while distinct < n_edges:
        batch = n_edges
        n_inside = int(batch * (1 - mixing))
        u_in = rng.integers(0, n_nodes, n_inside)
        v_in = starts[label[u_in]] + np.floor(rng.random(n_inside) * size_arr[label[u_in]]).astype(np.int64)
        u_out = rng.integers(0, n_nodes, batch - n_inside)
        v_out = rng.integers(0, n_nodes, batch - n_inside)
        u, v = np.concatenate([u_in, u_out]), np.concatenate([v_in, v_out])
        weight = np.concatenate([rng.integers(3, 11, n_inside), rng.integers(1, 6, batch - n_inside)])
        batches.append(
            pl.DataFrame({"u": np.minimum(u, v), "v": np.maximum(u, v), "weight": weight.astype(float)}).filter(
                pl.col("u") != pl.col("v")
            )
        )
        pairs = pl.concat(batches).unique(["u", "v"], keep="first", maintain_order=True)
        distinct = pairs.height
    pairs = pairs.head(n_edges)
    edges = pl.DataFrame(
        {
            "source": names[pairs["u"].to_numpy()],
            "target": names[pairs["v"].to_numpy()],
            "weight": pairs["weight"],
        }
    )
    return edges, label


def as_tables(edges: pl.DataFrame, n_text_units: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Entities and relationships tables shaped like the pipeline's, from an edge list."""
    rels = clustering.normalize_edges(edges)
    titles = pl.concat([rels["source"], rels["target"]]).unique().sort()
    entities = pl.DataFrame({"title": titles}).with_columns(
        pl.col("title").map_elements(entity_id, return_dtype=pl.String).alias("id")
    )
    ids = [relationship_id(s, t) for s, t in zip(rels["source"].to_list(), rels["target"].to_list())]
    unit = (np.arange(rels.height) % n_text_units).tolist()
    relationships = rels.with_columns(
        pl.Series("id", ids, dtype=pl.String),
        pl.Series("text_unit_ids", [[f"tu{u}"] for u in unit], dtype=pl.List(pl.String)),
    )
    return entities, relationships


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def bench_graph(name: str, edges: pl.DataFrame, backend: str) -> dict:
    assignments, seconds = timed(hierarchical_leiden, edges, LeidenOptions(backend=backend))
    entities, relationships = as_tables(edges, n_text_units=max(1, edges.height // 50))
    table, build_seconds = timed(
        build_communities, entities, relationships, period="bench", options=LeidenOptions(backend=backend)
    )
    per_level = table.group_by("level").agg(pl.len().alias("n")).sort("level")["n"].to_list()
    return {
        "graph": name,
        "backend": backend,
        "hierarchical_leiden_s": round(seconds, 2),
        "build_communities_s": round(build_seconds, 2),
        "levels": int(assignments["level"].max()) + 1,
        "communities": int(assignments["community"].n_unique()),
        "per_level": per_level,
        "modularity_level0": round(partition_modularity(edges, assignments), 4),
    }


def bench_iterations(name: str, edges: pl.DataFrame, backend: str, *, slow: bool) -> list[dict]:
    """Flat level-0 Leiden (max_cluster_size huge) and the full hierarchy for each n_iterations."""
    rows = []
    for n_iterations in (2, 1, -1):
        if n_iterations == -1 and backend == "leidenalg" and name != "10k" and not slow:
            print(f"  skipping leidenalg until-stable on {name}: it takes many minutes (pass --slow)")
            continue
        flat, flat_s = timed(
            hierarchical_leiden,
            edges,
            LeidenOptions(backend=backend, n_iterations=n_iterations, max_cluster_size=10**9),
        )
        full, full_s = timed(hierarchical_leiden, edges, LeidenOptions(backend=backend, n_iterations=n_iterations))
        rows.append(
            {
                "graph": name,
                "backend": backend,
                "n_iterations": n_iterations,
                "level0_s": round(flat_s, 2),
                "level0_modularity": round(partition_modularity(edges, flat), 4),
                "level0_communities": int(flat["community"].n_unique()),
                "hierarchy_s": round(full_s, 2),
                "hierarchy_communities": int(full["community"].n_unique()),
            }
        )
    return rows


def print_table(rows: list[dict], columns: list[str]) -> None:
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for row in rows:
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=list(GRAPHS))
    parser.add_argument(
        "--skip-leidenalg-large", action="store_true", help="do not run leidenalg on the 100k-node graph"
    )
    parser.add_argument("--iterations", action="store_true", help="also compare n_iterations 2 / 1 / -1")
    parser.add_argument(
        "--slow",
        action="store_true",
        help="with --iterations: include leidenalg until-stable on 100k (~15 min)",
    )
    args = parser.parse_args()

    results, iteration_rows = [], []
    for name in args.graphs:
        n_nodes, n_edges = GRAPHS[name]
        edges, _ = planted_partition(n_nodes, n_edges)
        merged = clustering.normalize_edges(edges).height
        print(f"graph {name}: {n_nodes} nodes, {edges.height} edge rows ({merged} distinct pairs)")
        for backend in clustering.BACKENDS:
            if backend == "leidenalg" and name == "100k" and args.skip_leidenalg_large:
                print(f"  skipping leidenalg on {name} (--skip-leidenalg-large)")
                continue
            row = bench_graph(name, edges, backend)
            print(f"  {row}", flush=True)
            results.append(row)
            if args.iterations:
                iteration_rows.extend(bench_iterations(name, edges, backend, slow=args.slow))

    print()
    print_table(
        results,
        [
            "graph",
            "backend",
            "hierarchical_leiden_s",
            "build_communities_s",
            "levels",
            "communities",
            "modularity_level0",
            "per_level",
        ],
    )
    if iteration_rows:
        print()
        print_table(iteration_rows, list(iteration_rows[0]))

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": {"python": platform.python_version(), "processor": platform.machine()},
                "results": results,
                "n_iterations": iteration_rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwritten {RESULTS}")


if __name__ == "__main__":
    main()
