"""``eval``: how well the index answers a user's own questions, per query method.

A question set (JSONL or CSV: ``question``, optionally the expected ``answer`` or ``answers``, and
the gold ``sources``: document titles or ids) is asked with each method over the loaded index.
For each method the report gives:

- retrieval: hit@k (a gold source among the first k distinct documents of the context) and
  recall@k (the share of gold sources there), for questions with gold sources;
- answers: the share whose normalised text contains an expected answer (case, punctuation and
  articles ignored), and, when a chat model is configured, the share an LLM judge calls correct
  (rubric in the prompt file ``eval_judge.txt``; its calls are counted apart from the method's);
- cost: latency p50/p95 per question, model calls, tokens and dollars per question.

The index is loaded once and reused by every question and method, so latencies are those of a
warm engine (``serve``), not of a cold CLI process.
"""

from __future__ import annotations

import asyncio
import re
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.types import ChatOptions
from graphrag_assets.llm.usage import UsageCounts, UsageMeter
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.project.querying import uses_llm
from graphrag_assets.prompts.templates import load_prompt
from graphrag_assets.query.engine import load_query_prompts, run_query
from graphrag_assets.query.request import QueryOptions, SearchRequest
from graphrag_assets.query.results import QueryResult

JUDGE_PURPOSE = "eval_judge"


@dataclass(frozen=True)
class EvalQuestion:
    """One question of a set, with what a right answer says and where it is written."""

    question: str
    answers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # gold document titles or ids


@dataclass
class QuestionOutcome:
    """One question asked with one method."""

    question: str
    method: str
    seconds: float
    retrieved: list[str]  # distinct document titles of the context's sources, in order
    hit: bool | None  # None: the question names no gold source
    recall: float | None
    contains: bool | None  # None: no expected answer
    judged: bool | None  # None: no judge (no chat model, or no expected answer)
    usage: UsageCounts
    answer: str


@dataclass
class MethodSummary:
    """The figures of one method over the whole set."""

    method: str
    questions: int
    hit_at_k: float | None
    recall_at_k: float | None
    contains: float | None
    judged: float | None
    p50_seconds: float
    p95_seconds: float
    calls_per_question: float
    tokens_per_question: float
    cost_per_question: float


@dataclass
class EvalReport:
    """Everything ``eval`` measured; ``to_dict()`` is JSON-serializable."""

    k: int
    methods: list[MethodSummary]
    outcomes: list[QuestionOutcome] = field(default_factory=list)
    judge: UsageCounts | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "methods": [asdict(m) for m in self.methods],
            "questions": [{**asdict(o), "usage": asdict(o.usage)} for o in self.outcomes],
            "judge_usage": asdict(self.judge) if self.judge else None,
        }


def read_questions(path: Path) -> list[EvalQuestion]:
    """The question set in ``path`` (``.jsonl`` or ``.csv``); a missing ``question`` column, an
    empty set or an unreadable file is one clear error."""
    if not path.is_file():
        raise UserError(f"{path} does not exist; give a .jsonl or .csv file of questions.")
    try:
        if path.suffix.lower() == ".csv":
            frame = pl.read_csv(path, infer_schema=False)
        elif path.suffix.lower() in (".jsonl", ".ndjson"):
            frame = pl.read_ndjson(path, infer_schema_length=None)
        else:
            raise UserError(f"{path} is neither .jsonl nor .csv; write the questions as one of those.")
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise UserError(f"{path} could not be read ({str(exc).splitlines()[0]}); check its format.") from None
    if "question" not in frame.columns:
        raise UserError(f"{path} has no 'question' column (found: {', '.join(frame.columns)}); name it 'question'.")
    questions = [
        EvalQuestion(
            str(row["question"]).strip(),
            _listed(row.get("answers") or row.get("answer")),
            _listed(row.get("sources")),
        )
        for row in frame.iter_rows(named=True)
        if row["question"] and str(row["question"]).strip()
    ]
    if not questions:
        raise UserError(f"{path} holds no question; add rows with a 'question'.")
    return questions


def _listed(value: object) -> tuple[str, ...]:
    """A list cell, or a CSV cell with ``;``-separated values, as clean strings."""
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else str(value).split(";")
    return tuple(str(item).strip() for item in items if item is not None and str(item).strip())


