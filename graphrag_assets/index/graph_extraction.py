"""LLM graph (and claim) extraction over text units, with gleaning.

For each text unit the model is asked once with the filled extraction prompt, then up to
``max_gleanings`` times to add what it missed. The conversation is kept (user, assistant,
user-continue, assistant, ...) so the model knows what it already wrote. Between two gleanings a
side question asks whether anything is still missing (Y/N); it is not asked after the last
allowed gleaning, so the default of one gleaning costs exactly two calls per unit.

Two deliberate differences from Microsoft GraphRAG (reference §13):

- Q1: MS glues the answers together without a delimiter, so the first record of a gleaning
  that follows ``<|COMPLETE|>`` is lost. :func:`join_answers` removes completion markers and
  joins the answers with the record delimiter.
- Q2: MS requests claim gleanings but parses only the first answer; here gleanings of claims
  are parsed like those of the graph.

A unit whose model call fails for good (:class:`LLMError`) is reported in
``ExtractionOutput.failed_units`` with its records left out; the caller decides (the Dagster
asset fails the partition rather than store a silently incomplete graph). A unit with text whose
answers hold no record at all is listed in ``ExtractionOutput.empty_units``: a model that does not
follow the record format (or answers only with reasoning) otherwise "extracts 0 entities" silently.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import LLMError
from graphrag_assets.core.ownership import DOCUMENT, cache_owner
from graphrag_assets.core.settings import ExtractionSettings
from graphrag_assets.index.extraction_parser import (
    COMPLETION_DELIMITER,
    RECORD_DELIMITER,
    TUPLE_DELIMITER,
    EntityRecord,
    ParsedAnswer,
    ParsedClaims,
    ParseFailure,
    ends_mid_record,
    parse_claims_answer,
    parse_graph_answer,
)
from graphrag_assets.llm.types import ChatModel, ChatOptions, Message
from graphrag_assets.prompts.templates import PromptTemplate, load_prompt

GRAPH_PURPOSE = "extract_graph"
CLAIMS_PURPOSE = "extract_claims"

_COMPLETION = re.compile(r"<\|\s*complete\s*\|>", re.IGNORECASE)


@dataclass(frozen=True)
class GleaningPrompts:
    """The three prompts of one gleaning loop."""

    extract: PromptTemplate
    continue_: PromptTemplate
    loop_check: PromptTemplate


@dataclass(frozen=True)
class ClaimOptions:
    """Claim extraction settings (claims are off unless this is passed)."""

    description: str
    prompts: GleaningPrompts
    max_gleanings: int = 1


@dataclass(frozen=True)
class ExtractionPlan:
    """What to ask of every text unit: the entity types, the prompts and how many gleanings."""

    entity_types: Sequence[str]
    prompts: GleaningPrompts
    max_gleanings: int = 1
    claims: ClaimOptions | None = None  # claims are extracted only when set


def extraction_plan(settings: ExtractionSettings, root: Path | None = None) -> ExtractionPlan:
    """The plan the ``extraction`` settings describe (user prompt files resolved against ``root``).

    The Dagster asset and the dry run both build their requests from this, so the dry run counts
    exactly the calls a real run would make.
    """
    claims = None
    if settings.claims.enabled:
        claims = ClaimOptions(
            settings.claims.description, claim_prompts(settings.claims.prompt, root), settings.claims.max_gleanings
        )
    return ExtractionPlan(settings.entity_types, graph_prompts(settings.prompt, root), settings.max_gleanings, claims)


@dataclass
class Usage:
    """Calls and tokens spent (cached calls are counted, but cost nothing)."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: int = 0  # answers cut off at the token limit (not cached: the document is extracted again)

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.truncated += other.truncated


@dataclass(frozen=True)
class Conversation:
    """The answers of one gleaning loop, in order, and what they cost."""

    answers: list[str]
    usage: Usage


@dataclass(frozen=True)
class FailedUnit:
    text_unit_id: str
    document_key: str
    message: str


@dataclass
class ExtractionOutput:
    records: pl.DataFrame  # schemas.GRAPH_EXTRACTIONS
    parse_failures: dict[str, list[ParseFailure]] = field(default_factory=dict)  # by text unit id
    failed_units: list[FailedUnit] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    ignored_segments: int = 0  # headings and commentary found between records
    empty_units: list[str] = field(default_factory=list)  # units with text whose answers held no record
    truncated_units: list[str] = field(default_factory=list)  # units with an answer cut off at the token limit
    model: str = ""  # the chat model that answered

    @property
    def parse_failure_count(self) -> int:
        return sum(len(v) for v in self.parse_failures.values())


def graph_prompts(override: str | Path | None = None, root: Path | None = None) -> GleaningPrompts:
    """The built-in graph extraction prompts, with the first one replaced by the user's file if set."""
    return GleaningPrompts(
        extract=load_prompt("extract_graph", override, root),
        continue_=load_prompt("extract_graph_continue"),
        loop_check=load_prompt("extract_graph_loop_check"),
    )


