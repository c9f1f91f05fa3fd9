"""Community reports without a language model (``generation = "extractive"``).

When no model is configured the pipeline still gives every community a report with the same
shape as an LLM report (title, summary, rating, rating explanation, findings with citations),
assembled from the community's own sentences. Selection follows the idea of Microsoft's text
variant (reference §6.4, units ranked by the degrees of the community entities they mention),
one level finer: sentences rather than whole units are ranked.

- **Title**: three community entities, e.g. "SCROOGE, MARLEY and BOB CRATCHIT": proper names
  first, then other phrases, and hyphenated words or number words ("DRESSING-GOWN",
  "THREE-QUARTERS") last; by degree within each group (ties: alphabetical). A title is a proper
  name when the community's text units spell it capitalised inside a sentence more often than in
  lower case (a capital at a sentence start proves nothing). Names tell a reader what a
  community is about; a common noun that happens to be central ("DRESSING-GOWN") does not.
- **Findings**: the community's most central sentences. A sentence of one of the community's
  text units scores ``Σ (1 + degree)`` over the distinct community entities it mentions;
  higher scores first, sentences over 400 characters last, ties by position (``text_units``
  row order, then sentence order). Each finding's summary is the sentence's opening words, its
  explanation the sentence followed by ``[Data: Sources (<short id of the unit>)]``.
- **Rating** (0–10, monotone in size and in mean degree):
  ``10 · (1 − exp(−(size + mean_degree) / 25))``, rounded to one decimal, where ``size`` is the
  number of entities and ``mean_degree`` their mean degree in the whole graph. A 5-phrase
  community with mean degree 3 rates 2.7; 30 phrases with mean degree 20 rate 8.6.
- **id**: ``stable_uuid(full_content)`` (Microsoft hashes ``full_content`` too); the summary
  names the size and the top entities, so two communities never share a report text.

The community's units are its ``text_unit_ids`` (Microsoft: the units of its internal
relationships), or the union of its entities' units when that list is empty.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import polars as pl

from graphrag_assets.core.ids import short_id, stable_uuid
from graphrag_assets.core.schemas import COMMUNITY_REPORTS, conform, empty_frame
from graphrag_assets.core.sentences import Token, prepare_text, sentences_with_words, shorten, tokenize
from graphrag_assets.core.words import word_lists

GENERATION = "extractive"
TITLE_ENTITIES = 3
LEAD_WORDS = 12
EXPLANATION_MAX_CHARS = 600
SUMMARY_SENTENCE_MAX_CHARS = 300
RATING_SCALE = 25.0
LONG_SENTENCE_CHARS = 400  # longer sentences become findings only when no shorter one is left


# Slots and one shared empty set (CPython makes a new 216-byte one each time) keep each sentence
# small: a community keeps its best few until every unit has been read.
_NO_TITLES: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Sentence:
    unit_id: str
    position: int  # unit position in text_units
    index: int  # sentence position in its unit
    text: str | None  # None: not read yet (an update's sentence known from what a build kept)
    key: int  # sentence_key of the text: what "the same text" means when choosing findings
    long: bool  # over LONG_SENTENCE_CHARS
    mentions: frozenset[str]  # titles of entities of that unit mentioned in the sentence
    capitalised: frozenset[str] = _NO_TITLES  # mentions spelled with capitals inside the sentence (name evidence)
    lower_case: frozenset[str] = _NO_TITLES  # mentions spelled in lower case (common-noun evidence)


def sentence_key(text: str) -> int:
    """A 64-bit hash of a sentence's text, the same in every process (kept with a build)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def rating(size: int, mean_degree: float) -> float:
    """The extractive impact rating in [0, 10]: ``10 · (1 − exp(−(size + mean_degree) / 25))``."""
    return round(10.0 * (1.0 - math.exp(-(max(size, 0) + max(mean_degree, 0.0)) / RATING_SCALE)), 1)


def join_names(names: Sequence[str]) -> str:
    """ "A", "A and B", "A, B and C"."""
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def lead(sentence: str, words: int = LEAD_WORDS) -> str:
    """The first ``words`` words of a sentence, with "…" when cut."""
    parts = sentence.split()
    if len(parts) <= words:
        return sentence
    return " ".join(parts[:words]).rstrip(",;:-—") + "…"


def citation(unit_id: str) -> str:
    return f"[Data: Sources ({short_id(unit_id)})]"


