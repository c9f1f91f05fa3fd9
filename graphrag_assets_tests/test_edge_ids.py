"""A coded graph's relationship ids, made with numpy from node digests, equal ``relationship_id``."""

from __future__ import annotations

import uuid

import numpy as np

from graphrag_assets.core.ids import relationship_id, relationship_ids
from graphrag_assets.index.edge_ids import NodeDigests

TITLES = ["scrooge", "Bob Cratchit", "tiny tim", "", "café", "中文", "a\x1fb", "ghost of christmas past"]


def test_the_ids_are_relationship_id_of_the_titles() -> None:
    rng = np.random.default_rng(5)
    source = rng.integers(0, len(TITLES), 500)
    target = rng.integers(0, len(TITLES), 500)
    got = NodeDigests.of(TITLES).ids(source, target).to_list()
    assert got == [relationship_id(TITLES[s], TITLES[t]) for s, t in zip(source, target, strict=True)]
    assert all(str(uuid.UUID(text)) == text for text in got)  # uuid form, lower case


def test_the_batch_form_without_numpy_agrees() -> None:
    pairs = [(a, b) for a in TITLES for b in TITLES]
    assert relationship_ids(pairs) == [relationship_id(a, b) for a, b in pairs]


def test_ids_tell_ends_apart() -> None:
    pairs = [(a, b) for a in TITLES for b in TITLES if a != b]
    ids = relationship_ids(pairs)
    assert len(set(ids)) == len(pairs)  # (a, b) and (b, a) differ too
    assert relationship_id("a", "b") != relationship_id("a", "c")


def test_no_edges() -> None:
    assert NodeDigests.of(TITLES).ids(np.zeros(0, np.int64), np.zeros(0, np.int64)).to_list() == []