def claim_prompts(override: str | Path | None = None, root: Path | None = None) -> GleaningPrompts:
    """The built-in claim extraction prompts, with the first one replaced by the user's file if set."""
    return GleaningPrompts(
        extract=load_prompt("extract_claims", override, root),
        continue_=load_prompt("extract_claims_continue"),
        loop_check=load_prompt("extract_graph_loop_check"),
    )


def join_answers(answers: Sequence[str], record_delimiter: str = RECORD_DELIMITER) -> str:
    """Join the answers of a gleaning loop into one text the parser reads as one answer.

    Completion markers are replaced by the record delimiter (a marker in the middle of an
    answer, glued to a following record, then also separates records); empty pieces and
    delimiters at the ends of each answer are dropped; answers are joined with the delimiter.
    """
    pieces: list[str] = []
    for answer in answers:
        text = _COMPLETION.sub(record_delimiter, answer).strip()
        while text.startswith(record_delimiter) or text.endswith(record_delimiter):
            text = text.removeprefix(record_delimiter).removesuffix(record_delimiter).strip()
        if text:
            pieces.append(text)
    return f"{record_delimiter}\n".join(pieces)


def wants_more(answer: str) -> bool:
    """Whether a loop-check reply says yes (``Y``, ``y``, ``Yes.``, ``"Y"``)."""
    letters = re.sub(r"[^A-Za-z]", "", answer)
    return letters[:1].upper() == "Y"


async def glean(
    model: ChatModel,
    first_prompt: str,
    *,
    prompts: GleaningPrompts,
    max_gleanings: int,
    purpose: str,
    parseable: Callable[[str], bool] | None = None,
) -> Conversation:
    """Run one extraction conversation and return every answer (initial first).

    An answer ``parseable`` rejects (no record could be read from it) is not cached, so the next
    run asks again instead of keeping a degraded graph forever; neither is one that stops inside a
    record (:func:`ends_mid_record`), which counts as cut off like one stopped at the token limit.
    """
    usage = Usage()
    version = prompts.extract.version
    continue_text = prompts.continue_.format()
    loop_check_text = prompts.loop_check.format()
    records = ChatOptions(prompt_version=version, cache_if=parseable, complete_if=_whole_answer)

    async def ask(messages: list[Message], options: ChatOptions = records) -> str:
        # a copy: the history grows after the call, and the client may keep what it was given
        result = await model.chat(list(messages), purpose=purpose, options=options)
        usage.calls += 1
        usage.cached_calls += int(result.cached)
        usage.prompt_tokens += result.prompt_tokens
        usage.completion_tokens += result.completion_tokens
        usage.truncated += int(result.truncated)
        return result.text

    history: list[Message] = [{"role": "user", "content": first_prompt}]
    answer = await ask(history)
    answers = [answer]
    history.append({"role": "assistant", "content": answer})
    for gleaning in range(max_gleanings):
        history.append({"role": "user", "content": continue_text})
        answer = await ask(history)
        answers.append(answer)
        history.append({"role": "assistant", "content": answer})
        if gleaning == max_gleanings - 1:
            break
        check = await ask([*history, {"role": "user", "content": loop_check_text}], ChatOptions(prompt_version=version))
        if not wants_more(check):
            break
    return Conversation(answers, usage)


def _whole_answer(text: str) -> bool:
    return not ends_mid_record(text)


def _fill(template: PromptTemplate, **values: object) -> str:
    """Fill a prompt, also offering the delimiters so prompts tuned for MS GraphRAG work."""
    return template.format(
        tuple_delimiter=TUPLE_DELIMITER,
        record_delimiter=RECORD_DELIMITER,
        completion_delimiter=COMPLETION_DELIMITER,
        **values,
    )


@dataclass
class _UnitResult:
    rows: list[dict[str, object]]
    failures: list[ParseFailure]
    ignored: int
    usage: Usage