# letters that Unicode does not decompose into a base letter and an accent
_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "đ": "d", "ł": "l", "þ": "th"})


def normalise(text: str) -> str:
    """Lower case, accents and punctuation removed, articles dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKD", text.lower().translate(_LETTERS))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(word for word in text.split() if word not in ("a", "an", "the"))


def contains_answer(answer: str, expected: Sequence[str]) -> bool:
    """Whether the normalised answer contains one of the normalised expected answers (as words)."""
    said = f" {normalise(answer)} "
    return any(f" {normalise(e)} " in said for e in expected if normalise(e))


def retrieved_documents(result: QueryResult) -> list[str]:
    """Distinct document titles of the context's sources, in the order they were ranked."""
    seen: dict[str, None] = {}
    for record in result.context_records.sources:
        seen.setdefault(record.title, None)
    return list(seen)


def retrieval_scores(retrieved: Sequence[str], gold: Sequence[str], k: int) -> tuple[bool, float]:
    """hit@k and recall@k of ``gold`` titles or ids among the first ``k`` retrieved documents."""
    first = {normalise(title) for title in retrieved[:k]}
    found = [g for g in gold if normalise(g) in first]
    return bool(found), len(found) / len(gold)


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))] if ordered else 0.0


@dataclass(frozen=True)
class EvalPlan:
    """What to ask: the questions, the methods, the cut-off k, and whether a judge may be used."""

    questions: Sequence[EvalQuestion]
    methods: Sequence[str]
    k: int = 5
    judge: bool = True
    judge_prompt: Path | None = None  # a replacement for the built-in eval_judge.txt


def evaluate(
    settings: Settings, plan: EvalPlan, on_progress: Callable[[int, int], None] = lambda done, total: None
) -> EvalReport:
    """Ask every question with every method of ``plan`` over the project's index (loaded once)."""
    data = load_query_data(settings)
    prompts = load_query_prompts(settings.query.prompts, settings.root)
    count = token_counter(settings.chunking.encoding)
    outcomes: list[QuestionOutcome] = []
    judge_meter = UsageMeter()
    total = len(plan.questions) * len(plan.methods)
    with ModelSet(settings, UsageMeter()) as models, ModelSet(settings, judge_meter) as judges:
        judge = _Judge(judges, settings, plan.judge_prompt) if plan.judge and uses_llm(settings) else None
        for method in plan.methods:
            for question in plan.questions:
                before = models.meter.totals()
                request = SearchRequest(
                    question.question,
                    data,
                    settings.query,
                    chat_model=models.chat if uses_llm(settings, method) else None,
                    embedder=models.embedder,
                    options=QueryOptions(method),
                    prompts=prompts,
                    count=count,
                    reranker=models.reranker,
                )
                started = time.perf_counter()
                result = asyncio.run(run_query(request))
                seconds = time.perf_counter() - started
                outcomes.append(_outcome(question, result, seconds, _delta(models.meter.totals(), before), plan.k))
                if judge and question.answers:
                    outcomes[-1].judged = judge.correct(question, result.answer)
                on_progress(len(outcomes), total)
    return EvalReport(
        plan.k,
        [_summary(method, [o for o in outcomes if o.method == method]) for method in plan.methods],
        outcomes,
        judge_meter.totals() if judge else None,
    )


def _outcome(
    question: EvalQuestion, result: QueryResult, seconds: float, usage: UsageCounts, k: int
) -> QuestionOutcome:
    retrieved = retrieved_documents(result)
    hit, recall = retrieval_scores(retrieved, question.sources, k) if question.sources else (None, None)
    return QuestionOutcome(
        question=question.question,
        method=result.method,
        seconds=seconds,
        retrieved=retrieved[:k],
        hit=hit,
        recall=recall,
        contains=contains_answer(result.answer, question.answers) if question.answers else None,
        judged=None,
        usage=usage,
        answer=result.answer,
    )


def _delta(after: UsageCounts, before: UsageCounts) -> UsageCounts:
    return UsageCounts(**{name: getattr(after, name) - getattr(before, name) for name in asdict(after)})


