"""Offering a changed community's findings the kept sentences of its units, chosen with numpy.

When an update writes a community's extractive report again, the sentences of its units come
from what the build kept (``report_sentences``: per unit, each sentence's position, text key,
length flag and the unit's titles it mentions), not from the text. Offered one by one to the
community's :class:`~graphrag_assets.index.extractive_reports.Findings`, that was a Python call per
sentence and community: a level-0 community holds a large share of the corpus's units, and an
update at 100,000 documents that wrote 175 reports made 25.6 M offers (156 of its 188 s under
the profiler). Here each community's sentences are scored in array operations, and only its
``limit`` best of distinct text are offered: the findings keep the best ``limit`` texts by their
best placing whatever the order of the offers, so the choice is the same (tested against
offering every sentence in ``test_extractive_reuse.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from graphrag_assets.index.extractive_reports import Findings, _Sentence


def offer_kept_sentences(
    offer_to: Mapping[str, list[Findings]],
    sentences: pl.DataFrame,
    titles: Mapping[str, list[str]],
    position: Mapping[str, int],
) -> None:
    """Offer the findings of ``offer_to`` (unit -> the findings its sentences go to) the best of
    their units' kept ``sentences`` (``SENTENCES`` rows); ``titles``: each unit's sorted titles,
    which the rows' mentions number; ``position``: each unit's place in reading order."""
    if not offer_to:
        return
    needed = sentences.filter(pl.col("unit").is_in(sorted(offer_to)))
    if needed.is_empty():
        return
    kept = _KeptSentences(needed, titles, position)
    for findings, rows in _rows_by_findings(offer_to, kept.row_of).values():
        for s in kept.best(findings, np.array(sorted(rows), dtype=np.int64)):
            findings.offer(kept.sentence(s))


def _rows_by_findings(
    offer_to: Mapping[str, list[Findings]], row_of: Mapping[str, int]
) -> dict[int, tuple[Findings, list[int]]]:
    """Each findings object (by identity) with the rows of the units it is offered."""
    grouped: dict[int, tuple[Findings, list[int]]] = {}
    for unit, offered in offer_to.items():
        row = row_of.get(unit)
        if row is None:
            continue
        for findings in offered:
            entry = grouped.get(id(findings))
            if entry is None:
                entry = grouped[id(findings)] = (findings, [])
            entry[1].append(row)
    return grouped


class _KeptSentences:
    """The kept sentences of some units as flat arrays, in unit row then sentence order: each
    one's unit row, position in its unit, text key and length flag, and its mentions (ranges of
    ``mention_start``) as the numbers its row stores and as codes of the titles."""

    def __init__(self, frame: pl.DataFrame, titles: Mapping[str, list[str]], position: Mapping[str, int]) -> None:
        self.units: list[str] = frame.get_column("unit").to_list()
        self.row_of = {unit: row for row, unit in enumerate(self.units)}
        self.unit_titles = [titles.get(unit, []) for unit in self.units]
        self.place = np.fromiter((position[unit] for unit in self.units), dtype=np.int64, count=len(self.units))
        per_sentence = (
            frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row"), "sentence", "key", "long", "mentions")
            .explode("sentence", "key", "long", "mentions")
            .drop_nulls("sentence")
        )
        self.row = per_sentence.get_column("row").to_numpy()
        self.index = per_sentence.get_column("sentence").to_numpy().astype(np.int64)
        self.key = per_sentence.get_column("key").to_numpy()
        self.long = per_sentence.get_column("long").to_numpy()
        mentions = per_sentence.get_column("mentions")
        self.mention_start = np.concatenate(([0], np.cumsum(mentions.list.len().to_numpy().astype(np.int64))))
        self.number = mentions.explode().drop_nulls().to_numpy().astype(np.int64)
        self.sentence_start = np.searchsorted(self.row, np.arange(len(self.units) + 1))
        # unit row r's titles have the codes title_code[title_start[r]:title_start[r + 1]]
        counts = np.fromiter((len(t) for t in self.unit_titles), dtype=np.int64, count=len(self.units))
        title_start = np.concatenate(([0], np.cumsum(counts)))
        every_title = pl.Series([t for unit_titles in self.unit_titles for t in unit_titles], dtype=pl.String)
        vocabulary = every_title.unique().sort()
        self.code_of = {title: code for code, title in enumerate(vocabulary.to_list())}
        title_code = every_title.cast(pl.Enum(vocabulary)).to_physical().to_numpy().astype(np.int64)
        mention_row = np.repeat(self.row, np.diff(self.mention_start))
        self.mention_code = title_code[title_start[mention_row] + self.number]

    def best(self, findings: Findings, rows: np.ndarray) -> list[int]:
        """The ``findings.limit`` best sentences of distinct text of the units ``rows``, in the
        order :meth:`Findings.offer` places them: long last, higher score, earlier unit, earlier
        sentence (each sentence scores ``1 + degree`` per member it mentions)."""
        weight = np.zeros(len(self.code_of), dtype=np.int64)
        members = [(self.code_of[t], 1 + d) for t, d in findings.degree.items() if t in self.code_of]
        if not members:
            return []
        codes, weights = zip(*members, strict=True)
        weight[list(codes)] = weights
        sentences = _ranges(self.sentence_start[rows], self.sentence_start[rows + 1])
        starts, ends = self.mention_start[sentences], self.mention_start[sentences + 1]
        owner = np.repeat(np.arange(len(sentences)), ends - starts)
        per_mention = weight[self.mention_code[_ranges(starts, ends)]]
        score = np.bincount(owner, weights=per_mention, minlength=len(sentences)).astype(np.int64)
        candidates = sentences[score > 0]
        score = score[score > 0]
        order = np.lexsort((self.index[candidates], self.place[self.row[candidates]], -score, self.long[candidates]))
        chosen: list[int] = []
        seen: set[int] = set()
        for s in candidates[order].tolist():
            key = int(self.key[s])
            if key not in seen:
                seen.add(key)
                chosen.append(s)
                if len(chosen) >= findings.limit:
                    break
        return chosen

    def sentence(self, s: int) -> _Sentence:
        """Sentence ``s`` as :meth:`Findings.offer` takes it (its text not read yet)."""
        row = int(self.row[s])
        unit_titles = self.unit_titles[row]
        numbers = self.number[self.mention_start[s] : self.mention_start[s + 1]].tolist()
        mentioned = frozenset(unit_titles[n] for n in numbers)
        unit = self.units[row]
        return _Sentence(
            unit, int(self.place[row]), int(self.index[s]), None, int(self.key[s]), bool(self.long[s]), mentioned
        )


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(start, end)`` for each pair."""
    lengths = ends - starts
    before = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(lengths) else lengths
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
