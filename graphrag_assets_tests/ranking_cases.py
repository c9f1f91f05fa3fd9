"""The check shared by the readers that rank a question's relationships themselves (DuckDB, a
served build's files): the same rows in the same order as local search's ranking of the touching
rows as frames, on scores that tie often and on scores as the walk gives them."""

from __future__ import annotations

import numpy as np
import polars as pl

from graphrag_assets.core.schemas import RANKED_RELATIONSHIP_COLUMNS
from graphrag_assets.query.graph_ranking import rank_relationships_by_score
from graphrag_assets.query.query_data import QueryData


def assert_ranks_as_frames(data: QueryData, whole: QueryData, seed: int, trials: int = 6) -> None:
    """``data``'s reader ranks as :func:`rank_relationships_by_score` does over ``whole`` (loaded whole)."""
    entities = whole.entities["title"].to_list()
    hub = whole.relationships.group_by("target").len().sort("len", "target", descending=True)["target"][0]
    vertex_titles = [*entities, entities[0]]  # a repeated title: its first vertex's score counts
    generator = np.random.default_rng(seed)
    for trial in range(trials):
        scores = generator.integers(0, 3, len(vertex_titles)).astype(float)  # ties, often
        if trial % 2:
            scores = generator.random(len(vertex_titles))
        titles = [hub, *generator.choice(entities, 3, replace=False).tolist(), "NO SUCH ENTITY"]
        cap = 7 * trial + 1
        frame_scores = pl.DataFrame({"title": vertex_titles, "_score": scores}).unique("title", keep="first")
        touching = whole.relationships_touching(titles, RANKED_RELATIONSHIP_COLUMNS)
        expected = rank_relationships_by_score(titles, touching, frame_scores, cap)
        ranked = data.ranked_relationships(titles, vertex_titles, scores, cap)
        assert ranked is not None and ranked.equals(expected.select(ranked.columns)), trial
    assert whole.ranked_relationships([hub], vertex_titles, scores, 5) is None  # in memory: ranked as frames
