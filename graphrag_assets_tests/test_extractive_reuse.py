"""Extractive reports of an update keep the reports of unchanged communities and equal writing them all."""

from __future__ import annotations

import random

import polars as pl
import pytest

from graphrag_assets.core.ids import entity_id, stable_uuid
from graphrag_assets.index.extractive_reports import extractive_reports
from graphrag_assets.index.extractive_reuse import (
    NAME_VOTES,
    NO_VOTES,
    PreviousReports,
    VotesFrame,
    update_extractive_reports,
)

PHRASES = [
    "Ilse Marrow",
    "Helga Brandt",
    "harbour master",
    "Port Auberon",
    "old lighthouse",
    "Wren",
    "storm",
    "Kestrel",
]
VERBS = ["met", "saw", "left", "watched", "spoke to"]


def sentence(rng: random.Random) -> str:
    first, second = rng.sample(PHRASES, 2)
    if rng.random() < 0.3:  # a name in lower case now and then: which titles are names can change
        first = first.lower()
    return f"Then {first} {rng.choice(VERBS)} the {second}."


class Corpus:
    """Random text units, the entities they mention and two levels of communities over them."""

    def __init__(self, rng: random.Random, units: int = 12) -> None:
        self.rng = rng
        self.texts = {}
        for _ in range(units):
            self.add_unit()
        self.degree_change: dict[str, int] = {}
        self.grouping_seed = 0
        self.first_number = 0  # a stable-mode update that adds a community renumbers those after it
        self.period = "2026-12-06"
        # phrases no entity has: the units that mention them keep their ids, not their titles
        self.hidden: set[str] = set()

    def add_unit(self) -> str:
        text = " ".join(sentence(self.rng) for _ in range(self.rng.randint(1, 4)))
        unit = stable_uuid("unit", text, len(self.texts), self.rng.random())
        self.texts[unit] = text
        return unit

    def tables(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[int, int]]:
        units_of = {p.upper(): sorted(u for u, t in self.texts.items() if p.upper() in t.upper()) for p in PHRASES}
        titles = [t for t, units in units_of.items() if units and t not in self.hidden]
        entities = pl.DataFrame(
            {
                "id": [entity_id(t) for t in titles],
                "title": titles,
                "degree": [len(units_of[t]) + self.degree_change.get(t, 0) for t in titles],
                "text_unit_ids": [units_of[t] for t in titles],
            }
        )
        grouping = random.Random(self.grouping_seed)
        rows, number = [], self.first_number
        for top in range(2):
            members = [t for i, t in enumerate(titles) if i % 2 == top]
            children = []
            for half in (members[: len(members) // 2], members[len(members) // 2 :]):
                if half:
                    number += 1
                    children.append(number)
                    rows.append(self.community(number, 1, self.first_number + top * 100, half, entities, grouping))
            rows.append(self.community(self.first_number + top * 100, 0, -1, members, entities, grouping, children))
        units = pl.DataFrame({"id": list(self.texts), "text": list(self.texts.values())})
        links = {row["community"]: len(row["entity_ids"]) - 1 for row in rows}
        return pl.DataFrame(rows), entities, units, links

    def community(self, number, level, parent, titles, entities, grouping, children=()) -> dict:
        units = sorted({u for t in titles for u in entities.filter(pl.col("title") == t)["text_unit_ids"][0]})
        keep = [u for u in units if grouping.random() < 0.8] if grouping.random() < 0.7 else []  # [] : members' units
        return {
            "id": stable_uuid("community", level, *sorted(titles)),
            "community": number,
            "level": level,
            "parent": parent,
            "children": list(children),
            "entity_ids": [entity_id(t) for t in titles],
            "text_unit_ids": keep,
            "period": self.period,
            "size": len(titles),
        }


def check(corpus: Corpus, previous: PreviousReports):
    communities, entities, units, links = corpus.tables()
    update = update_extractive_reports(communities, entities, units, links, previous)
    full = extractive_reports(communities, entities, pl.DataFrame(), units, internal_links=links)
    assert update.frame.drop("prompt_hash").equals(full.drop("prompt_hash"))
    afresh = update_extractive_reports(communities, entities, units, links, PreviousReports())
    assert update.frame.equals(afresh.frame)
    votes = stored_votes(previous, update)
    assert votes.frame.sort("unit", "title").equals(stored_votes(PreviousReports(), afresh).frame.sort("unit", "title"))
    assert update.sentences.sort("unit").equals(afresh.sentences.sort("unit"))
    return update, PreviousReports(update.frame, votes, update.sentences)


def stored_votes(previous: PreviousReports, update) -> VotesFrame:
    """The name votes the reports step stores with ``update`` (kept in DuckDB by the step: see
    test_the_votes_kept_in_duckdb_equal_those_kept_in_memory)."""
    return (previous.name_votes or NO_VOTES).updated(update)


@pytest.mark.parametrize("seed", range(8))
def test_updates_equal_writing_every_report(seed: int) -> None:
    rng = random.Random(seed)
    corpus = Corpus(rng)
    update, previous = check(corpus, PreviousReports())
    assert update.kept == 0 and update.units_read == len(corpus.texts)
    kept = 0
    for _step in range(12):
        change = rng.choice(["add", "edit", "delete", "degree", "regroup", "reorder", "renumber", "retitle", "none"])
        if change == "add":
            corpus.add_unit()
        elif change == "edit":  # an edited text is a new unit id
            del corpus.texts[rng.choice(list(corpus.texts))]
            corpus.add_unit()
        elif change == "delete" and len(corpus.texts) > 3:
            del corpus.texts[rng.choice(list(corpus.texts))]
        elif change == "degree":
            title = rng.choice(PHRASES).upper()
            corpus.degree_change[title] = corpus.degree_change.get(title, 0) + 1
        elif change == "regroup":
            corpus.grouping_seed += 1
        elif change == "reorder":  # the same units read in another order (documents renamed): ties change
            corpus.texts = dict(reversed(corpus.texts.items()))
        elif change == "retitle":  # a phrase leaves the entities (or comes back): units keep ids, not titles
            corpus.hidden ^= {rng.choice(PHRASES).upper()}
        elif change == "renumber":  # another day's update, its communities numbered from elsewhere
            corpus.first_number += 1
            corpus.period = f"2026-12-{7 + corpus.first_number:02d}"
        update, previous = check(corpus, previous)
        if change in ("none", "renumber"):
            assert update.kept == update.frame.height and update.units_read == 0
        kept += update.kept
    assert kept > 0


def test_renumbered_communities_and_a_new_day_keep_every_report() -> None:
    """Only a community's row changes (numbers, parent, children, period): its report says the same."""
    corpus = Corpus(random.Random(5), units=16)
    _, previous = check(corpus, PreviousReports())
    corpus.first_number, corpus.period = 3, "2026-12-07"
    update, _ = check(corpus, previous)  # equal to writing them all: the rows are the new ones
    assert update.kept == update.frame.height and update.units_read == 0
    assert update.frame["period"].unique().to_list() == ["2026-12-07"]
    assert update.frame["community"].min() == 3


def test_a_degree_change_rewrites_only_the_communities_of_that_entity() -> None:
    corpus = Corpus(random.Random(11), units=20)
    update, previous = check(corpus, PreviousReports())
    title = corpus.tables()[1]["title"][0]
    corpus.degree_change[title] = 5
    update, _ = check(corpus, previous)
    communities = corpus.tables()[0]
    holding = communities.filter(pl.col("entity_ids").list.contains(entity_id(title))).height
    assert update.kept == communities.height - holding
    # the rewritten reports' sentences come from the kept rows: only the chosen ones' units are read
    assert 0 < update.units_read <= 5 * holding < len(corpus.texts)


def test_a_member_that_becomes_a_name_retitles_a_community_whose_own_inputs_did_not_change() -> None:
    """STORM is spelled in lower case in U2 only; once no community cites U2, it is a name, and
    community 1 (same row, members and units) gets a new title from its stored sentences."""
    u1, u2, u3 = (stable_uuid("unit", i) for i in range(3))
    units = pl.DataFrame(
        {
            "id": [u1, u2, u3],
            "text": ["Then Storm met Wren.", "Then storm met Kestrel. Then storm left Kestrel.", "Then Kestrel slept."],
        }
    )
    units_of = {"STORM": [u1, u2], "WREN": [u1], "KESTREL": [u2, u3]}
    degrees = {"STORM": 5, "WREN": 2, "KESTREL": 1}
    entities = pl.DataFrame(
        {
            "id": [entity_id(t) for t in units_of],
            "title": list(units_of),
            "degree": [degrees[t] for t in units_of],
            "text_unit_ids": list(units_of.values()),
        }
    )

    def communities(kestrel_units: list[str]) -> pl.DataFrame:
        rows = [("STORM", "WREN"), ("KESTREL",)]
        return pl.DataFrame(
            {
                "id": [f"c{n}" for n in (1, 2)],
                "community": [1, 2],
                "level": [0, 0],
                "parent": [-1, -1],
                "children": [[], []],
                "entity_ids": [[entity_id(t) for t in titles] for titles in rows],
                "text_unit_ids": [[u1], kestrel_units],
                "period": ["2026-12-06"] * 2,
                "size": [2, 1],
            }
        )

    def reports(kestrel_units: list[str], previous: PreviousReports):
        update = update_extractive_reports(communities(kestrel_units), entities, units, {1: 1, 2: 0}, previous)
        full = extractive_reports(communities(kestrel_units), entities, pl.DataFrame(), units, internal_links={1: 1})
        assert update.frame.drop("prompt_hash").equals(full.drop("prompt_hash"))
        return update

    before = reports([u2, u3], PreviousReports())
    assert before.frame["title"][0] == "WREN and STORM"  # -1 vote: not a name
    after = reports([u3], PreviousReports(before.frame, NO_VOTES.updated(before), before.sentences))
    assert after.frame["title"][0] == "STORM and WREN"
    assert after.kept == 0 and after.units_read == 2  # u1 for the new title, u3 for community 2


def test_votes_stored_by_another_build_still_give_exact_reports() -> None:
    """The stored votes are keyed by unit and titles: rows of another build are never wrongly reused."""
    _, other = check(Corpus(random.Random(21)), PreviousReports())
    corpus = Corpus(random.Random(22))
    _, mine = check(corpus, PreviousReports())
    check(
        corpus,
        PreviousReports(
            mine.reports,
            VotesFrame(pl.concat([other.name_votes.frame, mine.name_votes.frame]).unique()),
            pl.concat([other.sentences, mine.sentences]).unique(),
        ),
    )
    check(corpus, PreviousReports(other.reports, mine.name_votes, mine.sentences))
    check(corpus, PreviousReports(mine.reports, mine.name_votes, other.sentences))


def test_a_build_without_kept_sentences_reads_every_unit_once_then_none() -> None:
    """An index written before the sentences were kept has name votes only: its first update reads
    every unit (and keeps their sentences), the next one none."""
    corpus = Corpus(random.Random(31))
    first, stored = check(corpus, PreviousReports())
    older = PreviousReports(first.frame, stored.name_votes)
    upgraded, previous = check(corpus, older)
    assert upgraded.kept == first.frame.height and upgraded.units_read == len(corpus.texts)
    again, _ = check(corpus, previous)
    assert again.kept == first.frame.height and again.units_read == 0


@pytest.mark.parametrize("seed", range(3))
def test_the_votes_kept_in_duckdb_equal_those_kept_in_memory(tmp_path, seed: int) -> None:
    """The reports step keeps the votes in DuckDB (storage/name_votes.py): the units, totals and
    stored table equal the frame's, update after update, from a table of older code on, as units
    come and go and the titles of kept units change (their stored votes must not be kept)."""
    from graphrag_assets.storage.corpus import append_staged, read_staged
    from graphrag_assets.storage.database import connect
    from graphrag_assets.storage.name_votes import COLUMNS, stage_kept_votes
    from graphrag_assets.storage.table_names import REPORT_NAME_VOTES
    from graphrag_assets.storage.tables import write_table

    assert list(COLUMNS) == list(NAME_VOTES)  # new rows are appended by position
    rng = random.Random(seed)
    corpus, path = Corpus(rng), tmp_path / "index.duckdb"
    with connect(path) as conn:  # written by code before the votes were kept: none are
        conn.execute(f"create table {REPORT_NAME_VOTES} (unit varchar)")
    in_memory, kept_units, retitled = NO_VOTES, 0, 0

    class Both:
        """Asks DuckDB, and answers with the frame's votes."""

        def __init__(self, frame: VotesFrame) -> None:
            self.frame, self.asked = frame, []

        def kept(self, keys: pl.DataFrame):
            self.asked.append((keys, stage_kept_votes(path, keys)))
            return self.frame.kept(keys)

    for _step in range(6):
        communities, entities, units, links = corpus.tables()
        both = Both(in_memory)
        update = update_extractive_reports(communities, entities, units, links, PreviousReports(None, both))
        [(keys, in_sql)] = both.asked
        expected = in_memory.kept(keys)
        assert keys.equals(update.vote_keys) and in_sql == (expected.units, expected.totals)
        kept_units += len(expected.units)
        if in_memory.frame.height:  # stored units still here under other titles
            stored_keys = in_memory.frame.select("unit", "titles_hash").unique()
            retitled += (
                stored_keys.join(keys, on="unit").filter(pl.col("titles_hash") != pl.col("titles_hash_right")).height
            )
        append_staged(path, REPORT_NAME_VOTES, update.new_votes)
        in_memory = in_memory.updated(update)
        stored = read_staged(path, REPORT_NAME_VOTES)
        assert stored.sort("unit", "title").equals(in_memory.frame.sort("unit", "title"))
        write_table(path, REPORT_NAME_VOTES, stored)  # published, as the build's commit would
        corpus.add_unit()
        del corpus.texts[rng.choice(list(corpus.texts))]
        corpus.hidden ^= {rng.choice(PHRASES).upper()}  # a phrase leaves the entities, or comes back
    assert kept_units > 0 and retitled > 0
