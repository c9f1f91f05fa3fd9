"""The context a community report is written from, within a token budget.

Each community gets one text (the ``{input_text}`` of the report prompt) made of sections:

    -----Reports-----      reports already written for some of its sub-communities
    -----Entities-----     id|entity|type|description|degree
    -----Claims-----       id|subject|object|type|status|description
    -----Relationships-----  id|source|target|description|combined_degree

or, for the text variant (the "fast" method, reference §6.4), Reports and ``-----Sources-----``
(id|text). Empty sections are left out. Cells are separated by ``|``; a cell that contains ``|``
or a line break, or starts with a double quote, is written between double quotes with inner
quotes doubled (CSV rules with ``|`` as delimiter), so every description appears verbatim.

**Local numbering.** The ``id`` column numbers rows 1..n per section in context order; it is not
the corpus-wide ``human_readable_id``, which shifts whenever entities are added elsewhere. A
community whose own data did not change therefore gets a byte-identical prompt, and its report
comes from the LLM cache. :attr:`ReportContext.citations` maps the local numbers back to global
ids, which :mod:`graphrag_assets.index.community_reports` uses to rewrite the model's citations.
Ties in every ordering are broken by titles or ids that derive from content, never by row numbers.

**What goes in, in priority order** (graph variant). Relationships by ``combined_degree``
(descending, then source and target title); each brings its endpoints that are not in yet,
before itself, so a node can bring any number of edges (Microsoft keeps one edge per node,
quirk Q4). Then the entities that no kept edge brought in, by ``degree``, so members without
edges are visible too. Then the claims of the included entities, in entity order: supporting
detail, and one entity can have dozens (in Microsoft's Christmas Carol index Scrooge has enough
to fill a small budget on his own, which would crowd out every relationship if claims came with
their entity). Rows go in whole, in that order; a group (a relationship with its new endpoints,
an entity, a claim) that does not fit is skipped and the next is tried, so the budget is filled
with the most important material that fits, and relationships between entities already present
cost just one row.

**Hierarchical substitution** (what Microsoft intended but never runs, §6.2 / Q4). When a
community's own material does not fit, its sub-communities that already have a report are
sorted by the size of their own material (largest first) and substituted one by one: a
substituted child's report joins the Reports section and the rows it covers leave the raw
material (its entities, their claims, relationships inside it; a relationship between two
children stays, since neither report describes it). This stops at the first substitution that
fits; if none does, the reports go in first (largest child first, each if it fits) and the raw
material left fills the rest as above. Reports are rendered without their ``[Data: ...]``
citations (:func:`render_report_for_parent`), so the text depends only on the child's own answer
and the parent's prompt stays stable too. Reports must exist before the parent's context is
built, which is why reports are generated bottom-up.

Budget: ``max_input_length`` applies to this context text (the prompt's own instructions come on
top). Row sizes are estimated from cached per-row token counts while choosing, and the final text
is counted exactly and trimmed further, last group first, if the estimate was low.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.tokens import count_tokens

Variant = Literal["graph", "text"]

DELIMITER = "|"

# Section name (also the dataset name used in citations) -> header row.
SECTION_COLUMNS: dict[str, tuple[str, ...]] = {
    "Entities": ("id", "entity", "type", "description", "degree"),
    "Claims": ("id", "subject", "object", "type", "status", "description"),
    "Relationships": ("id", "source", "target", "description", "combined_degree"),
    "Sources": ("id", "text"),
}
REPORTS = "Reports"
GRAPH_SECTIONS = ("Entities", "Claims", "Relationships")
TEXT_SECTIONS = ("Sources",)

# An exact recount is only worth it when the estimate is near the budget.
_ESTIMATE_SLACK = 1.25

_CITATION = re.compile(r"\s*\[\s*data\s*:[^\[\]]*\]", re.IGNORECASE)


@dataclass(frozen=True)
class ReportContext:
    """The context of one community and what its local numbers stand for.

    ``citations`` maps a dataset name ("Entities", "Relationships", "Claims", "Reports",
    "Sources") to the global ids of its rows in local order: local id ``n`` is
    ``citations[name][n - 1]``. Global ids are ``human_readable_id`` for entities,
    relationships and claims, the community number for reports, and the short id of the
    text unit for sources (text-unit row numbers are only unique within a document).
    """

    community: int
    text: str
    tokens: int
    substituted: int = 0  # sub-community reports used in place of their raw rows
    trimmed: bool = False  # some raw rows did not fit and were left out
    citations: Mapping[str, tuple[int | str, ...]] = field(default_factory=dict)


# --- formatting ---------------------------------------------------------------------------------


def format_cell(value: object) -> str:
    """One table cell: verbatim unless it would break the row (see the module docstring)."""
    text = "" if value is None else str(value)
    if DELIMITER in text or "\n" in text or "\r" in text or text.startswith('"'):
        return '"' + text.replace('"', '""') + '"'
    return text


def format_row(values: Iterable[object]) -> str:
    return DELIMITER.join(format_cell(v) for v in values)


def strip_citations(text: str) -> str:
    """``text`` without its ``[Data: ...]`` markers."""
    return _CITATION.sub("", text).strip()


def render_report_for_parent(report: Mapping[str, Any]) -> str:
    """A sub-community's report as it appears in its parent's context, without citations.

    Only the report's own title, summary and findings are used, so the text is the same for the
    same model answer whatever the corpus-wide numbering is.
    """
    lines = [strip_citations(str(report.get("summary") or ""))]
    findings = [f for f in report.get("findings") or [] if f]
    if findings:
        lines.append("Findings:")
        for finding in findings:
            summary = strip_citations(str(finding.get("summary") or ""))
            explanation = strip_citations(str(finding.get("explanation") or ""))
            lines.append(f"- {summary}: {explanation}" if explanation else f"- {summary}")
    return "\n".join(line for line in lines if line)


def _title(report: Mapping[str, Any]) -> str:
    return strip_citations(str(report.get("title") or ""))


def reports_by_community(reports: pl.DataFrame) -> dict[int, dict[str, Any]]:
    """``community -> {title, summary, findings}`` from a ``community_reports`` frame."""
    return {
        row["community"]: {"title": row["title"], "summary": row["summary"], "findings": row["findings"] or []}
        for row in reports.select("community", "title", "summary", "findings").iter_rows(named=True)
    }


# --- assembling a context within a budget -------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    section: str
    body: str  # the row without its local id
    global_id: int | str


@dataclass(frozen=True)
class _Report:
    community: int
    title: str
    body: str


class TokenCache:
    """Token counts of context lines, cached: rows recur across levels and substitution attempts.

    One is shared by every level of a run through :class:`ContextBudget`.
    """

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._cache: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        cost = self._cache.get(text)
        if cost is None:
            cost = count_tokens(text, self.encoding)
            self._cache[text] = cost
        return cost

    def row(self, row: _Row, number: int = 1) -> int:
        """Tokens of the row's line, plus the line break before it (an estimate, see below).

        The tokenizer splits text into pieces before merging, and a line break ends a piece (it
        only joins the punctuation or spaces just before it), so per-line counts add up to the
        exact count of the whole text or slightly more. The local number is counted apart from
        the body, which may split one more piece: again slightly more. So the estimate errs on
        the safe side, and a body is counted once however its number changes.
        """
        return self(f"{number}{DELIMITER}") + self(row.body) + 1

    def report(self, report: _Report, number: int = 1) -> int:
        return self(f"Report {number}: {report.title}\n{report.body}") + 1  # and the blank line

    def section(self, name: str) -> int:
        header = f"-----{name}-----" + (f"\n{format_row(SECTION_COLUMNS[name])}" if name in SECTION_COLUMNS else "")
        return self(header) + 1  # and the blank line before it


class _Assembly:
    """Reports and row groups added in priority order, each whole or not at all.

    Normally a group that does not fit is refused and later ones are still tried. With
    ``all_or_nothing`` (used to test whether *everything* fits) the first refusal makes the
    assembly ``full``: everything after is refused at no cost and walkers stop early.
    """

    def __init__(
        self, sections: Sequence[str], costs: TokenCache, budget: int, *, all_or_nothing: bool = False
    ) -> None:
        self.sections = sections
        self.costs = costs
        self.budget = budget
        self.all_or_nothing = all_or_nothing  # after the first refusal, refuse everything (cheaply)
        self.overflow = False  # some group was refused
        self.used = 0
        self.groups: list[list[_Row | _Report]] = []
        self._counts: dict[str, int] = {}  # rows per section so far (gives the next local number)

    def add(self, group: list[_Row | _Report]) -> bool:
        """Add ``group`` if it fits the budget; True when added."""
        if self.full:
            return False
        cost = 0
        counts = dict(self._counts)
        for item in group:
            name = REPORTS if isinstance(item, _Report) else item.section
            number = counts.get(name, 0) + 1
            counts[name] = number
            if number == 1:
                # n sections have n - 1 blank lines between them; section() counts one each
                cost += self.costs.section(name) - (1 if len(counts) == 1 else 0)
            cost += self.costs.report(item, number) if isinstance(item, _Report) else self.costs.row(item, number)
        if self.used + cost > self.budget:
            self.overflow = True
            return False
        self.used += cost
        self._counts = counts
        self.groups.append(group)
        return True

    @property
    def full(self) -> bool:
        return self.overflow and self.all_or_nothing

    def render(self) -> tuple[str, dict[str, tuple[int | str, ...]]]:
        reports = [item for group in self.groups for item in group if isinstance(item, _Report)]
        rows = [item for group in self.groups for item in group if isinstance(item, _Row)]
        parts: list[str] = []
        citations: dict[str, tuple[int | str, ...]] = {}
        if reports:
            blocks = [f"Report {n}: {r.title}\n{r.body}" for n, r in enumerate(reports, start=1)]
            parts.append(f"-----{REPORTS}-----\n" + "\n\n".join(blocks))
            citations[REPORTS] = tuple(r.community for r in reports)
        for name in self.sections:
            in_section = [row for row in rows if row.section == name]
            if not in_section:
                continue
            lines = [f"-----{name}-----", format_row(SECTION_COLUMNS[name])]
            lines.extend(f"{n}{DELIMITER}{row.body}" for n, row in enumerate(in_section, start=1))
            parts.append("\n".join(lines))
            citations[name] = tuple(row.global_id for row in in_section)
        return "\n\n".join(parts), citations

    def fit_exactly(self) -> tuple[str, int, dict[str, tuple[int | str, ...]]]:
        """The rendered text and its exact token count, dropping the last groups while over budget."""
        while True:
            text, citations = self.render()
            tokens = count_tokens(text, self.costs.encoding)
            if tokens <= self.budget or not self.groups:
                return text, tokens, citations
            self.groups.pop()


# A walker adds a community's raw material, minus what substituted children cover, in priority order.
Walker = Callable[[_Assembly, frozenset[int]], None]


@dataclass(frozen=True)
class _Community:
    community: int
    child_sizes: Mapping[int, tuple[int, str]]  # child -> (tokens of the raw rows it covers, tie-breaker)
    walk: Walker
    sections: tuple[str, ...]


def _build_context(
    community: _Community,
    child_reports: Mapping[int, Mapping[str, Any]],
    costs: TokenCache,
    max_input_length: int,
) -> ReportContext:
    candidates = sorted(
        (child for child in community.child_sizes if child in child_reports),
        key=lambda child: (-community.child_sizes[child][0], community.child_sizes[child][1]),
    )
    reports = [
        _Report(child, _title(child_reports[child]), render_report_for_parent(child_reports[child]))
        for child in candidates
    ]

    # Everything, with the `count` largest children replaced by their reports: the first that fits.
    # Estimates are close to (and rarely below) the exact count, so an attempt is abandoned as soon
    # as its estimate is well over the budget, and only promising ones are counted exactly.
    for count in range(len(candidates) + 1):
        attempt = _Assembly(community.sections, costs, int(max_input_length * _ESTIMATE_SLACK), all_or_nothing=True)
        for report in reports[:count]:
            attempt.add([report])
        community.walk(attempt, frozenset(candidates[:count]))
        if attempt.overflow:
            continue
        text, citations = attempt.render()
        tokens = count_tokens(text, costs.encoding)
        if tokens <= max_input_length:
            return ReportContext(community.community, text, tokens, count, False, citations)

    assembly = _Assembly(community.sections, costs, max_input_length)
    for report in reports:
        assembly.add([report])
    community.walk(assembly, frozenset(candidates))
    text, tokens, citations = assembly.fit_exactly()
    return ReportContext(community.community, text, tokens, len(citations.get(REPORTS, ())), True, citations)


# --- graph variant ------------------------------------------------------------------------------


def _entity_rows(entities: pl.DataFrame) -> dict[str, dict[str, Any]]:
    columns = ["id", "human_readable_id", "title", "type", "description", "degree"]
    return {row["id"]: row for row in entities.select(columns).iter_rows(named=True)}


def _claims_by_subject(covariates: pl.DataFrame | None) -> dict[str, list[_Row]]:
    """Claim rows per subject title, identical rows once (first global id), in content order."""
    if covariates is None or covariates.is_empty():
        return {}
    found: dict[str, dict[str, int]] = {}
    for row in covariates.select(
        "subject_id", "object_id", "type", "status", "description", "human_readable_id"
    ).iter_rows(named=True):
        body = format_row((row["subject_id"], row["object_id"], row["type"], row["status"], row["description"]))
        seen = found.setdefault(row["subject_id"], {})
        hrid = row["human_readable_id"]
        if body not in seen or hrid < seen[body]:
            seen[body] = hrid
    return {
        subject: [_Row("Claims", body, hrid) for body, hrid in sorted(rows.items())] for subject, rows in found.items()
    }


def _graph_community(
    row: Mapping[str, Any],
    communities: Mapping[int, Mapping[str, Any]],
    entity_by_id: Mapping[str, Mapping[str, Any]],
    relationship_by_id: Mapping[str, Mapping[str, Any]],
    claims_of: Mapping[str, list[_Row]],
    costs: TokenCache,
) -> _Community:
    members = {e["title"]: e for eid in row["entity_ids"] or [] if (e := entity_by_id.get(eid)) is not None}
    edges = sorted(
        (
            r
            for rid in row["relationship_ids"] or []
            if (r := relationship_by_id.get(rid)) is not None and r["source"] in members and r["target"] in members
        ),
        key=lambda r: (-(r["combined_degree"] or 0), r["source"], r["target"]),
    )
    ranked = sorted(members.values(), key=lambda e: (-(e["degree"] or 0), e["title"]))

    def entity_row(e: Mapping[str, Any]) -> _Row:
        body = format_row((e["title"], e["type"], e["description"], e["degree"] or 0))
        return _Row("Entities", body, e["human_readable_id"])

    def edge_row(r: Mapping[str, Any]) -> _Row:
        return _Row(
            "Relationships",
            format_row((r["source"], r["target"], r["description"], r["combined_degree"] or 0)),
            r["human_readable_id"],
        )

    # Which child covers which entity / relationship (children partition their parent's members).
    owner_of_title: dict[str, int] = {}
    for child in row["children"] or []:
        child_row = communities.get(child)
        if child_row is None:
            continue
        for eid in child_row["entity_ids"] or []:
            entity = entity_by_id.get(eid)
            if entity is not None and entity["title"] in members:
                owner_of_title[entity["title"]] = child
    owners: dict[Any, int] = dict(owner_of_title)
    for r in edges:
        child = owner_of_title.get(r["source"])
        if child is not None and child == owner_of_title.get(r["target"]):
            owners[("edge", r["source"], r["target"])] = child

    sizes: dict[int, list[Any]] = {}
    for title, child in owner_of_title.items():
        size = sizes.setdefault(child, [0, title])
        size[0] += costs.row(entity_row(members[title])) + sum(costs.row(c) for c in claims_of.get(title, ()))
        size[1] = min(size[1], title)
    for r in edges:
        child = owners.get(("edge", r["source"], r["target"]))
        if child is not None:
            sizes[child][0] += costs.row(edge_row(r))

    def walk(assembly: _Assembly, substituted: frozenset[int]) -> None:
        def eligible(title: str) -> bool:
            return owners.get(title) not in substituted

        included: dict[str, None] = {}  # titles in order of inclusion
        for r in edges:
            if assembly.full:
                return
            if owners.get(("edge", r["source"], r["target"])) in substituted:
                continue
            new = [t for t in dict.fromkeys((r["source"], r["target"])) if t not in included and eligible(t)]
            if assembly.add([*(entity_row(members[t]) for t in new), edge_row(r)]):
                included.update(dict.fromkeys(new))
        for entity in ranked:
            title = entity["title"]
            if title not in included and eligible(title) and assembly.add([entity_row(entity)]):
                included[title] = None
        for title in included:
            for claim in claims_of.get(title, ()):
                assembly.add([claim])

    return _Community(
        row["community"],
        {child: (size, first) for child, (size, first) in sizes.items()},
        walk,
        GRAPH_SECTIONS,
    )


@dataclass(frozen=True)
class ReportTables:
    """The tables community reports are written from.

    The graph variant reads ``relationships`` (and ``covariates`` when claims were extracted), the
    text variant ``text_units``; ``communities`` must also hold the children of the communities
    being reported on (their members decide what a child's report covers).
    """

    communities: pl.DataFrame
    entities: pl.DataFrame
    relationships: pl.DataFrame | None = None
    covariates: pl.DataFrame | None = None
    text_units: pl.DataFrame | None = None


@dataclass
class ContextBudget:
    """How many tokens a report context may hold, counted with ``encoding``.

    One budget is shared by every level of a run, so its row token counts are cached once.
    """

    max_input_length: int = 8000
    encoding: str = "cl100k_base"
    costs: TokenCache = field(init=False)

    def __post_init__(self) -> None:
        self.costs = TokenCache(self.encoding)


def _community_rows(communities: pl.DataFrame) -> dict[int, dict[str, Any]]:
    columns = ["community", "level", "children", "entity_ids", "relationship_ids", "text_unit_ids"]
    return {row["community"]: row for row in communities.select(columns).iter_rows(named=True)}


def _at_level(rows: Mapping[int, Mapping[str, Any]], level: int | None) -> list[Mapping[str, Any]]:
    return [rows[c] for c in sorted(rows) if level is None or rows[c]["level"] == level]


def build_report_contexts(
    tables: ReportTables,
    child_reports: Mapping[int, Mapping[str, Any]] | None = None,
    level: int | None = None,
    budget: ContextBudget | None = None,
) -> dict[int, ReportContext]:
    """Graph-variant contexts of the communities at ``level`` (all rows when None).

    ``child_reports`` maps a community number to its report (``title``, ``summary``,
    ``findings``), e.g. from :func:`reports_by_community`.
    """
    if tables.relationships is None:
        raise ValueError("the graph variant needs the relationships table")
    budget = budget or ContextBudget()
    rows = _community_rows(tables.communities)
    entity_by_id = _entity_rows(tables.entities)
    relationship_by_id = {
        r["id"]: r
        for r in tables.relationships.select(
            "id", "human_readable_id", "source", "target", "description", "combined_degree"
        ).iter_rows(named=True)
    }
    claims_of = _claims_by_subject(tables.covariates)
    return {
        row["community"]: _build_context(
            _graph_community(row, rows, entity_by_id, relationship_by_id, claims_of, budget.costs),
            child_reports or {},
            budget.costs,
            budget.max_input_length,
        )
        for row in _at_level(rows, level)
    }


# --- text variant -------------------------------------------------------------------------------


def _text_community(
    row: Mapping[str, Any],
    communities: Mapping[int, Mapping[str, Any]],
    entity_by_id: Mapping[str, Mapping[str, Any]],
    text_of: Mapping[str, str],
    costs: TokenCache,
) -> _Community:
    members = [e for eid in row["entity_ids"] or [] if (e := entity_by_id.get(eid)) is not None]
    child_of: dict[str, int] = {}
    for child in row["children"] or []:
        for eid in (communities.get(child) or {}).get("entity_ids") or []:
            child_of[eid] = child

    # Each unit: its score and the members that mention it. The community's own units count even
    # when no member lists them (they come from its relationships).
    score: dict[str, int] = {uid: 0 for uid in row["text_unit_ids"] or [] if uid in text_of}
    mentioned_by: dict[str, set[str]] = {uid: set() for uid in score}
    for entity in members:
        for uid in set(entity["text_unit_ids"] or ()):
            if uid not in text_of:
                continue
            score[uid] = score.get(uid, 0) + (entity["degree"] or 0)
            mentioned_by.setdefault(uid, set()).add(entity["id"])
    units = sorted(score, key=lambda uid: (-score[uid], uid))

    def unit_row(uid: str) -> _Row:
        return _Row("Sources", format_row((text_of[uid],)), short_id(uid))

    owners: dict[Any, int] = {}
    sizes: dict[int, list[Any]] = {}
    for uid in units:
        owning = {child_of.get(eid) for eid in mentioned_by[uid]}
        if len(owning) == 1 and None not in owning:
            child = owning.pop()
            owners[uid] = child
            size = sizes.setdefault(child, [0, uid])
            size[0] += costs.row(unit_row(uid))
            size[1] = min(size[1], uid)

    def walk(assembly: _Assembly, substituted: frozenset[int]) -> None:
        for uid in units:
            if assembly.full:
                return
            if owners.get(uid) not in substituted:
                assembly.add([unit_row(uid)])

    return _Community(
        row["community"],
        {child: (size, first) for child, (size, first) in sizes.items()},
        walk,
        TEXT_SECTIONS,
    )


def build_text_report_contexts(
    tables: ReportTables,
    child_reports: Mapping[int, Mapping[str, Any]] | None = None,
    level: int | None = None,
    budget: ContextBudget | None = None,
) -> dict[int, ReportContext]:
    """Text-variant contexts: the community's text units as a Sources table (reference §6.4).

    A unit's score is the sum of the degrees of the community's entities that mention it
    (``entities.text_unit_ids``); units go in by score, then id. The candidate units are the
    community's ``text_unit_ids`` plus those its members mention, so a community without an
    internal relationship still has sources. A unit mentioned only by the entities of one child
    is covered by that child's report when it is substituted.
    """
    if tables.text_units is None:
        raise ValueError("the text variant needs the text_units table")
    budget = budget or ContextBudget()
    rows = _community_rows(tables.communities)
    entity_by_id = {
        e["id"]: e for e in tables.entities.select("id", "title", "degree", "text_unit_ids").iter_rows(named=True)
    }
    text_of = dict(tables.text_units.select("id", "text").iter_rows())
    return {
        row["community"]: _build_context(
            _text_community(row, rows, entity_by_id, text_of, budget.costs),
            child_reports or {},
            budget.costs,
            budget.max_input_length,
        )
        for row in _at_level(rows, level)
    }