async def _extract_unit(model: ChatModel, text: str, entity_types: str, plan: ExtractionPlan) -> _UnitResult:
    prompts, max_gleanings, claims = plan.prompts, plan.max_gleanings, plan.claims
    usage = Usage()
    graph_task = glean(
        model,
        _fill(prompts.extract, entity_types=entity_types, input_text=text),
        prompts=prompts,
        max_gleanings=max_gleanings,
        purpose=GRAPH_PURPOSE,
        parseable=_graph_answer_readable,
    )
    if claims is None:
        conversations = [await graph_task]
    else:
        claims_task = glean(
            model,
            _fill(
                claims.prompts.extract,
                entity_types=entity_types,
                entity_specs=entity_types,  # MS GraphRAG's name for the same value
                claim_description=claims.description,
                input_text=text,
            ),
            prompts=claims.prompts,
            max_gleanings=claims.max_gleanings,
            purpose=CLAIMS_PURPOSE,
            parseable=_claims_answer_readable,
        )
        outcomes = await asyncio.gather(graph_task, claims_task, return_exceptions=True)
        for outcome in outcomes:  # wait for both, so the other's answers reach the cache
            if isinstance(outcome, BaseException):
                raise outcome
        conversations = list(outcomes)
    for conversation in conversations:
        usage.add(conversation.usage)

    graph = parse_graph_answer(join_answers(conversations[0].answers))
    rows = _graph_rows(graph)
    failures = list(graph.failures)
    ignored = graph.ignored
    if claims is not None:
        parsed = parse_claims_answer(join_answers(conversations[1].answers))
        rows += _claim_rows(parsed)
        failures += parsed.failures
        ignored += parsed.ignored
    return _UnitResult(rows, failures, ignored, usage)


def _graph_answer_readable(text: str) -> bool:
    """False for an answer with unreadable segments and not one record (a wrong format, not "nothing found")."""
    parsed = parse_graph_answer(text)
    return not parsed.failures or bool(parsed.entities or parsed.relationships)


def _claims_answer_readable(text: str) -> bool:
    parsed = parse_claims_answer(text)
    return not parsed.failures or bool(parsed.claims)


def _graph_rows(parsed: ParsedAnswer) -> list[dict[str, object]]:
    """GRAPH_EXTRACTIONS fields of entity and relationship records, in answer order."""
    rows: list[dict[str, object]] = []
    for record in sorted([*parsed.entities, *parsed.relationships], key=lambda r: r.index):
        if isinstance(record, EntityRecord):
            rows.append(
                {"record_type": "entity", "title": record.title, "type": record.type, "description": record.description}
            )
        else:
            rows.append(
                {
                    "record_type": "relationship",
                    "source": record.source,
                    "target": record.target,
                    "description": record.description,
                    "weight": record.weight,
                }
            )
    return rows


def _claim_rows(parsed: ParsedClaims) -> list[dict[str, object]]:
    """GRAPH_EXTRACTIONS fields of claim records: subject as source, object as target."""
    return [
        {
            "record_type": "claim",
            "source": claim.subject,
            "target": claim.object,
            "type": claim.type,
            "status": claim.status,
            "start_date": claim.start_date,
            "end_date": claim.end_date,
            "description": claim.description,
            "source_text": claim.source_text,
        }
        for claim in parsed.claims
    ]


async def extract_graph_records(
    model: ChatModel,
    text_units: pl.DataFrame,
    plan: ExtractionPlan,
    on_unit_done: Callable[[int, int], None] | None = None,
) -> ExtractionOutput:
    """Extract records from every text unit (columns ``id``, ``text``, ``document_key``).

    All units run concurrently; the model bounds how many calls are in flight. Records of a
    unit are numbered in answer order (graph records first, then claims). Units with blank
    text cost no call. ``on_unit_done(done, total)`` is called as units finish (progress).
    """
    types_text = ", ".join(plan.entity_types)
    units = text_units.select("id", "text", "document_key").sort("id").to_dicts()
    total = len(units)
    done = 0

    async def run(unit: dict[str, str]) -> _UnitResult | FailedUnit:
        nonlocal done
        try:
            if not (unit["text"] or "").strip():
                return _UnitResult([], [], 0, Usage())
            with cache_owner(DOCUMENT, unit["document_key"]):  # its answers go when the document does
                return await _extract_unit(model, unit["text"].strip(), types_text, plan)
        except LLMError as exc:
            return FailedUnit(unit["id"], unit["document_key"], str(exc))
        finally:
            done += 1
            if on_unit_done is not None:
                on_unit_done(done, total)

    results = await asyncio.gather(*(run(unit) for unit in units))

    output = ExtractionOutput(records=schemas.empty_frame(schemas.GRAPH_EXTRACTIONS), model=model.model)
    rows: list[dict[str, object]] = []
    for unit, result in zip(units, results, strict=True):
        if isinstance(result, FailedUnit):
            output.failed_units.append(result)
            continue
        output.usage.add(result.usage)
        output.ignored_segments += result.ignored
        if result.failures:
            output.parse_failures[unit["id"]] = result.failures
        if result.usage.truncated:
            output.truncated_units.append(unit["id"])
        if not result.rows and (unit["text"] or "").strip():
            output.empty_units.append(unit["id"])
        for index, row in enumerate(result.rows):
            rows.append(
                {**row, "text_unit_id": unit["id"], "record_index": index, "document_key": unit["document_key"]}
            )
    if rows:
        output.records = schemas.conform(pl.DataFrame(rows, infer_schema_length=None), schemas.GRAPH_EXTRACTIONS)
    return output
