"""Does local search's pushed walk keep the exact walk's context? Per question, per push threshold.

    python bench/bench_walk_tolerance.py --root PROJECT [--questions 10] [--residuals 0.0377 0.377 3.77]

On a graph of ``PUSH_FROM_EDGES`` directed edges or more, local search ranks by forward push
(:mod:`graphrag_assets.query.push_walk`), which stops when no vertex holds a residual above
``PUSH_RESIDUAL`` × its degree / the graph's directed edges, instead of the power iteration over
the whole matrix (:func:`graphrag_assets.query.graph_ranking.exact_pagerank`).
For ``--questions`` questions "What connects <entity> to the other towns?" (entities drawn with a
fixed seed from the project's index) this builds local search's context (context only, as
``serve`` and ``query --context-only`` do) with the exact walk and with the push at each of
``--residuals`` (``PUSH_RESIDUAL`` values), whatever the graph's size, and prints per question and
value:

- ``kept``: whether the reports, entities, relationships and sources the context keeps are the
  exact walk's, as sets and in order (``=`` same order, ``~`` same set in another order, ``x``);
- ``offered``: the same for the candidates ranked for the context (all 200 text units offered to
  the Sources table, most of which its token budget drops);
- the walk's time, and the vertices the push reached and the edges it read.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_average  # noqa: E402

from graphrag_assets.core.settings import load_settings  # noqa: E402
from graphrag_assets.project.query_data import load_query_data  # noqa: E402
from graphrag_assets.project.querying import answer_from  # noqa: E402
from graphrag_assets.query import graph_ranking, local_search  # noqa: E402
from graphrag_assets.query.request import QueryOptions  # noqa: E402

SEED = 7
EXACT = "exact"
KEPT = ("reports", "entities", "relationships", "sources")
OFFERED = ("reports", "entities", "relationships", "text_units")


def compare(mine: tuple[list, ...], exact: tuple[list, ...]) -> str:
    """Per table: '=' same rows in the same order, '~' same rows in another order, 'x' other rows."""
    return "".join("=" if a == b else "~" if set(a) == set(b) else "x" for a, b in zip(mine, exact, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--residuals", type=float, nargs="+", default=[0.0377, 0.377, 3.77])
    args = parser.parse_args()
    settings = load_settings(args.root, environ={})
    data = load_query_data(settings)
    titles = data.key_columns("entities", ("id", "title", "type"))["title"].drop_nulls().to_list()
    questions = [
        f"What connects {t.title()} to the other towns?" for t in random.Random(SEED).sample(titles, args.questions)
    ]
    walks: list[tuple[float, np.ndarray]] = []
    offered: list[tuple[list, ...]] = []
    walk, rank = graph_ranking.personalized_pagerank, local_search.rank_by_graph

    def timed_walk(graph: graph_ranking.RankingGraph, reset: np.ndarray, damping: float) -> np.ndarray:
        start = time.perf_counter()
        scores = walk(graph, reset, damping)
        walks.append((time.perf_counter() - start, scores))
        return scores

    def recorded(*args_, **kwargs) -> graph_ranking.RankedCandidates:
        ranked = rank(*args_, **kwargs)
        offered.append(tuple(getattr(ranked, kind)["id"].to_list() for kind in OFFERED))
        return ranked

    graph_ranking.personalized_pagerank, local_search.rank_by_graph = timed_walk, recorded
    graph = graph_ranking.ranking_graph(data)
    degree = np.diff(graph.walk.indptr)
    print(f"load average at start: {load_average()}")
    print(f"graph: {graph.vertex_count:,} vertices, {len(graph.walk.sources):,} directed edges")
    kinds = [EXACT, *args.residuals]
    same = {t: [0, 0] for t in args.residuals}
    seconds: dict = {t: [] for t in kinds}
    options = QueryOptions(method="local", context_only=True)
    for question in questions:
        kept: dict = {}
        line = []
        for kind in kinds:
            graph_ranking.PUSH_FROM_EDGES = sys.maxsize if kind == EXACT else 0
            if kind != EXACT:
                graph_ranking.PUSH_RESIDUAL = kind
            records = answer_from(settings, data, question, options).context_records
            kept[kind] = (tuple([r.id for r in getattr(records, k)] for k in KEPT), offered[-1])
            took, scores = walks[-1]
            seconds[kind].append(took)
            if kind == EXACT:
                line.append(f"exact {took:.2f} s")
                continue
            reached = scores > 0
            a, b = compare(kept[kind][0], kept[EXACT][0]), compare(kept[kind][1], kept[EXACT][1])
            same[kind][0] += a == "===="
            same[kind][1] += b == "===="
            line.append(
                f"{kind:g}: kept {a} offered {b} {took:.2f} s, {int(reached.sum()):,} vertices, "
                f"{int(degree[reached].sum()):,} edges"
            )
        print(f"{question}\n  " + "\n  ".join(line), flush=True)
    print(f"load average at end: {load_average()}")
    print("(tables: reports, entities, relationships, sources/text units; = same order, ~ same set, x other rows)")
    for t in args.residuals:
        print(
            f"residual {t:g} (threshold {t / len(graph.walk.sources):.3g}): kept context the exact walk's in {same[t][0]}/{len(questions)}, "
            f"offered candidates in {same[t][1]}/{len(questions)}; walk median {np.median(seconds[t]):.3f} s "
            f"(exact {np.median(seconds[EXACT]):.3f} s)"
        )


if __name__ == "__main__":
    main()
