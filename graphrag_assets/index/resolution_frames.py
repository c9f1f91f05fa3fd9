"""The verdict table shared by the offline rules, the model's verdicts and the clustering.

A verdict row says that two entities are the same thing, who said so (``method``: ``rules`` or
``model``), how sure (``score``, 0–1) and why (``reason``). Pairs are stored once, ``left < right``.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

VERDICTS = {"left": pl.String, "right": pl.String, "method": pl.String, "score": pl.Float64, "reason": pl.String}


def verdict_frame(rows: Iterable[tuple[str, str, str, float, str]]) -> pl.DataFrame:
    """Verdict rows as a frame: one row per pair (the highest score wins), sorted."""
    best: dict[tuple[str, str], tuple[str, float, str]] = {}
    for left, right, method, score, reason in rows:
        if left == right:
            continue
        pair = (left, right) if left < right else (right, left)
        current = best.get(pair)
        if current is None or (score, reason) > (current[1], current[2]):
            best[pair] = (method, float(score), reason)
    pairs = sorted(best)
    return pl.DataFrame(
        {
            "left": [p[0] for p in pairs],
            "right": [p[1] for p in pairs],
            "method": [best[p][0] for p in pairs],
            "score": [best[p][1] for p in pairs],
            "reason": [best[p][2] for p in pairs],
        },
        schema=VERDICTS,
    )