def _share(values: list[bool | float | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _summary(method: str, outcomes: list[QuestionOutcome]) -> MethodSummary:
    n = max(1, len(outcomes))
    seconds = [o.seconds for o in outcomes]
    return MethodSummary(
        method=method,
        questions=len(outcomes),
        hit_at_k=_share([o.hit for o in outcomes]),
        recall_at_k=_share([o.recall for o in outcomes]),
        contains=_share([o.contains for o in outcomes]),
        judged=_share([o.judged for o in outcomes]),
        p50_seconds=percentile(seconds, 0.5),
        p95_seconds=percentile(seconds, 0.95),
        calls_per_question=sum(o.usage.requests + o.usage.cache_hits for o in outcomes) / n,
        tokens_per_question=sum(
            o.usage.prompt_tokens + o.usage.completion_tokens + o.usage.embedding_tokens for o in outcomes
        )
        / n,
        cost_per_question=sum(o.usage.cost_usd for o in outcomes) / n,
    )


class _Judge:
    """The chat model asked whether an answer says what the expected answer says (``eval_judge.txt``)."""

    def __init__(self, models: ModelSet, settings: Settings, override: Path | None) -> None:
        self.models = models
        self.prompt = load_prompt("eval_judge", override, settings.root, ("question", "expected", "answer"))

    def correct(self, question: EvalQuestion, answer: str) -> bool:
        text = self.prompt.format(question=question.question, expected=" | ".join(question.answers), answer=answer)
        options = ChatOptions(temperature=0.0, max_tokens=8, prompt_version=self.prompt.version)
        result = asyncio.run(
            self.models.chat.chat([{"role": "user", "content": text}], purpose=JUDGE_PURPOSE, options=options)
        )
        verdict = result.text.strip().split()
        return bool(verdict) and verdict[0].strip(".:*").upper() == "CORRECT"


SUMMARY_COLUMNS = (
    "method",
    "questions",
    "hit@k",
    "recall@k",
    "contains",
    "judged",
    "p50 s",
    "p95 s",
    "calls/q",
    "tokens/q",
    "$/q",
)


def summary_rows(report: EvalReport) -> list[list[str]]:
    """The per-method figures as display strings, in :data:`SUMMARY_COLUMNS` order ("-": not measured)."""

    def share(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    return [
        [
            m.method,
            str(m.questions),
            share(m.hit_at_k),
            share(m.recall_at_k),
            share(m.contains),
            share(m.judged),
            f"{m.p50_seconds:.2f}",
            f"{m.p95_seconds:.2f}",
            f"{m.calls_per_question:.1f}",
            f"{m.tokens_per_question:.0f}",
            f"{m.cost_per_question:.4f}",
        ]
        for m in report.methods
    ]


def to_markdown(report: EvalReport) -> str:
    """The summary as an aligned markdown table (what the terminal shows, and a ``.md`` report)."""
    header = [c.replace("@k", f"@{report.k}") for c in SUMMARY_COLUMNS]
    rows = [header, *summary_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    notes = []
    if report.judge is not None:
        notes.append(
            f"judge: {report.judge.requests + report.judge.cache_hits} call(s), ${report.judge.cost_usd:.4f} "
            "(not counted in the methods' figures)"
        )
    return "\n".join(lines + notes)


def to_html(report: EvalReport) -> str:
    """The summary and every question's outcome as one self-contained HTML page."""
    import html

    def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    mark = {True: "yes", False: "no", None: "-"}
    details = [
        [o.method, o.question, mark[o.hit], mark[o.contains], mark[o.judged], f"{o.seconds:.2f}", o.answer[:300]]
        for o in report.outcomes
    ]
    style = "body{font-family:sans-serif;margin:2rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>eval</title><style>{style}</style></head><body>"
        f"<h1>Evaluation (k = {report.k})</h1>"
        + table([c.replace("@k", f"@{report.k}") for c in SUMMARY_COLUMNS], summary_rows(report))
        + "<h2>Questions</h2>"
        + table(["method", "question", f"hit@{report.k}", "contains", "judged", "seconds", "answer"], details)
        + "</body></html>"
    )