def titles_by_unit(entities: pl.DataFrame, unit_ids: Collection[str]) -> dict[str, list[str]]:
    """The titles of the entities that cite each of ``unit_ids`` (those a unit's sentences can mention), sorted."""
    exploded = entities.select("title", unit="text_unit_ids").explode("unit").drop_nulls("unit")
    grouped = exploded.filter(pl.col("unit").is_in(sorted(unit_ids))).group_by("unit").agg(pl.col("title").sort())
    # lists made by polars in one call: a Python loop over the 4 M (unit, title) pairs of 100,000
    # documents took 10 s of an update
    return dict(zip(grouped.get_column("unit").to_list(), grouped.get_column("title").to_list(), strict=True))


def unit_sentences(
    unit_ids: Collection[str], titles_of_unit: Mapping[str, list[str]], text_units: pl.DataFrame
) -> Iterator[_Sentence]:
    """The sentences of the needed units that mention an entity of their unit, in reading order,
    each with the entity titles it mentions: made one unit at a time and not kept, since every
    sentence of a large corpus (2.4 M at 100,000 documents) was 2.5 GB held at once."""
    for position, unit_id, text in units_in_order(text_units, unit_ids).iter_rows():
        yield from sentences_of_unit(unit_id, position, text, titles_of_unit.get(unit_id, []))


def units_in_order(text_units: pl.DataFrame, ids: Collection[str]) -> pl.DataFrame:
    """``position`` (first row in ``text_units``), ``id``, ``text`` of the units ``ids``, in reading order."""
    return (
        text_units.select("id", "text")
        .with_row_index("position")
        .filter(pl.col("id").is_in(sorted(ids)))
        .unique("id", keep="first", maintain_order=True)
    )


def sentences_of_unit(unit_id: str, position: int, text: str | None, titles: list[str]) -> Iterator[_Sentence]:
    """The sentences of one unit (at ``position`` in text_units) that mention one of its ``titles``."""
    for index, (sentence, key, words) in enumerate(sentences_with_words(text or "")):
        mentions = frozenset(t for t in titles if f" {t} " in key)
        if mentions:  # a sentence that mentions no entity never becomes a finding
            capitalised, lower_case = _spellings(sentence, mentions, words)
            yield _Sentence(
                unit_id,
                position,
                index,
                sentence,
                sentence_key(sentence),
                len(sentence) > LONG_SENTENCE_CHARS,
                mentions,
                capitalised,
                lower_case,
            )


def _spellings(sentence: str, titles: frozenset[str], words: list[Token]) -> tuple[frozenset[str], frozenset[str]]:
    """Which ``titles`` the sentence spells capitalised, and which in lower case.

    An occurrence counts by its first and last words ("Ghost of Christmas Past" is capitalised);
    one at the sentence start is no evidence of a name ("Merry Christmas!" is "a merry Christmas").
    ``words`` are the sentence's words as its unit's tokenisation gave them, which are the ones of
    the sentence tokenised alone unless it has no lower-case letter (then it is prepared alone, as
    always: lower-cased). Not tokenising each sentence a second time took the sentence pass of a
    20,000-document index from 74.6 to 63.0 s (load 6; 0 differences in 550 k sentences of four
    corpora, ``core/sentences.py``).
    """
    if not any(ch.islower() for ch in sentence):
        words = [t for t in tokenize(prepare_text(sentence)) if t.kind == "word"]
    upper = [w.text.upper() for w in words]
    capitalised: set[str] = set()
    lower_case: set[str] = set()
    for title in titles:
        parts = title.split(" ")
        for start in range(len(upper) - len(parts) + 1):
            if upper[start : start + len(parts)] != parts:
                continue
            first, last = words[start], words[start + len(parts) - 1]
            if first.text[:1].islower() or last.text[:1].islower():
                lower_case.add(title)
            elif not first.initial:
                capitalised.add(title)
    return (frozenset(capitalised) if capitalised else _NO_TITLES), (
        frozenset(lower_case) if lower_case else _NO_TITLES
    )


