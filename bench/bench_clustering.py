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
    python bench/bench_clustering.py --scale                 # ours vs graspologic-native, 200k to 1M nodes

``--scale`` runs each engine in a fresh subprocess per graph (wall, CPU time and peak RSS of that
process; the load average is printed with every row because the machine may be shared, and on a
loaded machine the CPU time is the steadier figure): ours
(``hierarchical_leiden`` with the default backend) against graspologic-native's
``hierarchical_leiden`` called as Microsoft GraphRAG calls it (string edge tuples, max cluster size
10, seed 0xDEADBEEF). Graphs: 200k nodes / 1M edges and 1M / 5M planted partitions, and 200k / 1M
with heavy-tailed community sizes (Pareto 0.9, up to a tenth of the nodes) and more mixing.

Figures are printed and written to bench/results/clustering.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
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


SCALE_GRAPHS = {
    "planted-200k": dict(n_nodes=200_000, n_edges=1_000_000, alpha=1.5, largest=1 / 20, mixing=0.2),
    "planted-1M": dict(n_nodes=1_000_000, n_edges=5_000_000, alpha=1.5, largest=1 / 20, mixing=0.2),
    "heavy-200k": dict(n_nodes=200_000, n_edges=1_000_000, alpha=0.9, largest=1 / 10, mixing=0.3),
}


def fast_planted_partition(
    n_nodes: int, n_edges: int, *, alpha: float, largest: float, mixing: float, seed: int = 7
) -> pl.DataFrame:
    """:func:`planted_partition`'s kind of graph, vectorized: seconds at a million nodes.

    Community sizes are ``3 * (1 + Pareto(alpha))`` clipped at ``largest * n_nodes``; pairs are
    drawn in one oversized batch and de-duplicated with integer keys.
    """
    rng = np.random.default_rng(seed)
    sizes = np.minimum(3 * (1 + rng.pareto(alpha, n_nodes)), max(3, int(n_nodes * largest))).astype(np.int64)
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), n_nodes)) + 1]
    sizes[-1] -= int(sizes.sum()) - n_nodes
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    label = np.repeat(np.arange(sizes.size), sizes)
    draw = int(n_edges * 1.3)
    while True:  # small communities saturate: draw more until there are n_edges distinct pairs
        n_inside = int(draw * (1 - mixing))
        u = rng.integers(0, n_nodes, draw)
        v = rng.integers(0, n_nodes, draw)
        inside = starts[label[u[:n_inside]]] + (rng.random(n_inside) * sizes[label[u[:n_inside]]]).astype(np.int64)
        v[:n_inside] = inside
        weight = np.r_[rng.integers(3, 11, n_inside), rng.integers(1, 6, draw - n_inside)].astype(np.float64)
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        order = rng.permutation(draw)  # which duplicate survives, and the mix of inside/outside kept
        _, first = np.unique((lo * n_nodes + hi)[order], return_index=True)
        picked = order[np.sort(first)]  # in drawing order, so that truncating keeps the mix
        keep = picked[lo[picked] != hi[picked]]
        if keep.size >= n_edges:
            break
        draw = int(draw * 1.5)
    keep = keep[:n_edges]
    names = "E" + pl.Series(rng.permutation(n_nodes)).cast(pl.String).str.zfill(7)
    return pl.DataFrame({"source": names.gather(lo[keep]), "target": names.gather(hi[keep]), "weight": weight[keep]})


def level0_summary(edges: pl.DataFrame, level0: pl.DataFrame, leaves: pl.Series) -> dict:
    """igraph modularity of the level-0 membership (nodes without one: singletons) and size figures."""
    frame = clustering.normalize_edges(edges)
    graph = clustering._graph_from_edges(frame)
    label = dict(zip(level0["node"].to_list(), level0["community"].to_list()))
    base = max(label.values(), default=0) + 1
    membership = [label.get(name, base + i) for i, name in enumerate(graph.vs["name"])]
    sizes = level0.group_by("community").len()["len"]
    return {
        "modularity_level0": round(graph.modularity(membership, weights="weight"), 4),
        "level0_communities": sizes.len(),
        "level0_sizes_p50_p90_max": [int(sizes.median()), int(sizes.quantile(0.9)), int(sizes.max())],
        "leaves": leaves.len(),
        "leaf_sizes_p50_p90_max": [int(leaves.median()), int(leaves.quantile(0.9)), int(leaves.max())],
    }


