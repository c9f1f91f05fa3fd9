"""Extractive reports of an update: unchanged communities keep their report, read from no text.

An extractive report (:mod:`graphrag_assets.index.extractive_reports`) is a function of its
community's level and size, its members' titles, degrees and text units, the reading order of its
units, its internal link count, and which of its members are proper names. The last is corpus-wide:
a title is a name when the sentences of every community's units spell it capitalised more often
than in lower case. Writing every report again meant splitting and tokenising every text unit of
the corpus on every corpus run (156 s of the 501 s that one added document took at 100,000
documents), though one document changes a handful of communities.

So each report row carries in ``prompt_hash`` a fingerprint of those inputs (for a model's report
it is the prompt's: equal means the same report either way), and the spellings are kept per text
unit in ``report_name_votes``: one row per unit and title with its votes (capitalised minus lower
case; zero left out, and a row without title for a unit that has none), under a hash of the unit's
titles. A unit's votes depend only on its text (its id hashes it) and those titles, so a unit whose
titles did not change keeps its rows; only new units and units whose titles changed are read. A
community whose fingerprint is one a previous report was written with keeps that report, whatever
its number: only the row's numbers, parent, children, period and id change, and they do not change
what the report says (a stable-mode update that adds one community renumbers those after it, and
the first update of a day has a new period: either rewrote most reports, 8,204 of 11,336 in one
update at 100,000 documents). The others are written as a full build would, from their units'
sentences. Those are kept too, under the same key, in ``report_sentences``: per unit, each sentence
that mentions one of its entities, with the ones it mentions, a hash of its text and whether it is
long, which is all that ranks it. So a changed community reads the text of only the units its
chosen sentences come from, where it read all of its units before (a level-0 community's are most
of the corpus: 100 s of an added document at 100,000 documents). Equal to writing them all
(``test_extractive_reuse.py``, and every rebuild test of the offline method).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import polars as pl

from graphrag_assets.core.schemas import COMMUNITY_REPORTS, conform, empty_frame
from graphrag_assets.core.sentences import SENTENCE_RULES_VERSION
from graphrag_assets.index.extractive_reports import (
    Findings,
    Plan,
    _Sentence,
    add_votes,
    community_plans,
    new_findings,
    report_row,
    sentences_of_unit,
    titles_by_unit,
    units_in_order,
)

# Bump when what a report says for the same inputs changes, so no older report is kept.
REPORT_VERSION = f"extractive-1/sentences-{SENTENCE_RULES_VERSION}"

NAME_VOTES = {"unit": pl.String, "titles_hash": pl.String, "title": pl.String, "votes": pl.Int32}
KEY = {"unit": pl.String, "titles_hash": pl.String}  # a unit, under the titles it was read with
# A unit's sentences that mention one of its entities: position in the unit, text hash
# (``sentence_key``), over LONG_SENTENCE_CHARS, and the entities mentioned as positions in the
# unit's sorted titles; one row per unit, a few bytes per sentence.
SENTENCES = {
    **KEY,
    "sentence": pl.List(pl.UInt32),
    "key": pl.List(pl.UInt64),
    "long": pl.List(pl.Boolean),
    "mentions": pl.List(pl.List(pl.UInt32)),
}


@dataclass(frozen=True)
class KeptVotes:
    """What of the stored name votes still holds: the units whose votes were counted under the
    titles they have now, and each title's votes summed over those units."""

    units: set[str]
    totals: dict[str, int]


class StoredVotes(Protocol):
    """The last build's name votes (``NAME_VOTES`` rows), asked exactly once by every update for
    those that still hold.

    The reports step keeps them in DuckDB (at 100,000 documents 3.5 M rows; as a frame they took
    ~820 MB of an update in ``bench/profile_reports_step.py``): asking stages the kept ones as the
    run's table, which the step then completes with ``new_votes``. :class:`VotesFrame` is the same
    in memory."""

    def kept(self, keys: pl.DataFrame) -> KeptVotes:
        """The votes of the units of ``keys`` (``KEY``: each unit under the hash of its titles now)."""
        ...