class Findings:
    """A community's findings, offered its sentences one at a time: the ``limit`` best sentences
    of distinct text, as sorting all of them would choose. A sentence scores ``Σ (1 + degree)``
    over the community's entities it mentions; higher scores first, sentences over
    ``LONG_SENTENCE_CHARS`` last, ties by position. Holding ``limit`` sentences per community
    instead of every sentence of its units keeps the step's memory flat in the corpus size.
    Texts are told apart by :func:`sentence_key`, so sentences whose text is not read yet can
    compete too."""

    __slots__ = ("degree", "limit", "kept")

    def __init__(self, degree: dict[str, int], limit: int) -> None:
        self.degree = degree  # member title -> its degree in the whole graph
        self.limit = limit
        self.kept: dict[int, tuple[tuple[bool, int, int, int], _Sentence]] = {}  # by text key: best so far

    def offer(self, sentence: _Sentence) -> None:
        mentioned = sentence.mentions & self.degree.keys()
        if not mentioned:
            return
        order = (sentence.long, -sum(1 + self.degree[t] for t in mentioned), sentence.position, sentence.index)
        kept = self.kept.get(sentence.key)
        if kept is not None:
            if order < kept[0]:  # the same text, placed better: it takes that place
                self.kept[sentence.key] = (order, sentence)
            return
        if len(self.kept) >= self.limit:
            worst = max(self.kept, key=lambda key: self.kept[key][0])
            if order > self.kept[worst][0]:
                return
            del self.kept[worst]
        self.kept[sentence.key] = (order, sentence)

    def best(self) -> list[_Sentence]:
        return [sentence for _, sentence in sorted(self.kept.values(), key=lambda item: item[0])]

    def read_texts(self, texts: Mapping[tuple[str, int], str]) -> None:
        """Give the kept sentences not read yet their text, by (unit, sentence position)."""
        for key, (order, sentence) in self.kept.items():
            if sentence.text is None:
                self.kept[key] = (order, replace(sentence, text=texts[(sentence.unit_id, sentence.index)]))


def _title_order(proper_names: set[str]):
    """Sort key of community members for the title: names, plain phrases, awkward words; degree; title."""
    numbers = word_lists().numbers

    def awkward(title: str) -> bool:
        return any("-" in word or word.lower() in numbers or word.isdigit() for word in title.split(" "))

    def key(member: tuple[str, int, list[str]]) -> tuple[bool, bool, int, str]:
        title, degree, _ = member
        return (title not in proper_names, awkward(title), -degree, title)

    return key


@dataclass(slots=True)
class Plan:
    """A community to report on: its row, its members (title, degree in the whole graph, text
    units) and the units its findings come from (its ``text_unit_ids``, else its members' units)."""

    row: dict
    members: list[tuple[str, int, list[str]]]
    units: list[str]


def community_plans(communities: pl.DataFrame, entities: pl.DataFrame) -> list[Plan]:
    """One plan per community, by level then community number (the order of the reports)."""
    entity_info = entities.select("id", "title", pl.col("degree").fill_null(0), "text_unit_ids")
    by_id = {row[0]: (row[1], row[2], row[3] or []) for row in entity_info.iter_rows()}
    plans = []
    for row in communities.sort("level", "community").drop("relationship_ids", strict=False).iter_rows(named=True):
        members = [by_id[i] for i in dict.fromkeys(row["entity_ids"] or []) if i in by_id]
        units = list(dict.fromkeys(row["text_unit_ids"] or []))
        if not units:
            units = sorted({u for member in members for u in member[2]})
        plans.append(Plan(row, members, units))
    return plans


def new_findings(plan: Plan, max_findings: int) -> Findings:
    return Findings({title: degree for title, degree, _ in plan.members}, max(max_findings, 1))


def add_votes(votes: dict[str, int], sentence: _Sentence) -> None:
    """Count the sentence's spellings of its titles: capitalised +1, lower case -1 (names are > 0)."""
    for title in sentence.capitalised:
        votes[title] = votes.get(title, 0) + 1
    for title in sentence.lower_case:
        votes[title] = votes.get(title, 0) - 1


def report_row(plan: Plan, chosen: Findings, proper_names: set[str], internal_links: int) -> dict:
    """The report of a planned community from its findings and the corpus's proper names."""
    members = sorted(plan.members, key=_title_order(proper_names))  # the title names the first ones
    return _report(plan.row, members, len(plan.units), chosen.best(), internal_links)


