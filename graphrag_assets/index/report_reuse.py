"""Which community reports an update reused, regenerated or deleted, and why.

A report's model call is cached by its prompt, so a report is *reused* exactly when its prompt is
byte-identical to the one the previous run sent for the same community (same level and members).
Every report row carries ``community_id`` (the community's id: a hash of its level and members)
and ``prompt_hash`` (a hash of the prompt template's version, the word limit and the context
text), so comparing the new rows with the previous run's tells what happened to each:

- **reused**: the previous run sent the same prompt (for this community, or for the same members
  at another level), so its answer comes from the response cache;
- **members changed**: no previous report for this member set at this level (a new community, a
  changed one, or the first build);
- **child report changed**: same members, different prompt, and the context used the reports of
  its sub-communities (substitution) while at least one of its children was regenerated;
- **context changed**: same members, different prompt otherwise (a member's description, degree,
  relationship or claim changed, or the prompt template did);
- **deleted**: a previous community (by id) that no longer exists.

Reasons are checked in that order, so each regenerated report has exactly one, and
reused + regenerated equals the number of reports. A regenerated prompt may still be answered
from the cache (an edit undone, say): the model calls actually made are in ``llm_usage``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from graphrag_assets.core.ids import stable_hash

REUSED = "reused"
MEMBERS_CHANGED = "members changed"
CHILD_REPORT_CHANGED = "child report changed"
CONTEXT_CHANGED = "context changed"
REASONS = (MEMBERS_CHANGED, CHILD_REPORT_CHANGED, CONTEXT_CHANGED)

# The ``llm_usage`` purpose whose row carries the counts (the report calls' own purpose).
REUSE_PURPOSE = "community_report"

# One row per report of the current run: what happened to it.
PLAN = {"community": pl.Int64, "level": pl.Int64, "community_id": pl.String, "outcome": pl.String}


def prompt_hash(template_version: str, max_length: int, context_text: str) -> str:
    """The identity of a report prompt: equal hashes mean the same model call (and cache entry)."""
    return stable_hash("community_report_prompt", template_version, max_length, context_text)[:32]


@dataclass(frozen=True)
class ReuseSummary:
    """Counts of a run's reports by outcome; ``regenerated`` maps each reason to its count."""

    total: int
    reused: int
    regenerated: dict[str, int] = field(default_factory=dict)
    deleted: int = 0

    @property
    def regenerated_total(self) -> int:
        return sum(self.regenerated.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "reused": self.reused,
            "regenerated": self.regenerated_total,
            "deleted": self.deleted,
            "reasons": {reason: self.regenerated.get(reason, 0) for reason in REASONS},
        }

    def line(self) -> str:
        """One line for logs and the CLI."""
        reasons = ", ".join(f"{n} {reason}" for reason in REASONS if (n := self.regenerated.get(reason, 0)))
        regenerated = f"{self.regenerated_total} regenerated" + (f" ({reasons})" if reasons else "")
        return f"{self.reused} reused, {regenerated}, {self.deleted} deleted (of {self.total} reports)"


def _comparable(frame: pl.DataFrame | None) -> bool:
    return frame is not None and {"community_id", "prompt_hash"} <= set(frame.columns)