@dataclass(frozen=True)
class PreviousReports:
    """What the published build holds: its reports, its units' name votes and sentences (None: none yet)."""

    reports: pl.DataFrame | None = None
    name_votes: StoredVotes | None = None
    sentences: pl.DataFrame | None = None


@dataclass(frozen=True)
class ExtractiveUpdate:
    """The reports of every community, the name votes and sentences to store with them, how many
    reports were kept and how many text units were read.

    The name votes to store are the stored ones of the units in ``vote_keys`` (as
    :meth:`StoredVotes.kept` chose them) and ``new_votes``, those of the units counted now."""

    frame: pl.DataFrame
    vote_keys: pl.DataFrame
    new_votes: pl.DataFrame
    sentences: pl.DataFrame
    kept: int
    units_read: int


@dataclass(frozen=True)
class VotesFrame:
    """Stored name votes held as a frame (tests, benchmarks): :class:`StoredVotes` in polars."""

    frame: pl.DataFrame

    def kept(self, keys: pl.DataFrame) -> KeptVotes:
        rows = _kept(self.frame, NAME_VOTES, keys)
        totals = rows.drop_nulls("title").group_by("title").agg(pl.col("votes").sum())
        return KeptVotes(set(rows.get_column("unit").to_list()), dict(totals.iter_rows()))

    def updated(self, update: ExtractiveUpdate) -> VotesFrame:
        """The votes stored with ``update``: those kept and those counted now."""
        return VotesFrame(pl.concat([_kept(self.frame, NAME_VOTES, update.vote_keys), update.new_votes]))


NO_VOTES = VotesFrame(pl.DataFrame(schema=NAME_VOTES))


