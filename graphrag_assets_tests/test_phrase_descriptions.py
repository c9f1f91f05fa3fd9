"""Phrase descriptions kept from the previous build equal reading every text unit again."""

from __future__ import annotations

import random

import polars as pl
import pytest

from graphrag_assets.core.ids import stable_uuid
from graphrag_assets.index.phrase_descriptions import LONG_SENTENCE_CHARS, Described, Stored, phrase_descriptions

PHRASES = ["harbour master", "old lighthouse", "Port Auberon", "storm", "schooner", "Kestrel Point", "tide"]


class Units:
    """Random text units in reading order, and the phrases each mentions (as the extraction gives them)."""

    def __init__(self, rng: random.Random, count: int = 10) -> None:
        self.rng = rng
        self.texts: dict[str, str] = {}
        self.ignored: set[str] = set()  # phrases the extraction rules do not give (rules can change)
        for _ in range(count):
            self.add()

    def add(self) -> None:
        sentences = []
        for _ in range(self.rng.randint(1, 4)):
            words = " and the ".join(self.rng.sample(PHRASES, self.rng.randint(1, 3)))
            sentences.append(f"Then the {words} came." + (" Long" * 100 if self.rng.random() < 0.1 else ""))
        text = " ".join(sentences)
        self.texts[stable_uuid("unit", text, self.rng.random())] = text

    def mentions(self) -> pl.DataFrame:
        rows = [(u, p.upper()) for u, t in self.texts.items() for p in PHRASES if p in t and p not in self.ignored]
        return pl.DataFrame(rows, schema={"text_unit_id": pl.String, "title": pl.String}, orient="row")

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame({"id": list(self.texts), "text": list(self.texts.values())})


def test_long_sentences_occur() -> None:
    units = Units(random.Random(3), 30)
    assert any(len(s) > LONG_SENTENCE_CHARS for t in units.texts.values() for s in t.split("came."))


def full(units: Units) -> Described:
    return phrase_descriptions(units.mentions(), units.frame())


def kept_from(described: Described) -> Stored:
    return Stored(described.descriptions, described.units)


@pytest.mark.parametrize("seed", range(12))
def test_descriptions_kept_from_the_previous_build_equal_reading_every_unit(seed: int) -> None:
    rng = random.Random(seed)
    units = Units(rng)
    stored = full(units)
    kept_total = 0
    for _step in range(10):
        change = rng.choice(["add", "add", "edit", "delete", "reorder", "rules", "none"])
        if change == "add":
            units.add()
        elif change == "edit":
            del units.texts[rng.choice(list(units.texts))]
            units.add()
        elif change == "delete" and len(units.texts) > 2:
            del units.texts[rng.choice(list(units.texts))]
        elif change == "reorder":  # the same units in another reading order: ties go elsewhere
            order = list(units.texts.items())
            rng.shuffle(order)
            units.texts = dict(order)
        elif change == "rules":  # the same texts, another phrase list: the counts of phrases change
            units.ignored ^= {rng.choice(PHRASES)}
        update = phrase_descriptions(units.mentions(), units.frame(), kept_from(stored))
        expected = full(units)
        assert update.descriptions.equals(expected.descriptions)
        assert update.units.sort("unit_hash").equals(expected.units.sort("unit_hash"))
        if change == "none":
            assert update.kept == update.descriptions.height
        kept_total += update.kept
        stored = update
    assert kept_total > 0


def test_a_phrase_that_only_gained_a_unit_reads_that_unit_alone() -> None:
    units = Units(random.Random(7), 8)
    stored = full(units)
    units.texts["new-unit"] = "Then the tide and the storm came."
    texts = units.frame().with_columns(
        text=pl.when(pl.col("id") == "new-unit").then(pl.col("text")).otherwise(pl.lit("Nothing here."))
    )  # every other unit's text hidden: a phrase that read one would lose its description
    update = phrase_descriptions(units.mentions(), texts, kept_from(stored))
    assert update.descriptions.equals(full(units).descriptions)
    assert update.kept < update.descriptions.height  # TIDE and STORM were described again


def test_a_phrase_whose_units_did_not_change_reads_none_of_them() -> None:
    units = Units(random.Random(7), 6)
    stored = full(units)
    read: list[int] = []
    texts = units.frame().with_columns(text=pl.lit("Then the tide came."))  # other texts, same ids
    again = phrase_descriptions(units.mentions(), texts, kept_from(stored), read.append)
    assert again.descriptions.equals(stored.descriptions)  # nothing was read: the texts were not looked at
    assert sum(read) == len(units.texts)  # progress still counts every unit


def test_stored_rows_of_another_corpus_are_not_used() -> None:
    first, second = Units(random.Random(1)), Units(random.Random(2))
    other = full(first)
    wrong = other.descriptions.with_columns(description=pl.lit("not a description of this corpus"))
    mine = phrase_descriptions(second.mentions(), second.frame(), Stored(wrong, other.units))
    assert mine.descriptions.equals(full(second).descriptions)
