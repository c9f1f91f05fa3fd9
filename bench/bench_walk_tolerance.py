"""Would fewer steps of local search's walk keep the same context? Steps and rankings per tolerance.

    python bench/bench_walk_tolerance.py --root PROJECT [--questions 10] [--tolerances 1e-8 1e-6 1e-4]

The walk (:func:`graphrag_assets.query.graph_ranking.personalized_pagerank`) stops when its
scores move less than ``TOLERANCE`` (1e-10, L1) between two steps; each step is a sparse product
over every directed edge (37.7 M on the 100,000-document index), so a looser tolerance would
save time. It may do so only if what local search keeps does not change. For ``--questions``
questions "What connects <entity> to the other towns?" (entities drawn with a fixed seed from the
project's index), this ranks the candidates (:func:`~graphrag_assets.query.local_search.rank_candidates`,
default settings) with the default tolerance and with each of ``--tolerances``, and prints the
number of steps and whether the entities, text units, reports and relationships offered to the
context are the same, in the same order.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_average  # noqa: E402

from graphrag_assets.core.settings import load_settings  # noqa: E402
from graphrag_assets.llm.factory import ModelSet  # noqa: E402
from graphrag_assets.llm.usage import UsageMeter  # noqa: E402
from graphrag_assets.project.query_data import load_query_data  # noqa: E402
from graphrag_assets.query import graph_ranking  # noqa: E402
from graphrag_assets.query.local_search import rank_candidates  # noqa: E402

SEED = 7
DEFAULT = graph_ranking.TOLERANCE


def steps_to(graph: graph_ranking.RankingGraph, reset: np.ndarray, damping: float, tolerance: float) -> int:
    """Steps the walk takes to move less than ``tolerance`` (the loop of ``personalized_pagerank``)."""
    restart = reset / float(reset.sum())
    scores = restart
    for step in range(1, graph_ranking.MAX_STEPS + 1):
        walked = graph.matrix @ scores
        stepped = (1 - damping) * restart + damping * (walked + scores[graph.isolated].sum() * restart)
        if np.abs(stepped - scores).sum() < tolerance:
            return step
        scores = stepped
    return graph_ranking.MAX_STEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--tolerances", type=float, nargs="+", default=[1e-8, 1e-6, 1e-4])
    args = parser.parse_args()
    settings = load_settings(args.root, environ={})
    data = load_query_data(settings)
    titles = data.key_columns("entities", ("id", "title", "type"))["title"].drop_nulls().to_list()
    questions = [
        f"What connects {t.title()} to the other towns?" for t in random.Random(SEED).sample(titles, args.questions)
    ]
    resets: list[np.ndarray] = []
    walk = graph_ranking.personalized_pagerank

    def recording(graph: graph_ranking.RankingGraph, reset: np.ndarray, damping: float) -> np.ndarray:
        resets.append(reset)
        return walk(graph, reset, damping)

    graph_ranking.personalized_pagerank = recording  # to count the steps of the same restart vector
    print(f"load average at start: {load_average()}")
    same = dict.fromkeys(args.tolerances, 0)
    with ModelSet(settings, UsageMeter()) as models:
        for question in questions:
            vector = asyncio.run(models.embedder.embed([question], purpose="query_local"))[0]
            kept: dict[float, tuple] = {}
            for tolerance in [DEFAULT, *args.tolerances]:
                graph_ranking.TOLERANCE = tolerance
                ranked = rank_candidates(question, vector, data, settings.query.local, None)
                kept[tolerance] = tuple(
                    frame["id"].to_list()
                    for frame in (ranked.entities, ranked.text_units, ranked.reports, ranked.relationships)
                )
            graph = graph_ranking.ranking_graph(data)
            damping = settings.query.local.ppr_damping
            steps = [steps_to(graph, resets[-1], damping, t) if resets[-1].sum() > 0 else 0 for t in kept]
            unchanged = [kept[t] == kept[DEFAULT] for t in args.tolerances]
            for tolerance, equal in zip(args.tolerances, unchanged, strict=True):
                same[tolerance] += equal
            print(f"{question}: steps {steps}, same context {unchanged}", flush=True)
    print(f"load average at end: {load_average()}")
    print(
        f"same context as tolerance {DEFAULT:g} in: "
        + ", ".join(f"{t:g}: {n}/{len(questions)}" for t, n in same.items())
    )


if __name__ == "__main__":
    main()
