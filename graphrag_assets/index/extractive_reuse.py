"""Extractive reports of an update: unchanged communities keep their report, read from no text.

An extractive report (:mod:`graphrag_assets.index.extractive_reports`) is a function of its
community's row, its members' titles, degrees and text units, the reading order of its units,
its internal link count, and which of its members are proper names. The last is corpus-wide: a
title is a name when the sentences of every community's units spell it capitalised more often
than in lower case. Writing every report again meant splitting and tokenising every text unit of
the corpus on every corpus run (156 s of the 501 s that one added document took at 100,000
documents), though one document changes a handful of communities.

So each report row carries in ``prompt_hash`` a fingerprint of those inputs (for a model's report
it is the prompt's: equal means the same report either way), and the spellings are kept per text
unit in ``report_name_votes``: one row per unit and title with its votes (capitalised minus lower
case; zero left out, and a row without title for a unit that has none), under a hash of the
unit's titles. A unit's votes depend only on its text (its id hashes it) and those titles, so a
unit whose titles did not change keeps its rows; only new units and units whose titles changed
are read. A community whose fingerprint is the one its previous report was written with keeps
that report; the others are written from their units' sentences as a full build would. Equal to
writing them all (``test_extractive_reuse.py``, and every rebuild test of the offline method).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from graphrag_assets.core.schemas import COMMUNITY_REPORTS, conform, empty_frame
from graphrag_assets.core.sentences import SENTENCE_RULES_VERSION
from graphrag_assets.index.extractive_reports import (
    Findings,
    Plan,
    add_votes,
    community_plans,
    new_findings,
    report_row,
    titles_by_unit,
    unit_sentences,
)

# Bump when what a report says for the same inputs changes, so no older report is kept.
REPORT_VERSION = f"extractive-1/sentences-{SENTENCE_RULES_VERSION}"

NAME_VOTES = {"unit": pl.String, "titles_hash": pl.String, "title": pl.String, "votes": pl.Int32}
KEY = {"unit": pl.String, "titles_hash": pl.String}  # a unit, under the titles it was read with


@dataclass(frozen=True)
class PreviousReports:
    """What the published build holds: its reports and its units' name votes (None: none yet)."""

    reports: pl.DataFrame | None = None
    name_votes: pl.DataFrame | None = None


@dataclass(frozen=True)
class ExtractiveUpdate:
    """The reports of every community, the name votes to store with them, and how many were kept."""

    frame: pl.DataFrame
    name_votes: pl.DataFrame
    kept: int
    units_read: int