def worker(engine: str, path: str) -> None:
    """One engine on one stored graph; prints one JSON line (wall, peak RSS, quality figures)."""
    edges = pl.read_parquet(path)
    start, cpu_start = time.perf_counter(), time.process_time()
    if engine.startswith("ours"):
        result = hierarchical_leiden(edges, LeidenOptions(node_optimal=engine == "ours"))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        level0 = result.filter(pl.col("level") == 0).select("node", "community")
        children = result.filter(pl.col("parent") >= 0)["parent"].unique().implode()
        leaves = result.filter(~pl.col("community").is_in(children)).group_by("community").len()["len"]
        levels = int(result["level"].max()) + 1
    else:
        import graspologic_native

        tuples = list(zip(edges["source"].to_list(), edges["target"].to_list(), edges["weight"].to_list()))
        found = graspologic_native.hierarchical_leiden(tuples, max_cluster_size=10, seed=0xDEADBEEF)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        rows = pl.DataFrame(
            [(h.node, h.cluster, h.level, h.is_final_cluster) for h in found],
            schema={"node": pl.String, "community": pl.Int64, "level": pl.Int64, "final": pl.Boolean},
            orient="row",
        )
        level0 = rows.filter(pl.col("level") == 0).select("node", "community")
        leaves = rows.filter("final").group_by("community").len()["len"]
        levels = int(rows["level"].max()) + 1
    peak_mb = peak_rss_kb() / 1024
    row = {
        "engine": engine,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_mb": round(peak_mb),
        "levels": levels,
    }
    row.update(level0_summary(edges, level0, leaves))
    print(json.dumps(row))


def peak_rss_kb() -> int:
    """This process's peak resident set (VmHWM): unlike ``ru_maxrss`` it does not count what the
    parent held before the exec (the parent holds the generated 1M-node graph)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource  # no /proc: ru_maxrss, which may include the parent's peak

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


ENGINES = ("ours", "ours-unpolished", "graspologic-native")


def bench_scale(names: list[str], engines: list[str]) -> list[dict]:
    """Ours and graspologic-native on each scale graph, each in its own process."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            spec = SCALE_GRAPHS[name]
            edges, seconds = timed(fast_planted_partition, **spec)
            path = str(Path(scratch) / f"{name}.parquet")
            edges.write_parquet(path)
            print(
                f"graph {name}: {spec['n_nodes']} nodes, {edges.height} edges, generated in {seconds:.1f} s", flush=True
            )
            del edges
            for engine in engines:
                before = load()
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", engine, path], capture_output=True, text=True, check=True
                )
                row = {"graph": name, **json.loads(out.stdout.strip().splitlines()[-1])}
                row["load_before_after"] = f"{before} / {load()}"
                print(f"  {row}", flush=True)
                rows.append(row)
    return rows


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
    parser.add_argument("--scale", action="store_true", help="ours vs graspologic-native at 200k-1M nodes")
    parser.add_argument("--scale-graphs", nargs="+", default=list(SCALE_GRAPHS), choices=list(SCALE_GRAPHS))
    parser.add_argument(
        "--engines",
        nargs="+",
        default=["ours", "graspologic-native"],
        choices=ENGINES,
        help="ours-unpolished: our hierarchy without the node-level polish (node_optimal=False)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "PARQUET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    if args.scale:
        print(f"load average before: {load()} ({os.cpu_count()} cores)", flush=True)
        rows = bench_scale(args.scale_graphs, args.engines)
        print()
        print_table(rows, list(rows[0]))
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        scale_results = RESULTS.with_name("clustering_scale.json")
        scale_results.write_text(json.dumps({"load_after": load(), "results": rows}, indent=2) + "\n")
        print(f"\nwritten {scale_results}")
        return

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