def _digest(*parts: str) -> str:
    """A 128-bit hash of texts (lists go in joined by ``_joined``; small values as their ``repr``)."""
    return hashlib.blake2b("\x1e".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _joined(items: list[str]) -> str:
    return "\x1f".join(items)


class _Fingerprints:
    """The inputs of each planned community's report, all but its members' name status, hashed once
    (not the row's number, parent, children, period or id: the report's text does not use them)."""

    def __init__(
        self, plans: list[Plan], links: list[int], entities: pl.DataFrame, text_units: pl.DataFrame, max_findings: int
    ) -> None:
        self.version = f"{REPORT_VERSION}/{max_findings}"
        ids = text_units.get_column("id").to_list()
        self.position = position = {unit: i for i, unit in reversed(list(enumerate(ids)))}  # a unit's first row
        member_hash = {
            title: _digest(title, str(degree), _joined(units))
            for title, degree, units in entities.select(
                "title", pl.col("degree").fill_null(0), pl.col("text_unit_ids").fill_null([])
            ).iter_rows()
        }
        # each unit's rank in (first row, id) order, so the lists below sort by a lookup: a key
        # function making a tuple per entry took 3 s of the 100,000-document index's updates
        planned = {unit for plan in plans for unit in plan.units}
        ranked = sorted(planned, key=lambda unit: (position.get(unit, len(ids)), unit))
        rank = {unit: i for i, unit in enumerate(ranked)}
        self.base = []
        for plan, link_count in zip(plans, links):
            row = plan.row
            in_order = sorted(plan.units, key=rank.__getitem__)
            members = sorted(member_hash[title] for title, _, _ in plan.members)
            fields = [row.get(key) for key in ("level", "size")]
            self.base.append(_digest(repr([*fields, link_count]), _joined(members), _joined(in_order)))

    def of(self, number: int, plan: Plan, names: set[str]) -> str:
        """The fingerprint of plan ``number`` when ``names`` are the corpus's proper names."""
        members = sorted(title for title, _, _ in plan.members if title in names)
        return _digest(self.version, self.base[number], _joined(members))


def update_extractive_reports(
    communities: pl.DataFrame,
    entities: pl.DataFrame,
    text_units: pl.DataFrame,
    internal_links: Mapping[int, int],
    previous: PreviousReports,
    *,
    max_findings: int = 5,
) -> ExtractiveUpdate:
    """Every community's extractive report, keeping the previous build's where its inputs are the same.

    ``text_units`` needs ``id`` and ``text`` in reading order; the reports equal
    :func:`~graphrag_assets.index.extractive_reports.extractive_reports`'s, with ``prompt_hash`` set.
    """
    if communities.is_empty():
        (previous.name_votes or NO_VOTES).kept(empty_frame(KEY))  # none kept (StoredVotes: asked once)
        empty = empty_frame(COMMUNITY_REPORTS), empty_frame(KEY), empty_frame(NAME_VOTES)
        return ExtractiveUpdate(*empty, empty_frame(SENTENCES), 0, 0)
    # numpy: only for the offline reports (the reports step imports this module for every method,
    # and a small index with a model imports no numpy)
    from graphrag_assets.index.kept_sentences import offer_kept_sentences

    plans = community_plans(communities, entities)
    links = [internal_links.get(plan.row["community"], 0) for plan in plans]
    fingerprints = _Fingerprints(plans, links, entities, text_units, max_findings)
    all_units = list(dict.fromkeys(unit for plan in plans for unit in plan.units))
    titles = titles_by_unit(entities, all_units)
    rules = f"sentences-{SENTENCE_RULES_VERSION}"
    hashes = {unit: _digest(rules, _joined(titles.get(unit, []))) for unit in all_units}
    keys = pl.DataFrame(list(hashes.items()), schema=KEY, orient="row")
    kept_votes = (previous.name_votes or NO_VOTES).kept(keys)
    kept_sentences = _kept(previous.sentences, SENTENCES, keys)
    to_count = set(all_units) - kept_votes.units
    to_read = to_count | (set(all_units) - set(kept_sentences.get_column("unit").to_list()))

    earlier = _earlier_fingerprints(previous.reports)
    old_names = _names(kept_votes.totals)

    def changed(number: int, plan: Plan, names: set[str]) -> bool:
        return fingerprints.of(number, plan, names) not in earlier

    # the communities that change whatever the new units' votes say get the sentences of those
    # units as they are read, and those of the others from the kept rows
    findings = {n: new_findings(plan, max_findings) for n, plan in enumerate(plans) if changed(n, plan, old_names)}
    fresh = _read_units(_Reading(to_read, to_count, titles, hashes), _by_unit(plans, findings), text_units)
    sentences = pl.concat([kept_sentences.filter(~pl.col("unit").is_in(sorted(to_read))), fresh.sentences])
    position = fingerprints.position
    offer_kept_sentences(_by_unit(plans, findings, skip=fresh.units), sentences, titles, position)
    names = _names(kept_votes.totals, fresh.votes)
    # a member that became a name or stopped being one: the same sentences, another title
    retitled = {
        n: new_findings(plan, max_findings)
        for n, plan in enumerate(plans)
        if n not in findings and changed(n, plan, names)
    }
    offer_kept_sentences(_by_unit(plans, retitled), sentences, titles, position)
    findings.update(retitled)
    texts_read = _read_chosen_texts(findings.values(), titles, text_units)

    rows = []
    for number in sorted(findings):
        plan = plans[number]
        rows.append(
            {
                **report_row(plan, findings[number], names, links[number]),
                "prompt_hash": fingerprints.of(number, plan, names),
            }
        )
    written = conform(pl.DataFrame(rows, schema=COMMUNITY_REPORTS), COMMUNITY_REPORTS)
    was = {
        plan.row["community"]: earlier[fingerprints.of(n, plan, names)]
        for n, plan in enumerate(plans)
        if n not in findings
    }
    kept = _renumbered(previous.reports, was, communities) if was else empty_frame(COMMUNITY_REPORTS)
    frame = pl.concat([written, kept]).sort("level", "community")
    new_votes = _vote_rows(fresh.votes, hashes)
    return ExtractiveUpdate(frame, keys, new_votes, sentences, len(was), len(fresh.units | texts_read))


# The columns of a report that are its community's row's, not what the report says: report column
# -> community column.
_ROW_COLUMNS = {
    "community": "community",
    "human_readable_id": "community",
    "community_id": "id",
    **{name: name for name in ("level", "parent", "children", "period", "size")},
}


def _renumbered(reports: pl.DataFrame, was: Mapping[int, int], communities: pl.DataFrame) -> pl.DataFrame:
    """The previous ``reports`` each community of ``was`` keeps (``was``: community now -> the one
    its report was written for), with the row columns of the community now."""
    moves = pl.DataFrame(list(was.items()), schema={"community": pl.Int64, "was": pl.Int64}, orient="row")
    rows = communities.select(*(pl.col(source).alias(column) for column, source in _ROW_COLUMNS.items()))
    kept = (
        reports.rename({"community": "was"})
        .drop(*(column for column in _ROW_COLUMNS if column != "community"))
        .join(moves, on="was")
        .join(rows, on="community")
    )
    return conform(kept, COMMUNITY_REPORTS)


def _kept(stored: pl.DataFrame | None, schema: dict, keys: pl.DataFrame) -> pl.DataFrame:
    """The rows of a stored per-unit table whose unit was read under the titles it has now."""
    if stored is None:
        return empty_frame(schema)
    return conform(stored, schema).join(keys, on=list(KEY), how="semi")


@dataclass(frozen=True)
class _Reading:
    """Which units to read, which of them to count name votes of, and what each was read with."""

    units: set[str]
    to_count: set[str]
    titles: Mapping[str, list[str]]
    hashes: Mapping[str, str]  # the KEY's titles_hash of each unit


@dataclass(frozen=True)
class _Read:
    """What reading units' text gave: the ids read, their sentences (``SENTENCES``), their name votes."""

    units: set[str]
    sentences: pl.DataFrame
    votes: dict[str, dict[str, int]]


def _by_unit(
    plans: list[Plan], findings: Mapping[int, Findings], skip: Collection[str] = ()
) -> dict[str, list[Findings]]:
    """The findings each unit's sentences go to (those of the plans whose units hold it), but ``skip``."""
    by_unit: dict[str, list[Findings]] = {}
    for number, chosen in findings.items():
        for unit in plans[number].units:
            if unit not in skip:
                by_unit.setdefault(unit, []).append(chosen)
    return by_unit


def _read_units(reading: _Reading, offer_to: Mapping[str, list[Findings]], text_units: pl.DataFrame) -> _Read:
    """Split and tokenise the units to read, offering their sentences to the findings of
    ``offer_to``; returns the rows to keep of their sentences and the name votes of those to count."""
    votes: dict[str, dict[str, int]] = {unit: {} for unit in reading.to_count}
    columns = _SentenceColumns()
    batches: list[pl.DataFrame] = []
    read: set[str] = set()
    for position, unit, text in units_in_order(text_units, reading.units).iter_rows():
        read.add(unit)
        titles = reading.titles.get(unit, [])
        number = {title: i for i, title in enumerate(titles)}
        unit_votes, findings = votes.get(unit), offer_to.get(unit, ())
        columns.start(unit, reading.hashes[unit])
        for sentence in sentences_of_unit(unit, position, text, titles):
            if unit_votes is not None:
                add_votes(unit_votes, sentence)
            for chosen in findings:
                chosen.offer(sentence)
            columns.add(sentence, sorted(number[t] for t in sentence.mentions))
        if len(columns.units) >= _UNITS_PER_BATCH:  # Python lists of a corpus's sentences would be ~0.4 GB
            batches.append(columns.frame())
            columns = _SentenceColumns()
    batches.append(columns.frame())
    return _Read(read, pl.concat(batches), votes)


_UNITS_PER_BATCH = 1_000


class _SentenceColumns:
    """``SENTENCES`` rows of units being read, gathered as flat columns (one entry per sentence,
    and one per mention: a list per sentence made Python lists polars converts one by one)."""

    def __init__(self) -> None:
        self.units: list[tuple[str, str]] = []
        self.unit_of: list[int] = []
        self.index: list[int] = []
        self.key: list[int] = []
        self.long: list[bool] = []
        self.mention_of: list[int] = []  # the sentence (its entry above) each mention belongs to
        self.mentions: list[int] = []

    def start(self, unit: str, titles_hash: str) -> None:
        self.units.append((unit, titles_hash))

    def add(self, sentence: _Sentence, mentions: list[int]) -> None:
        self.mention_of.extend([len(self.index)] * len(mentions))
        self.mentions.extend(mentions)
        self.unit_of.append(len(self.units) - 1)
        self.index.append(sentence.index)
        self.key.append(sentence.key)
        self.long.append(sentence.long)

    def frame(self) -> pl.DataFrame:
        # every sentence mentions one title or more, so its group is there, in sentence order
        mentions = (
            pl.DataFrame(
                {"of": self.mention_of, "mentions": self.mentions}, schema={"of": pl.UInt32, "mentions": pl.UInt32}
            )
            .group_by("of", maintain_order=True)
            .agg("mentions")
        )
        per_sentence = pl.DataFrame(
            {"row": self.unit_of, "sentence": self.index, "key": self.key, "long": self.long},
            schema={"row": pl.UInt32, "sentence": pl.UInt32, "key": pl.UInt64, "long": pl.Boolean},
        ).with_columns(mentions["mentions"])
        lists = per_sentence.group_by("row", maintain_order=True).agg(pl.all())
        units = pl.DataFrame(self.units, schema=KEY, orient="row").with_row_index("row")
        empty = {name: pl.lit([], dtype=SENTENCES[name]) for name in ("sentence", "key", "long", "mentions")}
        return (
            units.join(lists, on="row", how="left", maintain_order="left")
            .with_columns(pl.col(name).fill_null(value) for name, value in empty.items())
            .select(list(SENTENCES))
            .cast(SENTENCES)
        )


def _read_chosen_texts(
    findings: Iterable[Findings], titles: Mapping[str, list[str]], text_units: pl.DataFrame
) -> set[str]:
    """Give the chosen sentences their text, read from their units; returns the units read."""
    chosen = list(findings)
    units = {s.unit_id for f in chosen for s in f.best() if s.text is None}
    if not units:
        return set()
    texts = {
        (s.unit_id, s.index): s.text
        for position, unit, text in units_in_order(text_units, units).iter_rows()
        for s in sentences_of_unit(unit, position, text, titles.get(unit, []))
    }
    for f in chosen:
        f.read_texts(texts)
    return units


def _earlier_fingerprints(reports: pl.DataFrame | None) -> dict[str, int]:
    """The community of each fingerprint a previous report was written with (none: not extractive or older)."""
    if reports is None or "prompt_hash" not in reports.columns:
        return {}
    return dict(reports.select("prompt_hash", "community").drop_nulls().iter_rows())


def _names(stored: Mapping[str, int], more: Mapping[str, Mapping[str, int]] | None = None) -> set[str]:
    """Titles spelled capitalised more often than in lower case: stored votes' totals, plus units just read."""
    totals = dict(stored)
    for unit_votes in (more or {}).values():
        for title, vote in unit_votes.items():
            totals[title] = totals.get(title, 0) + vote
    return {title for title, vote in totals.items() if vote > 0}


def _vote_rows(votes: Mapping[str, Mapping[str, int]], hashes: Mapping[str, str]) -> pl.DataFrame:
    """Rows of ``NAME_VOTES`` for units just read: their non-zero votes, or one row without title."""
    rows = []
    for unit, unit_votes in votes.items():
        nonzero = [(unit, hashes[unit], title, vote) for title, vote in sorted(unit_votes.items()) if vote]
        rows.extend(nonzero or [(unit, hashes[unit], None, 0)])
    return pl.DataFrame(rows, schema=NAME_VOTES, orient="row")
