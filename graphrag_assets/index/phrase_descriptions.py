"""Each noun phrase's description: its most representative sentence (``nlp`` method), kept across builds.

The best sentence mentioning a phrase is the one that mentions the most distinct phrases of its
unit (it says how the phrase relates to others), with sentences over ``LONG_SENTENCE_CHARS`` only
as a last resort; ties go to the earliest unit (``text_units`` row order) and sentence. The
result is cut to ``DESCRIPTION_MAX_CHARS``.

Finding it splits every text unit into sentences: 16.8 s of the graph step's 39 s at 20,000
documents, on every corpus run, though one added document changes the units of a few phrases.
A phrase's description depends only on its units in reading order, each unit's text (its id
hashes it) and the phrases of each unit. So each description is stored (``phrase_descriptions``)
with a ``key`` hashing exactly those; a phrase whose key is the stored one keeps its
description, and only the units of the other phrases are read. Equal to reading every unit
(``test_phrase_descriptions.py``, and the rebuild tests of the offline method).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from graphrag_assets.core.sentences import SENTENCE_RULES_VERSION, sentences_with_keys, shorten

DESCRIPTION_MAX_CHARS = 300
LONG_SENTENCE_CHARS = 400  # sentences longer than this are used only when no shorter one exists
PROGRESS_UNITS = 500  # text units between two progress calls

# What else a description depends on: the sentence rules and this module's choice (bump on change).
RULES = SENTENCE_RULES_VERSION * 1000 + 1

# Stored per phrase (null description: no sentence of its units mentions it).
DESCRIPTIONS = {"title": pl.String, "key": pl.UInt64, "description": pl.String}


def description_keys(mentions: pl.DataFrame, text_units: pl.DataFrame) -> pl.DataFrame:
    """``title``, ``key``: a hash of the phrase's units in reading order, each with its id and phrases.

    ``mentions`` holds distinct (``text_unit_id``, ``title``) pairs; ``text_units``' row order is
    the reading order (units it does not hold come last, by hash).
    """
    unit_hash = (
        mentions.group_by("text_unit_id")
        .agg(pl.col("title").sort())
        .select("text_unit_id", unit_hash=pl.struct("text_unit_id", "title").hash(seed=RULES))
    )
    position = (
        text_units.select(text_unit_id="id")
        .with_row_index("position")
        .unique("text_unit_id", keep="first", maintain_order=True)
    )
    return (
        mentions.join(unit_hash, on="text_unit_id")
        .join(position, on="text_unit_id", how="left")
        .group_by("title")
        .agg(pl.col("unit_hash").sort_by(["position", "unit_hash"], nulls_last=True))
        .select("title", key=pl.col("unit_hash").hash())
    )


def phrase_descriptions(
    mentions: pl.DataFrame,
    text_units: pl.DataFrame | None,
    stored: pl.DataFrame | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> pl.DataFrame:
    """``DESCRIPTIONS`` of every phrase of ``mentions``: ``stored`` rows whose key is current, the
    others from their units' sentences (``on_progress(n)``: ``n`` more text units gone through)."""
    if text_units is None or text_units.is_empty() or mentions.is_empty():
        return pl.DataFrame(schema=DESCRIPTIONS)
    keys = description_keys(mentions, text_units)
    kept = pl.DataFrame(schema=DESCRIPTIONS)
    if stored is not None and not stored.is_empty():
        kept = keys.join(stored.select("title", "key", "description"), on=["title", "key"]).cast(DESCRIPTIONS)
    to_describe = keys.join(kept, on="title", how="anti")
    needed = mentions.join(to_describe.select("title"), on="title", how="semi")
    best = _best_sentences(
        mentions.join(needed.select("text_unit_id").unique(), on="text_unit_id", how="semi"),
        set(to_describe.get_column("title").to_list()),
        text_units,
        on_progress,
    )
    made = to_describe.with_columns(
        description=pl.col("title").replace_strict(best, default=None, return_dtype=pl.String)
    ).cast(DESCRIPTIONS)
    return pl.concat([kept, made]).sort("title")


def _best_sentences(
    mentions: pl.DataFrame,
    titles: set[str],
    text_units: pl.DataFrame,
    on_progress: Callable[[int], None] | None,
) -> dict[str, str]:
    """The best sentence of each of ``titles`` from the units of ``mentions`` (each unit with all its
    phrases, as the rank counts them), cut to ``DESCRIPTION_MAX_CHARS``."""
    phrases_by_unit: dict[str, list[str]] = {}
    for unit_id, title in mentions.sort("text_unit_id", "title").iter_rows():
        phrases_by_unit.setdefault(unit_id, []).append(title)

    best: dict[str, tuple[tuple[bool, int, int, int], str]] = {}
    reported = 0
    for position, (unit_id, text) in enumerate(text_units.select("id", "text").iter_rows()):
        if on_progress is not None and position - reported >= PROGRESS_UNITS:
            on_progress(position - reported)
            reported = position
        phrases = phrases_by_unit.get(unit_id)
        if not phrases or not text:
            continue
        for sentence_index, (sentence, key) in enumerate(sentences_with_keys(text)):
            found = [p for p in phrases if f" {p} " in key]
            if not found:
                continue
            rank = (len(sentence) > LONG_SENTENCE_CHARS, -len(found), position, sentence_index)
            for phrase in found:
                if phrase not in titles:
                    continue
                current = best.get(phrase)
                if current is None or rank < current[0]:
                    best[phrase] = (rank, sentence)
    if on_progress is not None:
        on_progress(text_units.height - reported)
    return {title: shorten(sentence, DESCRIPTION_MAX_CHARS) for title, (_, sentence) in best.items()}
