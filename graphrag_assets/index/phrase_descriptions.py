"""Each noun phrase's description: its most representative sentence (``nlp`` method), kept across builds.

The best sentence mentioning a phrase is the one that mentions the most distinct phrases of its
unit (it says how the phrase relates to others), with sentences over ``LONG_SENTENCE_CHARS`` only
as a last resort; ties go to the earliest unit (``text_units`` row order) and sentence. The
result is cut to ``DESCRIPTION_MAX_CHARS``.

Finding it splits every text unit into sentences: 16.8 s of the graph step's 39 s at 20,000
documents, on every corpus run, though one added document changes the units of a few phrases.
A phrase's description depends only on its units in reading order, each unit's text (its id
hashes it) and the phrases of each unit, so a build stores (``phrase_descriptions``) each
description with a ``key`` hashing exactly those, and where its sentence is and how it ranks;
``phrase_units`` keeps the hash and position of every unit read. Then:

- a phrase whose key is the stored one keeps its description (most phrases, after an update);
- a phrase whose stored sentence's unit is unchanged, when the units the build had kept their
  order, only gained or lost other units: the best sentence is the better of the stored one and
  those of its new units (a lost unit did not hold the best), so only new units are read. A
  document that mentions a phrase of thousands of units reads that document, not those units;
- any other phrase is described from all its units.

Equal to reading every unit (``test_phrase_descriptions.py``, and the rebuild tests of the
offline method).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from graphrag_assets.core.sentences import SENTENCE_RULES_VERSION, sentences_with_keys, shorten

DESCRIPTION_MAX_CHARS = 300
LONG_SENTENCE_CHARS = 400  # sentences longer than this are used only when no shorter one exists
PROGRESS_UNITS = 500  # text units between two progress calls

# What else a description depends on: the sentence rules and this module's choice (bump on change).
RULES = SENTENCE_RULES_VERSION * 1000 + 1

# Stored per phrase: its key, its description (null: no sentence of its units mentions it) and
# where the description's sentence is, with what ranks it (see _Best), so a phrase that only
# gained units compares the stored sentence with theirs instead of reading all of its units.
DESCRIPTIONS = {
    "title": pl.String,
    "key": pl.UInt64,
    "description": pl.String,
    "unit": pl.String,
    "sentence": pl.Int64,
    "long": pl.Boolean,
    "phrases": pl.Int64,
}
# Stored per text unit that mentions a phrase: its hash (id and phrases) and reading position.
UNITS = {"unit_hash": pl.UInt64, "position": pl.Int64}


@dataclass(frozen=True)
class Stored:
    """The previous build's descriptions and units (either None: no reuse)."""

    descriptions: pl.DataFrame | None = None
    units: pl.DataFrame | None = None


@dataclass(frozen=True)
class Described:
    """Every phrase's ``DESCRIPTIONS`` row, the ``UNITS`` rows to store, and how many were kept whole."""

    descriptions: pl.DataFrame
    units: pl.DataFrame
    kept: int


def _unit_frame(mentions: pl.DataFrame, text_units: pl.DataFrame) -> pl.DataFrame:
    """Per unit of ``mentions``: ``text_unit_id``, ``unit_hash`` (its id and sorted phrases) and its
    reading ``position`` (null when ``text_units`` does not hold it)."""
    position = (
        text_units.select(text_unit_id="id")
        .with_row_index("position")
        .unique("text_unit_id", keep="first", maintain_order=True)
        .with_columns(pl.col("position").cast(pl.Int64))
    )
    return (
        mentions.group_by("text_unit_id")
        .agg(pl.col("title").sort())
        .select("text_unit_id", unit_hash=pl.struct("text_unit_id", "title").hash(seed=RULES))
        .join(position, on="text_unit_id", how="left")
    )


def description_keys(mentions: pl.DataFrame, units: pl.DataFrame) -> pl.DataFrame:
    """``title``, ``key``: a hash of the phrase's units (``_unit_frame``) in reading order (units
    without a position last, by hash)."""
    return (
        mentions.join(units, on="text_unit_id")
        .group_by("title")
        .agg(pl.col("unit_hash").sort_by(["position", "unit_hash"], nulls_last=True))
        .select("title", key=pl.col("unit_hash").hash())
    )


def _same_order(units: pl.DataFrame, previous: pl.DataFrame) -> bool:
    """Whether the units the previous build also had are read in the same order as then."""
    before = previous.drop_nulls("position")
    both = units.drop_nulls("position").join(before, on="unit_hash", suffix="_before").sort("position")
    return bool(both.get_column("position_before").is_sorted())