def _digest(*parts: str) -> str:
    """A 128-bit hash of texts (lists go in joined by ``_joined``; small values as their ``repr``)."""
    return hashlib.blake2b("\x1e".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _joined(items: list[str]) -> str:
    return "\x1f".join(items)


class _Fingerprints:
    """The inputs of each planned community's report, all but its members' name status, hashed once."""

    def __init__(
        self, plans: list[Plan], links: list[int], entities: pl.DataFrame, text_units: pl.DataFrame, max_findings: int
    ) -> None:
        self.version = f"{REPORT_VERSION}/{max_findings}"
        ids = text_units.get_column("id").to_list()
        position = {unit: i for i, unit in reversed(list(enumerate(ids)))}  # a unit's first row
        member_hash = {
            title: _digest(title, str(degree), _joined(units))
            for title, degree, units in entities.select(
                "title", pl.col("degree").fill_null(0), pl.col("text_unit_ids").fill_null([])
            ).iter_rows()
        }
        self.base = []
        for plan, link_count in zip(plans, links):
            row = plan.row
            in_order = sorted(plan.units, key=lambda unit: (position.get(unit, len(ids)), unit))
            members = sorted(member_hash[title] for title, _, _ in plan.members)
            fields = [row.get(key) for key in ("community", "level", "parent", "children", "period", "size", "id")]
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
        return ExtractiveUpdate(empty_frame(COMMUNITY_REPORTS), empty_frame(NAME_VOTES), 0, 0)
    plans = community_plans(communities, entities)
    links = [internal_links.get(plan.row["community"], 0) for plan in plans]
    fingerprints = _Fingerprints(plans, links, entities, text_units, max_findings)
    all_units = list(dict.fromkeys(unit for plan in plans for unit in plan.units))
    titles = titles_by_unit(entities, all_units)
    rules = f"sentences-{SENTENCE_RULES_VERSION}"
    hashes = {unit: _digest(rules, _joined(titles.get(unit, []))) for unit in all_units}
    stored = conform(previous.name_votes, NAME_VOTES) if previous.name_votes is not None else empty_frame(NAME_VOTES)
    kept_votes = stored.join(pl.DataFrame(list(hashes.items()), schema=KEY, orient="row"), on=list(KEY), how="semi")
    counted = set(kept_votes.get_column("unit").to_list())
    to_count = {unit for unit in all_units if unit not in counted}

    earlier = _earlier_fingerprints(previous.reports)
    old_names = _names(stored)
    findings = {
        n: new_findings(plan, max_findings)
        for n, plan in enumerate(plans)
        if earlier.get(plan.row["community"]) != fingerprints.of(n, plan, old_names)
    }
    votes_of_units = _read_units(plans, findings, to_count, titles, text_units)
    names = _names(kept_votes, votes_of_units)
    # a member that became a name or stopped being one: the same sentences, another title
    retitled = {
        n: new_findings(plan, max_findings)
        for n, plan in enumerate(plans)
        if n not in findings and earlier.get(plan.row["community"]) != fingerprints.of(n, plan, names)
    }
    _read_units(plans, retitled, set(), titles, text_units)
    findings.update(retitled)

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
    kept_numbers = [plan.row["community"] for n, plan in enumerate(plans) if n not in findings]
    kept = empty_frame(COMMUNITY_REPORTS)
    if kept_numbers and previous.reports is not None:
        kept = conform(previous.reports.filter(pl.col("community").is_in(kept_numbers)), COMMUNITY_REPORTS)
    frame = pl.concat([written, kept]).sort("level", "community")
    name_votes = pl.concat([kept_votes, _vote_rows(votes_of_units, hashes)])
    read = len(to_count | {unit for n in findings for unit in plans[n].units})
    return ExtractiveUpdate(frame, name_votes, len(kept_numbers), read)


def _earlier_fingerprints(reports: pl.DataFrame | None) -> dict[int, str]:
    """The fingerprint each previous report was written with, by community (none: not extractive or older)."""
    if reports is None or "prompt_hash" not in reports.columns:
        return {}
    return dict(reports.select("community", "prompt_hash").drop_nulls().iter_rows())


def _names(votes: pl.DataFrame, more: Mapping[str, Mapping[str, int]] | None = None) -> set[str]:
    """Titles spelled capitalised more often than in lower case: stored votes, plus units just read."""
    totals = dict(votes.drop_nulls("title").group_by("title").agg(pl.col("votes").sum()).iter_rows())
    for unit_votes in (more or {}).values():
        for title, vote in unit_votes.items():
            totals[title] = totals.get(title, 0) + vote
    return {title for title, vote in totals.items() if vote > 0}


def _read_units(
    plans: list[Plan],
    findings: Mapping[int, Findings],
    to_count: set[str],
    titles: Mapping[str, list[str]],
    text_units: pl.DataFrame,
) -> dict[str, dict[str, int]]:
    """Offer the sentences of the units of the plans in ``findings`` to them, and count the name
    votes of the units ``to_count`` (returned per unit), in one pass over the text units."""
    plans_of_unit: dict[str, list[int]] = {}
    for number in findings:
        for unit in plans[number].units:
            plans_of_unit.setdefault(unit, []).append(number)
    votes: dict[str, dict[str, int]] = {unit: {} for unit in to_count}
    for sentence in unit_sentences(to_count | plans_of_unit.keys(), titles, text_units):
        if sentence.unit_id in votes:
            add_votes(votes[sentence.unit_id], sentence)
        for number in plans_of_unit.get(sentence.unit_id, ()):
            findings[number].offer(sentence)
    return votes


def _vote_rows(votes: Mapping[str, Mapping[str, int]], hashes: Mapping[str, str]) -> pl.DataFrame:
    """Rows of ``NAME_VOTES`` for units just read: their non-zero votes, or one row without title."""
    rows = []
    for unit, unit_votes in votes.items():
        nonzero = [(unit, hashes[unit], title, vote) for title, vote in sorted(unit_votes.items()) if vote]
        rows.extend(nonzero or [(unit, hashes[unit], None, 0)])
    return pl.DataFrame(rows, schema=NAME_VOTES, orient="row")