def extractive_reports(
    communities: pl.DataFrame,
    entities: pl.DataFrame,
    relationships: pl.DataFrame,
    text_units: pl.DataFrame,
    *,
    max_findings: int = 5,
    internal_links: Mapping[int, int] | None = None,
) -> pl.DataFrame:
    """One extractive report per community, conforming to ``schemas.COMMUNITY_REPORTS``.

    ``text_units`` needs ``id`` and ``text``; its row order is the reading order used to break
    ties. ``relationships`` gives the community's internal link count for the summary, unless
    ``internal_links`` gives it (counted where the tables are stored, without loading them).
    An update that keeps the reports of unchanged communities is
    :func:`graphrag_assets.index.extractive_reuse.update_extractive_reports`.
    """
    if communities.is_empty():
        return empty_frame(COMMUNITY_REPORTS)
    links = _internal_links(communities, relationships) if internal_links is None else internal_links
    plans = community_plans(communities, entities)
    plans_of_unit: dict[str, list[int]] = {}  # unit id -> the communities (plan numbers) it belongs to
    for number, plan in enumerate(plans):
        for unit in plan.units:
            plans_of_unit.setdefault(unit, []).append(number)
    findings = [new_findings(plan, max_findings) for plan in plans]
    votes: dict[str, int] = {}  # capitalised minus lower-case spellings inside sentences, per title
    units = plans_of_unit.keys()
    for sentence in unit_sentences(units, titles_by_unit(entities, units), text_units):
        add_votes(votes, sentence)
        for number in plans_of_unit[sentence.unit_id]:
            findings[number].offer(sentence)
    proper = {title for title, vote in votes.items() if vote > 0}
    rows = [
        report_row(plan, chosen, proper, links.get(plan.row["community"], 0)) for plan, chosen in zip(plans, findings)
    ]
    return conform(pl.DataFrame(rows, schema=COMMUNITY_REPORTS), COMMUNITY_REPORTS)


def _internal_links(communities: pl.DataFrame, relationships: pl.DataFrame) -> dict[int, int]:
    """Distinct ``relationship_ids`` per community that ``relationships`` holds (all when it holds none).

    Counted in polars: a large graph has millions of ids, too many to hold as Python strings.
    """
    if "relationship_ids" not in communities.columns:
        return {}
    ids = (
        communities.select("community", id=pl.col("relationship_ids").cast(pl.List(pl.String)))
        .explode("id")
        .drop_nulls("id")
        .unique()
    )
    if "id" in relationships.columns and not relationships.is_empty():
        ids = ids.join(relationships.select("id"), on="id", how="semi")
    return dict(ids.group_by("community").agg(pl.len()).iter_rows())


def _report(
    row: dict,
    members: list[tuple[str, int, list[str]]],
    unit_count: int,
    chosen: list[_Sentence],
    internal_links: int,
) -> dict:
    community = row["community"]
    degree = {title: deg for title, deg, _ in members}
    names = [title for title, _, _ in members[:TITLE_ENTITIES]]
    title = join_names(names) if names else f"Community {community}"

    size = len(members)
    mean_degree = sum(degree.values()) / size if size else 0.0
    plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"  # noqa: E731
    summary = (
        f"A community of {plural(size, 'noun phrase')} around {join_names(names) or 'no named entity'}, "
        f"linked by {plural(internal_links, 'co-occurrence relationship')} in {plural(unit_count, 'text unit')}."
    )
    if chosen:
        top = chosen[0]
        passage = shorten(top.text, SUMMARY_SENTENCE_MAX_CHARS)
        summary += f' Its most central passage: "{passage}" {citation(top.unit_id)}'
    findings = [
        {
            "summary": lead(sentence.text),
            "explanation": f"{shorten(sentence.text, EXPLANATION_MAX_CHARS)} {citation(sentence.unit_id)}",
        }
        for sentence in chosen
    ]
    value = rating(size, mean_degree)
    rating_explanation = (
        f"Extractive report (no language model was used): the rating {value} of 10 grows with the "
        f"community's size ({size}) and its entities' mean degree ({mean_degree:.1f})."
    )
    full_content = render_markdown(title, summary, findings)
    full_content_json = json.dumps(
        {
            "title": title,
            "summary": summary,
            "rating": value,
            "rating_explanation": rating_explanation,
            "findings": findings,
            "extractive": True,
        },
        indent=4,
        ensure_ascii=False,
    )
    return {
        "id": stable_uuid(full_content),
        "human_readable_id": community,
        "community": community,
        "level": row.get("level"),
        "parent": row.get("parent"),
        "children": row.get("children"),
        "title": title,
        "summary": summary,
        "full_content": full_content,
        "rank": value,
        "rating_explanation": rating_explanation,
        "findings": findings,
        "full_content_json": full_content_json,
        "period": row.get("period"),
        "size": row.get("size") if row.get("size") is not None else size,
        "generation": GENERATION,
        "context_tokens": None,
        "substituted_reports": 0,
        "community_id": row.get("id"),
    }


def render_markdown(title: str, summary: str, findings: Sequence[dict[str, str]]) -> str:
    """``# title``, the summary, then ``## finding summary`` and its explanation per finding."""
    parts = [f"# {title}", summary]
    for finding in findings:
        parts.append(f"## {finding['summary']}")
        parts.append(finding["explanation"])
    return "\n\n".join(parts)