def phrase_descriptions(
    mentions: pl.DataFrame,
    text_units: pl.DataFrame | None,
    stored: Stored | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> Described:
    """Every phrase's description: the stored one when its key is current; when the phrase only gained
    units (its stored sentence's unit is unchanged, and the units kept their order), the better of
    that sentence and those of its new units; otherwise from all its units' sentences
    (``on_progress(n)``: ``n`` more text units gone through)."""
    if text_units is None or text_units.is_empty() or mentions.is_empty():
        return Described(pl.DataFrame(schema=DESCRIPTIONS), pl.DataFrame(schema=UNITS), 0)
    stored = stored or Stored()
    units = _unit_frame(mentions, text_units)
    keys = description_keys(mentions, units)
    previous = stored.descriptions if stored.descriptions is not None else pl.DataFrame(schema=DESCRIPTIONS)
    previous = previous.select(list(DESCRIPTIONS)).cast(DESCRIPTIONS)
    kept = keys.join(previous, on=["title", "key"])
    to_describe = keys.join(kept, on="title", how="anti")
    seen = stored.units.cast(UNITS) if stored.units is not None else pl.DataFrame(schema=UNITS)
    new_units = units.join(seen, on="unit_hash", how="anti").get_column("text_unit_id")
    # a phrase may start from its stored sentence when that sentence's unit is unchanged
    present = units.join(seen, on="unit_hash", how="semi").select(unit="text_unit_id", best_position="position")
    resumable = previous.join(to_describe.select("title"), on="title", how="semi").join(present, on="unit")
    if not _same_order(units, seen):
        resumable = resumable.clear()
    from_scratch = to_describe.join(resumable, on="title", how="anti").get_column("title")
    wanted = _Wanted(set(from_scratch.to_list()), set(resumable["title"].to_list()), set(new_units.to_list()))
    to_read = mentions.filter(
        pl.col("title").is_in(from_scratch)
        | (pl.col("title").is_in(resumable["title"]) & pl.col("text_unit_id").is_in(new_units))
    ).get_column("text_unit_id")
    best = {
        title: _Best((long, -phrases, position, sentence), text, unit)
        for title, text, unit, sentence, long, phrases, position in resumable.select(
            "title", "description", "unit", "sentence", "long", "phrases", "best_position"
        ).iter_rows()
    }
    _read_best(mentions.filter(pl.col("text_unit_id").is_in(to_read.unique())), wanted, text_units, best, on_progress)
    rows = [(t, k, *_columns(best.get(t))) for t, k in to_describe.select("title", "key").iter_rows()]
    made = pl.DataFrame(rows, schema=DESCRIPTIONS, orient="row")
    descriptions = pl.concat([kept.select(list(DESCRIPTIONS)).cast(DESCRIPTIONS), made]).sort("title")
    return Described(descriptions, units.select(list(UNITS)), kept.height)


@dataclass(frozen=True)
class _Best:
    """A phrase's best sentence so far: its rank (over ``LONG_SENTENCE_CHARS``, minus the distinct
    phrases of its unit it mentions, unit position, sentence index: lower is better), the sentence
    (cut to ``DESCRIPTION_MAX_CHARS``) and its unit."""

    rank: tuple[bool, int, int, int]
    text: str
    unit: str


def _columns(best: _Best | None) -> tuple:
    if best is None:
        return (None, None, None, None, None)
    long, minus_phrases, _, sentence = best.rank
    return (best.text, best.unit, sentence, long, -minus_phrases)


class _Wanted:
    """Which phrases a unit's sentences may describe: those described from scratch in any unit,
    those resumed from their stored sentence in new units only."""

    def __init__(self, everywhere: set[str], resumed: set[str], new_units: set[str]) -> None:
        self.everywhere, self.new_units = everywhere, new_units
        self.in_new_units = everywhere | resumed

    def titles(self, unit: str) -> set[str]:
        return self.in_new_units if unit in self.new_units else self.everywhere


def _read_best(
    mentions: pl.DataFrame,
    wanted: _Wanted,
    text_units: pl.DataFrame,
    best: dict[str, _Best],
    on_progress: Callable[[int], None] | None,
) -> None:
    """Improve ``best`` with the sentences of the units of ``mentions`` (each with all its phrases,
    as a sentence ranks by the distinct phrases of its unit it mentions), for the ``wanted`` ones."""
    phrases_by_unit: dict[str, list[str]] = {}
    for unit_id, title in mentions.sort("text_unit_id", "title").iter_rows():
        phrases_by_unit.setdefault(unit_id, []).append(title)
    reported = 0
    for position, (unit_id, text) in enumerate(text_units.select("id", "text").iter_rows()):
        if on_progress is not None and position - reported >= PROGRESS_UNITS:
            on_progress(position - reported)
            reported = position
        phrases = phrases_by_unit.get(unit_id)
        if not phrases or not text:
            continue
        titles = wanted.titles(unit_id)
        for sentence_index, (sentence, key) in enumerate(sentences_with_keys(text)):
            found = [p for p in phrases if f" {p} " in key]
            if not found:
                continue
            rank = (len(sentence) > LONG_SENTENCE_CHARS, -len(found), position, sentence_index)
            for phrase in found:
                if phrase not in titles:
                    continue
                current = best.get(phrase)
                if current is None or rank < current.rank:
                    best[phrase] = _Best(rank, shorten(sentence, DESCRIPTION_MAX_CHARS), unit_id)
    if on_progress is not None:
        on_progress(text_units.height - reported)
