"""Blocking for entity resolution: which pairs of entities are worth a verdict, and in which groups.

Comparing every pair of entities is quadratic and a model call per pair unaffordable, so a pair is
a *candidate* only when one of these cheap signals links it (the ``evidence`` column says which):

- ``name``: the same :attr:`~graphrag_assets.index.entity_names.NameForm.key` — the names differ
  only in case, punctuation, a leading article, an honorific or a trailing parenthetical;
- ``containment``: one name's content words are a subset of the other's ("SCROOGE" ⊂
  "EBENEZER SCROOGE", and also the traps "MARLEY" ⊂ "MARLEY'S GHOST", "CRATCHIT" ⊂ "BOB CRATCHIT"
  after "MRS." is dropped: telling those apart is the verdict's job, finding them is ours);
  a name contained in very many others keeps its ``max_containers`` closest ones;
- ``acronym``: a one-word name equals the initials of the other ("IRS", "PGLAF");
- ``neighbour``: the entities' embeddings are among each other's ``k`` nearest neighbours with a
  cosine similarity of at least ``min_similarity`` — how "FRED" meets "SCROOGE'S NEPHEW", whose
  names share nothing but whose descriptions do.

:func:`candidate_groups` then packs the candidate pairs into groups of at most ``max_group_size``
entities such that every candidate pair is inside at least one group: one model call judges one
group. All outputs are sorted, so they do not depend on input order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import polars as pl

from graphrag_assets.index.entity_names import NameForm, parse_name

CANDIDATES = {"left": pl.String, "right": pl.String, "score": pl.Float64, "evidence": pl.String}
MAX_CONTAINERS = 50
ACRONYM_LENGTH = (2, 8)
_BLOCK_ROWS = 1024  # rows of the similarity matrix computed at once (memory: rows × entities floats)


def name_candidates(titles: Iterable[str], max_containers: int = MAX_CONTAINERS) -> pl.DataFrame:
    """Candidate pairs from the names alone (``name``, ``containment`` and ``acronym`` evidence)."""
    forms = {title: parse_name(title) for title in sorted(set(titles))}
    rows: list[tuple[str, str, float, str]] = []
    rows += _same_key(forms)
    rows += _containment(forms, max_containers)
    rows += _acronyms(forms)
    return _combine(rows)


def neighbour_candidates(
    titles: Sequence[str], vectors: Sequence[Sequence[float]], neighbours: int, min_similarity: float
) -> pl.DataFrame:
    """Pairs whose vectors (row ``i`` belongs to ``titles[i]``) are among each other's nearest.

    A pair is kept when either end has the other among its ``neighbours`` most similar entities
    and the cosine similarity reaches ``min_similarity``. Computed in blocks of rows, so memory
    grows with the number of entities, not with its square. numpy is imported here, when resolution
    runs with embeddings, not by every index that imports this module.
    """
    import numpy as np

    count = len(titles)
    if count < 2 or neighbours <= 0:
        return _combine([])
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    empty = norms[:, 0] == 0  # no vector (e.g. not yet embedded in a dry run): no neighbours
    matrix = matrix / np.where(empty[:, None], 1.0, norms)
    k = min(neighbours, count - 1)
    rows: list[tuple[str, str, float, str]] = []
    for start in range(0, count, _BLOCK_ROWS):
        block = matrix[start : start + _BLOCK_ROWS] @ matrix.T
        block[:, empty] = -np.inf
        block[empty[start : start + _BLOCK_ROWS]] = -np.inf
        for offset in range(block.shape[0]):
            block[offset, start + offset] = -np.inf
        nearest = np.argpartition(-block, k - 1, axis=1)[:, :k]
        for offset, row in enumerate(nearest):
            i = start + offset
            for j in row:
                similarity = float(block[offset, j])
                if similarity >= min_similarity:
                    rows.append((titles[i], titles[int(j)], round(similarity, 6), "neighbour"))
    return _combine(rows)


def merge_candidates(*frames: pl.DataFrame) -> pl.DataFrame:
    """One row per pair: the best score and every kind of evidence that proposed it."""
    rows = [row for frame in frames for row in frame.select("left", "right", "score", "evidence").iter_rows()]
    return _combine(rows)


def candidate_groups(candidates: pl.DataFrame, max_group_size: int) -> list[tuple[str, ...]]:
    """Groups of at most ``max_group_size`` titles that together contain every candidate pair.

    A connected set of candidates that fits is one group. A larger one is covered greedily: the
    entity with the most pairs not yet covered starts a group, which then grows by the entity
    closing the most uncovered pairs with its members (ties: higher scores), and every candidate
    pair inside a finished group counts as covered.
    """
    if max_group_size < 2:
        raise ValueError("max_group_size must be at least 2")
    adjacency: dict[str, dict[str, float]] = defaultdict(dict)
    for left, right, score in candidates.select("left", "right", "score").iter_rows():
        adjacency[left][right] = score
        adjacency[right][left] = score
    groups: list[tuple[str, ...]] = []
    for component in _components(adjacency):
        if len(component) <= max_group_size:
            groups.append(tuple(component))
        else:
            groups.extend(_cover(component, adjacency, max_group_size))
    return sorted(groups)


def _same_key(forms: dict[str, NameForm]) -> list[tuple[str, str, float, str]]:
    buckets: dict[str, list[str]] = defaultdict(list)
    for title, form in forms.items():
        if form.words:
            buckets[form.key].append(title)
    return [(a, b, 1.0, "name") for titles in buckets.values() for i, a in enumerate(titles) for b in titles[i + 1 :]]


def _containment(forms: dict[str, NameForm], max_containers: int) -> list[tuple[str, str, float, str]]:
    postings: dict[str, set[str]] = defaultdict(set)
    tokens = {title: form.tokens for title, form in forms.items()}
    for title, words in tokens.items():
        for word in words:
            postings[word].add(title)
    rows: list[tuple[str, str, float, str]] = []
    for title, words in tokens.items():
        if not words:
            continue
        lists = sorted((postings[w] for w in words), key=len)
        containers = set(lists[0]).intersection(*lists[1:]) - {title}
        containers = {c for c in containers if forms[c].key != forms[title].key}
        closest = sorted(containers, key=lambda c: (len(tokens[c]), c))[:max_containers]
        rows += [(title, c, round(len(words) / max(len(tokens[c]), 1), 6), "containment") for c in closest]
    return rows


def _acronyms(forms: dict[str, NameForm]) -> list[tuple[str, str, float, str]]:
    low, high = ACRONYM_LENGTH
    by_initials: dict[str, list[str]] = defaultdict(list)
    for title, form in forms.items():
        if len(form.tokens) >= 2 and low <= len(form.initials) <= high:
            by_initials[form.initials].append(title)
    rows: list[tuple[str, str, float, str]] = []
    for title, form in forms.items():
        names = [form.parenthetical] if form.parenthetical else []
        if len(form.words) == 1:
            names.append(form.words[0])
        for name in names:
            if name.isalpha() and low <= len(name) <= high:
                rows += [(title, other, 0.9, "acronym") for other in by_initials.get(name, ()) if other != title]
    return rows


def _combine(rows: Iterable[tuple[str, str, float, str]]) -> pl.DataFrame:
    best: dict[tuple[str, str], float] = {}
    evidence: dict[tuple[str, str], set[str]] = defaultdict(set)
    for left, right, score, kind in rows:
        if left == right:
            continue
        pair = (left, right) if left < right else (right, left)
        best[pair] = max(best.get(pair, score), score)
        evidence[pair].update(kind.split(","))
    pairs = sorted(best)
    return pl.DataFrame(
        {
            "left": [p[0] for p in pairs],
            "right": [p[1] for p in pairs],
            "score": [best[p] for p in pairs],
            "evidence": [",".join(sorted(evidence[p])) for p in pairs],
        },
        schema=CANDIDATES,
    )


def _components(adjacency: dict[str, dict[str, float]]) -> list[list[str]]:
    seen: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(adjacency):
        if start in seen:
            continue
        stack, members = [start], []
        seen.add(start)
        while stack:
            node = stack.pop()
            members.append(node)
            for other in adjacency[node]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        components.append(sorted(members))
    return components


def _cover(component: list[str], adjacency: dict[str, dict[str, float]], max_group_size: int) -> list[tuple[str, ...]]:
    """Greedy groups for a component too large for one: dense groups first, so few calls cover it."""
    uncovered = {node: set(adjacency[node]) for node in component}
    groups: list[tuple[str, ...]] = []
    while any(uncovered.values()):
        hub = min(component, key=lambda n: (-len(uncovered[n]), n))
        members = {hub}
        while len(members) < max_group_size:
            gains: dict[str, tuple[int, float]] = {}
            for member in members:
                for other in uncovered[member] - members:
                    count, score = gains.get(other, (0, 0.0))
                    gains[other] = (count + 1, score + adjacency[member][other])
            if not gains:
                break
            members.add(min(gains, key=lambda n: (-gains[n][0], -gains[n][1], n)))
        for node in members:
            uncovered[node] -= members
        groups.append(tuple(sorted(members)))
    return groups