def reuse_plan(previous: pl.DataFrame | None, current: pl.DataFrame) -> pl.DataFrame:
    """One ``PLAN`` row per report in ``current``: ``reused`` or the reason it was regenerated.

    Both frames are ``community_reports`` tables; ``previous`` is the last run's (None, or one
    written before these columns existed, makes every report "members changed").
    """
    before: set[str] = set()
    prompts: set[str] = set()
    if _comparable(previous):
        before = set(previous["community_id"].drop_nulls().to_list())  # type: ignore[index]
        prompts = set(previous["prompt_hash"].drop_nulls().to_list())  # type: ignore[index]
    rows = current.select("community", "level", "community_id", "prompt_hash", "substituted_reports", "children")
    outcome: dict[int, str] = {}
    # Deepest level first: a parent's reason depends on whether its children were regenerated.
    for row in rows.sort("level", "community", descending=[True, False]).iter_rows(named=True):
        community_id = row["community_id"]
        if row["prompt_hash"] is not None and row["prompt_hash"] in prompts:
            outcome[row["community"]] = REUSED
        elif community_id is None or community_id not in before:
            outcome[row["community"]] = MEMBERS_CHANGED
        elif (row["substituted_reports"] or 0) > 0 and any(
            outcome.get(child, REUSED) != REUSED for child in row["children"] or []
        ):
            outcome[row["community"]] = CHILD_REPORT_CHANGED
        else:
            outcome[row["community"]] = CONTEXT_CHANGED
    return pl.DataFrame(
        [
            {"community": c, "level": level, "community_id": cid, "outcome": outcome[c]}
            for c, level, cid in rows.select("community", "level", "community_id").iter_rows()
        ],
        schema=PLAN,
    ).sort("level", "community")


def summarize_reuse(previous: pl.DataFrame | None, current: pl.DataFrame) -> ReuseSummary:
    """The counts of :func:`reuse_plan`, plus the previous reports whose community is gone."""
    plan = reuse_plan(previous, current)
    counts = dict(plan.group_by("outcome").agg(pl.len()).iter_rows())
    deleted = 0
    if _comparable(previous):
        current_ids = set(current["community_id"].drop_nulls().to_list())
        deleted = sum(1 for cid in previous["community_id"].drop_nulls().unique().to_list() if cid not in current_ids)  # type: ignore[index]
    return ReuseSummary(
        total=plan.height,
        reused=counts.get(REUSED, 0),
        regenerated={reason: counts[reason] for reason in REASONS if counts.get(reason)},
        deleted=deleted,
    )


# --- predicting it before a run (``index --dry-run``) -------------------------------------------


@dataclass(frozen=True)
class ReusePrediction:
    """What ``index --dry-run`` expects the next corpus run to do with the reports.

    ``regenerate`` counts the stored communities (any level) that hold an entity the changed
    documents mention or were extracted from: their members' descriptions, degrees or
    relationships change, so their prompts do. It is a lower bound: the new entities'
    descriptions are not known before extraction, and in exact mode a re-clustering can move
    further communities.
    """

    total: int
    regenerate: int
    affected_entities: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "regenerate_at_least": self.regenerate,
            "reuse_at_most": self.total - self.regenerate,
            "affected_entities": self.affected_entities,
        }


def mentioned_entities(entities: pl.DataFrame, texts: list[str]) -> set[str]:
    """Ids of the entities whose title occurs in one of ``texts`` as whole words, ignoring case."""
    import re

    if not texts or entities.is_empty():
        return set()
    haystack = "\n".join(texts).casefold()
    found: set[str] = set()
    for entity, title in entities.select("id", "title").iter_rows():
        needle = (title or "").casefold().strip()
        if needle and needle in haystack and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack):
            found.add(entity)
    return found


def entities_of_text_units(entities: pl.DataFrame, text_unit_ids: list[str]) -> set[str]:
    """Ids of the entities extracted from any of the text units (those of deleted or changed documents)."""
    if not text_unit_ids or entities.is_empty():
        return set()
    units = pl.Series(text_unit_ids, dtype=pl.String).implode()
    hit = entities.filter(pl.col("text_unit_ids").list.eval(pl.element().is_in(units)).list.any())
    return set(hit["id"].to_list())


def predict_reuse(communities: pl.DataFrame, affected: set[str]) -> ReusePrediction:
    """Stored communities that hold an affected entity id, at any level (see :class:`ReusePrediction`)."""
    if communities.is_empty():
        return ReusePrediction(0, 0, len(affected))
    wanted = pl.Series(sorted(affected), dtype=pl.String).implode()
    hit = communities.filter(pl.col("entity_ids").list.eval(pl.element().is_in(wanted)).list.any())
    return ReusePrediction(communities.height, hit.height, len(affected))
